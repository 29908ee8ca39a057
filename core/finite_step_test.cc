#include "core/finite_step.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace edgetrain {
namespace {

TEST(FiniteStep, AFiniteStepIsOk) {
  const std::vector<float> weights = {0.5f, -2.0f, 0.0f};
  EXPECT_TRUE(FiniteStep(3, 0.7).ok());
  EXPECT_TRUE(FiniteWeights(3, weights).ok());
}

TEST(FiniteStep, ANaNLossSaysSoAndWhatToChange) {
  const Status s = FiniteStep(12, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the training loss is NaN at step 12"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("spec.optimizer.learningRate"), std::string::npos) << s.message();
  EXPECT_NE(FiniteStep(1, std::numeric_limits<double>::infinity()).message().find("is infinite"), std::string::npos);
}

TEST(FiniteStep, AnEvaluationWhoseLossIsNotFiniteHasNoAccuracy) {
  EXPECT_TRUE(FiniteEvaluation(0.42).ok());
  const Status nan = FiniteEvaluation(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(nan.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nan.message().find("the model's loss on the test samples is NaN"), std::string::npos) << nan.message();
  EXPECT_NE(nan.message().find("its accuracy means nothing"), std::string::npos) << nan.message();
  EXPECT_NE(FiniteEvaluation(std::numeric_limits<double>::infinity()).message().find("is infinite"), std::string::npos);
}

TEST(FiniteStep, WeightsWithAnInfinityOrANaNAreNotKept) {
  std::vector<float> weights(1000, 0.1f);
  weights[777] = std::numeric_limits<float>::infinity();
  const Status s = FiniteWeights(5, weights);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the weights hold a NaN or an infinity at step 5"), std::string::npos) << s.message();
  weights[777] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(FiniteWeights(5, weights).ok());
}

}  // namespace
}  // namespace edgetrain
