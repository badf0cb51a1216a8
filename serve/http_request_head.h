// The head of one HTTP/1.1 request (request line and header fields), parsed
// in place for the server's fast path (http_server.h): views into the bytes
// read, no allocation. Anything the fast path does not take (another HTTP
// version, folded or oversized fields, a second Content-Length) makes the
// parse fail, and httplib then reads the request as it always did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hetrt::serve {

class RequestHead {
 public:
  static constexpr size_t kMaxFields = 32;

  // `head` through its empty line ("...\r\n\r\n"). A control character
  // (but HTAB) in the request line or a field value, a bare CR or LF
  // included, makes it fail.
  static std::optional<RequestHead> Parse(std::string_view head);

  std::string_view method() const { return method_; }
  std::string_view target() const { return target_; }
  // The field's value without surrounding whitespace; "" when absent.
  // Names compare case-insensitively, as HTTP's do.
  std::string_view Field(std::string_view name) const;
  bool Has(std::string_view name) const;
  // ASCII text compared case-insensitively (names, tokens like "close").
  static bool SameText(std::string_view a, std::string_view b);
  // Content-Length, when present and a plain decimal number.
  std::optional<uint64_t> content_length() const { return content_length_; }

 private:
  struct NameValue {
    std::string_view name, value;
  };
  std::string_view method_, target_;
  NameValue fields_[kMaxFields];
  size_t num_fields_ = 0;
  std::optional<uint64_t> content_length_;
};

}  // namespace hetrt::serve
