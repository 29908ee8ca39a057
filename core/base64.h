#pragma once
// Base64 (RFC 4648, standard alphabet, padding optional), as Kubernetes carries
// certificate and Secret data.

#include <string>
#include <string_view>

#include "core/status.h"

namespace edgetrain {

StatusOr<std::string> Base64Decode(std::string_view text);
std::string Base64Encode(std::string_view bytes);

}  // namespace edgetrain
