#include "core/row_scheduler.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(RowSchedulerTest, RowsGoOutAtLeastEverySMinusOneIterations) {
  EXPECT_EQ(MandatoryAfter(0), 0);
  EXPECT_EQ(MandatoryAfter(1), 1);
  EXPECT_EQ(MandatoryAfter(4), 3);
  EXPECT_EQ(MandatoryAfter(20), 19);
}

TEST(RowSchedulerTest, MandatoryRowsGoWhateverTheBudget) {
  // Iteration 10, S = 4: rows last pushed at 7 or earlier are mandatory.
  std::vector<PushCandidate> c = {
      {0, 0.0, 100, 7, false},   // stale, even with nothing accumulated
      {1, 9.0, 100, 8, false},
      {2, 1.0, 100, 9, true},    // demanded
      {3, 1.0, 100, 2, false},
  };
  auto rows = SelectPushRows(c, 10, 4, 0, RowOrder::kImportance);
  EXPECT_EQ(rows, (std::vector<size_t>{0, 2, 3}));
}

TEST(RowSchedulerTest, FillsTheBudgetByEnergyPerByteAndStaleness) {
  struct Case {
    const char* name;
    std::vector<PushCandidate> candidates;
    int64_t budget;
    RowOrder order;
    std::vector<size_t> want;
  } cases[] = {
      {"energy per byte", {{0, 1.0, 100, 9}, {1, 4.0, 100, 9}, {2, 2.0, 100, 9}}, 200, RowOrder::kImportance, {1, 2}},
      {"a big row costs more", {{0, 4.0, 400, 9}, {1, 2.0, 100, 9}, {2, 1.5, 100, 9}}, 200, RowOrder::kImportance, {1, 2}},
      // Per byte: 1.4 at staleness 2 scores 1.4*(1+2/4) = 2.1, above 1.6*(1+1/4) = 2.0
      // and 1.5*(1+1/4) = 1.875, though its energy is the least.
      {"staleness lifts old rows", {{0, 1.4, 100, 8}, {1, 1.5, 100, 9}, {2, 1.6, 100, 9}}, 200, RowOrder::kImportance, {0, 2}},
      {"ROG as published: staleness only", {{0, 1.0, 100, 8}, {1, 9.0, 100, 9}, {2, 1.6, 100, 8}}, 200, RowOrder::kStaleness, {0, 2}},
      {"a smaller row fills the gap", {{0, 5.0, 150, 9}, {1, 4.0, 100, 9}, {2, 0.1, 50, 9}}, 200, RowOrder::kImportance, {1, 2}},
      {"nothing accumulated, nothing sent", {{0, 0.0, 100, 9}, {1, 0.0, 100, 9}}, 1000, RowOrder::kImportance, {}},
      {"zero budget, only mandatory", {{0, 5.0, 100, 9}}, 0, RowOrder::kImportance, {}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SelectPushRows(c.candidates, 10, 4, c.budget, c.order), c.want) << c.name;
  }
}

TEST(RowSchedulerTest, BspMakesEveryRowMandatoryOncePerIteration) {
  std::vector<PushCandidate> c = {{0, 0.0, 100, 9}, {1, 1.0, 100, 9}};
  EXPECT_EQ(SelectPushRows(c, 10, 0, 0, RowOrder::kImportance), (std::vector<size_t>{0, 1}));
  // An idle push at the same iteration has nothing mandatory left to send.
  std::vector<PushCandidate> again = {{0, 0.0, 100, 10}, {1, 0.0, 100, 10, true}};
  EXPECT_TRUE(SelectPushRows(again, 10, 0, 1000, RowOrder::kImportance).empty());
}

TEST(RowSchedulerTest, AnIdlePushLeavesCompressionErrorForTheNextIteration) {
  // Row 0 went out at iteration 10 as int8 and kept its rounding error; row 1
  // did not fit the budget then. Only row 1 goes out until iteration 11.
  std::vector<PushCandidate> c = {{0, 0.01, 100, 10}, {1, 2.0, 100, 9}};
  EXPECT_EQ(SelectPushRows(c, 10, 4, 1000, RowOrder::kImportance), (std::vector<size_t>{1}));
  EXPECT_EQ(SelectPushRows(c, 10, 4, 1000, RowOrder::kStaleness), (std::vector<size_t>{1}));
  EXPECT_EQ(SelectPushRows(c, 11, 4, 1000, RowOrder::kImportance), (std::vector<size_t>{1, 0}));
}

TEST(RowSchedulerTest, PullsSendWhatTheWorkerNeedsThenWhatItMissesMost) {
  std::vector<PullCandidate> c = {
      {0, 1, 100, false}, {1, 5, 100, false}, {2, 0, 100, true}, {3, 3, 100, false}, {4, 0, 100, false}};
  EXPECT_EQ(SelectPullRows(c, 300), (std::vector<size_t>{2, 1, 3}));
  EXPECT_EQ(SelectPullRows(c, 0), (std::vector<size_t>{2}));
  std::vector<PullCandidate> only_optional = {{0, 1, 100, false}, {1, 5, 100, false}};
  EXPECT_EQ(SelectPullRows(only_optional, 10), (std::vector<size_t>{1})) << "the link is never left idle";
  EXPECT_EQ(SelectPullRows(c, 10'000), (std::vector<size_t>{2, 1, 3, 0}));
}

}  // namespace
}  // namespace edgetrain
