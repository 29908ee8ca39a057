#include "core/step_time_model.h"

#include <gtest/gtest.h>

#include <random>

namespace edgetrain {
namespace {

TEST(StepTimeModelTest, WhileBatchesStayTheSameAStepIsAllPerSample) {
  StepTimeModel model;
  EXPECT_EQ(model.cost().sample_seconds, 0);  // not measured yet
  for (int i = 0; i < 10; ++i) model.Observe(32, 0.002 + 32 * 0.0001);
  EXPECT_EQ(model.cost().fixed_seconds, 0);
  EXPECT_NEAR(model.cost().sample_seconds, 0.0052 / 32, 1e-9);
}

TEST(StepTimeModelTest, BatchesThatVaryTellTheFixedCostApartAndItIsKeptOnceTheyStopVarying) {
  // 2 ms a step and 0.1 ms a sample, timed with 5% noise.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(0.95, 1.05);
  StepTimeModel model;
  auto step = [&](int64_t n) { model.Observe(n, (0.002 + static_cast<double>(n) * 0.0001) * noise(rng)); };
  for (int i = 0; i < 10; ++i) step(32);
  // Dealt a few samples from now on (compute-weighted batches): a step over
  // its samples would say 0.5 ms a sample, five times the truth.
  for (int i = 0; i < 100; ++i) step(5);
  EXPECT_NEAR(model.cost().sample_seconds, 0.0001, 0.00003);
  EXPECT_NEAR(model.cost().fixed_seconds, 0.002, 0.0003);
  // Batches that vary by themselves (a stream's) are fitted all along.
  StepTimeModel streamed;
  for (int i = 0; i < 200; ++i) {
    const int64_t n = 4 + (i * 7) % 29;
    streamed.Observe(n, (0.002 + static_cast<double>(n) * 0.0001) * noise(rng));
  }
  EXPECT_NEAR(streamed.cost().sample_seconds, 0.0001, 0.00002);
  EXPECT_NEAR(streamed.cost().fixed_seconds, 0.002, 0.0004);
}

TEST(StepTimeModelTest, AFixedCostThatNoLongerFitsIsDropped) {
  StepTimeModel model;
  for (int i = 0; i < 40; ++i) model.Observe(i % 2 ? 8 : 32, 0.010 + (i % 2 ? 8 : 32) * 0.0001);
  EXPECT_NEAR(model.cost().fixed_seconds, 0.010, 1e-6);
  // The device became ten times as fast, its batch steady: a step now takes
  // less than the fixed cost told before, which goes. What is kept is what
  // the fit made of the change while it was under way; a step of the batch
  // it sees is what its model says.
  for (int i = 0; i < 200; ++i) model.Observe(8, 0.001 + 8 * 0.00001);
  EXPECT_LT(model.cost().fixed_seconds, 0.5 * 0.00108);
  EXPECT_NEAR(model.cost().fixed_seconds + 8 * model.cost().sample_seconds, 0.00108, 1e-6);
}

}  // namespace
}  // namespace edgetrain
