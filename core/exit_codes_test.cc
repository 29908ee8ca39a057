#include "core/exit_codes.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(ExitCodesTest, EveryStatusCodeHasItsExitCode) {
  struct Case {
    StatusCode code;
    int exit;
  } cases[] = {
      {StatusCode::kOk, 0},
      {StatusCode::kInvalidArgument, 2},
      {StatusCode::kUnimplemented, 2},
      {StatusCode::kAborted, 2},
      {StatusCode::kNotFound, 1},
      {StatusCode::kAlreadyExists, 1},
      {StatusCode::kFailedPrecondition, 1},
      {StatusCode::kOutOfRange, 1},
      {StatusCode::kUnavailable, 1},
      {StatusCode::kDeadlineExceeded, 1},
      {StatusCode::kDataLoss, 1},
      {StatusCode::kInternal, 1},
      {StatusCode::kCancelled, 130},
  };
  for (const auto& c : cases) EXPECT_EQ(ExitCodeFor(c.code), c.exit) << StatusCodeName(c.code);
  EXPECT_EQ(ExitCodeFor(InvalidArgumentError("--world: must be >= 1")), kExitInvalid);
  EXPECT_EQ(ExitCodeFor(Status::Ok()), kExitOk);
}

}  // namespace
}  // namespace edgetrain
