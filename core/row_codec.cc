#include "core/row_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

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
  std::vector<uint32_t> order(values.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  auto magnitude = [&](uint32_t i) { return std::isfinite(values[i]) ? std::fabs(values[i]) : 0.0f; };
  std::nth_element(order.begin(), order.begin() + (k - 1), order.end(),
                   [&](uint32_t a, uint32_t b) { return magnitude(a) > magnitude(b); });
  order.resize(static_cast<size_t>(k));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

double TopKEnergyShare(std::span<const float> values) {
  if (values.empty()) return 1;
  double total = 0, kept = 0;
  for (float v : values) {
    if (std::isfinite(v)) total += double{v} * v;
  }
  if (total <= 0) return 1;
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
      e != RowEncoding::kTopK) {
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
