#include "operator/kube/kube_time.h"

#include <gtest/gtest.h>

namespace edgetrain::kube {
namespace {

TEST(KubeTimeTest, WritesAndReadsKubernetesTimestamps) {
  const WallTime t = std::chrono::system_clock::from_time_t(1795374113);  // 2026-11-22T19:01:53Z
  EXPECT_EQ(FormatKubeTime(t), "2026-11-22T19:01:53Z");
  EXPECT_EQ(ParseKubeTime("2026-11-22T19:01:53Z"), t);
  EXPECT_EQ(ParseKubeTime("2026-11-22T19:01:53.123456Z"), t + std::chrono::microseconds(123456)) << "MicroTime";
  EXPECT_EQ(ParseKubeTime("2026-11-22T19:01:53.5Z"), t + std::chrono::milliseconds(500));
  EXPECT_EQ(ParseKubeTime("2026-11-22T19:01:53.1234567Z"), t + std::chrono::microseconds(123456)) << "past a us";
  EXPECT_EQ(FormatKubeTimePrecise(t), "2026-11-22T19:01:53Z") << "a whole second as a whole second";
  EXPECT_EQ(FormatKubeTimePrecise(t + std::chrono::milliseconds(475)), "2026-11-22T19:01:53.475Z");
  const WallTime later = t + std::chrono::milliseconds(475);
  EXPECT_EQ(ParseKubeTime(FormatKubeTimePrecise(later)), later);
  EXPECT_EQ(ParseKubeTime("2026-11-22T20:01:53+01:00"), t);
  EXPECT_EQ(ParseKubeTime("2026-11-22T18:31:53-00:30"), t);
  EXPECT_FALSE(ParseKubeTime("yesterday").has_value());
  EXPECT_FALSE(ParseKubeTime("2026-11-22T19:01:53").has_value()) << "no zone: not a Kubernetes time";
}

}  // namespace
}  // namespace edgetrain::kube
