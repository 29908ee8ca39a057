#include "core/row_codec.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/float_sums.h"

namespace edgetrain {
namespace {

// IEEE 754 binary16, round to nearest even; enough range for gradients and
// weights. Each case is computed and one selected, with integer compares
// only, so that the loops over a row are vectorised (a branch a value made
// fp16 the slowest codec but top-k; core/row_codec_test.cc holds the
// branching definitions these must match bit for bit).
inline uint16_t ToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;  // |f|
  // From 2^16 up (65520 and over round up to it): infinity; a NaN stays one, quiet.
  const uint32_t beyond = a > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // Under 2^-14, a half subnormal, in steps of 2^-24: added to 0.5, whose
  // float steps are 2^-24 too, |f| is rounded by the addition itself, and
  // the half's bits are what the sum has beyond 0.5 (0x400 when it rounds up
  // to the least normal half, which is that half's bits).
  const uint32_t subnormal = std::bit_cast<uint32_t>(std::bit_cast<float>(a) + 0.5f) - 0x3f000000u;
  // A normal half: the exponent rebased, the 13 mantissa bits that go
  // rounded to nearest even (0xfff, plus the kept bit's oddness), a carry
  // running on into the exponent, to infinity at the top.
  const uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
  // Selected by masks, not ?:, which let the compiler move the float addition
  // into a branch of its own (it may not be run for a value that does not
  // need it, as it may trap) and so keep the loop from being vectorised.
  const uint32_t is_beyond = 0u - static_cast<uint32_t>(a >= 0x47800000u);
  const uint32_t is_subnormal = 0u - static_cast<uint32_t>(a < 0x38800000u);
  const uint32_t half = (beyond & is_beyond) | (subnormal & is_subnormal) | (normal & ~(is_beyond | is_subnormal));
  return static_cast<uint16_t>(sign | half);
}

inline float FromHalf(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t bits = (h & 0x7fffu) << 13;  // exponent and mantissa where a float has them
  const uint32_t exponent = bits & 0x0f800000u;
  // Infinity and NaN keep an all-ones exponent; a normal half's is rebased;
  // a subnormal's value, m * 2^-24, is 2^-14 * (1 + m/1024) less 2^-14, exact.
  const uint32_t special = bits | 0x7f800000u;
  const uint32_t normal = bits + 0x38000000u;
  const uint32_t subnormal = std::bit_cast<uint32_t>(std::bit_cast<float>(bits + 0x38800000u) - 6.103515625e-05f);
  const uint32_t is_special = 0u - static_cast<uint32_t>(exponent == 0x0f800000u);
  const uint32_t is_subnormal = 0u - static_cast<uint32_t>(exponent == 0);
  const uint32_t magnitude = (special & is_special) | (subnormal & is_subnormal) | (normal & ~(is_special | is_subnormal));
  return std::bit_cast<float>(sign | magnitude);
}

// Round to the nearest whole number, ties to even, for |q| <= 2^22: adding and
// taking away 1.5 * 2^23 leaves no fraction bits to keep, so the addition
// rounds as the FPU does by default, as std::nearbyint would, without its call
// (which, below SSE4.1, is not inlined). Exact only without -ffast-math, which
// may fold the two away; the build never sets it.
inline int RoundToNearestEven(float q) {
  constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23
  return static_cast<int>((q + kShifter) - kShifter);
}

// Each byte's eight signs as +-1, bit j for value j.
const std::array<std::array<float, 8>, 256>& SignTable() {
  static const auto table = [] {
    std::array<std::array<float, 8>, 256> t{};
    for (unsigned byte = 0; byte < 256; ++byte) {
      for (unsigned j = 0; j < 8; ++j) t[byte][j] = (byte >> j) & 1 ? 1.0f : -1.0f;
    }
    return t;
  }();
  return table;
}

}  // namespace

RowEncoding EncodingFor(Compression c) {
  switch (c) {
    case Compression::kFp16: return RowEncoding::kFloat16;
    case Compression::kInt8: return RowEncoding::kInt8;
    case Compression::kSign: return RowEncoding::kSign;
    case Compression::kInt4: return RowEncoding::kInt4;
    case Compression::kTopK: return RowEncoding::kTopK;
    case Compression::kAdaptive: return RowEncoding::kInt8;
    case Compression::kNone: return RowEncoding::kFloat32;
  }
  return RowEncoding::kFloat32;
}

RowEncoding DownlinkEncodingFor(Compression c) {
  return c == Compression::kTopK || c == Compression::kAdaptive ? RowEncoding::kInt8 : EncodingFor(c);
}

int64_t TopKCount(int64_t length) {
  return std::min<int64_t>(length, std::max<int64_t>(1, static_cast<int64_t>(
                                                            std::ceil(static_cast<double>(length) * kTopKShare))));
}

