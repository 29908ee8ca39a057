#include "http/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/number_text.h"

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

StatusOr<int> ParsePort(const std::string& port) {
  int number = -1;
  const char* end = port.data() + port.size();
  const auto [stop, ec] = std::from_chars(port.data(), end, number);
  // from_chars takes a leading '-'; a port has digits only.
  if (port.empty() || port.front() == '-' || ec != std::errc() || stop != end || number > 65535) {
    return InvalidArgumentError("\"" + port + "\" is not a port number from 0 to 65535");
  }
  return number;
}

namespace {

// A socket bound to loopback port `port` (0: one the OS chooses), and the port
// it got; fd -1 when the bind failed. The caller closes it.
struct BoundPort {
  int fd = -1;
  int port = 0;
};

BoundPort BindLoopback(int port) {
  BoundPort bound;
  bound.fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (bound.fd < 0) return bound;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  if (::bind(bound.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(bound.fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound.port = ntohs(addr.sin_port);
  } else {
    ::close(bound.fd);
    bound.fd = -1;
  }
  return bound;
}

}  // namespace

int FreeLoopbackPort() { return FreeLoopbackPorts(1); }

int FreeLoopbackPorts(int count) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    // Every port of the run held at once while the others are tried, so that
    // none is counted free twice.
    std::vector<BoundPort> held = {BindLoopback(0)};
    if (held[0].fd < 0) return 0;
    const int first = held[0].port;
    while (static_cast<int>(held.size()) < count && first + static_cast<int>(held.size()) <= 65535) {
      BoundPort next = BindLoopback(first + static_cast<int>(held.size()));
      if (next.fd < 0) break;
      held.push_back(next);
    }
    const bool whole = static_cast<int>(held.size()) == count;
    for (const BoundPort& b : held) ::close(b.fd);
    if (whole) return first;
  }
  return 0;
}

StatusOr<int> DialWithin(const std::string& host, const std::string& port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string unreachable = "could not connect (nothing listens there yet, or the address is unreachable)";
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return UnavailableError(unreachable);
  }
  bool timed_out = false;
  int connected = -1;
  for (addrinfo* a = found; a != nullptr && connected < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    bool ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!ok && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int ready;
      do {
        ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
      } while (ready < 0 && errno == EINTR);
      int error = 0;
      socklen_t size = sizeof error;
      ok = ready == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 && error == 0;
      timed_out = timed_out || ready == 0;
    }
    if (ok) {
      connected = fd;
    } else {
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (connected >= 0) return connected;
  if (!timed_out) return UnavailableError(unreachable);
  return UnavailableError("no connection within " + PlainNumber(static_cast<double>(timeout.count()) / 1000) + " s");
}

std::string WhyNoListening(const std::string& address) {
  const StatusOr<HostPort> hp = SplitHostPort(address);
  if (!hp.ok()) return hp.status().message();
  if (const StatusOr<int> port = ParsePort(hp->port); !port.ok()) return port.status().message();
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string host = hp->host.empty() ? "0.0.0.0" : hp->host;
  if (const int failed = ::getaddrinfo(host.c_str(), hp->port.c_str(), &hints, &found); failed != 0) {
    return host + ": " + ::gai_strerror(failed);
  }
  std::string why = "no address of " + host;
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    const bool bound = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
    why = bound ? "" : std::strerror(errno);
    ::close(fd);
    if (bound) break;
  }
  ::freeaddrinfo(found);
  return why;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace edgetrain::http
