#include "core/encoding_choice.h"

#include <random>

#include <gtest/gtest.h>

#include "core/push_composer.h"

namespace edgetrain {
namespace {

// Two rows of 64 floats.
const RowLayout kLayout({{2, 64}}, SyncGranularity::kRow, 1);

// A gradient whose every row holds `spike` at two places over noise of 0.01.
std::vector<float> Gradient(float spike, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0, 0.01f);
  std::vector<float> g(128);
  for (float& x : g) x = noise(rng);
  for (size_t row : {0u, 64u}) {
    g[row + 5] = spike;
    g[row + 40] = -spike;
  }
  return g;
}

TEST(EncodingChoiceTest, TheNormShareTopKKeepsIsMeasuredOverTheWholeModel) {
  EXPECT_GT(TopKNormShare(kLayout, Gradient(1.0f, 1)), 0.99);
  // Noise alone: the largest 2 of 64 Gaussian values hold about a fifth of
  // the squared norm, well under half.
  EXPECT_LT(TopKNormShare(kLayout, Gradient(0.0f, 1)), 0.5);
  EXPECT_EQ(TopKNormShare(kLayout, std::vector<float>(128, 0.0f)), 1.0);
}

TEST(EncodingChoiceTest, OnlyAdaptiveChoosesAndItStartsOnInt8) {
  EncodingChoice fixed(Compression::kTopK);
  EXPECT_FALSE(fixed.Due());
  fixed.Choose(0.0);
  EXPECT_EQ(fixed.encoding(), RowEncoding::kTopK);
  EncodingChoice adaptive(Compression::kAdaptive);
  EXPECT_EQ(adaptive.encoding(), RowEncoding::kInt8);
  EXPECT_EQ(adaptive.kept_norm_share(), -1);
  EXPECT_TRUE(adaptive.Due());
  adaptive.Choose(kTopKKeepsEnough);
  EXPECT_EQ(adaptive.encoding(), RowEncoding::kTopK);
  for (int64_t p = 0; p < kPushesAChoice; ++p) {
    adaptive.Composed();
    EXPECT_EQ(adaptive.Due(), p + 1 == kPushesAChoice) << p;
  }
  adaptive.Choose(kTopKKeepsEnough - 0.01);
  EXPECT_EQ(adaptive.encoding(), RowEncoding::kInt8);
}

TEST(EncodingChoiceTest, AnAdaptiveWorkerPushesTopKWhileItsGradientIsPeakedAndInt8OnceItSpreads) {
  PushComposer pushes(kLayout, Compression::kAdaptive, /*budgeted=*/false, RowOrder::kImportance);
  int64_t t = 0;
  auto push = [&](float spike) {
    pushes.Accumulate(Gradient(spike, static_cast<uint64_t>(t)));
    return pushes.Compose(++t, 4, 0);
  };
  std::vector<OutgoingRow> first = push(1.0f);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].encoded.encoding, RowEncoding::kTopK);
  EXPECT_EQ(first[0].encoded.bytes.size(), 16u);  // 2 of 64 values, against int8's 64 bytes
  EXPECT_GT(pushes.encoding().kept_norm_share(), 0.99);
  // The choice holds for its interval, then follows the gradient: the spikes
  // went, and what top-k left of noise waits in the residual. It is spread
  // evenly: int8 sends it all.
  for (int64_t p = 1; p < kPushesAChoice; ++p) EXPECT_EQ(push(0.0f)[0].encoded.encoding, RowEncoding::kTopK);
  EXPECT_EQ(push(0.0f)[0].encoded.encoding, RowEncoding::kInt8);
  EXPECT_LT(pushes.encoding().kept_norm_share(), kTopKKeepsEnough);
}

}  // namespace
}  // namespace edgetrain
