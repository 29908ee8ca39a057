#pragma once
// A data set in memory as plain arrays — no LibTorch here, so loading and
// partitioning are tested without it. Features are row-major, one sample after
// another, scaled to [0, 1].

#include <cstdint>
#include <string>
#include <vector>

#include "core/dataset_info.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain::agent {

struct Dataset {
  DatasetInfo info;           // shape and class count; sizes as loaded
  std::vector<float> features;  // size() * SampleSize()
  std::vector<int64_t> labels;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t SampleSize() const { return int64_t{info.channels} * info.height * info.width; }
  const float* Sample(int64_t i) const { return features.data() + i * SampleSize(); }
};

struct TrainTestSplit {
  Dataset train;
  Dataset test;
};

// Where data sets are looked for, first match wins. Filled in by main from the
// environment; see DefaultDataSearchPath().
struct DataSearchPath {
  std::vector<std::string> directories;
};

// $EDGETRAIN_DATA_DIR (if set), /usr/share/datasets (Debian's dataset-* packages),
// /usr/lib/python3/dist-packages/sklearn/datasets/data (python3-sklearn),
// then $XDG_CACHE_HOME/edgetrain/datasets (~/.cache/...; where `make` puts digits).
DataSearchPath DefaultDataSearchPath();

// Loads a built-in data set. A missing one is a FailedPrecondition whose message
// says exactly how to install it.
StatusOr<TrainTestSplit> LoadDataset(DatasetName name, const DataSearchPath& search);

}  // namespace edgetrain::agent
