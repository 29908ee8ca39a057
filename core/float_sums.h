#pragma once
// Sums over a span of floats that run every round over a whole model (the row
// codec, a worker's push): in double, in eight running sums added at the end,
// so that each addition need not wait on the one before, and the compiler can
// vectorise them. Deterministic: the same values give the same sum, bit for
// bit; not the sum of a single running total, from which it may differ in the
// last bits of the double.

#include <bit>
#include <cstdint>
#include <span>

namespace edgetrain {

// The sum of |v|.
double SumOfMagnitudes(std::span<const float> values);
// The sum of v * v.
double SquaredNorm(std::span<const float> values);
// The sum of v * v over the finite values only (a diverged value adds nothing).
double FiniteSquaredNorm(std::span<const float> values);
// The largest |v| of the finite values; 0 if there is none.
float LargestFiniteMagnitude(std::span<const float> values);
// The largest |v|, or infinity if a value is not finite: every value is
// finite and within `b` exactly when it is at most `b`.
float MagnitudeBound(std::span<const float> values);

// Finite: an exponent not all ones. On the bits, with no float compare, whose
// trap on a NaN would keep a loop that uses it from being vectorised.
inline bool IsFiniteBits(float v) { return (std::bit_cast<uint32_t>(v) & 0x7f800000u) != 0x7f800000u; }

}  // namespace edgetrain
