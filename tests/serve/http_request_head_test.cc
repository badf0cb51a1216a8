// The REST fast path's request-head parser (serve/http_request_head.h): what
// it takes, and every head it must leave to httplib.
#include "http_request_head.h"

#include <gtest/gtest.h>

#include <string>

namespace hetrt::serve {
namespace {

TEST(RequestHead, ReadsTheRequestLineAndFindsFieldsWhateverTheirCase) {
  const std::string text =
      "POST /v2/models/mlp/versions/2/infer HTTP/1.1\r\n"
      "Host: 127.0.0.1:8000\r\n"
      "content-type:application/octet-stream\r\n"
      "Inference-Header-Content-Length:   87  \r\n"
      "CONTENT-LENGTH: 2135\r\n"
      "\r\n";
  const auto head = RequestHead::Parse(text);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->method(), "POST");
  EXPECT_EQ(head->target(), "/v2/models/mlp/versions/2/infer");
  EXPECT_EQ(head->Field("Content-Type"), "application/octet-stream");
  EXPECT_EQ(head->Field("inference-header-content-length"), "87");
  EXPECT_EQ(head->content_length(), 2135u);
  EXPECT_TRUE(head->Has("host"));
  EXPECT_FALSE(head->Has("Transfer-Encoding"));
  EXPECT_EQ(head->Field("Expect"), "");
  EXPECT_TRUE(RequestHead::SameText("Close", "close"));
  EXPECT_FALSE(RequestHead::SameText("close ", "close"));
}

TEST(RequestHead, LeavesEveryHeadItDoesNotFullyUnderstandToHttplib) {
  const char* refused[] = {
      "POST /x HTTP/1.0\r\n\r\n",                                            // another version
      "POST /x HTTP/1.1\r\nHost: a\r\n",                                     // no empty line
      "POST /x HTTP/1.1\r\nA: b\r\n c\r\n\r\n",                              // a folded field
      "POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",  // two lengths
      "POST /x HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n",                     // not a decimal count
      "POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
      "POST /x HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",  // past 64 bits
      "POST /x HTTP/1.1\r\nBad Name: x\r\n\r\n",                              // a space in a name
      "POST /x HTTP/1.1\r\n: x\r\n\r\n",                                      // no name
      "POST  HTTP/1.1\r\n\r\n",                                               // no target
      "POST /a b HTTP/1.1\r\n\r\n",                                           // a space in the target
      "POST\r\n\r\n",
      "",
      "POST /x HTTP/1.1\r\n\r\nextra",  // bytes after the head
      // A bare LF or CR, or NUL: two parsers could frame the message differently.
      "POST /x HTTP/1.1\r\nX: a\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
      "POST /x HTTP/1.1\r\nX: a\rb\r\n\r\n",
      "POST /x\n HTTP/1.1\r\n\r\n",
  };
  for (const char* text : refused) EXPECT_FALSE(RequestHead::Parse(text).has_value()) << text;
  const char with_nul[] = "POST /x HTTP/1.1\r\nX: a\0b\r\n\r\n";
  EXPECT_FALSE(RequestHead::Parse(std::string_view(with_nul, sizeof with_nul - 1)).has_value());
  std::string many = "POST /x HTTP/1.1\r\n";
  for (size_t i = 0; i <= RequestHead::kMaxFields; ++i) many += "F" + std::to_string(i) + ": v\r\n";
  EXPECT_FALSE(RequestHead::Parse(many + "\r\n").has_value()) << "more fields than it keeps";
}

}  // namespace
}  // namespace hetrt::serve
