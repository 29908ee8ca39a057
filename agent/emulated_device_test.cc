#include "agent/emulated_device.h"

#include <gtest/gtest.h>

#include "core/deterministic_clock.h"

namespace edgetrain::agent {
namespace {

// A pass that takes 16 ms on the clock, 10 ms of them computing: the rest
// waiting for a core that another agent held.
void SharedCorePass(Clock& clock, double& cpu_s) {
  clock.SleepFor(std::chrono::milliseconds(16));
  cpu_s += 0.010;
}

TEST(EmulatedDevice, APassOnTheCpuClockTakesSlowdownTimesItsCpu) {
  DeterministicClock clock;
  double cpu_s = 5;  // the thread's CPU clock, read from any point
  EmulatedDevice device(clock, 4, [&cpu_s] { return cpu_s; });
  clock.Run("device", [&] {
    const TimePoint start = clock.Now();
    const EmulatedDevice::Mark began = device.Begin();
    SharedCorePass(clock, cpu_s);
    const EmulatedPass pass = device.Finish(began, {});
    EXPECT_NEAR(ToSeconds(clock.Now() - start), 0.040, 1e-9);
    EXPECT_NEAR(pass.sleep_s, 0.024, 1e-9);
  });
}

// Passes of a step of 8 samples cost 10 ms of CPU alone; one computed while
// other agents crowded the machine's caches and memory cost 16 ms of CPU for
// the same work: the device takes what it takes alone, and the pass says
// what the thread's clock measured.
TEST(EmulatedDevice, APassCrowdedOnThisMachineTakesWhatItsLikeTakeAlone) {
  DeterministicClock clock;
  double cpu_s = 0;
  EmulatedDevice device(clock, 4, [&cpu_s] { return cpu_s; });
  clock.Run("device", [&] {
    auto pass = [&](PassWorkload workload, double cpu) {
      const TimePoint start = clock.Now();
      const EmulatedDevice::Mark began = device.Begin();
      clock.SleepFor(FromSeconds(cpu));
      cpu_s += cpu;
      const EmulatedPass emulated = device.Finish(began, workload);
      return std::pair(ToSeconds(clock.Now() - start), emulated);
    };
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(pass({PassWork::kStep, 8}, 0.010).first, 0.040, 1e-9);
    const auto [took, crowded] = pass({PassWork::kStep, 8}, 0.016);
    EXPECT_NEAR(took, 0.040, 1e-9);
    EXPECT_NEAR(crowded.cost_s, 0.010, 1e-9);
    EXPECT_NEAR(crowded.measured_s, 0.016, 1e-9);
    // A step of other samples is not costed by those.
    EXPECT_NEAR(pass({PassWork::kStep, 16}, 0.016).first, 0.064, 1e-9);
  });
}

TEST(EmulatedDevice, WithoutACpuClockThePassIsCostedOnTheClock) {
  DeterministicClock clock;
  double cpu_s = 0;
  EmulatedDevice device(clock, 4);
  EXPECT_FALSE(device.costs_on_cpu());
  clock.Run("device", [&] {
    const TimePoint start = clock.Now();
    const EmulatedDevice::Mark began = device.Begin();
    SharedCorePass(clock, cpu_s);
    device.Finish(began, {});
    EXPECT_NEAR(ToSeconds(clock.Now() - start), 0.064, 1e-9);
  });
}

// A cluster profile's compute.changes: 4x for the first second, 10x after.
TEST(EmulatedDevice, APassTakesTheSlowdownOfTheTimeItBegan) {
  DeterministicClock clock;
  double cpu_s = 0;
  EmulatedDevice device(clock, DeviceSlowdown{4, {{1.0, 10}}}, [&cpu_s] { return cpu_s; });
  clock.Run("device", [&] {
    auto pass = [&] {
      const TimePoint start = clock.Now();
      const EmulatedDevice::Mark began = device.Begin();
      SharedCorePass(clock, cpu_s);
      device.Finish(began, {});
      return ToSeconds(clock.Now() - start);
    };
    EXPECT_NEAR(pass(), 0.040, 1e-9);
    clock.SleepFor(std::chrono::milliseconds(950));  // begins at 0.99 s: still 4x
    EXPECT_NEAR(pass(), 0.040, 1e-9);
    EXPECT_NEAR(pass(), 0.100, 1e-9);
  });
}

TEST(EmulatedDevice, TheCallingThreadsCpuClockCountsItsOwnWorkOnly) {
  EXPECT_FALSE(PassCpuClock(2));
  const auto cpu = PassCpuClock(1);
  ASSERT_TRUE(cpu);
  const double before = cpu();
  // Sleeping costs the thread no CPU; computing does.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const double slept = cpu() - before;
  volatile double x = 0;
  const double busy_began = cpu();
  for (int i = 0; i < 20'000'000; ++i) x = x + 1e-9 * i;
  const double busy = cpu() - busy_began;
  EXPECT_LT(slept, 0.010);
  EXPECT_GT(busy, 0.001);
}

}  // namespace
}  // namespace edgetrain::agent
