#pragma once
// The JSON of the launch contract's last line, `result {...}`, as every agent
// command writes it, and of the lines `edgetrain` prints from such results
// (`--json`). Its strings quote what came from outside — a model's
// path, an error naming a file — and a byte there that is not UTF-8 is
// replaced (U+FFFD), not thrown on: the encoder's exception aborted
// `edgetrain evaluate`'s agent on a model in a Latin-1 folder.

#include <string>

#include <nlohmann/json.hpp>

namespace edgetrain::api {

inline std::string ResultJson(const nlohmann::json& result) {
  return result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace edgetrain::api
