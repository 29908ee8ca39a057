#include "core/batch_order.h"

#include <numeric>
#include <set>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(BatchOrderTest, EachEpochDealsEverySampleOnceAShortBatchLast) {
  BatchOrder order(Range(10), 4, 3);
  EXPECT_EQ(order.BatchesPerEpoch(), 3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::multiset<int64_t> seen;
    for (size_t expected : {4u, 4u, 2u}) {
      auto batch = order.Next();
      ASSERT_EQ(batch.size(), expected);
      seen.insert(batch.begin(), batch.end());
    }
    const std::vector<int64_t> all = Range(10);
    EXPECT_EQ(seen, std::multiset<int64_t>(all.begin(), all.end()));
  }
}

TEST(BatchOrderTest, TwoOrdersFromOneSeedAgreeOnEveryBatch) {
  BatchOrder a(Range(50), 8, 7), b(Range(50), 8, 7), c(Range(50), 8, 8);
  bool differs = false;
  for (int step = 0; step < 20; ++step) {
    auto x = a.Next();
    auto y = b.Next();
    auto z = c.Next();
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end()));
    differs |= !std::equal(x.begin(), x.end(), z.begin(), z.end());
  }
  EXPECT_TRUE(differs);
}

// A resumed job skips the batches it trained on, across epochs and their
// short last batch, and goes on with those it would have had uninterrupted.
TEST(BatchOrderTest, SkippingGoesOnWithTheBatchesThatWouldHaveCome) {
  BatchOrder whole(Range(50), 8, 7), resumed(Range(50), 8, 7);
  for (int step = 0; step < 17; ++step) whole.Next();  // two epochs of 7 batches and 3 more
  resumed.Skip(17);
  for (int step = 0; step < 10; ++step) {
    auto x = whole.Next();
    auto y = resumed.Next();
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << "step " << 17 + step;
  }
}

// Resumed at another batch size, a job goes on from the sample it was at:
// the same samples in the same order, dealt in batches of the new size.
TEST(BatchOrderTest, SkippingSamplesGoesOnFromTheSampleReachedWhateverTheBatch) {
  BatchOrder whole(Range(50), 8, 7);
  std::vector<int64_t> dealt;
  for (int step = 0; step < 30; ++step) {
    auto x = whole.Next();
    dealt.insert(dealt.end(), x.begin(), x.end());
  }
  // 17 batches of 8: two epochs of 50 and 24 samples of the third.
  BatchOrder same(Range(50), 8, 7), larger(Range(50), 20, 7);
  same.SkipSamples(124);
  auto next = same.Next();
  EXPECT_TRUE(std::equal(next.begin(), next.end(), dealt.begin() + 124, dealt.begin() + 132)) << "as Skip(17)";
  larger.SkipSamples(124);
  auto first = larger.Next();  // 20 more of the third epoch
  auto rest = std::vector<int64_t>(first.begin(), first.end());
  auto second = larger.Next();  // its last 6, a short batch
  rest.insert(rest.end(), second.begin(), second.end());
  ASSERT_EQ(rest.size(), 26u);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), dealt.begin() + 124, dealt.begin() + 150));
}

TEST(BatchOrderTest, MicroBatchesSplitABatchNearEvenly) {
  auto spans = SplitBatch(10, 4);
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].end - spans[0].begin, 3);
  EXPECT_EQ(spans[1].end - spans[1].begin, 3);
  EXPECT_EQ(spans[2].end - spans[2].begin, 2);
  EXPECT_EQ(spans[3].begin, 8);
  EXPECT_EQ(spans[3].end, 10);
  EXPECT_EQ(SplitBatch(2, 4).size(), 2u) << "no empty micro-batches";
  EXPECT_EQ(SplitBatch(32, 1).front().end, 32);
}

TEST(BatchOrderTest, SamplesAreSharedOutByTheDevicesSpeeds) {
  const double speeds[] = {10, 5, 2, 1};
  EXPECT_EQ(ShareOut(18, speeds), (std::vector<int64_t>{10, 5, 2, 1}));
  EXPECT_EQ(ShareOut(8, speeds), (std::vector<int64_t>{5, 2, 1, 0}));  // 4.44, 2.22, 0.89, 0.44
  const double equal[] = {1, 1, 1};
  EXPECT_EQ(ShareOut(4, equal), (std::vector<int64_t>{2, 1, 1})) << "the first device first on a tie";
  EXPECT_EQ(ShareOut(0, equal), (std::vector<int64_t>{0, 0, 0}));
}

// A step of 10 in 4 micro-batches (3, 3, 2, 2) over a group of speeds 2:1.
TEST(BatchOrderTest, AStepIsDealtMicroBatchByMicroBatchAmongAGroup) {
  const double speeds[] = {2, 1};
  EXPECT_EQ(DealStep(10, 4, speeds), (std::vector<std::vector<int64_t>>{{2, 2, 1, 1}, {1, 1, 1, 1}}));
  const double one[] = {1};
  EXPECT_EQ(DealStep(10, 4, one), (std::vector<std::vector<int64_t>>{{3, 3, 2, 2}}));
}

}  // namespace
}  // namespace edgetrain
