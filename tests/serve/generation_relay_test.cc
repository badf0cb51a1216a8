// A generation's relay writing the whole HTTP response on the fast path
// (serve/generation_relay.h), on a socket pair: the bytes a client gets for a
// refusal, for events that came before the relay started responding, and for
// a client too slow to take them at once.
#include "generation_relay.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "hetrt/serve/inference.h"

namespace hetrt::serve {
namespace {

using namespace std::chrono_literals;

struct Pair {
  int server = -1, client = -1;
  explicit Pair(int send_buffer = 0) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    server = fds[0];
    client = fds[1];
    if (send_buffer > 0) ::setsockopt(server, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
  }
  ~Pair() {
    ::close(server);
    ::close(client);
  }
  std::string ReadAll() const {  // until the server end is shut down
    std::string bytes;
    char buffer[65536];
    for (ssize_t n; (n = ::recv(client, buffer, sizeof buffer, 0)) > 0;) bytes.append(buffer, static_cast<size_t>(n));
    return bytes;
  }
};

GenerationEvent Event(GenerationEvent::Kind kind, int32_t token = -1) {
  GenerationEvent e;
  e.kind = kind;
  e.token = token;
  if (kind == GenerationEvent::Kind::kEnd) {
    e.finish_reason = kFinishLength;
    e.completion_tokens = 2;
  }
  return e;
}

// Pumps until the response is out; the progress it ended with.
GenerationRelay::Progress PumpToEnd(GenerationRelay& relay) {
  for (;;) {
    const auto p = relay.Pump(50ms, 5s);
    if (p != GenerationRelay::Progress::kGoing) return p;
  }
}

// The chunked body's chunks, each checked to be framed as its size says.
std::vector<std::string> Chunks(std::string_view body) {
  std::vector<std::string> chunks;
  for (;;) {
    const size_t line_end = body.find("\r\n");
    EXPECT_NE(line_end, std::string_view::npos) << body;
    if (line_end == std::string_view::npos) return chunks;
    const size_t size = std::stoul(std::string(body.substr(0, line_end)), nullptr, 16);
    if (size == 0) {
      EXPECT_EQ(body.substr(line_end), "\r\n\r\n") << "the body's end";
      return chunks;
    }
    chunks.emplace_back(body.substr(line_end + 2, size));
    EXPECT_EQ(body.substr(line_end + 2 + size, 2), "\r\n");
    body.remove_prefix(line_end + 2 + size + 2);
  }
}

constexpr std::string_view kHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    "Transfer-Encoding: chunked\r\n\r\n";

TEST(GenerationRelay, ARefusalBeforeAdmissionIsAWholeErrorResponse) {
  Pair pair;
  GenerationRelay relay;
  ASSERT_TRUE(relay.Respond(pair.server, R"({"model_name":"m","model_version":"1",)"));
  GenerationEvent refused = Event(GenerationEvent::Kind::kRefused);
  refused.status = Unavailable("waited too long");
  std::thread scheduler([&] { relay.Push(refused); });
  scheduler.join();
  EXPECT_EQ(PumpToEnd(relay), GenerationRelay::Progress::kEnded);
  ::shutdown(pair.server, SHUT_WR);
  const std::string bytes = pair.ReadAll();
  const std::string body = R"({"error":"waited too long"})";
  EXPECT_EQ(bytes,
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
            "Content-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
}

TEST(GenerationRelay, EventsBeforeRespondingGoOutAtOnceWithTheHeadAndTheBodysEnd) {
  Pair pair;
  GenerationRelay relay;
  relay.Push(Event(GenerationEvent::Kind::kAdmitted));
  relay.Push(Event(GenerationEvent::Kind::kToken, 7));
  relay.Push(Event(GenerationEvent::Kind::kEnd, 9));
  ASSERT_TRUE(relay.Respond(pair.server, R"({"model_name":"m","model_version":"1",)"));
  // The end came before: the first Pump sends it all, without waiting out its timeout.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(relay.Pump(10s, 5s), GenerationRelay::Progress::kEnded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ::shutdown(pair.server, SHUT_WR);
  const std::string bytes = pair.ReadAll();
  ASSERT_EQ(bytes.rfind(kHead, 0), 0u) << bytes;
  const auto chunks = Chunks(std::string_view(bytes).substr(kHead.size()));
  ASSERT_EQ(chunks.size(), 2u) << bytes;
  EXPECT_NE(chunks[0].find(R"("output_ids":[7])"), std::string::npos) << chunks[0];
  EXPECT_NE(chunks[1].find(R"("output_ids":[9])"), std::string::npos) << chunks[1];
  EXPECT_NE(chunks[1].find(R"("finish_reason":"length")"), std::string::npos) << chunks[1];
}

TEST(GenerationRelay, WhatASlowClientLeavesIsSentInOrderByTheWorker) {
  Pair pair(4096);
  GenerationRelay relay;
  ASSERT_TRUE(relay.Respond(pair.server, R"({"model_name":"m","model_version":"1",)"));
  constexpr int kTokens = 2000;  // far more than the socket buffers hold
  std::thread scheduler([&] {
    relay.Push(Event(GenerationEvent::Kind::kAdmitted));
    for (int i = 0; i < kTokens; ++i) relay.Push(Event(GenerationEvent::Kind::kToken, i));
    relay.Push(Event(GenerationEvent::Kind::kEnd));
  });
  std::string bytes;
  std::thread client([&] {
    std::this_thread::sleep_for(50ms);  // not reading while the scheduler pushes
    bytes = pair.ReadAll();
  });
  EXPECT_EQ(PumpToEnd(relay), GenerationRelay::Progress::kEnded);
  scheduler.join();
  ::shutdown(pair.server, SHUT_WR);
  client.join();
  ASSERT_EQ(bytes.rfind(kHead, 0), 0u);
  const auto chunks = Chunks(std::string_view(bytes).substr(kHead.size()));
  ASSERT_EQ(chunks.size(), static_cast<size_t>(kTokens) + 1);
  for (int i = 0; i < kTokens; ++i)
    ASSERT_NE(chunks[i].find("\"output_ids\":[" + std::to_string(i) + "]"), std::string::npos) << chunks[i];
  EXPECT_NE(chunks.back().find("finish_reason"), std::string::npos);
}

TEST(GenerationRelay, AClientThatHangsUpBreaksTheStream) {
  Pair pair;
  GenerationRelay relay;
  ASSERT_TRUE(relay.Respond(pair.server, R"({"model_name":"m","model_version":"1",)"));
  relay.Push(Event(GenerationEvent::Kind::kAdmitted));
  relay.Push(Event(GenerationEvent::Kind::kToken, 1));
  ::shutdown(pair.client, SHUT_RDWR);
  EXPECT_EQ(PumpToEnd(relay), GenerationRelay::Progress::kBroken);
  relay.Push(Event(GenerationEvent::Kind::kToken, 2));  // the scheduler's next step: dropped, no error
  EXPECT_EQ(relay.Pump(10ms, 1s), GenerationRelay::Progress::kBroken);
}

}  // namespace
}  // namespace hetrt::serve
