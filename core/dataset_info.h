#pragma once
// The shapes of the built-in data sets, known before any file is read, so a
// manifest whose model cannot fit its data is refused before training starts.

#include <cstdint>

#include "core/job_spec.h"

namespace edgetrain {

struct DatasetInfo {
  int channels = 1;
  int height = 0;
  int width = 0;
  int classes = 0;
  int64_t train_size = 0;
  int64_t test_size = 0;
};

constexpr DatasetInfo InfoOf(DatasetName name) {
  switch (name) {
    case DatasetName::kFashionMnist: return {1, 28, 28, 10, 60000, 10000};
    // 1,797 images; a fixed 20% (360) is held out as the test set.
    case DatasetName::kDigits: return {1, 8, 8, 10, 1437, 360};
  }
  return {};
}

}  // namespace edgetrain
