#include "agent/transport/transport_probe.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/transport/transport.h"
#include "core/median.h"

namespace edgetrain::agent {
namespace {

// The head's end: every micro-batch sent back at once, from the stream's own
// serving thread, as the head relays one.
class Echo final : public WorkerSessions, public RefusalObserver {
 public:
  Status Admit(const v1::Hello&) override { return Status::Ok(); }
  Status Serve(const v1::Hello&, WorkerStream& stream) override {
    for (;;) {
      StatusOr<v1::WorkerMessage> in = stream.Receive();
      if (!in.ok()) return Status::Ok();
      v1::CoordinatorMessage out;
      *out.mutable_forward() = std::move(*in->mutable_forward());
      if (Status sent = stream.Send(out); !sent.ok()) return Status::Ok();
    }
  }
  void Refused(const RefusedPeer&) override {}
};

// A stage's end: a sending thread takes what is posted, a receiving thread
// files what arrives and wakes the thread waiting for it.
class Stage {
 public:
  explicit Stage(CoordinatorStream& stream)
      : stream_(stream), sender_([this] { Send(); }), receiver_([this] { Receive(); }) {}
  ~Stage() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
    }
    changed_.notify_all();
    stream_.Close();
    sender_.join();
    receiver_.join();
  }

  // One round trip of `payload` bytes, in seconds; a negative number once the stream has ended.
  double RoundTrip(const std::string& payload) {
    v1::WorkerMessage message;
    message.mutable_forward()->set_values(payload);
    std::unique_lock lock(mu_);
    const int64_t answer = ++posted_count_;
    const auto began = std::chrono::steady_clock::now();
    posted_.push_back(std::move(message));
    changed_.notify_all();
    changed_.wait(lock, [&] { return received_ >= answer || ended_; });
    if (received_ < answer) return -1;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }

 private:
  void Send() {
    for (;;) {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] { return !posted_.empty() || closing_; });
      if (closing_) return;
      v1::WorkerMessage message = std::move(posted_.front());
      posted_.pop_front();
      lock.unlock();
      if (!stream_.Send(message).ok()) return;
    }
  }
  void Receive() {
    for (;;) {
      const bool ok = stream_.Receive().ok();
      {
        std::lock_guard lock(mu_);
        if (ok) ++received_;
        else ended_ = true;
      }
      changed_.notify_all();
      if (!ok) return;
    }
  }

  CoordinatorStream& stream_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<v1::WorkerMessage> posted_;
  int64_t posted_count_ = 0;
  int64_t received_ = 0;
  bool ended_ = false;
  bool closing_ = false;
  std::thread sender_, receiver_;
};

}  // namespace

StatusOr<TransportCost> MeasureTransport(const TransportProbeOptions& options) {
  Echo echo;
  EDGETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<TrainingServer> server,
                             StartTrainingServer("127.0.0.1:0", TransportSecurity::Insecure(), echo, echo));
  StatusOr<std::unique_ptr<CoordinatorStream>> stream =
      GrpcConnector(server->address(), TransportSecurity::Insecure())->Connect(std::chrono::seconds(5));
  if (!stream.ok()) {
    server->Shutdown();
    return stream.status().WithContext("a loopback stream to time messages on");
  }
  v1::WorkerMessage hello;
  *hello.mutable_hello() = MakeHello("transport-probe", 0, 0);
  Status said = (*stream)->Send(hello);
  std::vector<double> small, large;
  if (said.ok()) {
    Stage stage(**stream);
    const std::string empty, payload(static_cast<size_t>(options.large_bytes), '\1');
    auto time = [&](const std::string& p, int times, std::vector<double>& into) {
      for (int i = 0; i < times && said.ok(); ++i) {
        const double seconds = stage.RoundTrip(p);
        if (seconds < 0) said = UnavailableError("the loopback stream ended while messages were timed on it");
        into.push_back(seconds);
      }
    };
    time(empty, 5, small);  // the stream's first messages warm it up
    small.clear();
    time(empty, std::max(1, options.round_trips), small);
    time(payload, std::max(1, options.large_round_trips), large);
  }
  server->Shutdown();
  if (!said.ok()) return said;
  TransportCost cost;
  cost.message_s = Median(small) / 2;
  const double beyond = (Median(large) - Median(small)) / 2;
  cost.bytes_per_s = beyond > 0 ? static_cast<double>(options.large_bytes) / beyond : 0;
  return cost;
}

}  // namespace edgetrain::agent
