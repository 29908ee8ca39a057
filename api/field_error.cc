#include "api/field_error.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace edgetrain::api {

namespace {

// The line `path` was written on, or the nearest field's it is under; 0: none known.
int LineOf(const FieldLines* lines, std::string path) {
  while (lines && !path.empty()) {
    if (auto found = lines->find(path); found != lines->end()) return found->second;
    const size_t cut = path.find_last_of(".[");
    if (cut == std::string::npos) break;
    path.resize(cut);
  }
  return 0;
}

}  // namespace

std::string LinePrefix(const FieldLines* lines, const std::string& source, std::string path) {
  const int line = LineOf(lines, std::move(path));
  return line > 0 ? source + ":" + std::to_string(line) + ": " : "";
}

Status ToStatus(const std::vector<FieldError>& errors, const FieldLines* lines, const std::string& source) {
  if (errors.empty()) return Status::Ok();
  // In the file's order where lines are known, as a compiler's are: the
  // checks run schema first, then the rules across fields, and a user read
  // line 12's error before line 3's (a user's trial). Errors of no known
  // line keep their order, after.
  std::vector<std::pair<int, const FieldError*>> ordered;
  for (const auto& e : errors) {
    const int line = LineOf(lines, e.path);
    ordered.emplace_back(line > 0 ? line : std::numeric_limits<int>::max(), &e);
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string message;
  for (const auto& [line, e] : ordered) {
    message += (message.empty() ? "" : "\n") + LinePrefix(lines, source, e->path) + e->ToString();
  }
  return InvalidArgumentError(message);
}

}  // namespace edgetrain::api
