#pragma once
// The model specs and data shapes LibTorch's tests build models from.

#include <vector>

#include "core/dataset_info.h"
#include "core/job_spec.h"

namespace edgetrain::agent::testing {

inline const DatasetInfo kDigits = InfoOf(DatasetName::kDigits);
inline const DatasetInfo kFashion = InfoOf(DatasetName::kFashionMnist);

inline ModelSpec Mlp(std::vector<int> hidden) { return {ModelKind::kMlp, std::move(hidden), {}}; }
inline ModelSpec Cnn(std::vector<int> channels) { return {ModelKind::kCnn, {}, std::move(channels)}; }
inline ModelSpec Vgg(std::vector<int> widths) { return {ModelKind::kVgg, {}, {}, std::move(widths)}; }

}  // namespace edgetrain::agent::testing
