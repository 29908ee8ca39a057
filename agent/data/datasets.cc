// The data a job names: the built-in sets, from where Debian installs them, as
// instances of the file readers; or the manifest's files, by their format.
#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "agent/data/csv_format.h"
#include "agent/data/dataset.h"
#include "agent/data/idx_format.h"
#include "agent/data/image_folders.h"
#include "agent/data/npy_format.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

// The first directory of the search path holding `relative`, or "".
std::string Find(const DataSearchPath& search, const std::string& relative) {
  for (const auto& dir : search.directories) {
    fs::path p = fs::path(dir) / relative;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

std::string Searched(const DataSearchPath& search) {
  std::string s;
  for (const auto& d : search.directories) s += (s.empty() ? "" : ", ") + d;
  return s;
}

// The built-in sets' files come from Debian or scripts/deps, not from a
// manifest: one that does not read is a damaged copy, not the user's mistake.
template <typename T>
StatusOr<T> Installed(StatusOr<T> read) {
  if (!read.ok() && read.status().code() == StatusCode::kInvalidArgument) return DataLossError(read.status().message());
  return read;
}

void SetSizes(TrainTestSplit& split) {
  split.train.info.train_size = split.test.info.train_size = split.train.size();
  split.train.info.test_size = split.test.info.test_size = split.test.size();
}

StatusOr<TrainTestSplit> LoadFashionMnist(const DataSearchPath& search) {
  const std::string files[] = {"fashion-mnist/train-images-idx3-ubyte.gz", "fashion-mnist/train-labels-idx1-ubyte.gz",
                               "fashion-mnist/t10k-images-idx3-ubyte.gz", "fashion-mnist/t10k-labels-idx1-ubyte.gz"};
  std::string paths[4];
  for (int i = 0; i < 4; ++i) {
    paths[i] = Find(search, files[i]);
    if (paths[i].empty()) {
      return FailedPreconditionError("the fashion-mnist data set is not installed (looked for " + files[i] +
                                     " in " + Searched(search) +
                                     "); install it with: sudo apt-get install dataset-fashion-mnist");
    }
  }
  DatasetInfo info = InfoOf(DatasetName::kFashionMnist);
  TrainTestSplit split;
  EDGETRAIN_ASSIGN_OR_RETURN(split.train, Installed(ReadIdxFiles(paths[0], paths[1], info)));
  EDGETRAIN_ASSIGN_OR_RETURN(split.test, Installed(ReadIdxFiles(paths[2], paths[3], info)));
  SetSizes(split);
  return split;
}

// scikit-learn's digits.csv.gz: 1,797 rows of 64 pixel values (0..16) and a label.
StatusOr<TrainTestSplit> LoadDigits(const DataSearchPath& search) {
  std::string path = Find(search, "digits.csv.gz");
  if (path.empty()) path = Find(search, "digits/digits.csv.gz");
  if (path.empty()) {
    return FailedPreconditionError(
        "the digits data set is not installed (looked for digits.csv.gz in " + Searched(search) +
        "); `make` extracts it with scripts/deps, or install Debian's python3-sklearn");
  }
  DatasetInfo info = InfoOf(DatasetName::kDigits);
  const int pixels = info.height * info.width;
  // Grey levels 0 to 16, the label last.
  EDGETRAIN_ASSIGN_OR_RETURN(Dataset all, Installed(ReadCsvFile(path, info, {.label_column = -1, .max_level = 16})));
  if (all.size() != info.train_size + info.test_size) {
    return DataLossError(path + ": expected " + std::to_string(info.train_size + info.test_size) +
                         " samples, found " + std::to_string(all.size()));
  }
  // A fixed split (independent of any job's seed) so every run tests on the same 360.
  std::vector<int64_t> order(all.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(20240601));
  TrainTestSplit split;
  for (Dataset* d : {&split.train, &split.test}) {
    d->info = info;
    d->pixel_scale = all.pixel_scale;
  }
  for (size_t k = 0; k < order.size(); ++k) {
    Dataset& d = static_cast<int64_t>(k) < info.train_size ? split.train : split.test;
    const auto sample = all.pixels.begin() + order[k] * pixels;
    d.pixels.insert(d.pixels.end(), sample, sample + pixels);
    d.labels.push_back(all.labels[order[k]]);
  }
  return split;
}

// spec.data's shape, checked: a sample's and its labels'.
StatusOr<DatasetInfo> ShapeOf(const DataSource& files) {
  const DatasetInfo info = InfoOf(files);
  if (info.channels < 1 || info.height < 1 || info.width < 1 || info.classes < 1) {
    return InvalidArgumentError("spec.data: inputShape and classes must be positive");
  }
  return info;
}

// One split's files, in a format read a split at a time: all but image
// folders, whose test split takes its labels from the training folders' names.
StatusOr<Dataset> ReadPart(DataFormat format, const DataFiles& part, const DatasetInfo& info) {
  switch (format) {
    case DataFormat::kIdx: return ReadIdxFiles(part.features, part.labels, info);
    case DataFormat::kNpy: return ReadNpyFiles(part.features, part.labels, info);
    // A sample's size is what inputShape says, which may be what is wrong: a
    // user's inputShape of [7] for rows of 6 features read as a broken file.
    case DataFormat::kCsv: return ReadCsvFile(part.path, info, {.shape_from = "inputShape"});
    case DataFormat::kImages: break;
  }
  return InternalError("image folders are read with their training folders' classes");
}

}  // namespace

DataSearchPath SearchPathWith(const std::string& data_dir) {
  DataSearchPath search;
  if (!data_dir.empty()) search.directories.push_back(data_dir);
  search.directories.push_back("/usr/share/datasets");
  search.directories.push_back("/usr/lib/python3/dist-packages/sklearn/datasets/data");
  return search;
}

StatusOr<TrainTestSplit> LoadData(const DataSpec& data, const DataSearchPath& search) {
  if (!data.files) return LoadDataset(data.dataset, search);
  const DataSource& files = *data.files;
  EDGETRAIN_ASSIGN_OR_RETURN(const DatasetInfo info, ShapeOf(files));
  TrainTestSplit split;
  if (files.format == DataFormat::kImages) {
    EDGETRAIN_ASSIGN_OR_RETURN(split.train, ReadImageFolders(files.train.path, info));
    EDGETRAIN_ASSIGN_OR_RETURN(split.test, ReadImageFolders(files.test.path, info, split.train.class_names));
  } else {
    EDGETRAIN_ASSIGN_OR_RETURN(split.train, ReadPart(files.format, files.train, info));
    EDGETRAIN_ASSIGN_OR_RETURN(split.test, ReadPart(files.format, files.test, info));
  }
  SetSizes(split);
  return split;
}

StatusOr<Dataset> LoadTestData(const DataSpec& data, const DataSearchPath& search) {
  if (!data.files || data.files->format == DataFormat::kImages) {
    EDGETRAIN_ASSIGN_OR_RETURN(TrainTestSplit split, LoadData(data, search));
    return std::move(split.test);
  }
  EDGETRAIN_ASSIGN_OR_RETURN(const DatasetInfo info, ShapeOf(*data.files));
  TrainTestSplit split;
  EDGETRAIN_ASSIGN_OR_RETURN(split.test, ReadPart(data.files->format, data.files->test, info));
  SetSizes(split);
  return std::move(split.test);
}

StatusOr<TrainTestSplit> LoadDataset(DatasetName name, const DataSearchPath& search) {
  switch (name) {
    case DatasetName::kFashionMnist: return LoadFashionMnist(search);
    case DatasetName::kDigits: return LoadDigits(search);
  }
  return InternalError("unknown data set");
}

}  // namespace edgetrain::agent
