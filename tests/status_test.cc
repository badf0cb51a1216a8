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

// An error is held behind one pointer: copies are deep, a move leaves OK behind.
TEST(Status, CopiesAndMovesKeepCodeAndMessage) {
  Status error = DataLoss("truncated at byte 12");
  Status copy = error;
  EXPECT_EQ(copy.code(), StatusCode::kDataLoss);
  EXPECT_EQ(copy.message(), "truncated at byte 12");
  const Status& same = copy;
  copy = same;  // self-assignment keeps it
  EXPECT_EQ(copy.message(), "truncated at byte 12");
  Status moved = std::move(error);
  EXPECT_EQ(moved.ToString(), "DATA_LOSS: truncated at byte 12");
  EXPECT_TRUE(error.ok());  // NOLINT(bugprone-use-after-move): moved-from is OK, by contract
  EXPECT_EQ(error.message(), "");
  Status assigned = NotFound("x");
  assigned = std::move(moved);
  EXPECT_EQ(assigned.code(), StatusCode::kDataLoss);
  EXPECT_TRUE(moved.ok());  // NOLINT(bugprone-use-after-move)
  moved = OkStatus();
  EXPECT_TRUE(moved.ok());
  EXPECT_EQ(moved.code(), StatusCode::kOk);
  EXPECT_EQ(Status(StatusCode::kOk, "ignored").message(), "");
  EXPECT_EQ(copy.message(), "truncated at byte 12");  // independent of the original
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
