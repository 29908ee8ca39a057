#pragma once
// A device `slowdown` times slower than this machine (a cluster profile's
// compute.slowdown) is emulated by sleeping after each pass it computes here,
// until the pass has taken `slowdown` times what it cost this machine.
//
// What it cost is the computing thread's CPU time where that is known (the
// pass ran on that thread alone: one intra-op thread). The pass's time on the
// clock also counts whatever while the thread waited for a core that other
// agents held; every emulated device of a team shares this machine's two
// cores, where on a cluster each has its own, and a wait multiplied by the
// slowdown made each device slower the more others computed beside it: a
// pipeline's stage learned a pace of 1.73-2.64 times its profile with its
// neighbours computing, and ran at 1.23-1.67 once alone (docs/pipeline.md).
// Measured on its CPU, the device takes the same time with or without
// neighbours, unless a wait outlasts the whole emulated pass; its CPU time
// itself grows with neighbours (caches, memory), which the engines take out
// by costing it at what like passes cost alone (core/pass_costs.h). Where no CPU
// time is known (more threads, the simulated clock), the clock's time is it.

#include <algorithm>
#include <optional>

namespace edgetrain {

struct EmulatedPass {
  double cost_s = 0;    // what the pass is costed at on this machine: measured_s, or what its like cost alone
  // What the thread's clock measured, where cost_s is costed otherwise
  // (core/pass_costs.h: a crowded pass at what its like cost alone).
  double measured_s = 0;
  double own_s = 0;     // what it takes on a device of its own: slowdown times cost_s
  double device_s = 0;  // what it took here: own_s, or the pass's time on the clock if longer
  double sleep_s = 0;   // what is slept after it: device_s less the pass's time on the clock
};

// `wall_s`: the pass's time on the clock; `cpu_s`: its computing thread's CPU
// time, when known.
inline EmulatedPass EmulatePass(double slowdown, double wall_s, std::optional<double> cpu_s) {
  EmulatedPass p;
  wall_s = std::max(0.0, wall_s);
  // A thread's CPU time cannot exceed its time on the clock but for the two
  // clocks' granularity: no more than the wall time is counted.
  p.cost_s = cpu_s ? std::clamp(*cpu_s, 0.0, wall_s) : wall_s;
  p.measured_s = p.cost_s;
  p.own_s = std::max(1.0, slowdown) * p.cost_s;
  p.device_s = std::max(wall_s, p.own_s);
  p.sleep_s = p.device_s - wall_s;
  return p;
}

}  // namespace edgetrain
