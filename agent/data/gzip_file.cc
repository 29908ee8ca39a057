#include "agent/data/gzip_file.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/number_text.h"

namespace edgetrain::agent {
namespace {

Status TooLarge(const std::string& path, uint64_t most_bytes, bool unpacked) {
  return InvalidArgumentError(path + (unpacked ? ": unpacks to more than " : ": more than ") +
                              BinaryBytes(static_cast<double>(most_bytes)) +
                              ", a quarter of the memory this agent may use (a data set is held in memory whole): "
                              "train on a part of it, or on a device with more memory");
}

}  // namespace

StatusOr<std::string> ReadGzipFile(const std::string& path, uint64_t most_bytes) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) return NotFoundError(path + ": " + std::strerror(errno));
  gzbuffer(file, 1 << 20);
  std::string content;
  char buffer[1 << 16];
  for (;;) {
    int n = gzread(file, buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      std::string why = gzerror(file, &code);
      gzclose(file);
      return DataLossError(path + ": " + why);
    }
    if (n == 0) break;
    if (content.size() + static_cast<size_t>(n) > most_bytes) {
      const bool unpacked = gzdirect(file) == 0;
      gzclose(file);
      return TooLarge(path, most_bytes, unpacked);
    }
    content.append(buffer, static_cast<size_t>(n));
  }
  // A truncated gzip stream reads as a short file with Z_BUF_ERROR at the end.
  int code = Z_OK;
  gzerror(file, &code);
  gzclose(file);
  if (code != Z_OK && code != Z_STREAM_END) return DataLossError(path + ": truncated or corrupt gzip stream");
  return content;
}

uint64_t DataFileLimit() {
  // Read once: a process's memory and its cgroup's limit do not change while it loads its data.
  static const uint64_t kLimit = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    uint64_t memory = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
                                                 : uint64_t{1} << 32;
    // A pod's limit is its cgroup's; "max" (none) reads as no number.
    std::ifstream cgroup("/sys/fs/cgroup/memory.max");
    uint64_t limit = 0;
    if (cgroup >> limit && limit > 0) memory = std::min(memory, limit);
    return memory / 4;
  }();
  return kLimit;
}

StatusOr<std::string> ReadDataFile(const std::string& path, uint64_t most_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  // Not there is said so; a file the system cannot look at says why (a
  // folder the agent may not enter, a loop of links), not "no such file"
  // (found in review).
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    return InvalidArgumentError(path + ": " + ec.message());
  }
  if (!std::filesystem::exists(status)) return InvalidArgumentError(path + ": no such file");
  if (std::filesystem::is_directory(status)) return InvalidArgumentError(path + ": a folder, not a file");
  // A pipe or a device (/dev/zero) has no end to read to.
  if (!std::filesystem::is_regular_file(status)) {
    return InvalidArgumentError(path + ": not a regular file (a pipe or a device): a data file is read whole");
  }
  // Too large before it is read; a gzip file's unpacked size is found as it unpacks.
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > most_bytes) {
    return TooLarge(path, most_bytes, false);
  }
  StatusOr<std::string> content = ReadGzipFile(path, most_bytes);
  if (!content.ok()) return InvalidArgumentError(content.status().message());
  return content;
}

}  // namespace edgetrain::agent
