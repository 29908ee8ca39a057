#pragma once
// The agent's small HTTP endpoint: GET /progress, /healthz, and later /metrics.
//
// Plain sockets and one std::thread, not civetweb: in a process that has loaded
// LibTorch (hundreds of shared libraries, a large static TLS block), civetweb's
// fixed 100 KiB thread stacks are refused by pthread_create with EINVAL, and its
// server never starts. Requests here are tiny and rare (a scrape, a poll), so one
// thread answering them in turn is enough.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"

namespace edgetrain::agent {

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
  // which runs on the server's thread.
  void Handle(const std::string& path, Handler handler);
  // The bound address, with the port the OS chose: "127.0.0.1:40123".
  const std::string& address() const { return address_; }

 private:
  HttpServer(int listen_fd, int wake_fd[2], std::string address);
  void Serve();
  void Answer(int connection);

  int listen_fd_;
  int wake_read_fd_;   // readable once the destructor asks the thread to stop
  int wake_write_fd_;
  std::string address_;
  std::mutex mu_;
  std::map<std::string, Handler> handlers_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace edgetrain::agent
