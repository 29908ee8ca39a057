#include "core/status.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

StatusOr<int> Half(int n) {
  if (n % 2) return InvalidArgumentError(std::to_string(n) + " is odd");
  return n / 2;
}

StatusOr<int> Quarter(int n) {
  EDGETRAIN_ASSIGN_OR_RETURN(int half, Half(n));
  EDGETRAIN_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

TEST(StatusTest, OkAndErrorsCarryCodeAndMessage) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  Status s = NotFoundError("no such data set");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: no such data set");
  EXPECT_EQ(s.WithContext("loading digits").message(), "loading digits: no such data set");
  EXPECT_TRUE(Status::Ok().WithContext("ignored").ok());
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(12), 3);
  auto odd = Quarter(6);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().message(), "3 is odd");
  EXPECT_EQ(odd.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace edgetrain
