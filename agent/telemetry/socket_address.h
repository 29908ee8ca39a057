#pragma once
// "HOST:PORT" (or "[v6]:PORT") to and from socket addresses, for the agent's
// HTTP server and client.

#include <netdb.h>
#include <sys/socket.h>

#include <memory>
#include <string>

#include "core/status.h"

namespace edgetrain::agent {

struct HostPort {
  std::string host;
  std::string port;
};
StatusOr<HostPort> SplitHostPort(const std::string& address);

// getaddrinfo for a numeric or named host; `passive` for binding.
using AddrInfoPtr = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;
StatusOr<AddrInfoPtr> Resolve(const HostPort& hp, bool passive);

}  // namespace edgetrain::agent
