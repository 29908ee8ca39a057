#include "core/training_schedule.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::seconds;

const TimePoint kStart = TimePoint{} + std::chrono::hours(1);

TEST(TrainingScheduleTest, EvaluatesOnTheMultiplesOfItsPeriodInIterations) {
  struct Case {
    int every;
    int64_t start;      // where the job starts or resumes
    int64_t iteration;  // seen at a tick
    bool due;
  } cases[] = {
      {100, 0, 99, false}, {100, 0, 100, true},  {100, 0, 250, true},
      {100, 150, 199, false}, {100, 150, 200, true},  // a resumed job keeps the marks
      {1, 0, 1, true},
  };
  for (const auto& c : cases) {
    TrainingSchedule schedule({c.every, std::nullopt}, 0, c.start, kStart);
    EXPECT_EQ(schedule.EvaluationDue(c.iteration, kStart), c.due)
        << "every " << c.every << " from " << c.start << " at " << c.iteration;
  }
}

TEST(TrainingScheduleTest, ATickPastSeveralMarksEvaluatesOnceThenAimsAtTheNext) {
  TrainingSchedule schedule({100, std::nullopt}, 0, 0, kStart);
  ASSERT_TRUE(schedule.EvaluationDue(350, kStart));
  schedule.Evaluated(350, kStart);
  EXPECT_FALSE(schedule.EvaluationDue(399, kStart));
  EXPECT_TRUE(schedule.EvaluationDue(400, kStart));
}

TEST(TrainingScheduleTest, EvaluatesEveryPeriodInSecondsToo) {
  TrainingSchedule schedule({1000, 5.0}, 0, 0, kStart);
  EXPECT_FALSE(schedule.EvaluationDue(10, kStart + seconds(4)));
  EXPECT_TRUE(schedule.EvaluationDue(10, kStart + seconds(5)));
  schedule.Evaluated(10, kStart + seconds(5));
  EXPECT_FALSE(schedule.EvaluationDue(20, kStart + seconds(9)));
  EXPECT_TRUE(schedule.EvaluationDue(20, kStart + seconds(10)));
}

TEST(TrainingScheduleTest, CheckpointsOnTheirOwnMarksAndNeverWhenOff) {
  TrainingSchedule off({100, std::nullopt}, 0, 0, kStart);
  EXPECT_FALSE(off.CheckpointDue(1'000'000));
  TrainingSchedule schedule({100, std::nullopt}, 500, 0, kStart);
  EXPECT_FALSE(schedule.CheckpointDue(499));
  EXPECT_TRUE(schedule.CheckpointDue(500));
  schedule.Checkpointed(730);
  EXPECT_FALSE(schedule.CheckpointDue(999));
  EXPECT_TRUE(schedule.CheckpointDue(1000));
}

}  // namespace
}  // namespace edgetrain
