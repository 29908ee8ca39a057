#include "operator/kube/work_queue.h"

#include <algorithm>
#include <cmath>

namespace edgetrain::kube {

WorkQueue::WorkQueue(Clock& clock, WorkQueueOptions options)
    : clock_(clock), options_(options), changed_(clock), tokens_(options.queue_burst), tokens_at_(clock.Now()) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shut_down_) return;
  if (processing_.count(key)) {
    dirty_.insert(key);
    return;
  }
  if (queued_.insert(key).second) {
    queue_.push_back(key);
    changed_.NotifyAll();
  }
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  std::lock_guard lock(mu_);
  if (delay <= Duration::zero()) return AddLocked(key);
  const TimePoint when = clock_.Now() + delay;
  if (auto it = waiting_at_.find(key); it != waiting_at_.end()) {
    if (it->second->first <= when) return;  // already due as soon or sooner
    waiting_.erase(it->second);
    waiting_at_.erase(it);
  }
  waiting_at_[key] = waiting_.emplace(when, key);
  ++delays_added_;
  changed_.NotifyAll();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  Duration delay;
  {
    std::lock_guard lock(mu_);
    const int n = failures_[key]++;
    const double item_s = ToSeconds(options_.item_initial) * std::pow(2.0, std::min(n, 40));
    const Duration item = std::min(options_.item_max, FromSeconds(item_s));
    // The queue-wide bucket: a token now, or when the debt is paid.
    const TimePoint now = clock_.Now();
    tokens_ = std::min<double>(options_.queue_burst, tokens_ + ToSeconds(now - tokens_at_) * options_.queue_qps);
    tokens_at_ = now;
    tokens_ -= 1;
    const Duration queue = tokens_ >= 0 ? Duration::zero() : FromSeconds(-tokens_ / options_.queue_qps);
    delay = std::max(item, queue);
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::Retries(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (shut_down_) return std::nullopt;
    // Delayed adds whose time has come join the queue.
    const TimePoint now = clock_.Now();
    while (!waiting_.empty() && waiting_.begin()->first <= now) {
      AddLocked(waiting_.begin()->second);
      waiting_at_.erase(waiting_.begin()->second);
      waiting_.erase(waiting_.begin());
    }
    if (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      queued_.erase(key);
      processing_.insert(key);
      return key;
    }
    const TimePoint until = waiting_.empty() ? kNever : waiting_.begin()->first;
    const uint64_t seen = delays_added_;
    changed_.WaitUntil(lock, until, [&] { return shut_down_ || !queue_.empty() || delays_added_ != seen; });
  }
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.erase(key)) AddLocked(key);
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mu_);
  shut_down_ = true;
  changed_.NotifyAll();
}

size_t WorkQueue::Length() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace edgetrain::kube
