// Status, Result and the early-return macros, with and without context.
#include "hetrt/base/status.h"

#include <gtest/gtest.h>

#include <string>

namespace hetrt {
namespace {

Result<int> Parsed(bool ok) {
  if (ok) return 7;
  return DataLoss("truncated at byte 12");
}
Status Checked(bool ok) { return ok ? OkStatus() : NotFound("no kernel 'add'"); }

int contexts_built = 0;
std::string Where(const std::string& file) {
  ++contexts_built;
  return "while loading " + file;
}

Status AssignWithContext(bool ok, int* out) {
  HETRT_ASSIGN_OR_RETURN(*out, Parsed(ok), Where("a.so"));
  return OkStatus();
}
Status AssignWithoutContext(bool ok, int* out) {
  HETRT_ASSIGN_OR_RETURN(*out, Parsed(ok));
  return OkStatus();
}
Status ReturnWithContext(bool ok) {
  HETRT_RETURN_IF_ERROR(Checked(ok), Where("b.so"));
  return OkStatus();
}
Status ReturnWithoutContext(bool ok) {
  HETRT_RETURN_IF_ERROR(Checked(ok));
  return OkStatus();
}

TEST(StatusMacros, ErrorsKeepTheirCodeAndGainTheContextOutermostFirst) {
  int value = 0;
  Status s = AssignWithContext(false, &value);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "while loading a.so: truncated at byte 12");
  s = AssignWithoutContext(false, &value);
  EXPECT_EQ(s.message(), "truncated at byte 12");
  s = ReturnWithContext(false);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "while loading b.so: no kernel 'add'");
  EXPECT_EQ(ReturnWithoutContext(false).message(), "no kernel 'add'");
}

TEST(StatusMacros, SuccessPassesTheValueAndNeverBuildsTheContext) {
  contexts_built = 0;
  int value = 0;
  EXPECT_TRUE(AssignWithContext(true, &value).ok());
  EXPECT_EQ(value, 7);
  EXPECT_TRUE(ReturnWithContext(true).ok());
  EXPECT_EQ(contexts_built, 0);
  EXPECT_FALSE(ReturnWithContext(false).ok());
  EXPECT_EQ(contexts_built, 1);
}

}  // namespace
}  // namespace hetrt
