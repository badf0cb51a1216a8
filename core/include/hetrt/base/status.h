// Errors as values: Status (code + message) and Result<T> (a value or a Status).
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace hetrt {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kOutOfRange = 3,
  kDataLoss = 4,  // corrupt or truncated input
  kUnimplemented = 5,
  kUnavailable = 6,
  kResourceExhausted = 7,
  kFailedPrecondition = 8,
  kInternal = 9,
};

const char* StatusCodeName(StatusCode code);

// Thread contract (Status and Result): values; thread-compatible like std::string.
// An OK status is one null pointer: the success path, which every call in
// the runtime's loops takes, constructs, moves and destroys nothing else.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : error_(code == StatusCode::kOk ? nullptr : new Error{code, std::move(message)}) {}
  Status(const Status& other) : error_(other.error_ ? new Error(*other.error_) : nullptr) {}
  Status(Status&& other) noexcept : error_(other.error_) { other.error_ = nullptr; }
  Status& operator=(const Status& other) {
    if (this != &other) *this = Status(other);
    return *this;
  }
  // A moved-from Status is OK.
  Status& operator=(Status&& other) noexcept {
    if (this != &other) {
      delete error_;
      error_ = other.error_;
      other.error_ = nullptr;
    }
    return *this;
  }
  ~Status() { delete error_; }

  bool ok() const { return error_ == nullptr; }
  StatusCode code() const { return error_ ? error_->code : StatusCode::kOk; }
  const std::string& message() const { return error_ ? error_->message : EmptyMessage(); }
  // "DATA_LOSS: <message>"
  std::string ToString() const;

  // Prepends context ("while loading x.so: ") so errors read outermost-first.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(error_->code, context + ": " + error_->message);
  }

 private:
  struct Error {
    StatusCode code;
    std::string message;
  };
  // Inline: plugins use Status without linking the core.
  static const std::string& EmptyMessage() {
    static const std::string kEmpty;
    return kEmpty;
  }
  Error* error_ = nullptr;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(data_).ok() && "Result needs a value or an error");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace hetrt

#define HETRT_CONCAT_INNER(a, b) a##b
#define HETRT_CONCAT(a, b) HETRT_CONCAT_INNER(a, b)

namespace hetrt::internal {
inline Status WithOptionalContext(Status status) { return status; }
inline Status WithOptionalContext(const Status& status, const std::string& context) {
  return status.WithContext(context);
}
}  // namespace hetrt::internal

// HETRT_RETURN_IF_ERROR(status_expr) or HETRT_RETURN_IF_ERROR(status_expr, context):
// returns the error, with "context: " prepended when one is given. The context
// expression is evaluated only on error.
#define HETRT_RETURN_IF_ERROR(expr, ...)                                                              \
  do {                                                                                                \
    ::hetrt::Status hetrt_status_ = (expr);                                                           \
    if (!hetrt_status_.ok())                                                                          \
      return ::hetrt::internal::WithOptionalContext(std::move(hetrt_status_) __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

#define HETRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr, ...)                                            \
  auto tmp = (expr);                                                                              \
  if (!tmp.ok()) return ::hetrt::internal::WithOptionalContext(tmp.status() __VA_OPT__(, ) __VA_ARGS__); \
  lhs = std::move(tmp).value()

// HETRT_ASSIGN_OR_RETURN(auto x, ComputeX()) or
// HETRT_ASSIGN_OR_RETURN(auto x, ComputeX(), "while computing x for " + name):
// the value of a Result, or a return of its error (with the context prepended).
#define HETRT_ASSIGN_OR_RETURN(lhs, expr, ...) \
  HETRT_ASSIGN_OR_RETURN_IMPL(HETRT_CONCAT(hetrt_result_, __LINE__), lhs, expr __VA_OPT__(, ) __VA_ARGS__)
