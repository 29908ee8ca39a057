#pragma once
// A small HTTP endpoint served by cpp-httplib: the agent's GET /metrics,
// /healthz and the coordinator's /progress, and the operator's /metrics,
// /healthz and /readyz. Its own library, so that neither includes the other.
//
// Why cpp-httplib and not civetweb (prometheus-cpp's exposer): in a process
// that has loaded LibTorch (hundreds of shared libraries, a large static TLS
// block), civetweb's fixed 100 KiB thread stacks are refused by pthread_create
// with EINVAL, and its server never starts. cpp-httplib's pool threads are
// std::threads with the default stack; measured in a program linked with
// LibTorch after a training step: it started, and answered GET /metrics in
// 3.0 ms beside three clients stalled half-way through their request line.
// A connection is served by a worker only once its request head is all in; a
// client has 2 s to send it, waited for by one thread over all of them, so
// slow or silent clients, one or hundreds, cannot stall /metrics, /progress
// or a liveness probe's /healthz (http_server.cc says how).

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"

namespace httplib {
class Server;
}

namespace edgetrain::http {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;

  // Binds `address` ("127.0.0.1:0" picks a free port) and serves in the background.
  static StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& address);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves GET `path` (exact match; a query string is ignored) with `handler`,
  // which may run on several of the server's threads at once.
  void Handle(const std::string& path, Handler handler);
  // The bound address, with the port the OS chose: "127.0.0.1:40123".
  const std::string& address() const { return address_; }

 private:
  HttpServer(std::unique_ptr<httplib::Server> server, std::string address);
  HttpResponse Answer(const std::string& path);

  std::unique_ptr<httplib::Server> server_;
  std::string address_;
  std::mutex mu_;
  std::map<std::string, Handler> handlers_;  // guarded by mu_
  std::atomic<bool> served_{false};          // the serving loop has returned
  std::thread thread_;
};

}  // namespace edgetrain::http
