#include "core/row_aggregator.h"

#include <gtest/gtest.h>

#include <limits>

namespace edgetrain {
namespace {

// Two rows of two floats; plain SGD at rate 1, so a step subtracts the mean gradient.
struct RowAggregatorTest : testing::Test {
  RowLayout layout{{{2, 2}}, SyncGranularity::kRow, 1};
  OptimizerSpec sgd{OptimizerKind::kSgd, 1.0, std::nullopt, 0};
  std::vector<float> zeros = {0, 0, 0, 0};

  static std::string Floats(std::vector<float> v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
};

TEST_F(RowAggregatorTest, ARowStepsOnceEveryActiveWorkerHasContributedOnTheMeanOfWhatGathered) {
  StalenessLedger ledger(2, 2, 4);
  RowAggregator model(layout, sgd, zeros);
  const std::string g1 = Floats({2, 4}), g2 = Floats({6, 8});
  std::vector<PushedRow> w0 = {{0, RowEncoding::kFloat32, 1, g1}};
  std::vector<PushedRow> w1 = {{0, RowEncoding::kFloat32, 1, g2}};

  auto stepped = model.ApplyPush(0, 1, w0, ledger);
  ASSERT_TRUE(stepped.ok());
  EXPECT_FALSE(*stepped) << "worker 1 has not pushed row 0 up to iteration 1";
  EXPECT_EQ(model.version(0), 0);
  stepped = model.ApplyPush(1, 1, w1, ledger);
  ASSERT_TRUE(stepped.ok());
  EXPECT_TRUE(*stepped);
  EXPECT_EQ(model.version(0), 1);
  EXPECT_EQ(model.version(1), 0);
  auto row = model.row_values(0);
  EXPECT_FLOAT_EQ(row[0], -4);  // minus the mean of 2 and 6
  EXPECT_FLOAT_EQ(row[1], -6);
}

TEST_F(RowAggregatorTest, AClockThatMovesBySeveralIterationsIsOneStepOnTheirMean) {
  StalenessLedger ledger(1, 2, 4);
  RowAggregator model(layout, sgd, zeros);
  const std::string g = Floats({3, 3});
  std::vector<PushedRow> rows = {{1, RowEncoding::kFloat32, 1, g}};
  // A push after iteration 3 carries three iterations' gradient: the clock
  // moves from 0 to 3, and SGD's rate scales with the batch (three times).
  ASSERT_TRUE(model.ApplyPush(0, 3, rows, ledger).ok());
  EXPECT_EQ(model.version(1), 1);
  EXPECT_FLOAT_EQ(model.row_values(1)[0], -3);  // rate 3 x mean 1
}

// Without rounds (bsp here), a row whose clock only a worker that left held
// steps as that worker goes, on what the others pushed for it: it went out
// at its new clock with its old values, and what was gathered waited to be
// summed into the next push's step (found in review).
TEST_F(RowAggregatorTest, ARowWhoseClockADepartedWorkerHeldStepsAsItGoes) {
  StalenessLedger ledger(2, 2, 0);
  RowAggregator model(layout, sgd, zeros);
  std::vector<PushedRow> w0 = {{0, RowEncoding::kFloat32, 1, Floats({2, 4})}};
  ASSERT_FALSE(*model.ApplyPush(0, 1, w0, ledger)) << "worker 1 holds the row";
  ledger.Deactivate(1);
  EXPECT_TRUE(model.StepMovedRows(ledger));
  EXPECT_EQ(model.version(0), 1);
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -2) << "worker 0's gradient, the one active";
  EXPECT_EQ(model.version(1), 0) << "row 1: no clock moved (neither pushed it)";
  EXPECT_FALSE(model.StepMovedRows(ledger)) << "once";
}

// The other order: the departed worker's gradient came first and is in the
// sum when the one left pushes, and in the count too: the mean of the two,
// where the row stepped on their sum over one (found in review).
TEST_F(RowAggregatorTest, AGradientADepartedWorkerPushedBeforeItLeftCountsInTheMean) {
  StalenessLedger ledger(2, 2, 0);
  RowAggregator model(layout, sgd, zeros);
  std::vector<PushedRow> w1 = {{0, RowEncoding::kFloat32, 1, Floats({6, 8})}};
  ASSERT_FALSE(*model.ApplyPush(1, 1, w1, ledger)) << "worker 0 holds the row";
  ledger.Deactivate(1);
  EXPECT_FALSE(model.StepMovedRows(ledger)) << "worker 0 holds it still";
  std::vector<PushedRow> w0 = {{0, RowEncoding::kFloat32, 1, Floats({2, 4})}};
  ASSERT_TRUE(*model.ApplyPush(0, 1, w0, ledger));
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -4) << "the mean of 2 and 6";
  EXPECT_FLOAT_EQ(model.row_values(0)[1], -6) << "the mean of 4 and 8";
}

// Without rounds, a restored ledger's clocks are where the rows' last steps
// were, nothing gathered: the first push after a resume waits for the
// others', as every push does, where it stepped its row alone from clock 0
// (found in review).
TEST_F(RowAggregatorTest, ARestoredLedgersClocksAreWhereTheRowsLastStepped) {
  StalenessLedger ledger(2, 2, 0);
  for (int w = 0; w < 2; ++w) {
    for (size_t r = 0; r < 2; ++r) ledger.RecordPush(w, r, 3);
    ledger.RecordIteration(w, 3);
  }
  for (int w = 0; w < 2; ++w) {
    for (size_t r = 0; r < 2; ++r) ledger.RecordSent(w, r);  // the rows at clock 3, as a Welcome sends them
  }
  RowAggregator model(layout, sgd, zeros);
  EXPECT_TRUE(model.StepMovedRows(ledger));
  EXPECT_EQ(model.version(0), 0) << "nothing gathered: the clock moves alone";
  EXPECT_FLOAT_EQ(model.row_values(0)[0], 0);
  std::vector<PushedRow> w0 = {{0, RowEncoding::kFloat32, 1, Floats({2, 4})}};
  std::vector<PushedRow> w1 = {{0, RowEncoding::kFloat32, 1, Floats({6, 8})}};
  const StatusOr<bool> first = model.ApplyPush(0, 4, w0, ledger);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(*first) << "worker 1 has not pushed iteration 4";
  const StatusOr<bool> second = model.ApplyPush(1, 4, w1, ledger);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(*second);
  EXPECT_EQ(model.version(0), 1);
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -4) << "one step on the mean";
}

