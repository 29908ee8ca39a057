#include "agent/testing/digits.h"

#include <cstdlib>
#include <iostream>

namespace edgetrain::agent::testing {

const TrainTestSplit& Digits() {
  static const TrainTestSplit* digits = [] {
    auto split = LoadDataset(DatasetName::kDigits, DefaultDataSearchPath());
    if (!split.ok()) {
      std::cerr << "cannot load the digits: " << split.status().ToString() << "\n";
      std::abort();
    }
    return new TrainTestSplit(std::move(*split));
  }();
  return *digits;
}

}  // namespace edgetrain::agent::testing
