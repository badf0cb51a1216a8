#include "http_request_head.h"

#include <charconv>

namespace hetrt::serve {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A control character other than HTAB: never part of a request line or a
// field value (RFC 9112; a bare CR or LF would let two parsers frame the
// message differently).
bool IsControl(char c) { return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f; }

bool HasControl(std::string_view s) {
  for (char c : s)
    if (IsControl(c)) return true;
  return false;
}

// A token character of a field name (RFC 9110 tchar).
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

bool RequestHead::SameText(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::optional<RequestHead> RequestHead::Parse(std::string_view head) {
  RequestHead parsed;
  size_t line_end = head.find("\r\n");
  if (line_end == std::string_view::npos) return std::nullopt;
  // "METHOD SP target SP HTTP/1.1"
  const std::string_view line = head.substr(0, line_end);
  if (HasControl(line)) return std::nullopt;
  const size_t first = line.find(' ');
  const size_t last = line.rfind(' ');
  if (first == std::string_view::npos || first == 0 || last == first) return std::nullopt;
  if (line.substr(last + 1) != "HTTP/1.1") return std::nullopt;
  parsed.method_ = line.substr(0, first);
  parsed.target_ = line.substr(first + 1, last - first - 1);
  if (parsed.target_.empty() || parsed.target_.find(' ') != std::string_view::npos) return std::nullopt;
  for (size_t at = line_end + 2; at < head.size();) {
    line_end = head.find("\r\n", at);
    if (line_end == std::string_view::npos) return std::nullopt;
    const std::string_view field = head.substr(at, line_end - at);
    at = line_end + 2;
    if (field.empty()) return at == head.size() ? std::optional<RequestHead>(parsed) : std::nullopt;
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0 || parsed.num_fields_ == kMaxFields) return std::nullopt;
    const std::string_view name = field.substr(0, colon);
    for (char c : name)
      if (!IsTokenChar(c)) return std::nullopt;  // also refuses obsolete line folding
    const std::string_view value = Trim(field.substr(colon + 1));
    if (HasControl(value)) return std::nullopt;
    if (RequestHead::SameText(name, "Content-Length")) {
      uint64_t length = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (parsed.content_length_ || value.empty() || ec != std::errc() || end != value.data() + value.size())
        return std::nullopt;
      parsed.content_length_ = length;
    }
    parsed.fields_[parsed.num_fields_++] = {name, value};
  }
  return std::nullopt;  // no empty line
}

std::string_view RequestHead::Field(std::string_view name) const {
  for (size_t i = 0; i < num_fields_; ++i)
    if (RequestHead::SameText(fields_[i].name, name)) return fields_[i].value;
  return {};
}

bool RequestHead::Has(std::string_view name) const {
  for (size_t i = 0; i < num_fields_; ++i)
    if (RequestHead::SameText(fields_[i].name, name)) return true;
  return false;
}

}  // namespace hetrt::serve
