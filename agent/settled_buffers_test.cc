#include "agent/settled_buffers.h"

#include <gtest/gtest.h>

#include "agent/testing/fake_trainer.h"

namespace edgetrain::agent {
namespace {

// A model that counts its settlings.
class CountingTrainer final : public Trainer {
 public:
  StatusOr<double> ComputeGradient(const float*, const int64_t*, int64_t, std::span<float>) override { return 0.0; }
  std::span<float> Parameters() override { return weights; }
  std::vector<std::vector<int64_t>> ParameterShapes() const override { return {{2}}; }
  StatusOr<Evaluation> Evaluate(const Dataset&) override { return Evaluation{}; }
  Status SaveModel(const std::string&) override { return Status::Ok(); }
  int64_t ParameterCount() const override { return 2; }
  Status SettleBuffers(const Dataset&, int64_t) override {
    ++settled;
    return Status::Ok();
  }

  std::vector<float> weights = {1, 2};
  int settled = 0;
};

// Once for each weights: a run's end evaluates then saves the same ones.
TEST(SettledBuffersTest, TheSameWeightsAreSettledOnce) {
  CountingTrainer model;
  SettledBuffers buffers;
  buffers.Use(testing::FakeData(8, 0, 2).train, 4);
  ASSERT_TRUE(buffers.For(model).ok());
  ASSERT_TRUE(buffers.For(model).ok());
  EXPECT_EQ(model.settled, 1) << "evaluated, then saved";
  model.weights[1] = 3;  // a step, or Finish's final weights
  ASSERT_TRUE(buffers.For(model).ok());
  EXPECT_EQ(model.settled, 2);
  SettledBuffers none;  // a model without buffers keeps no samples
  ASSERT_TRUE(none.For(model).ok());
  EXPECT_EQ(model.settled, 2);
}

}  // namespace
}  // namespace edgetrain::agent
