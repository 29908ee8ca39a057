#pragma once
// An array of numbers as IDX and npy files store them — element type, byte
// order, shape and the raw bytes — and the one way such a pair of arrays
// becomes a data set, so both formats take the same element types and refuse
// the same mistakes with the same words.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/data/dataset.h"
#include "core/status.h"

namespace edgetrain::agent {

enum class ElementType { kUint8, kInt8, kUint16, kInt16, kUint32, kInt32, kUint64, kInt64, kFloat32, kFloat64 };

// "uint8", "float32", ...: NumPy's names, which users know.
std::string_view NameOf(ElementType type);
int SizeOf(ElementType type);

struct NumericArray {
  ElementType type = ElementType::kUint8;
  bool big_endian = false;
  std::vector<int64_t> dims;
  std::string_view data;  // into the buffer that was parsed; exactly the shape's elements
};

// "(60000, 28, 28)", as NumPy prints a shape.
std::string ShapeText(const std::vector<int64_t>& dims);

// The element count `dims` promises, or -1 when it overflows.
int64_t ElementCount(const std::vector<int64_t>& dims);

// Points `array.data` at what follows a header of `header` bytes, when that
// is exactly the elements array's dims and type promise: a truncated or padded
// file is refused in the same words whichever format promised.
Status TakePayload(std::string_view bytes, size_t header, NumericArray& array, std::string_view source);

// A format's parser: the array in `bytes`, errors naming `source`.
using ArrayParser = StatusOr<NumericArray> (*)(std::string_view bytes, std::string_view source);

// A features file and a labels file of one format, read (gunzipped when they
// are gzip), parsed and made a data set by DatasetFromArrays.
StatusOr<Dataset> ReadArrayFiles(const std::string& features_path, const std::string& labels_path,
                                 const DatasetInfo& info, ArrayParser parse);

// Samples from `features` ([N, ...] whose N-th part holds info's
// channels x height x width values; uint8 kept as bytes and scaled 1/255,
// float32 and float64 as floats) and their labels from `labels` ([N] or [N, 1]
// of integers in [0, info.classes)). Errors are InvalidArgument naming the file.
StatusOr<Dataset> DatasetFromArrays(const NumericArray& features, const std::string& features_path,
                                    const NumericArray& labels, const std::string& labels_path,
                                    const DatasetInfo& info);

}  // namespace edgetrain::agent
