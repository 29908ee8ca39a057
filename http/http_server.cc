#include "http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include <httplib.h>

#include "http/socket_address.h"

namespace edgetrain::http {
namespace {

using Clock = std::chrono::steady_clock;

// A client has this long to send its whole request head, and each write to
// it may wait this long for room.
constexpr auto kClientTimeout = std::chrono::seconds(2);
// Connections whose request is not all in, at once: past this, the one that
// has waited longest is dropped for the newcomer, so that a flood of them
// keeps out no request that comes whole at once (a probe's, a scrape's).
constexpr size_t kMostWaiting = 256;
constexpr size_t kMostHead = 8192;  // a GET's head, at most
constexpr size_t kWorkers = 4;      // requests all in, served at once
// Requests all in that wait for a worker, at most: past it, one is answered
// 503 at once. 3,000 quick GETs with the workers held had left 1,565
// connections open, near a process's 1,024 files (a security review).
constexpr size_t kMostQueued = 64;
// A worker's whole time on one connection, its answer's writes included: a
// reader that takes a byte at a time, within each write's own wait, would
// hold it for as long as it kept on.
constexpr auto kMostServing = std::chrono::seconds(10);

std::string AddressOf(int fd, bool remote, int& port) {
  sockaddr_storage at{};
  socklen_t size = sizeof at;
  const int got = remote ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&at), &size)
                         : ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &size);
  char text[INET6_ADDRSTRLEN] = "";
  port = 0;
  if (got != 0) return "";
  if (at.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&at);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (at.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&at);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  return text;
}

// Whether `fd` is ready for `events` within `timeout`.
bool Ready(int fd, short events, Clock::duration timeout) {
  pollfd p{fd, events, 0};
  const int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  int n;
  do n = ::poll(&p, 1, ms); while (n < 0 && errno == EINTR);
  return n > 0;
}

// A connection whose request head is all in (`head`, read already), for
// httplib to parse and answer, within kMostServing: what follows the head is
// read from the socket.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, std::string head)
      : fd_(fd), head_(std::move(head)), deadline_(Clock::now() + kMostServing) {}
  bool is_readable() const override { return at_ < head_.size() || Ready(fd_, POLLIN, Left()); }
  bool is_writable() const override { return Ready(fd_, POLLOUT, Left()); }
  ssize_t read(char* ptr, size_t size) override {
    if (at_ < head_.size()) {
      const size_t n = std::min(size, head_.size() - at_);
      std::memcpy(ptr, head_.data() + at_, n);
      at_ += n;
      return static_cast<ssize_t>(n);
    }
    if (!Ready(fd_, POLLIN, Left())) return -1;
    return ::recv(fd_, ptr, size, MSG_DONTWAIT);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    return ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = AddressOf(fd_, true, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { ip = AddressOf(fd_, false, port); }
  socket_t socket() const override { return fd_; }

 private:
  // Each wait's bound: kClientTimeout, or what is left of the whole.
  Clock::duration Left() const {
    return std::clamp<Clock::duration>(deadline_ - Clock::now(), Clock::duration::zero(), kClientTimeout);
  }

  int fd_;
  std::string head_;
  size_t at_ = 0;
  Clock::time_point deadline_;
};

// What of a request head all in is served: a GET or HEAD with no body. The
// server has nothing else to answer, and httplib read the body of a POST,
// PUT, PATCH or DELETE to its end, unbounded, before looking for a handler:
// four clients trickling a 100 MB body held every worker and the liveness
// probe's /healthz went unanswered, and one streaming 400 MiB grew the
// process by 300 MB (a security review). Empty when it is served; else the
// status line and headers to refuse it with.
std::string RefusalOf(const std::string& head) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string_view method = std::string_view(head).substr(0, head.find(' '));
  if (method != "GET" && method != "HEAD") return "405 Method Not Allowed\r\nAllow: GET, HEAD";
  const size_t length = lower.find("\r\ncontent-length:");
  const bool body = lower.find("\r\ntransfer-encoding:") != std::string::npos ||
                    (length != std::string::npos &&
                     lower.find_first_not_of(" \t0", length + 17) != lower.find("\r\n", length + 2));
  return body ? "413 Content Too Large" : "";
}

