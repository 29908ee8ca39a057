#include "agent/telemetry/socket_address.h"

namespace edgetrain::agent {

StatusOr<HostPort> SplitHostPort(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    return InvalidArgumentError("expected HOST:PORT, got \"" + address + "\"");
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return HostPort{host, address.substr(colon + 1)};
}

StatusOr<AddrInfoPtr> Resolve(const HostPort& hp, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(hp.host.empty() ? nullptr : hp.host.c_str(), hp.port.c_str(), &hints, &result);
  if (rc != 0) return InvalidArgumentError("cannot resolve " + hp.host + ":" + hp.port + ": " + gai_strerror(rc));
  return AddrInfoPtr(result, &freeaddrinfo);
}

}  // namespace edgetrain::agent
