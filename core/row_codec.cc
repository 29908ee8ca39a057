#include "core/row_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace edgetrain {
namespace {

// IEEE 754 binary16, round to nearest even; enough range for gradients and weights.
uint16_t ToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exponent = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float FromHalf(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0) {
    float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000 | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

}  // namespace

RowEncoding EncodingFor(Compression c) {
  switch (c) {
    case Compression::kFp16: return RowEncoding::kFloat16;
    case Compression::kInt8: return RowEncoding::kInt8;
    case Compression::kSign: return RowEncoding::kSign;
    case Compression::kNone:
    case Compression::kTopK: return RowEncoding::kFloat32;
  }
  return RowEncoding::kFloat32;
}

int64_t EncodedBytes(RowEncoding e, int64_t length) {
  switch (e) {
    case RowEncoding::kFloat32: return 4 * length;
    case RowEncoding::kFloat16: return 2 * length;
    case RowEncoding::kInt8: return length;
    case RowEncoding::kSign: return (length + 7) / 8;
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
    case RowEncoding::kFloat16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = ToHalf(values[i]);
        std::memcpy(row.bytes.data() + 2 * i, &h, 2);
      }
      break;
    case RowEncoding::kInt8: {
      float max_abs = 0;
      for (float v : values) {
        if (std::isfinite(v)) max_abs = std::max(max_abs, std::fabs(v));
      }
      row.scale = max_abs > 0 ? max_abs / 127.0f : 1.0f;
      for (size_t i = 0; i < n; ++i) {
        // A diverged gradient (NaN, inf) must not reach a float-to-int cast.
        float q = std::isfinite(values[i]) ? std::nearbyint(values[i] / row.scale) : 0.0f;
        row.bytes[i] = static_cast<char>(static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)));
      }
      break;
    }
    case RowEncoding::kSign: {
      double sum_abs = 0;
      for (float v : values) sum_abs += std::fabs(v);
      row.scale = n ? static_cast<float>(sum_abs / static_cast<double>(n)) : 0.0f;
      for (size_t i = 0; i < n; ++i) {
        if (values[i] >= 0) row.bytes[i / 8] = static_cast<char>(row.bytes[i / 8] | (1 << (i % 8)));
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
  if (e != RowEncoding::kFloat32 && e != RowEncoding::kFloat16 && e != RowEncoding::kInt8 && e != RowEncoding::kSign) {
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
    case RowEncoding::kSign:
      for (size_t i = 0; i < n; ++i) put(dst[i], (src[i / 8] >> (i % 8)) & 1 ? scale : -scale);
      break;
  }
  return Status::Ok();
}

}  // namespace

Status DecodeRow(RowEncoding e, float scale, std::string_view bytes, std::span<float> out) {
  return DecodeInto(e, scale, bytes, out, [](float& slot, float v) { slot = v; });
}

Status AddDecodedRow(RowEncoding e, float scale, std::string_view bytes, std::span<float> sum) {
  return DecodeInto(e, scale, bytes, sum, [](float& slot, float v) { slot += v; });
}

}  // namespace edgetrain
