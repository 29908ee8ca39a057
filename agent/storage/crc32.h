#pragma once
// The CRC-32 (zlib's) a checkpoint carries of its message and a zip archive
// of each entry: what tells a torn or altered file from the one written.

#include <cstdint>
#include <string_view>

namespace edgetrain::agent {

// Of `bytes`, however many (zlib counts at most 4 GiB at a call).
uint32_t Crc32(std::string_view bytes);

}  // namespace edgetrain::agent
