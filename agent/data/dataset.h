#pragma once
// A data set in memory as plain arrays — no LibTorch here, so loading and
// partitioning are tested without it. Samples are row-major, one after another.
// Byte sources (images, uint8 arrays, digits' grey levels) stay a byte a value,
// scaled as they are copied out: a quarter of the memory of floats in every
// agent (Fashion-MNIST's 55 MB rather than 219 MB, on devices that may have
// 2 GB). Float sources (csv, float npy or IDX) are kept as floats.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/byte_scale.h"
#include "core/dataset_info.h"
#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain::agent {

struct Dataset {
  DatasetInfo info;             // shape and class count; sizes as loaded
  // The samples, in one of two forms: `features` when it is not empty, else `pixels`.
  std::vector<uint8_t> pixels;  // size() * SampleSize()
  float pixel_scale = 1.0f;     // a feature's value is its pixel times this
  std::vector<float> features;  // size() * SampleSize(), used as they are
  std::vector<int64_t> labels;
  // What each label stands for, where the data names its classes (image
  // folders: label i is the i-th class folder's name, in name order, so
  // "10" before "2"); empty where labels are the data's own numbers.
  std::vector<std::string> class_names;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t SampleSize() const { return int64_t{info.channels} * info.height * info.width; }
  // Writes the features of samples [first, first + n) to `out`, n * SampleSize() floats.
  void CopySamples(int64_t first, int64_t n, float* out) const {
    if (!features.empty()) {
      std::copy_n(features.data() + first * SampleSize(), n * SampleSize(), out);
      return;
    }
    ScaleBytes(std::span<const uint8_t>(pixels.data() + first * SampleSize(), static_cast<size_t>(n * SampleSize())),
               pixel_scale, out);
  }
};

// What a label outside the classes is told, after the label: the range and
// the field that sets it, which is as often what is wrong as the file (a
// user's labels 0-3 under classes 3 were told of the file alone).
inline std::string OutOfTheClasses(int classes) {
  const std::string n = std::to_string(classes);
  return " is out of range [0, " + n + "): spec.data.classes is " + n;
}

// `n` of its samples spread evenly over it (every size/n-th), or all it
// has: what a team's coordinator or a pipeline's head, which train on none,
// keep of the training set to settle a model's buffers on
// (Trainer::SettleBuffers). Spread, not the first n: an image folder's
// samples come class by class.
inline Dataset SpreadSamples(const Dataset& data, int64_t n) {
  Dataset kept;
  kept.info = data.info;
  kept.pixel_scale = data.pixel_scale;
  const int64_t count = std::clamp<int64_t>(n, 0, data.size());
  const int64_t width = data.SampleSize();
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = k * data.size() / count;
    if (!data.features.empty()) {
      kept.features.insert(kept.features.end(), data.features.begin() + i * width,
                           data.features.begin() + (i + 1) * width);
    } else {
      kept.pixels.insert(kept.pixels.end(), data.pixels.begin() + i * width, data.pixels.begin() + (i + 1) * width);
    }
    kept.labels.push_back(data.labels[static_cast<size_t>(i)]);
  }
  return kept;
}

struct TrainTestSplit {
  Dataset train;
  Dataset test;
};

// Where data sets are looked for, first match wins.
struct DataSearchPath {
  std::vector<std::string> directories;
};

// `data_dir` (the agent's --data-dir; where `make` puts digits), then
// /usr/share/datasets (Debian's dataset-* packages), then
// /usr/lib/python3/dist-packages/sklearn/datasets/data (python3-sklearn).
DataSearchPath SearchPathWith(const std::string& data_dir);

// The environment's data folder, read only at a program's edge (mains, tests):
// $EDGETRAIN_DATA_DIR, else $XDG_CACHE_HOME/edgetrain/datasets, else
// ~/.cache/edgetrain/datasets, as scripts/deps has it.
std::string DefaultDataDir();
// SearchPathWith(DefaultDataDir()).
DataSearchPath DefaultDataSearchPath();

// Loads a built-in data set. A missing one is a FailedPrecondition whose message
// says exactly how to install it.
StatusOr<TrainTestSplit> LoadDataset(DatasetName name, const DataSearchPath& search);

// The data a job names: a built-in set, looked for on `search`, or spec.data's
// files at the paths given (`edgetrain run` has made them absolute). A bad file
// is an InvalidArgument naming the file and what is wrong with it.
StatusOr<TrainTestSplit> LoadData(const DataSpec& data, const DataSearchPath& search);

// Its test split alone, to measure a saved model on: a training file that is
// wrong is no reason not to (`edgetrain evaluate --job` refused a good test
// file for its training file's label: a new user's trial). Image folders and
// built-in sets are read whole: the training folders' names set each class's
// label, and a built-in set's files are the project's own.
StatusOr<Dataset> LoadTestData(const DataSpec& data, const DataSearchPath& search);

}  // namespace edgetrain::agent
