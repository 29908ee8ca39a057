#pragma once
// The digits data set (8x8 images, 1,437 training samples), loaded once per
// test process: what the engines' tests with real LibTorch models train on.

#include "agent/data/dataset.h"

namespace edgetrain::agent::testing {

const TrainTestSplit& Digits();

}  // namespace edgetrain::agent::testing
