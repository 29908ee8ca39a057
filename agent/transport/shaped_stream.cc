#include "agent/transport/shaped_stream.h"

namespace edgetrain::agent {

bool PassLink(TraceShaper& link, int64_t bytes, Clock& clock, const std::function<bool()>& abandon) {
  constexpr Duration kSlice = std::chrono::milliseconds(50);
  const TimePoint through = link.Reserve(bytes, clock.Now());
  for (TimePoint now = clock.Now(); now < through; now = clock.Now()) {
    if (abandon()) {
      link.Release(through, clock.Now());
      return false;
    }
    clock.SleepUntil(std::min(through, now + kSlice));
  }
  return true;
}

}  // namespace edgetrain::agent
