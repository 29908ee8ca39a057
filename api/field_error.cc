#include "api/field_error.h"

namespace edgetrain::api {

namespace {

// The line of `path`, or of the nearest field it is under that was written; 0: none.
int LineOf(const FieldLines& lines, std::string path) {
  while (!path.empty()) {
    if (auto found = lines.find(path); found != lines.end()) return found->second;
    const size_t cut = path.find_last_of(".[");
    if (cut == std::string::npos) return 0;
    path.resize(cut);
  }
  return 0;
}

}  // namespace

Status ToStatus(const std::vector<FieldError>& errors, const FieldLines* lines, const std::string& source) {
  if (errors.empty()) return Status::Ok();
  std::string message;
  for (const auto& e : errors) {
    const int line = lines ? LineOf(*lines, e.path) : 0;
    const std::string where = line > 0 ? source + ":" + std::to_string(line) + ": " : "";
    message += (message.empty() ? "" : "\n") + where + e.ToString();
  }
  return InvalidArgumentError(message);
}

}  // namespace edgetrain::api