// `head` without its Range headers: httplib answers a Range of every GET, and
// one of 2,700 ranges made a 20 kB /metrics a 54 MB multipart answer, built
// in memory, that held a worker while a slow reader took it, and /healthz
// answered past a probe's second (a security review). No endpoint here is
// worth a part of: each is answered whole.
std::string WithoutRanges(const std::string& head) {
  std::string out;
  out.reserve(head.size());
  for (size_t at = 0; at < head.size();) {
    const size_t end = head.find("\r\n", at);
    const size_t next = end == std::string::npos ? head.size() : end + 2;
    std::string name = head.substr(at, std::min<size_t>(6, next - at));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (at == 0 || name != "range:") out.append(head, at, next - at);
    at = next;
  }
  return out;
}

// httplib serves each connection on a thread of its pool from the moment it
// is accepted, reading its request a little at a time: 60 clients that sent
// half a request line held the operator's 8 pool threads, its /healthz went
// unanswered, and its liveness probe restarted it (a security review); a
// client sending a byte a second, within each read's timeout, would hold one
// for as long as it kept on. Here a connection is
// taken from the listening loop at once, one thread waits on every one whose
// request head is not all in yet (a poll over them, each for at most
// kClientTimeout from its connecting), and the workers get only requests
// that are in. A slow or silent client holds a slot in the poll, never a
// worker. Each connection serves one request.
class GuardedServer final : public httplib::Server {
 public:
  GuardedServer() : wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), workers_(kWorkers) {
    // The listening loop hands each connection over at once, on its own thread.
    new_task_queue = [] { return new InlineQueue; };
    waiter_ = std::thread([this] { Wait(); });
  }
  // httplib listens with a backlog of 5: connections past it, in a burst,
  // waited a second for the kernel to retry them (300 took 1.04 s). Their
  // handing over is quick; the kernel may queue as many as it allows.
  void DeepenBacklog() { ::listen(svr_sock_, SOMAXCONN); }

  ~GuardedServer() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    Wake();
    waiter_.join();
    // Requests still queued are closed, not served: httplib's pool runs
    // every job it holds before its threads end.
    closing_ = true;
    workers_.shutdown();
    for (const Waiting& w : admitted_) ::close(w.fd);
    ::close(wake_);
  }

 private:
  struct InlineQueue final : httplib::TaskQueue {
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override {}
  };
  struct Waiting {
    int fd;
    Clock::time_point deadline;
    std::string head;
  };

  // Called by the listening loop for each connection it accepts.
  bool process_and_close_socket(socket_t sock) override {
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        ::close(sock);
        return false;
      }
      admitted_.push_back({sock, Clock::now() + kClientTimeout, {}});
    }
    Wake();
    return true;
  }

  void Wake() {
    const uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }

  // Answers `status` ("503 Service Unavailable\r\nRetry-After: 1") from the
  // waiting thread, without waiting: a client not reading gets what fits.
  static void Refuse(int fd, const std::string& status) {
    const std::string answer =
        "HTTP/1.1 " + status + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }

  // A request all in: to a worker, or refused at once.
  void HandOver(int fd, std::string head) {
    if (std::string refusal = RefusalOf(head); !refusal.empty()) return Refuse(fd, refusal);
    if (queued_.load() >= kMostQueued) return Refuse(fd, "503 Service Unavailable\r\nRetry-After: 1");
    ++queued_;
    workers_.enqueue([this, fd, head = std::move(head)]() mutable {
      --queued_;
      if (closing_.load()) {
        ::close(fd);
        return;
      }
      Serve(fd, WithoutRanges(head));
    });
  }

  void Serve(int fd, std::string head) {
    ConnectionStream stream(fd, std::move(head));
    bool closed = false;
    process_request(stream, /*close_connection=*/true, closed, [](httplib::Request&) {});
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }

  // The waiting thread: reads each connection's request head as it comes,
  // hands those complete to the workers, drops those past their deadline.
  void Wait() {
    std::vector<Waiting> waiting;
    std::vector<pollfd> polled;
    char chunk[4096];
    while (true) {
      {
        std::lock_guard lock(mu_);
        if (stopping_) break;
        for (Waiting& w : admitted_) waiting.push_back(std::move(w));
        admitted_.clear();
      }
      // The longest waiting go first, for the newest.
      while (waiting.size() > kMostWaiting) {
        ::close(waiting.front().fd);
        waiting.erase(waiting.begin());
      }
      const Clock::time_point now = Clock::now();
      std::vector<Waiting> kept;
      for (Waiting& w : waiting) {
        if (now >= w.deadline) {
          ::close(w.fd);
        } else {
          kept.push_back(std::move(w));
        }
      }
      waiting = std::move(kept);
      Clock::time_point next = now + kClientTimeout;
      polled.assign(1, pollfd{wake_, POLLIN, 0});
      for (const Waiting& w : waiting) {
        polled.push_back({w.fd, POLLIN, 0});
        next = std::min(next, w.deadline);
      }
      const int ms = static_cast<int>(
          std::chrono::ceil<std::chrono::milliseconds>(next - now).count());
      if (::poll(polled.data(), polled.size(), ms) < 0 && errno != EINTR) break;
      if (polled[0].revents & POLLIN) {
        uint64_t count;
        (void)!::read(wake_, &count, sizeof count);
      }
      for (size_t i = waiting.size(); i-- > 0;) {
        if (polled[i + 1].revents == 0) continue;
        Waiting& w = waiting[i];
        const ssize_t n = ::recv(w.fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        bool done = n <= 0;  // gone, or failed
        if (!done) {
          w.head.append(chunk, static_cast<size_t>(n));
          if (w.head.find("\r\n\r\n") != std::string::npos) {
            HandOver(w.fd, std::move(w.head));
            waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
            continue;
          }
          done = w.head.size() > kMostHead;
        }
        if (done) {
          ::close(w.fd);
          waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
    }
    for (const Waiting& w : waiting) ::close(w.fd);
  }

  const int wake_;
  std::atomic<size_t> queued_{0};     // handed over, not yet taken by a worker
  std::atomic<bool> closing_{false};  // the server is being destroyed
  httplib::ThreadPool workers_;
  std::mutex mu_;
  bool stopping_ = false;           // guarded by mu_
  std::vector<Waiting> admitted_;   // guarded by mu_: accepted, not yet waited on
  std::thread waiter_;
};

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address) {
  EDGETRAIN_ASSIGN_OR_RETURN(HostPort hp, SplitHostPort(address));
  const StatusOr<int> parsed = ParsePort(hp.port);
  if (!parsed.ok()) {
    return InvalidArgumentError("cannot serve HTTP on " + address + ": the port is not a number from 0 to 65535");
  }
  const int port = *parsed;
  auto server = std::make_unique<GuardedServer>();
  // cpp-httplib's default sets SO_REUSEPORT, with which a second process
  // binds a port already served and the kernel splits the connections
  // between them: a second operator's /metrics and probes answered for the
  // first's. SO_REUSEADDR alone still rebinds a port left in TIME_WAIT.
  server->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const int bound = port == 0 ? server->bind_to_any_port(hp.host) : (server->bind_to_port(hp.host, port) ? port : -1);
  if (bound < 0) {
    // The system's reason, asked again: cpp-httplib leaves errno as its last
    // call did, which read "Success" where the host did not resolve (found
    // in review).
    const std::string why = WhyNoListening(address);
    return UnavailableError("cannot serve HTTP on " + address + ": " + (why.empty() ? "the address was refused" : why));
  }
  server->DeepenBacklog();
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
  // Before the handlers and their mutex: the server's last requests are
  // answered through them (it is declared first, so would be destroyed last).
  server_.reset();
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
