#pragma once
// The IDX format of (Fashion-)MNIST: a big-endian header (two zero bytes, a type
// byte, a dimension count, one 32-bit size per dimension) and unsigned bytes.

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace edgetrain::agent {

struct IdxArray {
  std::vector<int64_t> dims;
  std::string_view data;  // into the buffer that was parsed
};

// Parses an unsigned-byte IDX array, checking that sizes and dimensions agree.
StatusOr<IdxArray> ParseIdx(std::string_view bytes, int expected_dims, std::string_view source);

}  // namespace edgetrain::agent
