#include "agent/periodic_look.h"

namespace edgetrain::agent {

PeriodicLook::PeriodicLook(Clock& clock, const std::string& name, Duration every, std::function<void()> look)
    : every_(every), look_(std::move(look)), stopped_(clock) {
  thread_ = clock.StartThread(name, [this] {
    std::unique_lock lock(mu_);
    while (!stopped_.WaitFor(lock, every_, [&] { return stop_; })) {
      lock.unlock();
      look_();
      lock.lock();
    }
  });
}

PeriodicLook::~PeriodicLook() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    stopped_.NotifyAll();
  }
  thread_.Join();
}

}  // namespace edgetrain::agent
