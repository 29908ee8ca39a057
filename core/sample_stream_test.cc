#include "core/sample_stream.h"

#include <limits>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "core/job_spec.h"

namespace edgetrain {
namespace {

std::vector<int64_t> Partition(int n) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 100);
  return p;
}

TEST(SampleStreamTest, BatchesTakeWhatArrivedOldestFirstFromThePartition) {
  SampleStream stream(StreamRate::Constant(10), Partition(50), 1, 64);
  stream.CatchUp(0.55);  // 5.5 samples: 5 whole ones
  EXPECT_EQ(stream.counts().backlog, 5);
  std::vector<int64_t> first = stream.Take(3);
  ASSERT_EQ(first.size(), 3u);
  stream.CatchUp(1.0);
  std::vector<int64_t> rest = stream.Take(100);
  EXPECT_EQ(rest.size(), 7u);
  const StreamCounts c = stream.counts();
  EXPECT_EQ(c.arrived, 10);
  EXPECT_EQ(c.consumed, 10);
  EXPECT_EQ(c.backlog, 0);
  EXPECT_EQ(c.dropped, 0);
  // Ten different samples of the partition.
  std::set<int64_t> seen(first.begin(), first.end());
  seen.insert(rest.begin(), rest.end());
  EXPECT_EQ(seen.size(), 10u);
  for (int64_t i : seen) EXPECT_TRUE(i >= 100 && i < 150) << i;
}

TEST(SampleStreamTest, EveryPassOverThePartitionIsDrawnAfresh) {
  SampleStream stream(StreamRate::Constant(1), Partition(4), 3, 100);
  stream.CatchUp(8);
  std::vector<int64_t> two_passes = stream.Take(8);
  std::set<int64_t> first(two_passes.begin(), two_passes.begin() + 4), second(two_passes.begin() + 4, two_passes.end());
  EXPECT_EQ(first.size(), 4u);
  EXPECT_EQ(second.size(), 4u);
}

TEST(SampleStreamTest, TruncateKeepsOneBatchAndCountsTheSurplusAsDropped) {
  StreamSpec spec;
  spec.buffer = StreamBuffer::kTruncate;
  SampleStream stream(StreamRate::Constant(100), Partition(1000), 1, StreamBufferCapacity(spec, 16));
  stream.CatchUp(1);  // 100 arrived while the worker computed: one batch of the newest stays
  StreamCounts c = stream.counts();
  EXPECT_EQ(c.backlog, 16);
  EXPECT_EQ(c.dropped, 84);
  EXPECT_EQ(stream.Take(16).size(), 16u);
  stream.CatchUp(1.05);  // 5 more
  c = stream.counts();
  EXPECT_EQ(c.arrived, 105);
  EXPECT_EQ(c.arrived, c.dropped + c.consumed + c.backlog);
}

TEST(SampleStreamTest, PersistCarriesTheSurplusOverUpToItsCapacity) {
  StreamSpec spec;
  spec.buffer_capacity = 40;
  SampleStream stream(StreamRate::Constant(100), Partition(1000), 1, StreamBufferCapacity(spec, 16));
  stream.CatchUp(0.3);  // 30: all kept
  EXPECT_EQ(stream.Take(16).size(), 16u);
  EXPECT_EQ(stream.counts().backlog, 14);
  // Told before the worker looks: as CatchUp will leave it, nothing drawn.
  const StreamCounts told = stream.CountsAt(0.6);
  EXPECT_EQ(stream.counts().arrived, 30) << "nothing drawn";
  stream.CatchUp(0.6);  // 30 more onto 14: 44 over a capacity of 40, the 4 oldest go
  StreamCounts c = stream.counts();
  EXPECT_EQ(told.arrived, c.arrived);
  EXPECT_EQ(told.dropped, c.dropped);
  EXPECT_EQ(told.backlog, c.backlog);
  EXPECT_EQ(stream.CountsAt(0.6).dropped, c.dropped) << "caught up: the same";
  EXPECT_EQ(c.backlog, 40);
  EXPECT_EQ(c.dropped, 4);
  EXPECT_EQ(c.arrived, c.dropped + c.consumed + c.backlog);
}

TEST(SampleStreamTest, SaysWhenABatchsMinimumWillHaveArrived) {
  auto rate = StreamRate::Parse("seconds,samples_per_s\n0,4\n1,0\n2,8\n", "r.csv");
  ASSERT_TRUE(rate.ok());
  SampleStream stream(*rate, Partition(100), 1, 32);
  stream.CatchUp(0.5);
  EXPECT_EQ(stream.counts().backlog, 2);
  EXPECT_DOUBLE_EQ(stream.WhenBuffered(2), 0);
  EXPECT_DOUBLE_EQ(stream.WhenBuffered(4), 1);     // the rest of the first second
  EXPECT_DOUBLE_EQ(stream.WhenBuffered(6), 2.25);  // over the pause
  EXPECT_EQ(stream.WhenBuffered(33), std::numeric_limits<double>::infinity());
  stream.CatchUp(2.25);
  EXPECT_EQ(stream.counts().backlog, 6);
}

TEST(SampleStreamTest, AtTheTimeItNamedTheSamplesAreThere) {
  // Rates whose integrals do not land on whole numbers in binary.
  for (double per_s : {0.3, 7.1, 33.3, 360.0, 1e5 / 3}) {
    SampleStream stream(StreamRate::Constant(per_s), Partition(100), 1, 1000);
    for (int64_t want = 1; want < 400; want += 7) {
      stream.CatchUp(stream.WhenBuffered(want));
      ASSERT_GE(stream.counts().backlog, want) << per_s;
      stream.Take(want);
    }
  }
}

TEST(SampleStreamTest, SamplesFromARealSourceJoinTheBufferAsTheRatesWould) {
  // A stream of rate 0 fed from outside (a directory): nothing arrives by
  // itself, and when it is said to be coming is never.
  SampleStream s(StreamRate::Constant(0), {}, 1, 4);
  s.CatchUp(100);
  EXPECT_EQ(s.counts().arrived, 0);
  EXPECT_EQ(s.WhenBuffered(1), std::numeric_limits<double>::infinity());
  EXPECT_EQ(s.Oldest(), std::nullopt);
  s.Arrive(10, 3);  // samples 10, 11, 12
  EXPECT_EQ(s.Take(2), (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(s.Oldest(), 12) << "the source may forget those before it";
  // Six at once into a buffer of four holding one: the oldest go.
  s.Arrive(13, 6);  // 13..18
  EXPECT_EQ(s.counts().arrived, 9);
  EXPECT_EQ(s.counts().dropped, 3);
  EXPECT_EQ(s.Oldest(), 15);
  EXPECT_EQ(s.Take(10), (std::vector<int64_t>{15, 16, 17, 18}));
  EXPECT_EQ(s.Oldest(), std::nullopt);
}

TEST(SampleStreamTest, DefaultsFollowTheBatch) {
  StreamSpec spec;
  EXPECT_EQ(StreamMinBatch(spec, 64), 8);
  EXPECT_EQ(StreamMinBatch(spec, 5), 1);
  EXPECT_EQ(StreamBufferCapacity(spec, 64), 512);
  spec.min_batch_size = 100;
  EXPECT_EQ(StreamMinBatch(spec, 64), 64);  // never above the cap
  spec.buffer_capacity = 10;
  EXPECT_EQ(StreamBufferCapacity(spec, 64), 64);  // at least a batch
  spec.buffer = StreamBuffer::kTruncate;
  EXPECT_EQ(StreamBufferCapacity(spec, 64), 64);
}

}  // namespace
}  // namespace edgetrain
