#pragma once
// A pipeline stage's inbox: what the head sent it, filed until the stage's
// 1F1B schedule takes it (agent/pipeline/stage_runner.cc).

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/pipeline/replica_parts.h"
#include "agent/transport/transport.h"
#include "core/clock.h"

namespace edgetrain::agent {

// What a stage was sent and has not used yet: micro-batches arrive whenever
// their neighbour is done with them, not in the order 1F1B takes them.
class StageInbox {
 public:
  // `cancel` ends every wait (SIGTERM to the agent): the stage then leaves,
  // and the head, seeing its stream close, says which stage was lost.
  StageInbox(Clock& clock, const std::atomic<bool>& cancel, Duration cancel_recheck)
      : arrived_(clock), cancel_(cancel), cancel_recheck_(cancel_recheck) {}

  void File(v1::CoordinatorMessage message) {
    std::lock_guard lock(mu_);
    if (message.has_forward() || message.has_backward()) {
      const v1::MicroBatch& m = message.has_forward() ? message.forward() : message.backward();
      if (Superseded(m.step(), m.attempt())) return;  // relayed before the replay, for the attempt dropped
      micro_batches_[{message.has_forward(), m.step(), m.attempt(), m.micro_batch(),
                      m.has_share_of() ? m.share_of() : kOwn}] = std::move(message);
    } else if (message.has_replica_part()) {
      KeepReplicaPartLocked(message.replica_part());
      return;
    } else if (message.has_gradient()) {
      const v1::GroupGradient& g = message.gradient();
      if (Superseded(g.step(), g.attempt())) return;
      gradients_[{g.step(), g.attempt()}] = std::move(*message.mutable_gradient());
    } else if (message.has_command() && message.command().has_cover()) {
      // Mid-step: taken up by the step's waits, not between steps.
      const v1::StageCover& c = message.command().cover();
      if (Superseded(c.step(), c.attempt())) return;
      covers_.push_back(c);
    } else {
      if (message.has_command() && message.command().has_replay()) {
        // Ends a wait of the attempt it replaces at once; what that attempt
        // was sent and has not used is dropped.
        const v1::StageReplay& r = message.command().replay();
        replayed_ = std::max(replayed_, std::pair<int64_t, int>{r.step(), r.attempt()});
        std::erase_if(micro_batches_, [&](const auto& m) {
          return Superseded(std::get<1>(m.first), std::get<2>(m.first));
        });
        std::erase_if(gradients_, [&](const auto& g) { return Superseded(g.first.first, g.first.second); });
        std::erase_if(covers_, [&](const v1::StageCover& c) { return Superseded(c.step(), c.attempt()); });
      }
      // A Stop ends a step still waiting for a neighbour that is gone.
      if (message.has_stop()) stopped_ = message.stop().reason();
      commands_.push_back(std::move(message));
    }
    arrived_.NotifyAll();
  }
  void Close(Status why) {
    std::lock_guard lock(mu_);
    closed_ = std::move(why);
    arrived_.NotifyAll();
  }
  // The neighbouring stages' replicas, the last one whole of each, by their layers.
  std::map<std::pair<int, int>, v1::StageReplica> KeptReplicas() {
    std::lock_guard lock(mu_);
    return kept_replicas_;
  }

  // A micro-batch: forward (or backward), step, attempt, micro-batch, and
  // whose share it is (kOwn, or a lost device's this stage covers).
  using Key = std::tuple<bool, int64_t, int, int, int>;
  static constexpr int kOwn = -1;