// A bad push is refused whole: its good rows are not applied either, nothing
// is recorded of it, and refusal() names why.
TEST_F(RowAggregatorTest, APushWithABadRowIsRefusedWholeAndNothingOfItApplied) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::string good = Floats({1, 1}), with_nan = Floats({1, nan}), with_inf = Floats({inf, 1}), short_row = "abc",
                    huge = Floats({2e38f, 1});
  struct Case {
    std::vector<PushedRow> rows;
    const char* refusal;
    const char* message;
  } cases[] = {
      {{{0, RowEncoding::kFloat32, 1, good}, {7, RowEncoding::kFloat32, 1, good}}, "no_such_row", "row 7 does not exist"},
      {{{0, RowEncoding::kFloat32, 1, good}, {0, RowEncoding::kFloat32, 1, good}}, "row_twice",
       "row 0 comes twice for iteration 1"},
      {{{0, RowEncoding::kFloat32, 1, good}, {1, RowEncoding::kFloat32, 1, short_row}}, "undecodable", "carries 3 bytes"},
      {{{0, RowEncoding::kFloat32, 1, good}, {1, RowEncoding::kFloat32, 1, with_nan}}, "not_finite",
       "row 1 carries a NaN or an infinity"},
      {{{0, RowEncoding::kFloat32, 1, good}, {1, RowEncoding::kFloat32, 1, with_inf}}, "not_finite",
       "row 1 carries a NaN or an infinity"},
      // An int8 row's values are finite; a scale that is not makes them not.
      {{{0, RowEncoding::kFloat32, 1, good}, {1, RowEncoding::kInt8, inf, std::string(2, '\x01')}}, "not_finite",
       "row 1 carries a NaN or an infinity"},
      // Finite, and two of them sum to an infinity.
      {{{0, RowEncoding::kFloat32, 1, good}, {1, RowEncoding::kFloat32, 1, huge}}, "too_large",
       "row 1 carries a value beyond"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.refusal);
    StalenessLedger ledger(1, 2, 0);
    RowAggregator model(layout, sgd, zeros);
    auto stepped = model.ApplyPush(0, 1, c.rows, ledger);
    ASSERT_FALSE(stepped.ok());
    EXPECT_EQ(stepped.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(stepped.status().message().find(c.message), std::string::npos) << stepped.status().message();
    EXPECT_EQ(model.refusal(), c.refusal);
    EXPECT_EQ(ledger.Clock(0), 0) << "nothing of the push recorded";
    EXPECT_EQ(model.version(0), 0) << "its good row not applied";
    // The same worker's good push is applied as if the bad one never came.
    std::vector<PushedRow> fine = {{0, RowEncoding::kFloat32, 1, good}};
    ASSERT_TRUE(model.ApplyPush(0, 1, fine, ledger).ok());
    EXPECT_FLOAT_EQ(model.row_values(0)[0], -1);
  }
}

