#include "core/pipeline_words.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(PipelineWordsTest, RanksAndPacesReadAsSentences) {
  EXPECT_EQ(SayRanks({3}), "rank 3");
  EXPECT_EQ(SayRanks({1, 2}), "ranks 1 and 2");
  EXPECT_EQ(SayRanks({0, 1, 2}), "ranks 0, 1 and 2");
  EXPECT_EQ(SayPaces({{0, 1.934}, {2, 1.1}}), "rank 0 1.93x, rank 2 1.10x");
  EXPECT_EQ(LeavingOut({}), "");
  EXPECT_EQ(LeavingOut({1, 3}), ", leaving rank 1, rank 3 out");
  EXPECT_EQ(DriftNote(std::nullopt), "");
  EXPECT_EQ(DriftNote(1), " (ended as rank 1's compute changed: its steps since count)");
  EXPECT_EQ(Seconds3(1.3861), "1.39");
}

TEST(PipelineWordsTest, StagesAndTheirSecondsAreSaidInOrder) {
  const std::vector<PipelineStage> stages = {{0, 2, {0, 1}}, {2, 4, {2}}};
  EXPECT_EQ(DescribeStagesOf(stages), "layers 0-1 on ranks 0,1 | layers 2-3 on rank 2");
  std::vector<StageMeasure> measured(2);
  measured[0].seconds = 0.01214;
  measured[1].seconds = 0.0483;
  EXPECT_EQ(SayStageSeconds(measured), "stage 1 0.0121 s, stage 2 0.0483 s");
  TransportCost learned;
  EXPECT_EQ(OrdersNote(learned, 64), "") << "nothing learned";
  learned.orders_s = 0.00044;
  learned.message_s = 0.00005;
  EXPECT_EQ(OrdersNote(learned, 64), " (the head's word and the stages' answers 0.44 ms a step, as the run's last 64 "
                                     "steps took them; two messages as profiled, 0.10 ms)");
}

}  // namespace
}  // namespace edgetrain