  // The micro-batch `key`, taken, if it is here.
  std::optional<v1::MicroBatch> Take(const Key& key) {
    std::lock_guard lock(mu_);
    auto found = micro_batches_.find(key);
    if (found == micro_batches_.end()) return std::nullopt;
    v1::MicroBatch m = std::get<0>(key) ? std::move(*found->second.mutable_forward())
                                        : std::move(*found->second.mutable_backward());
    micro_batches_.erase(found);
    return m;
  }
  // The group's summed gradient of `step`, taken, if the head has sent it.
  std::optional<v1::GroupGradient> TakeGradient(int64_t step, int attempt) {
    std::lock_guard lock(mu_);
    auto found = gradients_.find({step, attempt});
    if (found == gradients_.end()) return std::nullopt;
    v1::GroupGradient g = std::move(found->second);
    gradients_.erase(found);
    return g;
  }
  // The devices lost mid-step whose shares of `step`'s `attempt` the head
  // has since asked this stage to compute (StageCover), each once.
  std::vector<v1::StageCover> TakeCovers(int64_t step, int attempt) {
    std::lock_guard lock(mu_);
    std::vector<v1::StageCover> taken;
    for (v1::StageCover& c : covers_) {
      if (c.step() == step && c.attempt() == attempt) taken.push_back(std::move(c));
    }
    // Those of earlier steps and attempts are of attempts given up; a later
    // attempt's stays for it. One that came while this device still ran a
    // pass of the attempt its replay ended (a second device lost moments
    // after the first) had been dropped by that attempt's last look, its
    // shares never computed, and its group waited for their gradient for
    // ever (found in review).
    std::erase_if(covers_, [&](const v1::StageCover& c) {
      return std::pair{c.step(), c.attempt()} <= std::pair<int64_t, int>{step, attempt};
    });
    return taken;
  }
  // Until one of `keys` is here, a cover has come, or (`gradient`) the
  // group's summed gradient of `step`: Ok. Aborted once the head replays
  // the step; Cancelled once it says stop or the stage is cancelled.
  Status AwaitAny(const std::vector<Key>& keys, int64_t step, int attempt, bool gradient) {
    std::unique_lock lock(mu_);
    auto ready = [&] {
      return CoverDueLocked(step, attempt) || (gradient && gradients_.count({step, attempt}) > 0) ||
             std::any_of(keys.begin(), keys.end(), [&](const Key& k) { return micro_batches_.count(k) > 0; });
    };
    Wait(lock, [&] { return ready() || !closed_.ok() || stopped_ || Superseded(step, attempt); });
    if (ready() && !Superseded(step, attempt)) return Status::Ok();
    return Ended(step, attempt);
  }
  // Until the head has ended the stream or said Stop, at most `within`:
  // a stage whose last word must reach the head (v1::StageFailed) waits for
  // the head to end it, since ending it from this side (gRPC's cancel) may
  // drop what the head has not read yet.
  void WaitForTheHeadsEnd(Duration within) {
    std::unique_lock lock(mu_);
    arrived_.WaitFor(lock, within, [&] { return !closed_.ok() || stopped_.has_value(); });
  }
  // The head's next word: a command or Stop.
  StatusOr<v1::CoordinatorMessage> NextCommand() {
    std::unique_lock lock(mu_);
    Wait(lock, [&] { return !commands_.empty() || !closed_.ok(); });
    if (commands_.empty()) return Ended();
    v1::CoordinatorMessage m = std::move(commands_.front());
    commands_.pop_front();
    return m;
  }

 private:
  // A part of a neighbouring stage's replica, relayed by the head: kept
  // once whole; a part missed gives that replica up. Each neighbour's parts
  // come in order, the two neighbours' interleaved: put together apart.
  void KeepReplicaPartLocked(const v1::ReplicaPart& part) {
    const std::pair<int, int> layers{part.first_layer(), part.end_layer()};
    if (layers.second <= layers.first) return;
    std::optional<v1::StageReplica> replica = coming_[layers].Add(part);
    if (replica && std::pair{replica->first_layer(), replica->end_layer()} == layers) {
      kept_replicas_[layers] = std::move(*replica);
    }
  }

  // Until `holds`, or the stage is cancelled: looked at every cancel_recheck_,
  // since a signal handler cannot notify a condition.
  template <typename Predicate>
  void Wait(std::unique_lock<std::mutex>& lock, Predicate holds) {
    while (!arrived_.WaitFor(lock, cancel_recheck_, holds) && !cancel_.load()) {
    }
  }
  Status Ended(int64_t step = -1, int attempt = 0) const {
    if (stopped_) return CancelledError(*stopped_);
    if (!closed_.ok()) return closed_;
    if (Superseded(step, attempt)) return AbortedError("step " + std::to_string(step) + " is replayed");
    return CancelledError("cancelled");
  }
  // An attempt of the step the head has since replayed.
  bool Superseded(int64_t step, int attempt) const {
    return step == replayed_.first && attempt < replayed_.second;
  }
  // A cover of `step`'s `attempt` is here: one of a later attempt is not yet
  // this wait's to take up.
  bool CoverDueLocked(int64_t step, int attempt) const {
    return std::any_of(covers_.begin(), covers_.end(),
                       [&](const v1::StageCover& c) { return c.step() == step && c.attempt() == attempt; });
  }

  std::mutex mu_;
  ClockCondition arrived_;
  const std::atomic<bool>& cancel_;
  const Duration cancel_recheck_;
  std::map<Key, v1::CoordinatorMessage> micro_batches_;
  std::map<std::pair<int64_t, int>, v1::GroupGradient> gradients_;  // by step and attempt
  std::pair<int64_t, int> replayed_{-1, 0};  // the newest replay's step and attempt
  std::optional<std::string> stopped_;  // the head's Stop, once it came
  std::deque<v1::CoordinatorMessage> commands_;
  std::vector<v1::StageCover> covers_;  // come mid-step, not yet taken up
  Status closed_ = Status::Ok();
  std::map<std::pair<int, int>, ReplicaAssembly> coming_;  // neighbours' replicas coming in parts, by their layers
  std::map<std::pair<int, int>, v1::StageReplica> kept_replicas_;
};

}  // namespace edgetrain::agent
