#include "api/field_error.h"

namespace edgetrain::api {

std::string LinePrefix(const FieldLines* lines, const std::string& source, std::string path) {
  while (lines && !path.empty()) {
    if (auto found = lines->find(path); found != lines->end()) {
      return source + ":" + std::to_string(found->second) + ": ";
    }
    const size_t cut = path.find_last_of(".[");
    if (cut == std::string::npos) break;
    path.resize(cut);
  }
  return "";
}

Status ToStatus(const std::vector<FieldError>& errors, const FieldLines* lines, const std::string& source) {
  if (errors.empty()) return Status::Ok();
  std::string message;
  for (const auto& e : errors) {
    message += (message.empty() ? "" : "\n") + LinePrefix(lines, source, e.path) + e.ToString();
  }
  return InvalidArgumentError(message);
}

}  // namespace edgetrain::api