// A push crosses the link in parts, each applied as it comes: a row that an
// earlier part of the same push carried is refused, so that a worker's
// gradient counts once in the mean; the same row for the next iteration is not.
TEST_F(RowAggregatorTest, ARowOfAnEarlierPartOfThePushIsRefusedInALaterOne) {
  StalenessLedger ledger(1, 2, 4);  // S = 4: row 0 may run ahead of row 1
  RowAggregator model(layout, sgd, zeros);
  const std::string g = Floats({2, 2});
  const std::vector<PushedRow> row0 = {{0, RowEncoding::kFloat32, 1, g}};
  const std::vector<PushedRow> row1_then_row0 = {{1, RowEncoding::kFloat32, 1, g}, {0, RowEncoding::kFloat32, 1, g}};
  ASSERT_TRUE(model.ApplyPush(0, 1, row0, ledger).ok());
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -2);
  auto again = model.ApplyPush(0, 1, row1_then_row0, ledger);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(model.refusal(), "row_twice");
  EXPECT_NE(again.status().message().find("row 0 comes twice for iteration 1"), std::string::npos);
  EXPECT_EQ(ledger.pushed(0, 1), 0) << "nothing of the refused part recorded";
  // A refused part puts back the marks it made: row 0's for iteration 1 stands.
  const std::vector<PushedRow> row0_then_none = {{0, RowEncoding::kFloat32, 1, g}, {7, RowEncoding::kFloat32, 1, g}};
  ASSERT_FALSE(model.ApplyPush(0, 2, row0_then_none, ledger).ok());
  EXPECT_EQ(model.refusal(), "no_such_row");
  ASSERT_FALSE(model.ApplyPush(0, 1, row0, ledger).ok()) << "row 0 of iteration 1 still came already";
  EXPECT_EQ(model.refusal(), "row_twice");
  // Had the second row 0 been gathered, the next step would move it by 4.
  ASSERT_TRUE(model.ApplyPush(0, 2, row0, ledger).ok()) << "the next iteration's";
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -4) << "counted once";
  EXPECT_TRUE(model.ApplyPush(0, 2, {{{1, RowEncoding::kFloat32, 1, g}}}, ledger).ok())
      << "row 1 may come for iteration 2: the refused part left no mark";
  // A worker that starts over (a new stream) may push an iteration again.
  model.ForgetPushes(0);
  EXPECT_TRUE(model.ApplyPush(0, 2, row0, ledger).ok()) << "after a rejoin, not a duplicate";
}

// A worker back on a new stream before its teammate pushed the round's row
// pushes it again: its gradient, still gathered from its earlier stream,
// counts once in the mean. It had counted twice (found in review).
TEST_F(RowAggregatorTest, AGradientPushedAgainOnANewStreamWhileStillGatheredCountsOnce) {
  StalenessLedger ledger(2, 2, 4);
  RowAggregator model(layout, sgd, zeros);
  const std::vector<PushedRow> w0 = {{0, RowEncoding::kFloat32, 1, Floats({2, 4})}};
  const std::vector<PushedRow> w1 = {{0, RowEncoding::kFloat32, 1, Floats({6, 8})}};
  ASSERT_TRUE(model.ApplyPush(0, 1, w0, ledger).ok());
  model.ForgetPushes(0);  // its stream broke; back
  auto again = model.ApplyPush(0, 1, w0, ledger);
  ASSERT_TRUE(again.ok()) << "not refused as a duplicate";
  EXPECT_FALSE(*again);
  ASSERT_TRUE(model.ApplyPush(1, 1, w1, ledger).ok());
  EXPECT_EQ(model.version(0), 1);
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -4) << "minus the mean of 2 and 6, worker 0's counted once";
  EXPECT_FLOAT_EQ(model.row_values(0)[1], -6);
  // Its next iteration's is gathered as any.
  ASSERT_TRUE(model.ApplyPush(0, 2, w0, ledger).ok());
  ASSERT_TRUE(model.ApplyPush(1, 2, w1, ledger).ok());
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -8);
}

