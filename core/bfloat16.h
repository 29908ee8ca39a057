#pragma once
// bfloat16: a float32's sign, its 8 exponent bits and the top 7 of its
// mantissa, in 2 bytes. It keeps float32's range, so an Adam second moment of
// 1e-12 stays 1e-12 (float16's smallest is 6e-8: it would read as 0 and the
// step as a division by epsilon), at about 3 significant digits. A pipeline
// stage's replica carries its optimizer's moments so (core/job_spec.h,
// ReplicaMoments).

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace edgetrain {

// 2 bytes a value, in this machine's byte order as the float32 bytes around
// them are; each rounded to the nearest (ties to even), NaN kept a NaN.
std::string EncodeBfloat16(std::span<const float> values);
// Float32 bytes (4 a value) from bfloat16 ones: exact, since every bfloat16
// is a float32. InvalidArgument for an odd count of bytes.
StatusOr<std::string> Bfloat16ToFloat32Bytes(std::string_view bytes);

}  // namespace edgetrain
