#pragma once
// A link that can be cut and restored at will: a stream decorator whose sends
// block while the gate is closed, as on a link at 0 Mbit/s. For fault-injection
// tests (a robot behind a wall) and drills; a closed gate also unblocks when the
// stream is closed.

#include <memory>
#include <mutex>

#include "agent/transport/transport.h"
#include "core/clock.h"

namespace edgetrain::agent {

class LinkGate {
 public:
  explicit LinkGate(Clock& clock) : changed_(clock) {}
  void Cut() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void Restore() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.NotifyAll();
  }
  // Blocks while cut; false if `abandon()` became true meanwhile (looked at
  // every 20 ms: what it watches is not ours to be notified of).
  template <typename Abandon>
  bool Pass(Abandon abandon) {
    std::unique_lock lock(mu_);
    while (!open_) {
      if (abandon()) return false;
      changed_.WaitFor(lock, std::chrono::milliseconds(20));
    }
    return true;
  }

 private:
  std::mutex mu_;
  ClockCondition changed_;
  bool open_ = true;  // guarded by mu_
};

class GatedCoordinatorStream final : public CoordinatorStream {
 public:
  GatedCoordinatorStream(std::unique_ptr<CoordinatorStream> inner, LinkGate& gate)
      : inner_(std::move(inner)), gate_(gate) {}
  Status Send(const v1::WorkerMessage& message) override {
    if (!gate_.Pass([this] { return closed_.load(); })) return CancelledError("closed while the link was cut");
    return inner_->Send(message);
  }
  StatusOr<v1::CoordinatorMessage> Receive() override { return inner_->Receive(); }
  void Close() override {
    closed_ = true;
    inner_->Close();
  }

 private:
  std::unique_ptr<CoordinatorStream> inner_;
  LinkGate& gate_;
  std::atomic<bool> closed_{false};
};

}  // namespace edgetrain::agent
