#include "core/finite_step.h"

#include <cmath>
#include <string>

#include "core/float_sums.h"

namespace edgetrain {

namespace {

Status Diverged(const std::string& what, int64_t step) {
  return InvalidArgumentError(what + " at step " + std::to_string(step) +
                              ": the model diverged or computes a value that is not finite, and no step trains it "
                              "back; lower spec.optimizer.learningRate, or look at the model's forward (a log or a "
                              "division of 0) and at the data (a feature above about 1e19, squared, is an infinity). "
                              "Nothing of that step is kept: a checkpoint holds the weights from before it");
}

}  // namespace

Status FiniteStep(int64_t step, double loss) {
  if (std::isfinite(loss)) return Status::Ok();
  return Diverged(std::string("the training loss is ") + (std::isnan(loss) ? "NaN" : "infinite"), step);
}

Status FiniteEvaluation(double loss) {
  if (std::isfinite(loss)) return Status::Ok();
  return InvalidArgumentError(std::string("the model's loss on the test samples is ") +
                              (std::isnan(loss) ? "NaN" : "infinite") +
                              ": its outputs are not finite (weights that diverged, or a forward that computes NaN or "
                              "infinity), so its accuracy means nothing");
}

Status FiniteWeights(int64_t step, std::span<const float> weights) {
  if (!std::isinf(MagnitudeBound(weights))) return Status::Ok();
  return Diverged("the weights hold a NaN or an infinity", step);
}

}  // namespace edgetrain
