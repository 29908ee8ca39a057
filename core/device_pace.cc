#include "core/device_pace.h"

namespace edgetrain {

void DevicePace::Observe(int device, double worked_s, double predicted_s) {
  if (!(predicted_s > 0) || !(worked_s > 0)) return;
  devices_.try_emplace(device, window_).first->second.Add(worked_s / predicted_s);
}

namespace {

bool Seen(const std::map<int, RecentMedian>& devices, int device) {
  const auto it = devices.find(device);
  return it != devices.end() && it->second.seen() >= DevicePace::kMinSteps;
}

}  // namespace

bool DevicePace::Learned(int device) const { return Seen(devices_, device) || carried_.count(device) > 0; }

double DevicePace::Of(int device) const {
  if (Seen(devices_, device)) return devices_.at(device).Median();
  const auto carried = carried_.find(device);
  return carried != carried_.end() ? carried->second : 1;
}

void DevicePace::Carry(int device, double before_s, double after_s) {
  if (!Learned(device) || !(before_s > 0) || !(after_s > 0)) return;
  const double pace = 1 + (Of(device) - 1) * before_s / after_s;
  devices_.erase(device);  // learned afresh on its new layers
  carried_[device] = pace;
}

}  // namespace edgetrain
