#include "core/backoff.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(BackoffTest, DoublesUpToItsMaximumAndStartsOverAfterAHealthyPeriod) {
  Backoff b(milliseconds(800), seconds(30), seconds(120));
  TimePoint t = TimePoint{} + std::chrono::hours(1);
  std::vector<Duration> waits;
  for (int i = 0; i < 8; ++i) waits.push_back(b.Failed(t += seconds(1)));
  EXPECT_EQ(waits, (std::vector<Duration>{milliseconds(800), milliseconds(1600), milliseconds(3200), milliseconds(6400),
                                          milliseconds(12800), milliseconds(25600), seconds(30), seconds(30)}));
  EXPECT_EQ(b.Failed(t += seconds(119)), seconds(30)) << "not healthy long enough";
  EXPECT_EQ(b.Failed(t += seconds(120)), milliseconds(800));
}

}  // namespace
}  // namespace edgetrain
