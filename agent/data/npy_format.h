#pragma once
// NumPy's .npy format (versions 1.0, 2.0 and 3.0): a magic string, a version, a
// header length and a Python dict literal giving dtype, memory order and shape,
// then the elements.

#include <string>
#include <string_view>

#include "agent/data/dataset.h"
#include "agent/data/numeric_array.h"
#include "core/status.h"

namespace edgetrain::agent {

// Parses one .npy array of integers or floats (dtypes |u1, |i1, <u2 ... <i8,
// <f4, <f8; little- or big-endian), in C order. Errors are InvalidArgument,
// prefixed with `source`.
StatusOr<NumericArray> ParseNpy(std::string_view bytes, std::string_view source);

// A data set from a features .npy and a labels .npy, each gzipped or not; see
// DatasetFromArrays for what they must hold.
StatusOr<Dataset> ReadNpyFiles(const std::string& features_path, const std::string& labels_path,
                               const DatasetInfo& info);

}  // namespace edgetrain::agent
