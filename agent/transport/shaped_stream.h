#pragma once
// In-process link shaping: a stream whose sends pass a TraceShaper first, so each
// direction of an emulated device's link follows its bandwidth trace without root
// or network namespaces, and deterministically under a simulated clock. A send
// returns once its last byte is through the link, as a blocking write on a slow
// socket would.

#include <atomic>
#include <functional>
#include <memory>

#include "agent/transport/transport.h"
#include "core/trace_shaper.h"

namespace edgetrain::agent {

// Waits for `bytes` to pass `link`, in slices so that `abandon()` (the stream
// closing, the job ending) can interrupt a wait on a link that is down. False if
// abandoned.
bool PassLink(TraceShaper& link, int64_t bytes, Clock& clock, const std::function<bool()>& abandon);

class ShapedCoordinatorStream final : public CoordinatorStream {
 public:
  // `abandon()`, if given, ends a wait on a link that is down too (the agent
  // told to stop: a stage agent whose link was held at 0 heeded SIGTERM only
  // once it was killed, 15 s on, its sender waiting for the link and its
  // stream closed only after: a new user's trial).
  ShapedCoordinatorStream(std::unique_ptr<CoordinatorStream> inner, TraceShaper& uplink, Clock& clock,
                          std::function<bool()> abandon = nullptr)
      : inner_(std::move(inner)), uplink_(uplink), clock_(clock), abandon_(std::move(abandon)) {}
  Status Send(const v1::WorkerMessage& message) override {
    if (!PassLink(uplink_, static_cast<int64_t>(message.ByteSizeLong()), clock_,
                  [this] { return closed_.load() || (abandon_ && abandon_()); })) {
      return CancelledError("the stream was closed, or the agent told to stop, while a message waited for its link");
    }
    return inner_->Send(message);
  }
  StatusOr<v1::CoordinatorMessage> Receive() override { return inner_->Receive(); }
  void Close() override {
    closed_ = true;
    inner_->Close();
  }

 private:
  std::unique_ptr<CoordinatorStream> inner_;
  TraceShaper& uplink_;
  Clock& clock_;
  std::function<bool()> abandon_;
  std::atomic<bool> closed_{false};
};

class ShapedWorkerStream final : public WorkerStream {
 public:
  // `abandon()` ends a wait on a link that is down (the worker left, the job is over).
  ShapedWorkerStream(WorkerStream& inner, TraceShaper& downlink, Clock& clock, std::function<bool()> abandon)
      : inner_(inner), downlink_(downlink), clock_(clock), abandon_(std::move(abandon)) {}
  Status Send(const v1::CoordinatorMessage& message) override {
    if (!PassLink(downlink_, static_cast<int64_t>(message.ByteSizeLong()), clock_,
                  [this] { return cut_.load() || abandon_(); })) {
      return CancelledError("the stream was cut, or the job ended, while the link was down");
    }
    return inner_.Send(message);
  }
  StatusOr<v1::WorkerMessage> Receive() override { return inner_.Receive(); }
  void Cut() override {
    cut_ = true;
    inner_.Cut();
  }

 private:
  WorkerStream& inner_;
  TraceShaper& downlink_;
  Clock& clock_;
  std::function<bool()> abandon_;
  std::atomic<bool> cut_{false};
};

}  // namespace edgetrain::agent