// Under a bound of 4 a worker pushes a row at iterations 1, 2 and 3 before
// its teammate's first; back on a new stream, set back to the team's
// iteration, it pushes them again. Each counts once: the row had stepped on
// the sum of seven gradients, six of them worker 0's (found in review).
TEST_F(RowAggregatorTest, GradientsOfIterationsAheadPushedAgainOnANewStreamCountOnce) {
  StalenessLedger ledger(2, 2, 4);
  RowAggregator model(layout, sgd, zeros);
  const std::vector<PushedRow> w0 = {{0, RowEncoding::kFloat32, 1, Floats({2, 4})}};
  const std::vector<PushedRow> w1 = {{0, RowEncoding::kFloat32, 1, Floats({6, 8})}};
  for (int64_t i = 1; i <= 3; ++i) ASSERT_TRUE(model.ApplyPush(0, i, w0, ledger).ok());
  model.ForgetPushes(0);
  ledger.Rejoin(0);
  for (int64_t i = 1; i <= 3; ++i) {
    auto again = model.ApplyPush(0, i, w0, ledger);
    ASSERT_TRUE(again.ok()) << "iteration " << i << ": not refused as a duplicate";
    EXPECT_FALSE(*again);
  }
  ASSERT_TRUE(model.ApplyPush(1, 1, w1, ledger).ok());
  EXPECT_EQ(model.version(0), 1);
  // Worker 0's three and worker 1's one, over four: (3 * 2 + 6) / 4 and (3 * 4 + 8) / 4.
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -3);
  EXPECT_FLOAT_EQ(model.row_values(0)[1], -5);
  // Stepped, the sum holds nothing of worker 0's: its next push is gathered as any.
  ASSERT_TRUE(model.ApplyPush(0, 4, w0, ledger).ok());
  ASSERT_TRUE(model.ApplyPush(1, 2, w1, ledger).ok());
  EXPECT_EQ(model.version(0), 2);
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -3 - (2 + 6) / 2.0f) << "the mean of worker 0's fourth and worker 1's second";
}

