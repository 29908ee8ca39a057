#pragma once
// The shape of a job's samples, known before any file is read — the built-in
// sets' from here, a data set from files' from its manifest — so a manifest
// whose model cannot fit its data is refused before training starts.

#include <cstdint>
#include <string>

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

// A sample's declared shape as channels x height x width: [N] is 1 x 1 x N,
// [H, W] is 1 x H x W. Sizes are 0: unknown until the files are read.
inline DatasetInfo InfoOf(const DataSource& files) {
  DatasetInfo info;
  const std::vector<int>& s = files.input_shape;
  info.width = s.empty() ? 0 : s.back();
  info.height = s.size() >= 2 ? s[s.size() - 2] : 1;
  info.channels = s.size() >= 3 ? s[s.size() - 3] : 1;
  info.classes = files.classes;
  return info;
}

inline DatasetInfo InfoOf(const DataSpec& data) { return data.files ? InfoOf(*data.files) : InfoOf(data.dataset); }

// What to say when a worker's share of the training set is smaller than its
// batch, so that its steps repeat samples; empty when none is. One holder (a
// job of one, a pipeline's head) draws its batches in passes over the whole
// set, cut at a pass's end: its every step is the whole set, a batch smaller
// than asked for (it was said to repeat samples, a new user's trial). Shares as an
// even partition deals them, whole: some hold one more than others (1,437
// over 60: 23 or 24); a partition by label deals some fewer, which this does
// not know. (A new user's batch of 65,536 over 1,438 samples of their own
// trained to 0.15, its one step counted 131,072 samples, and nothing was
// said.)
inline std::string BatchOverShareWarning(int64_t train_size, int workers, int batch_size) {
  if (train_size <= 0 || workers <= 0) return "";
  const int64_t fewest = train_size / workers;
  if (fewest >= batch_size) return "";
  const bool uneven = train_size % workers != 0;
  // Those dealt one more may hold a batch (1,437 over 60 at 24: 57 do).
  const bool every = !uneven || fewest + 1 < batch_size;
  const std::string held = every && uneven ? std::to_string(fewest) + " or " + std::to_string(fewest + 1)
                                           : std::to_string(fewest);
  const std::string samples = held == "1" ? " training sample" : " training samples";
  if (workers == 1) {
    return "the job holds " + held + samples + ", fewer than its batch of " + std::to_string(batch_size) +
           ": every step takes all " + held + ", a batch of " + held;
  }
  const std::string who = every ? "each worker holds " : "some workers hold ";
  // The way out, said (a new user's trial asked for it).
  return who + held + samples + ", fewer than " + (every ? "its" : "their") + " batch of " +
         std::to_string(batch_size) + ": " + (every ? "every step repeats" : "their steps repeat") +
         " samples (spec.data.batchSize " + std::to_string(std::max<int64_t>(1, fewest)) + " or less does not)";
}

// One sample's shape as a model's forward takes it, without the batch
// dimension: as spec.data declares it, or a built-in set's [channels, height,
// width]. A TorchScript model is handed exactly this; a built-in one reshapes.
inline std::vector<int> SampleShape(const DataSpec& data) {
  if (data.files) return data.files->input_shape;
  const DatasetInfo info = InfoOf(data.dataset);
  return {info.channels, info.height, info.width};
}

}  // namespace edgetrain
