#include "http/http_server.h"

#include <cerrno>
#include <charconv>
#include <cstring>

#include <sys/socket.h>

#include <httplib.h>

#include "http/socket_address.h"

namespace edgetrain::http {
namespace {

// A client that stops sending (or reading) is dropped after this long.
constexpr std::chrono::seconds kClientTimeout{2};

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address) {
  EDGETRAIN_ASSIGN_OR_RETURN(HostPort hp, SplitHostPort(address));
  int port = 0;
  auto [end, ec] = std::from_chars(hp.port.data(), hp.port.data() + hp.port.size(), port);
  if (ec != std::errc() || end != hp.port.data() + hp.port.size() || port < 0 || port > 65535) {
    return InvalidArgumentError("cannot serve HTTP on " + address + ": the port is not a number from 0 to 65535");
  }
  auto server = std::make_unique<httplib::Server>();
  server->set_read_timeout(kClientTimeout);
  server->set_write_timeout(kClientTimeout);
  // cpp-httplib's default sets SO_REUSEPORT, with which a second process
  // binds a port already served and the kernel splits the connections
  // between them: a second operator's /metrics and probes answered for the
  // first's. SO_REUSEADDR alone still rebinds a port left in TIME_WAIT.
  server->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const int bound = port == 0 ? server->bind_to_any_port(hp.host) : (server->bind_to_port(hp.host, port) ? port : -1);
  if (bound < 0) return UnavailableError("cannot serve HTTP on " + address + ": " + std::strerror(errno));
  const std::string host = hp.host.find(':') != std::string::npos ? "[" + hp.host + "]" : hp.host;
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(server), host + ":" + std::to_string(bound)));
}

HttpServer::HttpServer(std::unique_ptr<httplib::Server> server, std::string address)
    : server_(std::move(server)), address_(std::move(address)) {
  server_->Get(".*", [this](const httplib::Request& request, httplib::Response& response) {
    HttpResponse answer = Answer(request.path);
    response.status = answer.status;
    response.set_header("Cache-Control", "no-store");
    response.set_content(std::move(answer.body), answer.content_type.c_str());
  });
  // Connections made before the pool is up wait in the listen backlog.
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    served_ = true;
  });
}

HttpServer::~HttpServer() {
  // cpp-httplib's stop() does nothing before its loop has started: a server
  // destroyed at once waits (a few microseconds) for it.
  while (!server_->is_running() && !served_.load()) std::this_thread::yield();
  server_->stop();
  thread_.join();
}

void HttpServer::Handle(const std::string& path, Handler handler) {
  std::lock_guard lock(mu_);
  handlers_[path] = std::move(handler);
}

HttpResponse HttpServer::Answer(const std::string& path) {
  Handler handler;
  {
    std::lock_guard lock(mu_);
    auto it = handlers_.find(path);
    if (it != handlers_.end()) handler = it->second;
  }
  return handler ? handler() : HttpResponse{404, "text/plain", "not found: " + path + "\n"};
}

}  // namespace edgetrain::http