// No worker computes an iteration past what the rows it was sent allow (each
// at most S behind it): a push beyond is refused whole, as any bad push,
// before it moves a clock.
TEST_F(RowAggregatorTest, AnIterationBeyondWhatTheRowsSentAllowIsRefused) {
  StalenessLedger ledger(2, 2, 1);
  RowAggregator model(layout, sgd, zeros);
  const std::string g = Floats({1, 1});
  const std::vector<PushedRow> both = {{0, RowEncoding::kFloat32, 1, g}, {1, RowEncoding::kFloat32, 1, g}};
  // The rows at clock 0: iterations up to 0 + 1 + S = 2 can be computed.
  EXPECT_EQ(ledger.FurthestComputable(0), 2);
  for (int64_t iteration : {3LL, 1'000'000'000LL}) {
    auto refused = model.ApplyPush(0, iteration, both, ledger);
    ASSERT_FALSE(refused.ok()) << iteration;
    EXPECT_EQ(model.refusal(), "future_iteration");
    EXPECT_NE(refused.status().message().find("iteration " + std::to_string(iteration) + " is beyond 2, the furthest " +
                                              "the rows it was sent let it compute"),
              std::string::npos)
        << refused.status().message();
    EXPECT_EQ(ledger.pushed(0, 0), 0) << "nothing of it recorded";
    EXPECT_EQ(ledger.iteration(0), 0);
  }
  ASSERT_TRUE(model.ApplyPush(0, 2, both, ledger).ok()) << "within the bound";
  // Both workers in at iteration 2: the rows step and are sent at clock 2, and
  // worker 0 may now be as far as 2 + 1 + 1.
  ASSERT_TRUE(model.ApplyPush(1, 2, both, ledger).ok());
  for (size_t r = 0; r < 2; ++r) ledger.RecordSent(0, r);
  EXPECT_EQ(ledger.FurthestComputable(0), 4);
  EXPECT_FALSE(model.ApplyPush(0, 5, both, ledger).ok());
  EXPECT_TRUE(model.ApplyPush(0, 4, both, ledger).ok());
}

// Trained on from a worker's copy: its values, each row's last step at the
// ledger's clock (so the next push steps it once, not for every iteration
// since 0), nothing gathered; another model's copy is refused.
TEST_F(RowAggregatorTest, ResumesFromACopyAtTheLedgersClocks) {
  StalenessLedger ledger(1, 2, 4);
  RowAggregator model(layout, sgd, zeros);
  ASSERT_TRUE(model.ApplyPush(0, 1, {{{0, RowEncoding::kFloat32, 1, Floats({7, 7})}}}, ledger).ok());
  const std::vector<int64_t> clocks = {40, 41};
  ASSERT_TRUE(model.Resume({1, 2, 3, 4}, clocks).ok());
  ledger.Resume(clocks);
  EXPECT_FLOAT_EQ(model.parameters()[3], 4);
  EXPECT_EQ(model.least_applied_clock(), 40);
  for (size_t r = 0; r < 2; ++r) ledger.RecordSent(0, r);
  ASSERT_TRUE(model.ApplyPush(0, 41, {{{0, RowEncoding::kFloat32, 1, Floats({2, 2})}}}, ledger).ok());
  EXPECT_FLOAT_EQ(model.row_values(0)[0], 1 - 2) << "one step on the push alone: what was gathered before is gone";
  EXPECT_EQ(model.Resume({1, 2, 3}, clocks).code(), StatusCode::kFailedPrecondition);
}

TEST_F(RowAggregatorTest, RestoresOnlyAStateOfTheSameModel) {
  StalenessLedger ledger(1, 2, 4);
  RowAggregator model(layout, sgd, zeros);
  RowAggregator::State state = model.Snapshot();
  state.parameters = {1, 2, 3, 4};
  state.versions = {5, 6};
  ASSERT_TRUE(model.Restore(state).ok());
  EXPECT_FLOAT_EQ(model.parameters()[3], 4);
  EXPECT_EQ(model.version(1), 6);
  state.parameters.push_back(5);
  EXPECT_EQ(model.Restore(state).code(), StatusCode::kFailedPrecondition);
}

// Policy deadline: a row steps once a round on the mean of the gradients
// that reached it, however many; one for a round already stepped is dropped.
TEST_F(RowAggregatorTest, InRoundsARowStepsOnTheMeanOfWhatReachedItAndALateGradientIsDropped) {
  StalenessLedger ledger(3, 2, 0);
  RowAggregator model(layout, sgd, zeros);
  model.CloseRoundsAtDeadlines();
  const std::string g0 = Floats({3, 3}), g1 = Floats({9, 9}), late = Floats({100, 100});
  std::vector<PushedRow> r0 = {{0, RowEncoding::kFloat32, 1, g0}}, r1 = {{0, RowEncoding::kFloat32, 1, g1}};
  std::vector<PushedRow> r2 = {{0, RowEncoding::kFloat32, 1, late}};
  ASSERT_TRUE(model.ApplyPush(0, 1, r0, ledger).ok());
  ASSERT_TRUE(model.ApplyPush(1, 1, r1, ledger).ok());
  EXPECT_EQ(model.version(0), 0) << "worker 2 is counted in round 1";
  // Its deadline passes: worker 2 is excused and the row steps on the two it has.
  ledger.Excuse(2);
  EXPECT_TRUE(model.StepMovedRows(ledger));
  EXPECT_EQ(model.version(0), 1);
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -6) << "minus the mean of 3 and 9, not a third of their sum";
  EXPECT_EQ(model.least_applied_clock(), 0) << "row 1 had no push: it waits, as under bsp";
  // Worker 2's gradient for round 1 arrives after the round: dropped.
  ASSERT_TRUE(model.ApplyPush(2, 1, r2, ledger).ok());
  EXPECT_EQ(model.late_rows(), 1);
  EXPECT_EQ(model.version(0), 1);
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -6);
  // Row 1's round 1 closes too, and both rows go to every worker: round 2
  // can be computed.
  const std::vector<PushedRow> row1 = {{1, RowEncoding::kFloat32, 1, g0}};
  ASSERT_TRUE(model.ApplyPush(0, 1, row1, ledger).ok());
  ASSERT_TRUE(model.ApplyPush(1, 1, row1, ledger).ok());
  EXPECT_EQ(model.least_applied_clock(), 1);
  for (int w = 0; w < 3; ++w) {
    for (size_t r = 0; r < 2; ++r) ledger.RecordSent(w, r);
  }
  // Round 2, all three in: the late gradient is not in its mean either.
  ledger.Readmit(2);
  for (int w = 0; w < 3; ++w) ASSERT_TRUE(model.ApplyPush(w, 2, r0, ledger).ok());
  EXPECT_EQ(model.version(0), 2);
  EXPECT_FLOAT_EQ(model.row_values(0)[0], -9);
}

}  // namespace
}  // namespace edgetrain
