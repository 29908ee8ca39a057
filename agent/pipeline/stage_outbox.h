#pragma once
// A pipeline stage's outbox: what it sends the head, in order, from a thread
// of its own (agent/pipeline/stage_runner.cc).

#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "agent/pipeline/pass_watch.h"
#include "agent/transport/transport.h"
#include "core/clock.h"
#include "core/energy_model.h"

namespace edgetrain::agent {

// What a stage sends, in order, from a thread of its own; and, below what it
// must send, parts that go only when nothing else waits.
class StageOutbox {
 public:
  // Messages of more than `announce_bytes` go after a Heartbeat that says their size.
  StageOutbox(Clock& clock, int64_t announce_bytes) : changed_(clock), announce_bytes_(announce_bytes) {}

  void Post(v1::WorkerMessage message) {
    std::lock_guard lock(mu_);
    if (const auto bytes = static_cast<int64_t>(message.ByteSizeLong()); bytes > announce_bytes_) {
      queue_.emplace_back().mutable_heartbeat()->set_next_bytes(bytes);
    }
    queue_.push_back(std::move(message));
    changed_.NotifyAll();
  }
  // Messages sent one at a time whenever nothing posted waits (each of at
  // most `announce_bytes`, so none holds a message posted meanwhile for
  // long). Posted only once earlier ones are out (LastIdleSent says when):
  // those finish first.
  void PostWhenIdle(std::vector<v1::WorkerMessage> parts) {
    std::lock_guard lock(mu_);
    idle_.assign(std::make_move_iterator(parts.begin()), std::make_move_iterator(parts.end()));
    changed_.NotifyAll();
  }
  // The last parts posted when idle, once all are sent: when the last went,
  // and how long sending them took (not their waits for the link to be
  // idle). None while some are still going out.
  struct IdleSent {
    TimePoint at{};
    Duration busy{};
  };
  std::optional<IdleSent> LastIdleSent() {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) return std::nullopt;
    return last_idle_;
  }
  // What is posted goes on going out; the parts posted when idle too,
  // unless `drop_idle`.
  void Close(bool drop_idle = false) {
    std::lock_guard lock(mu_);
    closed_ = true;
    if (drop_idle) idle_.clear();
    changed_.NotifyAll();
  }
  // Sends until closed and empty, or the stream fails; a Heartbeat whenever
  // nothing was sent for `heartbeat`, saying how long the pass `passes`
  // computes has run. A replica going out when the stage ends (by a signal)
  // is sent to its end: the head may need it.
  Status Drain(CoordinatorStream& stream, Duration heartbeat, Clock& clock, EnergyMeter& energy, PassWatch& passes) {
    bool idle_part = false;
    for (;;) {
      v1::WorkerMessage next;
      {
        std::unique_lock lock(mu_);
        if (!changed_.WaitFor(lock, heartbeat, [&] { return !queue_.empty() || !idle_.empty() || closed_; })) {
          next.mutable_heartbeat()->set_busy_seconds(passes.BusySeconds(clock.Now()));
        } else if (!queue_.empty()) {
          next = std::move(queue_.front());
          queue_.pop_front();
        } else if (!idle_.empty()) {
          next = std::move(idle_.front());
          idle_.pop_front();
          idle_part = true;
        } else {
          return Status::Ok();
        }
      }
      // The radio's time, for the energy model: a send returns once the
      // stream has taken the message, a slow link holding it back.
      const TimePoint began = clock.Now();
      energy.BeginSend(began);
      Status sent = stream.Send(next);
      const TimePoint ended = clock.Now();
      energy.EndSend(ended);
      EDGETRAIN_RETURN_IF_ERROR(sent);
      if (idle_part) {
        idle_part = false;
        std::lock_guard lock(mu_);
        idle_busy_ += ended - began;
        if (idle_.empty()) {
          last_idle_ = {ended, idle_busy_};
          idle_busy_ = Duration{};
        }
      }
    }
  }

 private:
  std::mutex mu_;
  ClockCondition changed_;
  const int64_t announce_bytes_;
  std::deque<v1::WorkerMessage> queue_;
  std::deque<v1::WorkerMessage> idle_;  // sent when queue_ is empty
  Duration idle_busy_{};                 // the link's time on the parts of idle_ sent so far
  IdleSent last_idle_;
  bool closed_ = false;
};

}  // namespace edgetrain::agent
