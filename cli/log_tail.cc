#include "cli/log_tail.h"

#include <deque>
#include <fstream>

namespace edgetrain::cli {

std::vector<std::string> LastLines(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  return {tail.begin(), tail.end()};
}

std::string LastWords(const std::string& path) {
  const std::vector<std::string> last = LastLines(path, 1);
  if (last.empty()) return "";
  const std::string& line = last.front();
  if (!line.starts_with("time=")) return line;  // a line of LibTorch's or gRPC's own
  const size_t space = line.find(' ');
  return space == std::string::npos ? "" : line.substr(space + 1);
}

std::string LogTail(const std::string& path, size_t lines) {
  std::string out;
  for (const auto& l : LastLines(path, lines)) out += "  | " + l + "\n";
  return out;
}

}  // namespace edgetrain::cli
