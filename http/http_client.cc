#include "http/http_client.h"


#include <httplib.h>

#include "core/number_text.h"
#include "http/socket_address.h"

namespace edgetrain::http {
namespace {

std::string Seconds(std::chrono::milliseconds d) { return PlainNumber(static_cast<double>(d.count()) / 1000) + " s"; }

// httplib names its errors by their enumerators ("Connection"), which an
// operator's status quoted as if cut off (a new user's trial).
std::string Said(httplib::Error error, std::chrono::milliseconds timeout) {
  switch (error) {
    case httplib::Error::Connection:
      return "could not connect (nothing listens there yet, or the address is unreachable)";
    case httplib::Error::ConnectionTimeout:
      return "no connection within " + Seconds(timeout);
    case httplib::Error::Read:
      return "no answer read within " + Seconds(timeout) + ", or the connection closed";
    case httplib::Error::Write:
      return "the request could not be sent";
    default:
      return httplib::to_string(error);
  }
}

}  // namespace

StatusOr<HttpReply> HttpGet(const std::string& address, const std::string& path, std::chrono::milliseconds timeout) {
  EDGETRAIN_ASSIGN_OR_RETURN(HostPort hp, SplitHostPort(address));
  const StatusOr<int> port = ParsePort(hp.port);
  if (!port.ok()) return InvalidArgumentError("expected HOST:PORT, got \"" + address + "\"");
  httplib::Client client(hp.host, *port);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  client.set_keep_alive(false);
  // httplib's timeouts bound each read, and it reads a body of any length:
  // a peer trickling its answer, or sending gigabytes, held the operator's
  // reconcile worker as long as it liked (a security review). The body is
  // taken here, whole within a deadline and a size.
  const auto deadline = std::chrono::steady_clock::now() + 2 * timeout;
  std::string body;
  std::string cut;  // why the read was given up, if it was
  auto reply = client.Get(path, [&](const char* data, size_t length) {
    if (body.size() + length > kMostReplyBytes) {
      cut = "its answer is longer than " + std::to_string(kMostReplyBytes >> 20) + " MiB";
    } else if (std::chrono::steady_clock::now() > deadline) {
      cut = "its answer was not all in within " + Seconds(2 * timeout);
    } else {
      body.append(data, length);
    }
    return cut.empty();
  });
  if (!cut.empty()) return UnavailableError("GET http://" + address + path + ": " + cut);
  if (!reply) return UnavailableError("GET http://" + address + path + ": " + Said(reply.error(), timeout));
  return HttpReply{reply->status, std::move(body)};
}

}  // namespace edgetrain::http
