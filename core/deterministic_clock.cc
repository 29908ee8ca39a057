#include "core/deterministic_clock.h"

#include <cstdio>
#include <cstdlib>

namespace edgetrain {
namespace {

struct Participation {
  const DeterministicClock* clock = nullptr;
  void* actor = nullptr;
};
thread_local Participation tls_participation;

}  // namespace

struct DeterministicClock::Actor {
  uint64_t id = 0;
  std::string name;
  bool waiting = false;                 // false: ready or running
  ClockCondition* condition = nullptr;  // what it waits on; null: only its deadline
  TimePoint deadline = kNever;
  std::condition_variable turn;         // signalled when it gets the turn
};

DeterministicClock::DeterministicClock(TimePoint start) : now_(start) {}

DeterministicClock::~DeterministicClock() = default;

TimePoint DeterministicClock::Now() const {
  std::lock_guard lock(mu_);
  return now_;
}

uint64_t DeterministicClock::hand_offs() const {
  std::lock_guard lock(mu_);
  return hand_offs_;
}

DeterministicClock::Actor* DeterministicClock::Calling() {
  return tls_participation.clock == this ? static_cast<Actor*>(tls_participation.actor) : nullptr;
}

void DeterministicClock::SleepUntil(TimePoint deadline) {
  std::unique_lock own(mu_);
  if (now_ >= deadline) return;
  if (Actor* actor = Calling()) {
    Block(*actor, nullptr, deadline, own);
  } else {
    outsiders_.wait(own, [&] { return now_ >= deadline; });
  }
}

void DeterministicClock::WaitOnce(ClockCondition& condition, std::unique_lock<std::mutex>& lock, TimePoint deadline) {
  std::unique_lock own(mu_);
  const uint64_t seen = condition.notifications_;
  lock.unlock();
  if (Actor* actor = Calling()) {
    Block(*actor, &condition, deadline, own);
  } else {
    outsiders_.wait(own, [&] { return now_ >= deadline || condition.notifications_ != seen; });
  }
  own.unlock();
  lock.lock();
}

void DeterministicClock::NotifyAll(ClockCondition& condition) {
  std::lock_guard own(mu_);
  ++condition.notifications_;
  for (auto& [id, actor] : actors_) {
    if (actor->waiting && actor->condition == &condition) actor->waiting = false;
  }
  outsiders_.notify_all();
  if (turn_ == 0) HandOff();  // an outsider woke someone while all waited
}

uint64_t DeterministicClock::RegisterThread(const std::string& name) {
  std::lock_guard own(mu_);
  auto actor = std::make_unique<Actor>();
  actor->id = next_id_++;
  actor->name = name;
  const uint64_t id = actor->id;
  actors_.emplace(id, std::move(actor));
  if (turn_ == 0) HandOff();  // started by an outsider: nobody else would give it the turn
  return id;
}

void DeterministicClock::ThreadBegins(uint64_t id) {
  std::unique_lock own(mu_);
  Actor& actor = *actors_.at(id);
  tls_participation = {this, &actor};
  actor.turn.wait(own, [&] { return turn_ == id; });
}

void DeterministicClock::ThreadEnds(uint64_t id) {
  std::lock_guard own(mu_);
  tls_participation = {};
  actors_.erase(id);
  HandOff();
}

void DeterministicClock::Run(const std::string& name, const std::function<void()>& body) {
  const uint64_t id = RegisterThread(name);
  ThreadBegins(id);
  body();
  ThreadEnds(id);
}

void DeterministicClock::Block(Actor& actor, ClockCondition* condition, TimePoint deadline,
                               std::unique_lock<std::mutex>& own) {
  actor.waiting = true;
  actor.condition = condition;
  actor.deadline = deadline;
  HandOff();
  actor.turn.wait(own, [&] { return turn_ == actor.id; });
  actor.condition = nullptr;
  actor.deadline = kNever;  // only a waiting actor's deadline moves time
}

DeterministicClock::Actor* DeterministicClock::NextReady() {
  // Round the circle from the actor that had the turn, so that none starves.
  for (auto it = actors_.upper_bound(turn_); it != actors_.end(); ++it) {
    if (!it->second->waiting) return it->second.get();
  }
  for (auto it = actors_.begin(); it != actors_.end() && it->first <= turn_; ++it) {
    if (!it->second->waiting) return it->second.get();
  }
  return nullptr;
}

void DeterministicClock::HandOff() {
  Actor* next = NextReady();
  if (!next && !actors_.empty()) {
    // Every thread waits: time moves to the earliest deadline, waking whoever waits for it.
    TimePoint earliest = kNever;
    for (auto& [id, actor] : actors_) earliest = std::min(earliest, actor->deadline);
    if (earliest == kNever) ReportDeadlock();
    now_ = std::max(now_, earliest);
    for (auto& [id, actor] : actors_) {
      if (actor->deadline <= now_) actor->waiting = false;
    }
    outsiders_.notify_all();
    next = NextReady();
  }
  ++hand_offs_;
  turn_ = next ? next->id : 0;
  if (next) next->turn.notify_one();
}

void DeterministicClock::ReportDeadlock() {
  std::fprintf(stderr, "DeterministicClock: deadlock: every thread waits and none has a deadline:\n");
  for (auto& [id, actor] : actors_) {
    std::fprintf(stderr, "  %s, waiting on %s\n", actor->name.c_str(),
                 actor->condition ? "a condition" : "nothing (a sleep without end)");
  }
  std::fflush(stderr);
  std::abort();
}

}  // namespace edgetrain
