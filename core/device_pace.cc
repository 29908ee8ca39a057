#include "core/device_pace.h"

namespace edgetrain {

void DevicePace::Observe(int device, double worked_s, double predicted_s) {
  if (!(predicted_s > 0) || !(worked_s > 0)) return;
  devices_.try_emplace(device, window_).first->second.Add(worked_s / predicted_s);
}

bool DevicePace::Learned(int device) const {
  const auto it = devices_.find(device);
  return it != devices_.end() && it->second.seen() >= kMinSteps;
}

double DevicePace::Of(int device) const { return Learned(device) ? devices_.at(device).Median() : 1; }

}  // namespace edgetrain
