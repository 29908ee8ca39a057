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
  auto reply = client.Get(path);
  if (!reply) return UnavailableError("GET http://" + address + path + ": " + Said(reply.error(), timeout));
  return HttpReply{reply->status, reply->body};
}

}  // namespace edgetrain::http
