#pragma once
// Encoding of a row's values on the wire. Lossy encodings are used with error
// feedback: the sender subtracts what the receiver will decode from its residual,
// so what compression loses is sent later rather than dropped.

#include <span>
#include <string>

#include "core/job_spec.h"
#include "core/status.h"

namespace edgetrain {

enum class RowEncoding {
  kFloat32 = 0,
  kFloat16 = 1,
  kInt8 = 2,   // symmetric, scale = max|x| / 127 per row
  kSign = 3,   // 1 bit per value, scale = mean|x| per row (ROG as published)
  // The row's largest values by magnitude, kTopKShare of them (at least one),
  // each as a uint32 index and its float32 value; the rest read as 0.
  kTopK = 4,
  // Symmetric, scale = max|x| / 7 per row, two values a byte (value 2i in
  // the low half): half int8's bytes.
  kInt4 = 5,
};

// The share of a row's values top-k keeps: a row of 784 sends 25 of them, in
// a quarter of int8's bytes.
inline constexpr double kTopKShare = 1.0 / 32;
int64_t TopKCount(int64_t length);

// The encoding a job's compression starts with (adaptive: int8, until a
// worker has measured what top-k would keep).
RowEncoding EncodingFor(Compression c);
// The encoding of the differences a coordinator sends down. Top-k of them
// would leave a worker's model off in all but a few values a row until later
// updates caught up, and it computes on that model: a job of top-k or
// adaptive pushes gets int8 differences down.
RowEncoding DownlinkEncodingFor(Compression c);

struct EncodedRow {
  RowEncoding encoding = RowEncoding::kFloat32;
  float scale = 1;
  std::string bytes;
};

// Bytes a row of `length` floats takes on the wire, payload only.
int64_t EncodedBytes(RowEncoding e, int64_t length);

EncodedRow EncodeRow(std::span<const float> values, RowEncoding e);
// The share of the squared norm of `values` that top-k keeps; 1 for a row of
// zeros (top-k loses nothing of it).
double TopKEnergyShare(std::span<const float> values);

// Writes the decoded values into `out` (whose size gives the row length).
Status DecodeRow(RowEncoding e, float scale, std::string_view bytes, std::span<float> out);
// Adds the decoded values to `sum`, in one pass: gradients gathering at the
// coordinator, differences reaching a worker's copy.
Status AddDecodedRow(RowEncoding e, float scale, std::string_view bytes, std::span<float> sum);

}  // namespace edgetrain
