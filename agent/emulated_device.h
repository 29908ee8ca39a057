#pragma once
// The emulated slower device each engine computes on: a pass is begun,
// computed here, then finished, which sleeps what the device would have taken
// more (core/emulated_pass.h says how much, and why on the thread's CPU;
// core/pass_costs.h, why at what like passes cost with the machine to itself).

#include <algorithm>
#include <functional>
#include <optional>

#include "core/clock.h"
#include "core/device_slowdown.h"
#include "core/emulated_pass.h"
#include "core/pass_costs.h"

namespace edgetrain::agent {

// The calling thread's CPU time, in seconds.
double CallingThreadCpuSeconds();

// What a pass's cost is measured on: the computing thread's CPU clock when
// the agent computes on one intra-op thread (LibTorch then runs a pass on the
// thread that calls it, and edgetrain run and the image hold OpenBLAS to one
// thread too); none with more, whose work is spread over threads: the clock's
// time is then the cost.
std::function<double()> PassCpuClock(int intra_op_threads);

class EmulatedDevice {
 public:
  // `cpu_seconds`: PassCpuClock's; none: passes are costed on `clock`. The
  // slowdown's changes count from `started`, or from now.
  EmulatedDevice(Clock& clock, DeviceSlowdown slowdown, std::function<double()> cpu_seconds = {},
                 std::optional<TimePoint> started = std::nullopt)
      : clock_(clock),
        slowdown_(std::move(slowdown)),
        started_(started.value_or(clock.Now())),
        cpu_seconds_(std::move(cpu_seconds)) {}
  EmulatedDevice(Clock& clock, double slowdown, std::function<double()> cpu_seconds = {})
      : EmulatedDevice(clock, DeviceSlowdown{slowdown, {}}, std::move(cpu_seconds)) {}

  struct Mark {
    TimePoint at;
    double cpu_s = 0;
  };
  Mark Begin() const { return {clock_.Now(), cpu_seconds_ ? cpu_seconds_() : 0}; }

  // Sleeps out the pass begun at `began`, on the thread that computed it;
  // `workload` says which passes cost as it does.
  EmulatedPass Finish(const Mark& began, PassWorkload workload) {
    const double wall_s = ToSeconds(clock_.Now() - began.at);
    std::optional<double> cpu_s;
    double measured_s = wall_s;
    if (cpu_seconds_) {
      measured_s = std::clamp(cpu_seconds_() - began.cpu_s, 0.0, wall_s);
      cpu_s = costs_.Uncontended(workload, measured_s);
    }
    // At the slowdown of the time it began: a change mid-pass takes the next.
    EmulatedPass pass = EmulatePass(slowdown_.At(ToSeconds(began.at - started_)), wall_s, cpu_s);
    pass.measured_s = measured_s;
    if (pass.sleep_s > 0) clock_.SleepFor(FromSeconds(pass.sleep_s));
    return pass;
  }

  bool costs_on_cpu() const { return static_cast<bool>(cpu_seconds_); }
  // The passes' work changed (a stage's layers): their costs before are
  // forgotten, lest a stage that took layers be costed at its old, cheaper
  // passes for a dozen more.
  void ForgetCosts() { costs_.Forget(); }

 private:
  Clock& clock_;
  const DeviceSlowdown slowdown_;
  const TimePoint started_;
  const std::function<double()> cpu_seconds_;
  PassCosts costs_;
};

}  // namespace edgetrain::agent
