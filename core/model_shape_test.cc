#include "core/model_shape.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

ModelSpec Cnn(std::vector<int> channels) { return {ModelKind::kCnn, {}, std::move(channels)}; }
ModelSpec Vgg(std::vector<int> widths) { return {ModelKind::kVgg, {}, {}, std::move(widths)}; }

TEST(ModelShapeTest, DefaultsApplyOnlyWhenNothingIsGiven) {
  EXPECT_EQ(HiddenWidths({ModelKind::kMlp, {}, {}}), (std::vector<int>{128, 64}));
  EXPECT_EQ(HiddenWidths({ModelKind::kMlp, {300}, {}}), (std::vector<int>{300}));
  EXPECT_EQ(ConvChannels(Cnn({})), (std::vector<int>{16, 32}));
  EXPECT_EQ(VggWidths(Vgg({})), (std::vector<int>{16, 16, 32, 32, 64, 64, 128, 128}));
  EXPECT_EQ(VggWidths(Vgg({8, 8})), (std::vector<int>{8, 8}));
}

TEST(ModelShapeTest, ABuiltInModelsLayersAreItsSizesAndTheClassifier) {
  ModelSpec mlp;
  EXPECT_EQ(BuiltInLayerCount(mlp), 3) << "fc1, fc2 and the classifier of the default [128, 64]";
  mlp.hidden = {256, 128, 64, 32};
  EXPECT_EQ(BuiltInLayerCount(mlp), 5);
  ModelSpec cnn;
  cnn.kind = ModelKind::kCnn;
  EXPECT_EQ(BuiltInLayerCount(cnn), 3);
  ModelSpec vgg;
  vgg.kind = ModelKind::kVgg;
  EXPECT_EQ(BuiltInLayerCount(vgg), 9) << "conv1-conv8 and the classifier";
  ModelSpec module;
  module.kind = ModelKind::kTorchScript;
  EXPECT_FALSE(BuiltInLayerCount(module)) << "only loading a module tells its children";
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

TEST(ModelShapeTest, ConvModelsTakeImagesNotRows) {
  DatasetInfo rows;  // inputShape [144]: 1 x 1 x 144
  rows.height = 1;
  rows.width = 144;
  rows.classes = 3;
  Status s = CheckModelFitsData(Cnn({8, 8}), rows);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec.model.name: cnn takes images, and the data's samples are 1 x 1 x 144 "
                         "(spec.data.inputShape, as channels x height x width): a side of 1 leaves its 2x2 pools "
                         "nothing to halve; give inputShape as [channels, height, width] or [height, width] if they "
                         "are images, or use the mlp");
  DatasetInfo column = rows;  // [144, 1]
  column.height = 144;
  column.width = 1;
  EXPECT_NE(CheckModelFitsData(Cnn({8}), column).message().find("1 x 144 x 1"), std::string::npos);
  EXPECT_NE(CheckModelFitsData(Vgg({4}), rows).message().find("vgg takes images"), std::string::npos);
  EXPECT_TRUE(CheckModelFitsData({ModelKind::kMlp, {}, {}}, rows).ok());
}

TEST(ModelShapeTest, VggPoolsAfterEveryTwoConvsAndAfterTheLast) {
  std::vector<bool> eight, five;
  for (size_t i = 0; i < 8; ++i) eight.push_back(VggPoolFollows(i, 8));
  for (size_t i = 0; i < 5; ++i) five.push_back(VggPoolFollows(i, 5));
  EXPECT_EQ(eight, (std::vector<bool>{false, true, false, true, false, true, false, true}));
  EXPECT_EQ(five, (std::vector<bool>{false, true, false, true, true})) << "a last block of one conv is pooled too";
}

TEST(ModelShapeTest, VggBlocksMustFitTheImages) {
  DatasetInfo digits = InfoOf(DatasetName::kDigits);
  DatasetInfo fashion = InfoOf(DatasetName::kFashionMnist);
  EXPECT_TRUE(CheckModelFitsData(Vgg({}), fashion).ok()) << "the default: 28 -> 14 -> 7 -> 3 -> 1";
  EXPECT_TRUE(CheckModelFitsData(Vgg({4, 4, 4, 4, 4, 4}), digits).ok());
  EXPECT_TRUE(CheckModelFitsData(Vgg({4}), digits).ok()) << "fewer than eight convs are allowed";

  Status s = CheckModelFitsData(Vgg({}), digits);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "spec.model.widths: 8 convs make 4 pooled blocks (a 2x2 max-pool after every two convs), which would "
            "halve the 8x8 images below 1x1; use at most 6");
  Status odd = CheckModelFitsData(Vgg({4, 4, 4, 4, 4, 4, 4, 4, 4}), fashion);
  EXPECT_EQ(odd.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(odd.message(),
            "spec.model.widths: 9 convs make 5 pooled blocks (a 2x2 max-pool after every two convs), which would "
            "halve the 28x28 images below 1x1; use at most 8");
}

TEST(ModelShapeTest, LayerSizesBelowOneAreRefusedNamingTheField) {
  DatasetInfo fashion = InfoOf(DatasetName::kFashionMnist);
  EXPECT_EQ(CheckModelFitsData(Vgg({16, 16, 0, 32}), fashion).message(), "spec.model.widths[2]: must be >= 1 (got 0)");
  EXPECT_EQ(CheckModelFitsData(Vgg({-8}), fashion).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckModelFitsData(Cnn({8, -1}), fashion).message(), "spec.model.channels[1]: must be >= 1 (got -1)");
  EXPECT_EQ(CheckModelFitsData({ModelKind::kMlp, {0}, {}}, fashion).message(),
            "spec.model.hidden[0]: must be >= 1 (got 0)");
}

}  // namespace
}  // namespace edgetrain
