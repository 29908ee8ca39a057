#include "api/field_error.h"

namespace edgetrain::api {

Status ToStatus(const std::vector<FieldError>& errors) {
  if (errors.empty()) return Status::Ok();
  std::string message;
  for (const auto& e : errors) message += (message.empty() ? "" : "\n") + e.ToString();
  return InvalidArgumentError(message);
}

}  // namespace edgetrain::api
