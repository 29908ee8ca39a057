#include "agent/telemetry/http_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/telemetry/socket_address.h"

namespace edgetrain::agent {
namespace {

constexpr int kTimeoutMs = 3000;

// Connects with a deadline: a dead peer must not hang the runner's poll loop.
int ConnectWithin(const addrinfo* ai, int timeout_ms, std::string& error) {
  int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) {
    error = std::strerror(errno);
    return -1;
  }
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
    error = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int soerr = 0;
  socklen_t len = sizeof soerr;
  if (::poll(&p, 1, timeout_ms) != 1 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
    error = soerr ? std::strerror(soerr) : "connection timed out";
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  timeval timeout{kTimeoutMs / 1000, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  return fd;
}

}  // namespace

StatusOr<HttpReply> HttpGet(const std::string& address, const std::string& path) {
  EDGETRAIN_ASSIGN_OR_RETURN(HostPort hp, SplitHostPort(address));
  EDGETRAIN_ASSIGN_OR_RETURN(AddrInfoPtr candidates, Resolve(hp, /*passive=*/false));
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* ai = candidates.get(); ai && fd < 0; ai = ai->ai_next) fd = ConnectWithin(ai, kTimeoutMs, error);
  const std::string what = "GET http://" + address + path;
  if (fd < 0) return UnavailableError(what + ": " + error);

  std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + address + "\r\nConnection: close\r\n\r\n";
  std::string reply;
  bool sent = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size());
  char buffer[8192];
  for (ssize_t n; sent && (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) reply.append(buffer, static_cast<size_t>(n));
  ::close(fd);

  // The server closes the connection after one response (Connection: close).
  size_t header_end = reply.find("\r\n\r\n");
  if (!sent || reply.compare(0, 5, "HTTP/") != 0 || header_end == std::string::npos) {
    return UnavailableError(what + ": no complete HTTP response");
  }
  HttpReply out;
  out.status = std::atoi(reply.c_str() + reply.find(' ') + 1);
  out.body = reply.substr(header_end + 4);
  return out;
}

}  // namespace edgetrain::agent
