#include "agent/storage/archive_integrity.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "agent/storage/atomic_file.h"
#include "agent/storage/crc32.h"

namespace edgetrain::agent {
namespace {

// The zip format's records (APPNOTE.TXT), read through the list of entries at
// the archive's end: LibTorch writes each entry's CRC-32 and sizes in a
// descriptor after its bytes, not in its local header.
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfList = 0x06054b50;
constexpr uint32_t kZip64EndLocator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint16_t kZip64Extra = 0x0001;
constexpr uint16_t kStored = 0, kDeflated = 8;
constexpr uint32_t kTooLarge = 0xFFFFFFFFu;  // the figure is in the zip64 extra field

uint64_t Little(std::string_view b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}

// The CRC-32 of a deflated entry's bytes once inflated; nullopt if they do
// not inflate.
std::optional<uint32_t> InflatedCrc(std::string_view deflated) {
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(deflated.data()));
  z.avail_in = static_cast<uInt>(deflated.size());
  uLong crc = crc32(0L, Z_NULL, 0);
  unsigned char out[1 << 16];
  int result = Z_OK;
  while (result == Z_OK) {
    z.next_out = out;
    z.avail_out = sizeof out;
    result = inflate(&z, Z_NO_FLUSH);
    crc = crc32(crc, out, static_cast<uInt>(sizeof out - z.avail_out));
  }
  inflateEnd(&z);
  if (result != Z_STREAM_END) return std::nullopt;
  return static_cast<uint32_t>(crc);
}

}  // namespace

Status CheckArchiveIntegrity(const std::string& path) {
  EDGETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  return CheckArchiveBytes(bytes, path);
}

Status CheckArchiveBytes(std::string_view b, const std::string& path) {
  auto damaged = [&](const std::string& why) { return DataLossError(path + " is damaged (" + why + ")"); };
  if (b.size() < 4 || Little(b, 0, 4) != kLocalHeader) return InvalidArgumentError(path + " is not a zip archive");
  // The end of the list of entries: its record is the last 22 bytes, or
  // sooner by the length of a comment (at most 65,535 bytes).
  std::optional<size_t> end;
  for (size_t at = b.size() >= 22 ? b.size() - 22 : 0; b.size() >= 22; --at) {
    if (Little(b, at, 4) == kEndOfList) {
      end = at;
      break;
    }
    if (at == 0 || b.size() - at > 22 + 65535) break;
  }
  if (!end) return damaged("the end of its list of entries is missing: torn");
  uint64_t entries = Little(b, *end + 10, 2), list_at = Little(b, *end + 16, 4);
  if ((entries == 0xFFFF || list_at == kTooLarge) && *end >= 20 && Little(b, *end - 20, 4) == kZip64EndLocator) {
    const uint64_t zip64_end = Little(b, *end - 20 + 8, 8);
    // Offsets are read from the file: compared as what is left, so that a
    // damaged one cannot wrap round.
    if (zip64_end > b.size() || b.size() - zip64_end < 56 || Little(b, zip64_end, 4) != kZip64End) {
      return damaged("its zip64 end is torn");
    }
    entries = Little(b, zip64_end + 32, 8);
    list_at = Little(b, zip64_end + 48, 8);
  }
  if (list_at > b.size()) return damaged("its list of entries is torn");
  size_t at = list_at;
  for (uint64_t e = 0; e < entries; ++e) {
    if (b.size() - at < 46 || Little(b, at, 4) != kCentralHeader) return damaged("its list of entries is torn");
    const uint64_t method = Little(b, at + 10, 2), crc = Little(b, at + 16, 4);
    uint64_t stored = Little(b, at + 20, 4), size = Little(b, at + 24, 4), local = Little(b, at + 42, 4);
    const size_t name_bytes = Little(b, at + 28, 2), extra_bytes = Little(b, at + 30, 2),
                 comment_bytes = Little(b, at + 32, 2);
    if (b.size() - at < 46 + name_bytes + extra_bytes + comment_bytes) return damaged("its list of entries is torn");
    const std::string name(b.substr(at + 46, name_bytes));
    // Figures too large for 32 bits follow in the zip64 extra field, in
    // this order, each only when its 32-bit place says so.
    const size_t extra_end = at + 46 + name_bytes + extra_bytes;
    for (size_t x = at + 46 + name_bytes; x + 4 <= extra_end;) {
      const uint64_t id = Little(b, x, 2), length = Little(b, x + 2, 2);
      if (id == kZip64Extra) {
        size_t f = x + 4;
        for (uint64_t* figure : {&size, &stored, &local}) {
          if (*figure == kTooLarge && f + 8 <= std::min<size_t>(x + 4 + length, extra_end)) {
            *figure = Little(b, f, 8);
            f += 8;
          }
        }
      }
      x += 4 + length;
    }
    if (local > b.size() || b.size() - local < 30 || Little(b, local, 4) != kLocalHeader) {
      return damaged(name + "'s header is missing");
    }
    const uint64_t data_at = local + 30 + Little(b, local + 26, 2) + Little(b, local + 28, 2);
    if (data_at > b.size() || stored > b.size() - data_at) return damaged(name + " is cut short: torn");
    const std::string_view data = b.substr(data_at, stored);
    if (method == kStored && Crc32(data) != crc) return damaged("CRC-32 mismatch in " + name + ": torn or altered");
    if (method == kDeflated) {
      const std::optional<uint32_t> inflated = InflatedCrc(data);
      if (!inflated || *inflated != crc) return damaged("CRC-32 mismatch in " + name + ": torn or altered");
    }
    at += 46 + name_bytes + extra_bytes + comment_bytes;
  }
  return Status::Ok();
}

}  // namespace edgetrain::agent
