#include "http/socket_address.h"

namespace edgetrain::http {

StatusOr<HostPort> SplitHostPort(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    return InvalidArgumentError("expected HOST:PORT, got \"" + address + "\"");
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return HostPort{host, address.substr(colon + 1)};
}

}  // namespace edgetrain::http
