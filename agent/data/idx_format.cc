#include "agent/data/idx_format.h"

#include <cstdio>
#include <string>

namespace edgetrain::agent {

StatusOr<NumericArray> ParseIdx(std::string_view bytes, std::string_view source) {
  auto bad = [&](const std::string& why) { return InvalidArgumentError(std::string(source) + ": " + why); };
  auto u8 = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  if (bytes.size() < 4) return bad("too short for an IDX header");
  if (u8(0) != 0 || u8(1) != 0) return bad("not an IDX file (bad magic number)");
  NumericArray array;
  array.big_endian = true;
  switch (u8(2)) {
    case 0x08: array.type = ElementType::kUint8; break;
    case 0x09: array.type = ElementType::kInt8; break;
    case 0x0B: array.type = ElementType::kInt16; break;
    case 0x0C: array.type = ElementType::kInt32; break;
    case 0x0D: array.type = ElementType::kFloat32; break;
    case 0x0E: array.type = ElementType::kFloat64; break;
    default: {
      char type[8];
      std::snprintf(type, sizeof type, "0x%02X", u8(2));
      return bad(std::string("IDX element type ") + type + " is not one of IDX's types");
    }
  }
  const int dims = u8(3);
  if (dims == 0) return bad("IDX array has no dimensions");
  const size_t header = 4 + 4 * static_cast<size_t>(dims);
  if (bytes.size() < header) return bad("truncated IDX header");
  for (int d = 0; d < dims; ++d) {
    const size_t at = 4 + 4 * static_cast<size_t>(d);
    array.dims.push_back((int64_t{u8(at)} << 24) | (u8(at + 1) << 16) | (u8(at + 2) << 8) | u8(at + 3));
  }
  EDGETRAIN_RETURN_IF_ERROR(TakePayload(bytes, header, array, source));
  return array;
}

StatusOr<Dataset> ReadIdxFiles(const std::string& features_path, const std::string& labels_path,
                               const DatasetInfo& info) {
  return ReadArrayFiles(features_path, labels_path, info, ParseIdx);
}

}  // namespace edgetrain::agent
