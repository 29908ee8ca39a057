#include "agent/emulated_device.h"

#include <time.h>

namespace edgetrain::agent {

double CallingThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::function<double()> PassCpuClock(int intra_op_threads) {
  if (intra_op_threads != 1) return {};
  return CallingThreadCpuSeconds;
}

}  // namespace edgetrain::agent
