#include "core/downlink_planner.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;

// Three rows of four floats; two workers; S = 1.
struct DownlinkPlannerTest : testing::Test {
  RowLayout layout{{{3, 4}}, SyncGranularity::kRow, 1};
  OptimizerSpec sgd{OptimizerKind::kSgd, 0.5, std::nullopt, 0};
  std::vector<float> initial = std::vector<float>(12, 1.0f);
  StalenessLedger ledger{2, 3, 1};
  RowAggregator model{layout, sgd, initial};

  static std::string Floats(std::vector<float> v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  // The active workers push `rows` after `iteration`, stepping them. These
  // tests plan worker 0's downlink; worker 1 is sent every row as it is.
  void Step(int64_t iteration, std::vector<size_t> rows) {
    for (size_t r = 0; r < layout.size(); ++r) ledger.RecordSent(1, r);
    const std::string g = Floats({1, 1, 1, 1});
    std::vector<PushedRow> pushed;
    for (size_t r : rows) pushed.push_back({r, RowEncoding::kFloat32, 1, g});
    for (int w = 0; w < 2; ++w) {
      if (!ledger.active(w)) continue;
      ASSERT_TRUE(model.ApplyPush(w, iteration, pushed, ledger).ok());
    }
  }
  static std::vector<size_t> Ids(const std::vector<DownlinkRow>& rows) {
    std::vector<size_t> ids;
    for (const auto& r : rows) ids.push_back(r.id);
    return ids;
  }
};

TEST_F(DownlinkPlannerTest, AWelcomeCarriesTheWholeModelThenUpdatesOnlyWhatChanged) {
  DownlinkPlanner planner(layout, 2, RowEncoding::kFloat32, /*budgeted=*/false);
  auto welcome = planner.Welcome(0, /*whole_model=*/true, ledger, model);
  EXPECT_EQ(Ids(welcome), (std::vector<size_t>{0, 1, 2}));
  EXPECT_FALSE(welcome[0].delta);
  EXPECT_EQ(welcome[0].encoded.encoding, RowEncoding::kFloat32);
  EXPECT_FALSE(planner.HasWork(0, ledger, model));
  Step(1, {1});
  ASSERT_TRUE(planner.HasWork(0, ledger, model));
  DownlinkUpdate update = planner.Update(0, 10, milliseconds(10), ledger, model);
  EXPECT_EQ(Ids(update.rows), (std::vector<size_t>{1}));
  EXPECT_EQ(update.rows[0].clock, 1);
  EXPECT_FALSE(planner.HasWork(0, ledger, model));
}

TEST_F(DownlinkPlannerTest, ACompressedJobSendsDifferencesFromTheWorkersCopy) {
  DownlinkPlanner planner(layout, 2, RowEncoding::kInt8, /*budgeted=*/false);
  (void)planner.Welcome(0, true, ledger, model);
  Step(1, {0});
  DownlinkUpdate update = planner.Update(0, 10, milliseconds(10), ledger, model);
  ASSERT_EQ(Ids(update.rows), (std::vector<size_t>{0}));
  EXPECT_TRUE(update.rows[0].delta);
  EXPECT_EQ(update.rows[0].encoded.encoding, RowEncoding::kInt8);
  EXPECT_EQ(update.rows[0].encoded.bytes.size(), 4u);
}

TEST_F(DownlinkPlannerTest, AfterAnOutageRowsGoWholeUntilTheWorkersCopyIsKnownAgain) {
  DownlinkPlanner planner(layout, 2, RowEncoding::kInt8, /*budgeted=*/false);
  (void)planner.Welcome(0, true, ledger, model);
  Step(1, {0, 1, 2});
  (void)planner.Update(0, 10, milliseconds(10), ledger, model);  // its copy: every row at clock 1
  Step(2, {0, 1, 2});
  ledger.Deactivate(0);
  ledger.Rejoin(0, /*copy_lost=*/false);
  // It resumes after iteration 2; iteration 3 needs clocks >= 1, which it holds.
  auto welcome = planner.Welcome(0, /*whole_model=*/false, ledger, model);
  EXPECT_TRUE(welcome.empty());
  // What was in flight on the old stream may be lost: no difference until a row went whole.
  DownlinkUpdate update = planner.Update(0, 10, milliseconds(10), ledger, model);
  ASSERT_EQ(Ids(update.rows), (std::vector<size_t>{0, 1, 2}));
  for (const auto& row : update.rows) EXPECT_FALSE(row.delta);
  Step(3, {1});
  update = planner.Update(0, 10, milliseconds(10), ledger, model);
  ASSERT_EQ(Ids(update.rows), (std::vector<size_t>{1}));
  EXPECT_TRUE(update.rows[0].delta);
}

TEST_F(DownlinkPlannerTest, ABudgetSmallerThanARowStillMovesTheMostOutOfDateOne) {
  DownlinkPlanner planner(layout, 2, RowEncoding::kFloat32, /*budgeted=*/true);
  (void)planner.Welcome(0, true, ledger, model);
  ledger.Deactivate(0);  // worker 0 is still at iteration 0: nothing is mandatory for it
  Step(1, {0, 1, 2});
  Step(2, {2});
  // 0.0032 Mbit/s for 10 ms: 4 bytes, less than a row of 16.
  DownlinkUpdate update = planner.Update(0, 0.0032, milliseconds(10), ledger, model);
  EXPECT_EQ(Ids(update.rows), (std::vector<size_t>{2})) << "two updates behind";
  update = planner.Update(0, 0.0032, milliseconds(10), ledger, model);
  EXPECT_EQ(Ids(update.rows), (std::vector<size_t>{0})) << "one behind, as row 1, and first";
  update = planner.Update(0, 10, milliseconds(10), ledger, model);
  EXPECT_EQ(Ids(update.rows), (std::vector<size_t>{1})) << "a budget that fits takes what is left";
}

TEST_F(DownlinkPlannerTest, ARowATeammateWaitsOnIsDemandedOnceUntilPushed) {
  DownlinkPlanner planner(layout, 2, RowEncoding::kFloat32, /*budgeted=*/false);
  // Worker 0 is at iteration 5; worker 1 reached 5 but pushed row 2 only up to 1.
  for (size_t r = 0; r < 3; ++r) ledger.RecordPush(0, r, 5);
  ledger.RecordPush(1, 0, 5);
  ledger.RecordPush(1, 1, 5);
  ledger.RecordPush(1, 2, 1);
  DownlinkUpdate update = planner.Update(1, 10, milliseconds(10), ledger, model);
  EXPECT_EQ(update.demanded, (std::vector<size_t>{2}));
  EXPECT_TRUE(planner.Update(1, 10, milliseconds(10), ledger, model).demanded.empty()) << "asked once";
  planner.Pushed(1, 2);
  EXPECT_EQ(planner.Update(1, 10, milliseconds(10), ledger, model).demanded, (std::vector<size_t>{2}))
      << "asked again: its push did not go far enough";
  planner.StreamOpened(1);
  EXPECT_EQ(planner.Update(1, 10, milliseconds(10), ledger, model).demanded, (std::vector<size_t>{2}))
      << "a new stream has heard no demand";
}

}  // namespace
}  // namespace edgetrain
