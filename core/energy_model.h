#pragma once
// Energy as a model, not a measurement (docs/energy.md): edge devices here have
// no power meter we can read, so each device's time is split between computing,
// communicating and idling, and each state is charged at its profile's watts.
//
// States are exclusive, by priority: computing, else communicating (the radio
// sending, or receiving for the time the coordinator reports a transfer took),
// else idle (waiting, stalled). Time the radio was busy receiving while the
// device computed is not charged twice.

#include <mutex>

#include "core/cluster_profile.h"
#include "core/time.h"

namespace edgetrain {

struct EnergySplit {
  double compute_s = 0, communicate_s = 0, idle_s = 0;
  double compute_j = 0, communicate_j = 0, idle_j = 0;
  double total_j() const { return compute_j + communicate_j + idle_j; }
};

class EnergyMeter {
 public:
  EnergyMeter(PowerProfile profile, TimePoint start);

  // Thread-safe: the compute loop and the sender mark their own states.
  void BeginCompute(TimePoint at);
  void EndCompute(TimePoint at);
  void BeginSend(TimePoint at);
  void EndSend(TimePoint at);
  // `seconds` of receiving that ended by now (reported after the fact): taken
  // from the idle time that follows, as communicate time. Not from idle time
  // already counted: a state's figures only grow, as the Prometheus counters
  // fed with them must, and taking it back from idle left those counters
  // summing to more than the device drew (279 J against 224 J for a robot
  // whose link came and went, a trial's), communicate rising in lumps.
  void AddReceive(double seconds);

  EnergySplit Split(TimePoint now) const;
  // Counts from `at` again, as if nothing had happened before: a worker's
  // time starts when training does, not when its process did.
  void Restart(TimePoint at);
  const PowerProfile& profile() const { return profile_; }

 private:
  void AdvanceLocked(TimePoint to) const;

  const PowerProfile profile_;
  mutable std::mutex mu_;
  mutable TimePoint last_;                 // guarded by mu_
  mutable double compute_s_ = 0;           // guarded by mu_, as is all below
  mutable double send_s_ = 0;
  mutable double idle_s_ = 0;
  mutable double receive_s_ = 0;           // taken from idle time
  mutable double receive_owed_s_ = 0;      // reported, not yet taken from idle time
  int computing_ = 0;
  int sending_ = 0;
};

}  // namespace edgetrain
