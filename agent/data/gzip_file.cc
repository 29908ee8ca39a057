#include "agent/data/gzip_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace edgetrain::agent {

StatusOr<std::string> ReadGzipFile(const std::string& path) {
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
    content.append(buffer, static_cast<size_t>(n));
  }
  // A truncated gzip stream reads as a short file with Z_BUF_ERROR at the end.
  int code = Z_OK;
  gzerror(file, &code);
  gzclose(file);
  if (code != Z_OK && code != Z_STREAM_END) return DataLossError(path + ": truncated or corrupt gzip stream");
  return content;
}

StatusOr<std::string> ReadDataFile(const std::string& path) {
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
  StatusOr<std::string> content = ReadGzipFile(path);
  if (!content.ok()) return InvalidArgumentError(content.status().message());
  return content;
}

}  // namespace edgetrain::agent
