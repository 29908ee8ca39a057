#include "core/model_copy.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

const RowLayout kLayout({{2, 2}}, SyncGranularity::kRow, 1);

std::string Floats(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(ModelCopyTest, StagedRowsEnterTheModelOnlyBetweenSteps) {
  ModelCopy copy(kLayout);
  std::vector<float> model(4, 0.0f);
  ASSERT_TRUE(copy.Stage(0, 3, false, RowEncoding::kFloat32, 1, Floats({1, 2})).ok());
  EXPECT_EQ(model, (std::vector<float>{0, 0, 0, 0}));
  EXPECT_FALSE(copy.ReadyFor(5, 1)) << "row 0 is staged, not in the model";
  copy.ApplyStaged(model);
  EXPECT_EQ(model, (std::vector<float>{1, 2, 0, 0}));
  EXPECT_EQ(copy.clocks()[0], 3);
}

TEST(ModelCopyTest, IterationTNeedsEveryRowAtLeastTMinusOneMinusS) {
  ModelCopy copy(kLayout);
  std::vector<float> model(4, 0.0f);
  ASSERT_TRUE(copy.Stage(0, 3, false, RowEncoding::kFloat32, 1, Floats({1, 2})).ok());
  ASSERT_TRUE(copy.Stage(1, 2, false, RowEncoding::kFloat32, 1, Floats({3, 4})).ok());
  struct Case {
    int64_t t;
    int bound;
    bool ready;
  } cases[] = {{4, 1, true}, {5, 1, false}, {5, 2, true}, {3, 0, true}, {4, 0, false}};
  for (const auto& c : cases) {
    EXPECT_EQ(copy.ReadyOnceAppliedFor(c.t, c.bound), c.ready) << "t " << c.t << ", S " << c.bound;
  }
  copy.ApplyStaged(model);
  for (const auto& c : cases) EXPECT_EQ(copy.ReadyFor(c.t, c.bound), c.ready) << "t " << c.t << ", S " << c.bound;
}

TEST(ModelCopyTest, ADifferenceAddsToTheNewestStagedValues) {
  ModelCopy copy(kLayout);
  std::vector<float> model(4, 0.0f);
  ASSERT_TRUE(copy.Stage(1, 1, false, RowEncoding::kFloat32, 1, Floats({1, 1})).ok());
  ASSERT_TRUE(copy.Stage(1, 2, true, RowEncoding::kFloat32, 1, Floats({0.5f, -1})).ok());
  copy.ApplyStaged(model);
  EXPECT_EQ(model, (std::vector<float>{0, 0, 1.5f, 0}));
  EXPECT_EQ(copy.clocks()[1], 2);
}

TEST(ModelCopyTest, RefusesRowsThatDoNotExistOrDoNotDecode) {
  ModelCopy copy(kLayout);
  EXPECT_EQ(copy.Stage(9, 1, false, RowEncoding::kFloat32, 1, Floats({1, 1})).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(copy.Stage(0, 1, false, RowEncoding::kFloat32, 1, Floats({1})).ok());
}

}  // namespace
}  // namespace edgetrain
