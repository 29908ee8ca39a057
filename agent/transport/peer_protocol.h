#pragma once
// What answers at an address a connection to a coordinator failed at, told
// from the first bytes it sends back. A worker in plaintext before a TLS
// coordinator, one with the job's credentials before a coordinator started
// with --insecure, or one given the coordinator's HTTP port, retried for its
// whole grace (6 minutes) saying only that the coordinator could not be
// reached yet, while gRPC's handshake errors filled both logs (a user's
// trial); what answers instead says which.

#include <string>

#include "core/clock.h"

namespace edgetrain::agent {

enum class PeerProtocol {
  kUnknown,         // nothing listens, nothing answered in time, or none of these
  kTls,             // a TLS server: it answered a ClientHello with a TLS record
  kPlaintextHttp2,  // an HTTP/2 server without TLS: it sent a SETTINGS frame
  kHttp1,           // an HTTP/1 server (an agent's /metrics and /progress)
};

// What the peer at `address` (HOST:PORT, or [V6]:PORT) is, greeting it as a
// TLS client would (a ClientHello) or as a plaintext HTTP/2 one (its client
// preface), and waiting up to `wait` for the start of its answer. Only a
// sure answer names a protocol: a server still starting is kUnknown.
PeerProtocol ProbePeerProtocol(const std::string& address, bool greet_as_tls, Duration wait);

}  // namespace edgetrain::agent
