#pragma once
// A device's compute over a run: slower than this machine by `initial` from
// its start, and by each change's slowdown from that change's time on (a
// robot whose board throttles once hot, a gateway whose cores another service
// takes), as a cluster profile's compute.changes describes it. Times count
// from the device's agent's start, as its link's trace does.

#include <sstream>
#include <string>
#include <vector>

#include "core/duration_text.h"
#include "core/time.h"

namespace edgetrain {

struct SlowdownChange {
  double at_s = 0;
  double slowdown = 1;
};

struct DeviceSlowdown {
  double initial = 1;
  std::vector<SlowdownChange> changes;  // in the order of their times

  // The slowdown `elapsed_s` seconds into the run: the last change at or
  // before it, else the initial one.
  double At(double elapsed_s) const {
    double now = initial;
    for (const SlowdownChange& c : changes) {
      if (c.at_s > elapsed_s) break;
      now = c.slowdown;
    }
    return now;
  }

  // "slowdown 3, then 30 from 15s, 4 from 1m30s": times as a profile writes
  // them (a change 100,000 hours in was shown "3.6e+08s").
  std::string Said() const {
    std::ostringstream said;
    said << "slowdown " << initial;
    for (size_t i = 0; i < changes.size(); ++i) {
      said << (i == 0 ? ", then " : ", ") << changes[i].slowdown << " from " << FormatDuration(FromSeconds(changes[i].at_s));
    }
    return said.str();
  }
};

}  // namespace edgetrain
