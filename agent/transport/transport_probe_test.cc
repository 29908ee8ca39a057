#include "agent/transport/transport_probe.h"

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

// Over a real loopback gRPC stream: a message takes some time, and a
// megabyte takes longer than nothing, so the stream has a finite rate.
TEST(TransportProbeTest, TimesMessagesAndBytesOnALoopbackStream) {
  StatusOr<TransportCost> cost = MeasureTransport({.round_trips = 20, .large_bytes = 4 << 20, .large_round_trips = 3});
  ASSERT_TRUE(cost.ok()) << cost.status().ToString();
  EXPECT_GT(cost->message_s, 0);
  EXPECT_LT(cost->message_s, 0.5);
  // 4 MiB through protobuf and HTTP/2 over loopback, each way: far from instant.
  EXPECT_GT(cost->bytes_per_s, 0);
  EXPECT_LT(cost->bytes_per_s, 1e12);
}

}  // namespace
}  // namespace edgetrain::agent
