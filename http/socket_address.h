#pragma once
// "HOST:PORT" (or "[v6]:PORT") split, for the agent's HTTP server and client.

#include <string>

#include "core/status.h"

namespace edgetrain::http {

struct HostPort {
  std::string host;
  std::string port;
};
StatusOr<HostPort> SplitHostPort(const std::string& address);

}  // namespace edgetrain::http
