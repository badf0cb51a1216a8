// Placeholder factories until the REST and gRPC frontends land (each frontend's
// commit deletes its half of this file).
#include "hetrt/serve/frontend.h"

namespace hetrt::serve {
namespace {

class Unbuilt final : public Frontend {
 public:
  explicit Unbuilt(const char* protocol) : protocol_(protocol) {}
  const char* Protocol() const override { return protocol_; }
  Result<int> Start(const std::string&, int) override {
    return Unimplemented(std::string(protocol_) + " frontend not built yet");
  }
  void Stop() override {}

 private:
  const char* protocol_;
};

}  // namespace

// gRPC half
std::unique_ptr<Frontend> MakeGrpcFrontend(InferenceServer&) { return std::make_unique<Unbuilt>("grpc"); }

}  // namespace hetrt::serve
