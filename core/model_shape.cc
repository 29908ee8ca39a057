#include "core/model_shape.h"

#include <string>

namespace edgetrain {

std::vector<int> HiddenWidths(const ModelSpec& spec) {
  return spec.hidden.empty() ? std::vector<int>{128, 64} : spec.hidden;
}

std::vector<int> ConvChannels(const ModelSpec& spec) {
  return spec.channels.empty() ? std::vector<int>{16, 32} : spec.channels;
}

Status CheckModelFitsData(const ModelSpec& spec, const DatasetInfo& data) {
  if (spec.kind != ModelKind::kCnn) return Status::Ok();
  size_t blocks = ConvChannels(spec).size();
  size_t fit = 0;
  for (int side = std::min(data.height, data.width); side >= 2; side /= 2) ++fit;
  if (blocks <= fit) return Status::Ok();
  return InvalidArgumentError("spec.model.channels: " + std::to_string(blocks) + " conv blocks would halve the " +
                              std::to_string(data.height) + "x" + std::to_string(data.width) +
                              " images below 1x1; use at most " + std::to_string(fit));
}

}  // namespace edgetrain
