#include "core/finite_step.h"

#include <cmath>
#include <string>

#include "core/float_sums.h"

namespace edgetrain {

Status FiniteStep(int64_t step, double loss, std::span<const float> gradient) {
  std::string what;
  if (!std::isfinite(loss)) {
    what = std::string("the training loss is ") + (std::isnan(loss) ? "NaN" : "infinite");
  } else if (std::isinf(MagnitudeBound(gradient))) {
    what = "the gradient has a NaN or an infinity in it";
  } else {
    return Status::Ok();
  }
  return InvalidArgumentError(what + " at step " + std::to_string(step) +
                              ": the model diverged or computes a value that is not finite, and no step trains it "
                              "back; lower spec.optimizer.learningRate, or look at the model's forward (a log or a "
                              "division of 0). Nothing of that step is kept: a checkpoint holds the weights from before it");
}

}  // namespace edgetrain
