#include "core/model_shape.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

ModelSpec Cnn(std::vector<int> channels) { return {ModelKind::kCnn, {}, std::move(channels)}; }

TEST(ModelShapeTest, DefaultsApplyOnlyWhenNothingIsGiven) {
  EXPECT_EQ(HiddenWidths({ModelKind::kMlp, {}, {}}), (std::vector<int>{128, 64}));
  EXPECT_EQ(HiddenWidths({ModelKind::kMlp, {300}, {}}), (std::vector<int>{300}));
  EXPECT_EQ(ConvChannels(Cnn({})), (std::vector<int>{16, 32}));
}

TEST(ModelShapeTest, ConvBlocksMustFitTheImages) {
  DatasetInfo digits = InfoOf(DatasetName::kDigits);          // 8x8: 3 halvings
  DatasetInfo fashion = InfoOf(DatasetName::kFashionMnist);   // 28x28: 4 halvings
  EXPECT_TRUE(CheckModelFitsData(Cnn({8, 8, 8}), digits).ok());
  Status s = CheckModelFitsData(Cnn({8, 8, 8, 8}), digits);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec.model.channels: 4 conv blocks would halve the 8x8 images below 1x1; use at most 3");
  EXPECT_TRUE(CheckModelFitsData(Cnn({8, 8, 8, 8}), fashion).ok());
  EXPECT_TRUE(CheckModelFitsData({ModelKind::kMlp, {}, {}}, digits).ok());
}

}  // namespace
}  // namespace edgetrain
