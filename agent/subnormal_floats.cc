#include "agent/subnormal_floats.h"

#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include <cstdint>

namespace edgetrain::agent {

bool FlushSubnormalsToZero() {
#if defined(__x86_64__) || defined(__i386__)
  // SSE's MXCSR: results flushed to zero (FTZ), and subnormal inputs read as
  // zero (DAZ), which a subnormal already in memory (a checkpoint's) needs.
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  return true;
#elif defined(__aarch64__)
  // FPCR's FZ bit covers both inputs and results of single and double precision.
  uint64_t fpcr = 0;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr |= uint64_t{1} << 24;
  asm volatile("msr fpcr, %0" : : "r"(fpcr));
  return true;
#else
  return false;
#endif
}

}  // namespace edgetrain::agent
