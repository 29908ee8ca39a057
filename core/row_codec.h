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
};

RowEncoding EncodingFor(Compression c);

struct EncodedRow {
  RowEncoding encoding = RowEncoding::kFloat32;
  float scale = 1;
  std::string bytes;
};

// Bytes a row of `length` floats takes on the wire, payload only.
int64_t EncodedBytes(RowEncoding e, int64_t length);

EncodedRow EncodeRow(std::span<const float> values, RowEncoding e);
// Writes the decoded values into `out` (whose size gives the row length).
Status DecodeRow(RowEncoding e, float scale, std::string_view bytes, std::span<float> out);
// Adds the decoded values to `sum`, in one pass: gradients gathering at the
// coordinator, differences reaching a worker's copy.
Status AddDecodedRow(RowEncoding e, float scale, std::string_view bytes, std::span<float> sum);

}  // namespace edgetrain
