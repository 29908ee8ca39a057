#include "http/http_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/number_text.h"
#include "http/socket_address.h"

namespace edgetrain::http {
namespace {

// Why a hand-made client and not httplib's: httplib bounds each read alone,
// and reads a status line and headers of any number before a caller sees a
// byte. A peer sending a header a second held the operator's reconcile
// worker as long as it liked, and one streaming 4 kB header lines took its
// memory to 2 GB in 8 s (a security review): what answers /progress is a
// job's own image. Here the whole answer, head and body, is taken within
// one deadline and one size.

using Steady = std::chrono::steady_clock;

// What an answer's head (status line and headers) may take beside its body.
constexpr size_t kMostHeadBytes = size_t{64} << 10;

std::string Seconds(std::chrono::milliseconds d) { return PlainNumber(static_cast<double>(d.count()) / 1000) + " s"; }

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Whether `fd` is ready for `events` before `until`.
bool ReadyBy(int fd, short events, Steady::time_point until) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Steady::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0;
  }
}

// The body of a chunked answer, or none while it is not whole.
std::optional<std::string> Unchunked(std::string_view text) {
  std::string body;
  size_t at = 0;
  for (;;) {
    const size_t line_end = text.find("\r\n", at);
    if (line_end == std::string_view::npos) return std::nullopt;
    size_t size = 0;
    size_t i = at;
    for (; i < line_end && std::isxdigit(static_cast<unsigned char>(text[i])); ++i) {
      if (size > (kMostReplyBytes << 4)) return std::nullopt;
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
      size = size * 16 + static_cast<size_t>(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    if (i == at) return std::nullopt;  // no size
    at = line_end + 2;
    if (size == 0) return body;  // trailers, if any, are not read
    if (text.size() < at + size + 2) return std::nullopt;
    body.append(text.substr(at, size));
    at += size + 2;
  }
}

// The lower-case name of a header line and its value, trimmed.
std::pair<std::string, std::string> Header(std::string_view line) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return {};
  std::string name(line.substr(0, colon));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t' || value.back() == '\r')) {
    value.remove_suffix(1);
  }
  return {name, std::string(value)};
}

}  // namespace

StatusOr<HttpReply> HttpGet(const std::string& address, const std::string& path, std::chrono::milliseconds timeout) {
  EDGETRAIN_ASSIGN_OR_RETURN(HostPort hp, SplitHostPort(address));
  const StatusOr<int> port = ParsePort(hp.port);
  if (!port.ok()) return InvalidArgumentError("expected HOST:PORT, got \"" + address + "\"");
  const std::string url = "GET http://" + address + path + ": ";
  auto fail = [&](const std::string& why) { return UnavailableError(url + why); };
  const Steady::time_point deadline = Steady::now() + 2 * timeout;
  StatusOr<int> fd = DialWithin(hp.host, std::to_string(*port), timeout);
  if (!fd.ok()) return fail(fd.status().message());
  const Socket socket(*fd);

  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + address +
                              "\r\nAccept: */*\r\nConnection: close\r\n\r\n";
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(socket.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
               ReadyBy(socket.fd(), POLLOUT, std::min(deadline, Steady::now() + timeout))) {
      continue;
    } else {
      return fail("the request could not be sent");
    }
  }

  // The whole answer, read until the peer closes it (Connection: close) or
  // its Content-Length is in; each read within `timeout`, all of it within
  // twice that, and no more than a body's limit beside a head's.
  std::string answer;
  std::optional<size_t> head_end;  // where the body begins
  bool has_length = false;  // Content-Length said, and then:
  size_t length = 0;
  bool chunked = false;
  int status = 0;
  char buffer[16384];
  for (;;) {
    if (head_end && has_length && answer.size() >= *head_end + length) break;
    // A chunked answer's last chunk in: done, whether or not the peer
    // closes (it was asked to).
    if (head_end && chunked && answer.size() >= *head_end + 5 && answer.ends_with("0\r\n\r\n") &&
        Unchunked(std::string_view(answer).substr(*head_end))) {
      break;
    }
    const Steady::time_point idle_until = Steady::now() + timeout;
    if (!ReadyBy(socket.fd(), POLLIN, std::min(deadline, idle_until))) {
      if (answer.empty() && Steady::now() < deadline) {
        return fail("no answer read within " + Seconds(timeout) + ", or the connection closed");
      }
      return fail("its answer was not all in within " + Seconds(2 * timeout));
    }
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) break;  // closed: the answer is what came
    answer.append(buffer, static_cast<size_t>(n));
    if (answer.size() > kMostReplyBytes + kMostHeadBytes) {
      return fail("its answer is longer than " + std::to_string(kMostReplyBytes >> 20) + " MiB");
    }
    if (!head_end) {
      const size_t end = answer.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (answer.size() > kMostHeadBytes) {
          return fail("its answer's headers are longer than " + std::to_string(kMostHeadBytes >> 10) + " KiB");
        }
        continue;
      }
      head_end = end + 4;
      const std::string_view head(answer.data(), end);
      const size_t line_end = head.find("\r\n");
      const std::string_view status_line = head.substr(0, line_end);
      // "HTTP/1.1 200 OK"
      if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) return fail("its answer is not HTTP");
      for (size_t i = 9; i < 12; ++i) {
        if (!std::isdigit(static_cast<unsigned char>(status_line[i]))) return fail("its answer is not HTTP");
        status = status * 10 + (status_line[i] - '0');
      }
      for (size_t at = line_end == std::string_view::npos ? head.size() : line_end + 2; at < head.size();) {
        const size_t next = std::min(head.find("\r\n", at), head.size());
        const auto [name, value] = Header(head.substr(at, next - at));
        if (name == "content-length") {
          char* rest = nullptr;
          const unsigned long long declared = std::strtoull(value.c_str(), &rest, 10);
          if (value.empty() || *rest != '\0') return fail("its answer's Content-Length is not a number");
          if (declared > kMostReplyBytes) {
            return fail("its answer is longer than " + std::to_string(kMostReplyBytes >> 20) + " MiB");
          }
          length = static_cast<size_t>(declared);
          has_length = true;
        } else if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) {
          chunked = true;
        }
        at = next + 2;
      }
      if (chunked) has_length = false;  // the chunks say where it ends
    }
  }
  if (!head_end) return fail("no answer read within " + Seconds(timeout) + ", or the connection closed");
  const std::string_view rest = std::string_view(answer).substr(*head_end);
  if (chunked) {
    std::optional<std::string> body = Unchunked(rest);
    if (!body) return fail("its answer ended before its last chunk");
    return HttpReply{status, std::move(*body)};
  }
  if (has_length) {
    if (rest.size() < length) return fail("the connection closed before its answer was all in");
    return HttpReply{status, std::string(rest.substr(0, length))};
  }
  return HttpReply{status, std::string(rest)};
}

}  // namespace edgetrain::http