namespace {

// Indices of the `k` largest magnitudes of `values` (a diverged value, NaN or
// inf, counts as none), in increasing order so that a decoder writes forwards.
std::vector<uint32_t> TopIndices(std::span<const float> values, int64_t k) {
  // Each magnitude computed once, beside its index, rather than twice in
  // every comparison the selection makes.
  std::vector<std::pair<float, uint32_t>> order(values.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = {IsFiniteBits(values[i]) ? std::fabs(values[i]) : 0.0f, i};
  std::nth_element(order.begin(), order.begin() + (k - 1), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<uint32_t> top(static_cast<size_t>(k));
  for (size_t i = 0; i < top.size(); ++i) top[i] = order[i].second;
  std::sort(top.begin(), top.end());
  return top;
}

}  // namespace

double TopKEnergyShare(std::span<const float> values) {
  if (values.empty()) return 1;
  const double total = FiniteSquaredNorm(values);
  if (total <= 0) return 1;
  double kept = 0;
  for (uint32_t i : TopIndices(values, TopKCount(static_cast<int64_t>(values.size())))) {
    kept += double{values[i]} * values[i];
  }
  return kept / total;
}

int64_t EncodedBytes(RowEncoding e, int64_t length) {
  switch (e) {
    case RowEncoding::kFloat32: return 4 * length;
    case RowEncoding::kFloat16: return 2 * length;
    case RowEncoding::kInt8: return length;
    case RowEncoding::kSign: return (length + 7) / 8;
    case RowEncoding::kTopK: return 8 * TopKCount(length);
    case RowEncoding::kInt4: return (length + 1) / 2;
  }
  return 4 * length;
}

EncodedRow EncodeRow(std::span<const float> values, RowEncoding e) {
  EncodedRow row;
  row.encoding = e;
  const size_t n = values.size();
  row.bytes.resize(static_cast<size_t>(EncodedBytes(e, static_cast<int64_t>(n))));
  switch (e) {
    case RowEncoding::kFloat32:
      std::memcpy(row.bytes.data(), values.data(), 4 * n);
      break;
    case RowEncoding::kFloat16: {
      const float* __restrict in = values.data();
      char* __restrict out = row.bytes.data();
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h = ToHalf(in[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      break;
    }
    case RowEncoding::kInt8: {
      const float max_abs = LargestFiniteMagnitude(values);
      // A quotient flushed to 0 (an agent flushes subnormals: agent/subnormal_floats.h)
      // is no scale: every value then rounds to 0, as under a scale of 1.
      float scale = max_abs / 127.0f;
      if (!(scale > 0)) scale = 1.0f;
      row.scale = scale;
      // Through locals: a store through a char pointer may alias anything, and
      // would have the loop read row.scale again for every value.
      signed char* __restrict out = reinterpret_cast<signed char*>(row.bytes.data());
      const float* __restrict in = values.data();
      // A diverged gradient (NaN, inf) is sent as 0: it must not reach a
      // float-to-int cast. With a normal scale every finite value's quotient
      // is within 127 * (1 + 2^-23) of 0 and rounds to at most 127, so the
      // loop needs no clamp, whose ordered compares (they may trap on a NaN)
      // would keep it from being vectorised.
      if (scale >= std::numeric_limits<float>::min()) {
        for (size_t i = 0; i < n; ++i) {
          const float v = IsFiniteBits(in[i]) ? in[i] : 0.0f;
          out[i] = static_cast<signed char>(RoundToNearestEven(v / scale));
        }
      } else {  // a subnormal scale: quotients may pass 127, or be infinite
        for (size_t i = 0; i < n; ++i) {
          const float v = in[i];
          out[i] = static_cast<signed char>(
              RoundToNearestEven(IsFiniteBits(v) ? std::clamp(v / scale, -127.0f, 127.0f) : 0.0f));
        }
      }
      break;
    }
    case RowEncoding::kSign: {
      row.scale = n ? static_cast<float>(SumOfMagnitudes(values) / static_cast<double>(n)) : 0.0f;
      // Eight values a byte, bit j for value j, set where the value is not
      // negative (a NaN reads as negative), without a branch a value.
      const float* __restrict in = values.data();
      char* __restrict out = row.bytes.data();
      const size_t whole = n / 8;
      for (size_t b = 0; b < whole; ++b) {
        unsigned bits = 0;
        for (unsigned j = 0; j < 8; ++j) bits |= static_cast<unsigned>(in[8 * b + j] >= 0.0f) << j;
        out[b] = static_cast<char>(bits);
      }
      unsigned tail = 0;
      for (size_t i = 8 * whole; i < n; ++i) tail |= static_cast<unsigned>(in[i] >= 0.0f) << (i % 8);
      if (n % 8) out[whole] = static_cast<char>(tail);
      break;
    }
    case RowEncoding::kInt4: {
      const float max_abs = LargestFiniteMagnitude(values);
      float scale = max_abs / 7.0f;  // as int8's, never 0
      if (!(scale > 0)) scale = 1.0f;
      row.scale = scale;
      const float* __restrict in = values.data();
      unsigned char* __restrict out = reinterpret_cast<unsigned char*>(row.bytes.data());
      // As in int8's, a diverged value goes as 0. Fifteen levels, -7 to 7, so
      // that 0 is one; a quotient past 7 (only where the scale is subnormal)
      // is clamped to it.
      const auto level = [&](size_t i) -> unsigned {
        const float v = IsFiniteBits(in[i]) ? in[i] : 0.0f;
        const float q = RoundToNearestEven(std::clamp(v / scale, -7.0f, 7.0f));
        return static_cast<unsigned>(static_cast<int>(q) & 0xF);
      };
      for (size_t i = 0; i + 1 < n; i += 2) out[i / 2] = static_cast<unsigned char>(level(i) | (level(i + 1) << 4));
      if (n % 2) out[n / 2] = static_cast<unsigned char>(level(n - 1));
      break;
    }
    case RowEncoding::kTopK: {
      char* out = row.bytes.data();
      for (uint32_t i : TopIndices(values, TopKCount(static_cast<int64_t>(n)))) {
        const float v = std::isfinite(values[i]) ? values[i] : 0.0f;
        std::memcpy(out, &i, 4);
        std::memcpy(out + 4, &v, 4);
        out += 8;
      }
      break;
    }
  }
  return row;
}

namespace {

// Decodes `bytes` value by value into `out` through `put(slot, value)`: writing
// (DecodeRow) or adding (AddDecodedRow) in the same single pass.
template <typename Put>
Status DecodeInto(RowEncoding e, float scale, std::string_view bytes, std::span<float> out, Put put) {
  const size_t n = out.size();
  if (e != RowEncoding::kFloat32 && e != RowEncoding::kFloat16 && e != RowEncoding::kInt8 && e != RowEncoding::kSign &&
      e != RowEncoding::kTopK && e != RowEncoding::kInt4) {
    return InvalidArgumentError("unknown row encoding " + std::to_string(static_cast<int>(e)));
  }
  if (static_cast<int64_t>(bytes.size()) != EncodedBytes(e, static_cast<int64_t>(n))) {
    return InvalidArgumentError("row of " + std::to_string(n) + " values carries " + std::to_string(bytes.size()) +
                                " bytes; expected " + std::to_string(EncodedBytes(e, static_cast<int64_t>(n))));
  }
  float* __restrict dst = out.data();
  const char* __restrict src = bytes.data();
  switch (e) {
    case RowEncoding::kFloat32:
      for (size_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, src + 4 * i, 4);  // the wire's bytes need not be aligned
        put(dst[i], v);
      }
      break;
    case RowEncoding::kFloat16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        put(dst[i], FromHalf(h));
      }
      break;
    case RowEncoding::kInt8:
      for (size_t i = 0; i < n; ++i) put(dst[i], static_cast<float>(static_cast<int8_t>(src[i])) * scale);
      break;
    case RowEncoding::kSign: {
      // A byte's eight signs from a table, times the scale: exact (a product
      // with +-1), and eight values a step the compiler can vectorise.
      const auto& signs = SignTable();
      const size_t whole = n / 8;
      for (size_t b = 0; b < whole; ++b) {
        const std::array<float, 8>& s = signs[static_cast<unsigned char>(src[b])];
        for (size_t j = 0; j < 8; ++j) put(dst[8 * b + j], s[j] * scale);
      }
      for (size_t i = 8 * whole; i < n; ++i) put(dst[i], (src[i / 8] >> (i % 8)) & 1 ? scale : -scale);
      break;
    }
    case RowEncoding::kInt4:
      for (size_t i = 0; i < n; ++i) {
        // The half byte as a signed 4-bit number: shifted to the top, then back.
        const auto nibble = static_cast<int8_t>(static_cast<uint8_t>(src[i / 2]) >> (4 * (i % 2)) << 4);
        put(dst[i], static_cast<float>(nibble >> 4) * scale);
      }
      break;
    case RowEncoding::kTopK:
      // Every index checked before any value lands: a malformed row changes nothing.
      for (size_t at = 0; at < bytes.size(); at += 8) {
        uint32_t i;
        std::memcpy(&i, src + at, 4);
        if (i >= n) {
          return InvalidArgumentError("top-k row of " + std::to_string(n) + " values names value " + std::to_string(i));
        }
      }
      for (size_t at = 0; at < bytes.size(); at += 8) {
        uint32_t i;
        float v;
        std::memcpy(&i, src + at, 4);
        std::memcpy(&v, src + at + 4, 4);
        put(dst[i], v);
      }
      break;
  }
  return Status::Ok();
}

}  // namespace

Status DecodeRow(RowEncoding e, float scale, std::string_view bytes, std::span<float> out) {
  if (e == RowEncoding::kTopK) {
    // Top-k names only the values it keeps: the others are 0.
    std::vector<float> kept(out.size(), 0.0f);
    EDGETRAIN_RETURN_IF_ERROR(DecodeInto(e, scale, bytes, kept, [](float& slot, float v) { slot = v; }));
    std::copy(kept.begin(), kept.end(), out.begin());
    return Status::Ok();
  }
  return DecodeInto(e, scale, bytes, out, [](float& slot, float v) { slot = v; });
}

Status AddDecodedRow(RowEncoding e, float scale, std::string_view bytes, std::span<float> sum) {
  return DecodeInto(e, scale, bytes, sum, [](float& slot, float v) { slot += v; });
}

}  // namespace edgetrain
