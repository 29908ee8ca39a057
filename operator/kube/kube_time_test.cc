#include "operator/kube/kube_time.h"

#include <gtest/gtest.h>

namespace edgetrain::kube {
namespace {

TEST(KubeTimeTest, WritesAndReadsKubernetesTimestamps) {
  const WallTime t = std::chrono::system_clock::from_time_t(1795374113);  // 2026-11-22T19:01:53Z
  EXPECT_EQ(FormatKubeTime(t), "2026-11-22T19:01:53Z");
  EXPECT_EQ(ParseKubeTime("2026-11-22T19:01:53Z"), t);
  EXPECT_EQ(ParseKubeTime("2026-11-22T19:01:53.123456Z"), t) << "MicroTime, to the second";
  EXPECT_EQ(ParseKubeTime("2026-11-22T20:01:53+01:00"), t);
  EXPECT_EQ(ParseKubeTime("2026-11-22T18:31:53-00:30"), t);
  EXPECT_FALSE(ParseKubeTime("yesterday").has_value());
  EXPECT_FALSE(ParseKubeTime("2026-11-22T19:01:53").has_value()) << "no zone: not a Kubernetes time";
}

}  // namespace
}  // namespace edgetrain::kube
