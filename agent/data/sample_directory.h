#pragma once
// A real stream source (spec.data.stream.directory): a folder that a sensor
// process, a camera's uploader or a message-queue consumer drops samples into
// as CSV files, a label and then the features a row (agent/data/csv_format.h).
// Each file is read once, when it is first seen, in name order; a name
// starting with a dot is left alone, so a writer puts a file in whole by
// writing it under such a name (or elsewhere on the file system) and
// renaming it. Files are kept: what was read is remembered by name.
//
// The samples are kept in memory, appended, for the worker's stream buffer
// (core/sample_stream.h) to index: a buffer of bounded size takes from them,
// and what it dropped is not read again.

#include <set>
#include <string>
#include <vector>

#include "agent/data/dataset.h"
#include "core/status.h"

namespace edgetrain::agent {

class SampleDirectory {
 public:
  // `info`: the shape a sample must have and the classes its label is among.
  SampleDirectory(std::string folder, const DatasetInfo& info);

  struct Scan {
    int64_t first = 0;    // the index of the first sample that arrived
    int64_t samples = 0;  // how many arrived
    // Files that could not be read ("<file>:<line>: <what>"): left out, and
    // not tried again.
    std::vector<std::string> refused;
  };
  // Reads the files that appeared since the last look. A folder that does
  // not exist yet is empty: the source may not have started.
  Scan Look();

  const Dataset& samples() const { return samples_; }
  const std::string& folder() const { return folder_; }

 private:
  const std::string folder_;
  Dataset samples_;  // every sample read, features as floats
  std::set<std::string> seen_;
};

}  // namespace edgetrain::agent
