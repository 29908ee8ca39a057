#pragma once
// The queue of objects to reconcile, as client-go's rate-limited work queue:
//   - a key is queued at most once; added again while a worker processes it,
//     it is queued again when that worker is Done (so no two workers ever
//     reconcile the same object at once, and no change is missed);
//   - AddAfter queues a key once a delay has passed (a reconcile's requeueAfter);
//     a key waits at most once, for the earliest time it was asked for;
//   - AddRateLimited queues it after that key's own back-off (5 ms doubling up
//     to 1000 s, reset by Forget) or the queue-wide rate (10/s, burst 100),
//     whichever is later: a failing object backs off without starving others.
// Everything waits on the injected clock.

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "core/clock.h"

namespace edgetrain::kube {

struct WorkQueueOptions {
  Duration item_initial = std::chrono::milliseconds(5);
  Duration item_max = std::chrono::seconds(1000);
  double queue_qps = 10;
  int queue_burst = 100;
};

class WorkQueue {
 public:
  explicit WorkQueue(Clock& clock, WorkQueueOptions options = {});

  void Add(const std::string& key);
  void AddAfter(const std::string& key, Duration delay);
  void AddRateLimited(const std::string& key);
  // The key reconciled well: its back-off starts over.
  void Forget(const std::string& key);
  // Times the key was added rate-limited since it was last forgotten.
  int Retries(const std::string& key) const;

  // The next key to work on; waits for one. nullopt once shut down.
  std::optional<std::string> Get();
  // The worker is done with `key` (which may then be queued again).
  void Done(const std::string& key);
  // Wakes every Get with nullopt; what is queued is dropped.
  void ShutDown();

  size_t Length() const;  // queued and ready, for the queue-depth metric

 private:
  void AddLocked(const std::string& key);

  Clock& clock_;
  const WorkQueueOptions options_;
  mutable std::mutex mu_;
  ClockCondition changed_;
  std::deque<std::string> queue_;          // ready, in order; guarded by mu_
  std::set<std::string> queued_;           // what queue_ holds
  std::set<std::string> processing_;
  std::set<std::string> dirty_;            // added while processing
  std::multimap<TimePoint, std::string> waiting_;  // delayed adds, by when
  // Each key's one delayed add: a second one keeps the earlier time. Kept
  // apart, a reconcile's requeueAfter and each extra pass's (a pod's change)
  // made parallel chains that never merged: a running job was read every
  // 2-3 s in bursts, against --status-interval 5 s (a new user's trial).
  std::map<std::string, std::multimap<TimePoint, std::string>::iterator> waiting_at_;
  std::map<std::string, int> failures_;    // per key, since Forget
  double tokens_;                          // the queue-wide bucket
  TimePoint tokens_at_;
  uint64_t delays_added_ = 0;              // a Get waiting for a later one looks again
  bool shut_down_ = false;
};

}  // namespace edgetrain::kube
