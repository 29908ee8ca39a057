#pragma once
// The IDX format of (Fashion-)MNIST: a big-endian header (two zero bytes, a type
// byte, a dimension count, one 32-bit size per dimension) and the elements,
// big-endian too.

#include <string>
#include <string_view>

#include "agent/data/dataset.h"
#include "agent/data/numeric_array.h"
#include "core/status.h"

namespace edgetrain::agent {

// Parses an IDX array of any of its types (unsigned and signed byte, 16- and
// 32-bit integers, float32, float64), checking that sizes and data agree.
// Errors are InvalidArgument, prefixed with `source`.
StatusOr<NumericArray> ParseIdx(std::string_view bytes, std::string_view source);

// A data set from an IDX features file and an IDX labels file, each gzipped or
// not; see DatasetFromArrays for what they must hold.
StatusOr<Dataset> ReadIdxFiles(const std::string& features_path, const std::string& labels_path,
                               const DatasetInfo& info);

}  // namespace edgetrain::agent
