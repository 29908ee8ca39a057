#pragma once
// "HOST:PORT" (or "[v6]:PORT") split, for the agent's HTTP server and client.

#include <chrono>
#include <string>

#include "core/status.h"

namespace edgetrain::http {

struct HostPort {
  std::string host;
  std::string port;
};
StatusOr<HostPort> SplitHostPort(const std::string& address);

// `port` (as SplitHostPort gives it) as a number from 0 to 65535: digits only,
// so "+80", " 80", "80a" and "99999" are errors, not a port that was not meant.
StatusOr<int> ParsePort(const std::string& port);

// A connected, non-blocking TCP socket (close-on-exec) to `host`:`port`,
// within `timeout` an address: Unavailable, saying whether none answered in
// time or none would take it. The caller closes it.
StatusOr<int> DialWithin(const std::string& host, const std::string& port, std::chrono::milliseconds timeout);

// Why a listening socket cannot be bound at `address` ("HOST:PORT") now, in
// the system's words ("Address already in use", "Cannot assign requested
// address"), or "" when one can: for a server whose own failure says no
// more (gRPC's "cannot listen").
std::string WhyNoListening(const std::string& address);

// Whether `host` (as SplitHostPort gives it) is this machine's loopback:
// localhost, 127.0.0.0/8 or ::1.
bool IsLoopbackHost(const std::string& host);

// A loopback port the OS says is free now, for another process to be told to
// use; it may be taken before that process binds it, so that process's failure
// to bind must be said. 0 when the OS gave none.
int FreeLoopbackPort();

// The first of `count` consecutive loopback ports all free now (as for
// `edgetrain run --http-port`, whose agents take the ports after it), with the
// same caveat; 0 when no such run was found in a hundred tries.
int FreeLoopbackPorts(int count);

}  // namespace edgetrain::http
