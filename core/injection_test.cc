#include "core/injection.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "core/partition.h"

namespace edgetrain {
namespace {

std::vector<int64_t> Labels(int per_class, int classes) {
  std::vector<int64_t> labels;
  for (int i = 0; i < per_class * classes; ++i) labels.push_back(i % classes);
  return labels;
}

TEST(InjectionTest, AWorkerIsSentAShareOfTheLabelsItLacks) {
  const std::vector<int64_t> sees_two = {5, 0, 0, 7, 0, 0, 0, 0, 0, 0};
  std::vector<int> half = InjectedLabels(sees_two, 0.5, 1);
  EXPECT_EQ(half.size(), 4u);
  for (int c : half) EXPECT_TRUE(c != 0 && c != 3) << c;
  EXPECT_EQ(half, InjectedLabels(sees_two, 0.5, 1));
  EXPECT_EQ(InjectedLabels(sees_two, 1.0, 1), (std::vector<int>{1, 2, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(InjectedLabels(sees_two, 0.01, 1).size(), 1u);  // at least one
  EXPECT_TRUE(InjectedLabels(std::vector<int64_t>(10, 3), 0.5, 1).empty());  // it lacks none
  // 100 samples over 4 labels: an even share is 25, and under 12.5 is lacking.
  EXPECT_EQ(InjectedLabels(std::vector<int64_t>{60, 12, 15, 13}, 1.0, 1), (std::vector<int>{1}));
}

TEST(InjectionTest, ABatchIsToppedUpByItsShareRounded) {
  EXPECT_EQ(InjectedPerBatch(32, 0.1), 3);
  EXPECT_EQ(InjectedPerBatch(4, 0.1), 0);
  EXPECT_EQ(InjectedPerBatch(5, 0.1), 1);  // 0.5 rounds away from zero
  EXPECT_EQ(InjectedPerBatch(64, 0.25), 16);
}

TEST(InjectionTest, ThePoolDealsOnlyTheInjectedLabelsAndEveryOneOfTheirSamples) {
  const std::vector<int64_t> labels = Labels(30, 10);
  const PartitionSpec partition{PartitionKind::kLabels, std::nullopt, 2};
  const auto parts = PartitionSamples(labels, 10, 4, partition, 3);
  InjectionPool pool(labels, 10, parts, InjectionSpec{0.5, 0.1}, 3);
  for (int w = 0; w < 4; ++w) {
    const std::vector<int64_t> h = LabelHistogram(parts[w], labels, 10);
    ASSERT_EQ(pool.labels(w).size(), 4u);  // half of the 8 it lacks
    const std::set<int> injected(pool.labels(w).begin(), pool.labels(w).end());
    // Twice round its pool: each of its 4 x 30 samples twice, each of an injected label.
    std::vector<int64_t> dealt = pool.Next(w, 240);
    std::map<int64_t, int> times;
    for (int64_t i : dealt) {
      EXPECT_TRUE(injected.contains(static_cast<int>(labels[i]))) << labels[i];
      EXPECT_EQ(h[labels[i]], 0);
      ++times[i];
    }
    EXPECT_EQ(times.size(), 120u);
    for (const auto& [i, n] : times) EXPECT_EQ(n, 2) << i;
  }
  InjectionPool sees_all(labels, 10, PartitionSamples(labels, 10, 2, PartitionSpec{}, 3), InjectionSpec{}, 3);
  EXPECT_TRUE(sees_all.Next(0, 5).empty());
}

}  // namespace
}  // namespace edgetrain
