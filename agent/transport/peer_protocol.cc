#include "agent/transport/peer_protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "http/socket_address.h"

namespace edgetrain::agent {
namespace {

// A TLS 1.2 ClientHello of one record: any TLS server answers it with a
// record of its own, a ServerHello (0x16) or, liking nothing in it, an alert
// (0x15). ECDHE with AES-128-GCM, P-256, ECDSA-SHA256; no session, no
// compression; the client random all zeros, as nothing follows.
constexpr std::array<uint8_t, 76> kClientHello = {
    0x16, 0x03, 0x01, 0x00, 0x47,                    // record: handshake, TLS 1.0 framing, 71 bytes
    0x01, 0x00, 0x00, 0x43,                          // ClientHello, 67 bytes
    0x03, 0x03,                                      // TLS 1.2
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // random
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  //
    0x00,                                            // no session id
    0x00, 0x04, 0xc0, 0x2b, 0xc0, 0x2f,              // two cipher suites
    0x01, 0x00,                                      // no compression
    0x00, 0x16,                                      // extensions, 22 bytes
    0x00, 0x0a, 0x00, 0x04, 0x00, 0x02, 0x00, 0x17,  // supported groups: P-256
    0x00, 0x0b, 0x00, 0x02, 0x01, 0x00,              // point formats: uncompressed
    0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, 0x04, 0x03,  // signature algorithms: ECDSA-SHA256
};

// HTTP/2's client preface and an empty SETTINGS frame: a plaintext HTTP/2
// server answers with its own SETTINGS.
constexpr std::string_view kHttp2Preface{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0", 33};

// A connected socket to `address`, or -1; within `wait`.
int Dial(const std::string& address, Duration wait) {
  StatusOr<http::HostPort> hp = http::SplitHostPort(address);
  if (!hp.ok()) return -1;
  const StatusOr<int> fd =
      http::DialWithin(hp->host, hp->port, std::chrono::duration_cast<std::chrono::milliseconds>(wait));
  return fd.ok() ? *fd : -1;
}

// Up to `want` bytes of the peer's answer, as many as came within `wait`.
std::string Answer(int fd, size_t want, Duration wait) {
  std::string got;
  const auto until = std::chrono::steady_clock::now() + wait;
  while (got.size() < want) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) != 1) break;
    char buffer[64];
    const ssize_t n = ::recv(fd, buffer, std::min(sizeof buffer, want - got.size()), 0);
    if (n <= 0) break;
    got.append(buffer, static_cast<size_t>(n));
  }
  return got;
}

}  // namespace

PeerProtocol ProbePeerProtocol(const std::string& address, bool greet_as_tls, Duration wait) {
  const int fd = Dial(address, wait);
  if (fd < 0) return PeerProtocol::kUnknown;
  const std::string_view greeting =
      greet_as_tls ? std::string_view(reinterpret_cast<const char*>(kClientHello.data()), kClientHello.size())
                   : kHttp2Preface;
  const bool sent = ::send(fd, greeting.data(), greeting.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(greeting.size());
  // A frame's header is 9 bytes; "HTTP/1." and a TLS record's first byte fit in it.
  const std::string answer = sent ? Answer(fd, 9, wait) : std::string();
  ::close(fd);
  if (answer.empty()) return PeerProtocol::kUnknown;
  const auto first = static_cast<uint8_t>(answer[0]);
  if ((first == 0x15 || first == 0x16) && answer.size() >= 2 && answer[1] == 0x03) return PeerProtocol::kTls;
  if (answer.rfind("HTTP/1.", 0) == 0) return PeerProtocol::kHttp1;
  // A frame of type SETTINGS (4) on stream 0, with no flags: a server's first.
  if (answer.size() == 9 && answer[3] == 0x04 && answer[4] == 0 && answer.substr(5) == std::string(4, '\0')) {
    return PeerProtocol::kPlaintextHttp2;
  }
  return PeerProtocol::kUnknown;
}

}  // namespace edgetrain::agent
