#pragma once
// Comma-separated samples, one a row: a label and the sample's features.

#include <string>
#include <string_view>

#include "agent/data/dataset.h"
#include "core/status.h"

namespace edgetrain::agent {

struct CsvOptions {
  // The label's column; negative counts from the end (-1: the last, as in
  // scikit-learn's digits.csv.gz).
  int label_column = 0;
  // 0: features are numbers used as they are, kept as floats. Otherwise each
  // is a whole number from 0 to max_level, kept as a byte and scaled by
  // 1 / max_level (digits: grey levels 0 to 16); at most 255.
  int max_level = 0;
  // Where a sample's size comes from, said beside it in a row of another
  // count ("inputShape"); empty: not said.
  std::string shape_from = {};
};

// The samples of `text`. Every row has 1 + channels x height x width values;
// a first line with anything that is not a number is a header and skipped;
// blank lines are skipped; a field may be quoted or padded with spaces. Errors
// are InvalidArgument, "<source>:<line>: <what>".
StatusOr<Dataset> ParseCsv(std::string_view text, const DatasetInfo& info, const CsvOptions& options,
                           std::string_view source);

// ParseCsv of a file, gunzipped when it is gzip.
StatusOr<Dataset> ReadCsvFile(const std::string& path, const DatasetInfo& info, const CsvOptions& options = {});

}  // namespace edgetrain::agent
