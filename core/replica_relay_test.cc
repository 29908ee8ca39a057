#include "core/replica_relay.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

// Every 4 steps: step 1's, then step 4's; the copy due at 8 went out late,
// at 9, behind a copy of the head's own still on the wire, and is the one
// relayed; those made between multiples are the head's alone.
TEST(ReplicaRelayTest, StepOnesAndTheFirstAtOrAfterEachMultipleAreRelayed) {
  ReplicaRelay relay;
  EXPECT_TRUE(relay.Relays(1, 4));
  EXPECT_FALSE(relay.Relays(2, 4));
  EXPECT_FALSE(relay.Relays(3, 4));
  EXPECT_TRUE(relay.Relays(4, 4));
  EXPECT_FALSE(relay.Relays(6, 4));
  EXPECT_TRUE(relay.Relays(9, 4)) << "the copy due at 8, made late";
  EXPECT_FALSE(relay.Relays(10, 4));
  EXPECT_TRUE(relay.Relays(12, 4));
}

TEST(ReplicaRelayTest, EveryStepEachAndWithNoPeriodStepOnesAlone) {
  ReplicaRelay every_step;
  for (int64_t step = 1; step <= 5; ++step) EXPECT_TRUE(every_step.Relays(step, 1)) << step;
  ReplicaRelay none;
  EXPECT_TRUE(none.Relays(1, 0));
  EXPECT_FALSE(none.Relays(2, 0));
  EXPECT_FALSE(none.Relays(100, 0));
}

}  // namespace
}  // namespace edgetrain
