#include "agent/data/idx_format.h"

#include <string>

namespace edgetrain::agent {

StatusOr<IdxArray> ParseIdx(std::string_view bytes, int expected_dims, std::string_view source) {
  auto bad = [&](const std::string& why) { return DataLossError(std::string(source) + ": " + why); };
  auto u8 = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  if (bytes.size() < 4) return bad("too short for an IDX header");
  if (u8(0) != 0 || u8(1) != 0) return bad("not an IDX file (bad magic number)");
  if (u8(2) != 0x08) return bad("IDX element type " + std::to_string(u8(2)) + " is not unsigned byte");
  int dims = u8(3);
  if (dims != expected_dims) {
    return bad("expected " + std::to_string(expected_dims) + " dimensions, found " + std::to_string(dims));
  }
  size_t header = 4 + 4 * static_cast<size_t>(dims);
  if (bytes.size() < header) return bad("truncated IDX header");
  IdxArray array;
  size_t count = 1;
  for (int d = 0; d < dims; ++d) {
    size_t at = 4 + 4 * static_cast<size_t>(d);
    int64_t n = (int64_t{u8(at)} << 24) | (u8(at + 1) << 16) | (u8(at + 2) << 8) | u8(at + 3);
    array.dims.push_back(n);
    count *= static_cast<size_t>(n);
  }
  if (bytes.size() - header != count) {
    return bad("header promises " + std::to_string(count) + " bytes of data, file has " +
               std::to_string(bytes.size() - header));
  }
  array.data = bytes.substr(header);
  return array;
}

}  // namespace edgetrain::agent
