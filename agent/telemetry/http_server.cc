#include "agent/telemetry/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/telemetry/socket_address.h"

namespace edgetrain::agent {
namespace {

constexpr size_t kMaxRequestBytes = 16 * 1024;
constexpr int kRequestTimeoutMs = 2000;

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

void WriteAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away; nothing to do
    sent += static_cast<size_t>(n);
  }
}

std::string FormatAddress(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
  port = ntohs(in6->sin6_port);
  std::string bracketed = "[";
  bracketed.append(host).append("]:").append(std::to_string(port));
  return bracketed;
}

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address) {
  EDGETRAIN_ASSIGN_OR_RETURN(HostPort hp, SplitHostPort(address));
  EDGETRAIN_ASSIGN_OR_RETURN(AddrInfoPtr candidates, Resolve(hp, /*passive=*/true));
  std::string last_error = "no address";
  for (addrinfo* ai = candidates.get(); ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      last_error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    int wake[2];
    if (::pipe2(wake, O_CLOEXEC) != 0) {
      ::close(fd);
      return InternalError(std::string("pipe: ") + std::strerror(errno));
    }
    return std::unique_ptr<HttpServer>(new HttpServer(fd, wake, FormatAddress(bound)));
  }
  return UnavailableError("cannot serve HTTP on " + address + ": " + last_error);
}

HttpServer::HttpServer(int listen_fd, int wake_fd[2], std::string address)
    : listen_fd_(listen_fd), wake_read_fd_(wake_fd[0]), wake_write_fd_(wake_fd[1]), address_(std::move(address)) {
  thread_ = std::thread([this] { Serve(); });
}

HttpServer::~HttpServer() {
  char byte = 1;
  (void)!::write(wake_write_fd_, &byte, 1);
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_read_fd_);
  ::close(wake_write_fd_);
}

void HttpServer::Handle(const std::string& path, Handler handler) {
  std::lock_guard lock(mu_);
  handlers_[path] = std::move(handler);
}

void HttpServer::Serve() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int connection = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    Answer(connection);
    ::close(connection);
  }
}

void HttpServer::Answer(int connection) {
  timeval timeout{kRequestTimeoutMs / 1000, 0};
  ::setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string request;
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  HttpResponse response;
  // Request line: METHOD SP TARGET SP VERSION.
  size_t sp1 = request.find(' ');
  size_t sp2 = sp1 == std::string::npos ? sp1 : request.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) {
    response = {400, "text/plain", "malformed request line\n"};
  } else if (request.compare(0, sp1, "GET") != 0) {
    response = {405, "text/plain", "only GET is served here\n"};
  } else {
    std::string target = request.substr(sp1 + 1, sp2 - sp1 - 1);
    std::string path = target.substr(0, target.find('?'));
    Handler handler;
    {
      std::lock_guard lock(mu_);
      auto it = handlers_.find(path);
      if (it != handlers_.end()) handler = it->second;
    }
    response = handler ? handler() : HttpResponse{404, "text/plain", "not found: " + path + "\n"};
  }
  std::string head = "HTTP/1.1 ";
  head.append(std::to_string(response.status)).append(" ").append(ReasonPhrase(response.status));
  head.append("\r\nContent-Type: ").append(response.content_type);
  head.append("\r\nContent-Length: ").append(std::to_string(response.body.size()));
  head.append("\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n");
  WriteAll(connection, head);
  WriteAll(connection, response.body);
}

}  // namespace edgetrain::agent
