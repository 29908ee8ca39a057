#include "core/energy_model.h"

#include <algorithm>

namespace edgetrain {

EnergyMeter::EnergyMeter(PowerProfile profile, TimePoint start) : profile_(profile), last_(start) {}

void EnergyMeter::AdvanceLocked(TimePoint to) const {
  if (to <= last_) return;
  const double dt = ToSeconds(to - last_);
  if (computing_ > 0) {
    compute_s_ += dt;
  } else if (sending_ > 0) {
    send_s_ += dt;
  } else {
    const double received = std::min(dt, receive_owed_s_);
    receive_s_ += received;
    receive_owed_s_ -= received;
    idle_s_ += dt - received;
  }
  last_ = to;
}

void EnergyMeter::Restart(TimePoint at) {
  std::lock_guard lock(mu_);
  last_ = at;
  compute_s_ = send_s_ = idle_s_ = receive_s_ = receive_owed_s_ = 0;
}

void EnergyMeter::BeginCompute(TimePoint at) {
  std::lock_guard lock(mu_);
  AdvanceLocked(at);
  ++computing_;
}

void EnergyMeter::EndCompute(TimePoint at) {
  std::lock_guard lock(mu_);
  AdvanceLocked(at);
  computing_ = std::max(0, computing_ - 1);
}

void EnergyMeter::BeginSend(TimePoint at) {
  std::lock_guard lock(mu_);
  AdvanceLocked(at);
  ++sending_;
}

void EnergyMeter::EndSend(TimePoint at) {
  std::lock_guard lock(mu_);
  AdvanceLocked(at);
  sending_ = std::max(0, sending_ - 1);
}

void EnergyMeter::AddReceive(double seconds) {
  std::lock_guard lock(mu_);
  receive_owed_s_ += std::max(0.0, seconds);
}

EnergySplit EnergyMeter::Split(TimePoint now) const {
  std::lock_guard lock(mu_);
  AdvanceLocked(now);
  EnergySplit e;
  e.compute_s = compute_s_;
  e.communicate_s = send_s_ + receive_s_;
  e.idle_s = idle_s_;
  e.compute_j = e.compute_s * profile_.compute_watts;
  e.communicate_j = e.communicate_s * profile_.communicate_watts;
  e.idle_j = e.idle_s * profile_.idle_watts;
  return e;
}

}  // namespace edgetrain
