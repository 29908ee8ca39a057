#include "agent/subnormal_floats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "core/row_codec.h"

namespace edgetrain::agent {
namespace {

// A product into the subnormal range, computed where the compiler cannot
// fold it.
float SubnormalProduct() {
  volatile float smallest_normal = std::numeric_limits<float>::min();
  volatile float tenth = 0.1f;
  return smallest_normal * tenth;
}

TEST(SubnormalFloatsTest, AreZeroOnTheThreadThatAskedAndOnThreadsItStartsAfter) {
  // Its own thread: what a test runner's other tests compute stays as it was.
  std::thread asker([] {
    ASSERT_NE(SubnormalProduct(), 0.0f) << "subnormals are computed before";
    if (!FlushSubnormalsToZero()) GTEST_SKIP() << "no flush-to-zero mode on this processor";
    EXPECT_EQ(SubnormalProduct(), 0.0f);
    float on_a_thread_started_after = 1;
    std::thread([&] { on_a_thread_started_after = SubnormalProduct(); }).join();
    EXPECT_EQ(on_a_thread_started_after, 0.0f) << "a thread takes its creator's mode";
    // A product that would be normal: only a subnormal read as 0 makes it 0.
    volatile float subnormal_input = std::numeric_limits<float>::denorm_min();
    volatile float two_to_the_40 = 0x1p40f;
    EXPECT_EQ(subnormal_input * two_to_the_40, 0.0f) << "a subnormal already in memory reads as 0";
  });
  asker.join();
  EXPECT_NE(SubnormalProduct(), 0.0f) << "other threads as they were";
}

// A row whose largest value is normal but whose int8 or int4 scale would be
// subnormal: flushed, the scale was 0, and a 0 in the row went 0 / 0, a NaN
// cast to an integer (found in review). Each value now rounds to 0.
TEST(SubnormalFloatsTest, ARowCodecsScaleFlushedToZeroIsNoScale) {
  std::thread flushed([] {
    if (!FlushSubnormalsToZero()) GTEST_SKIP() << "no flush-to-zero mode on this processor";
    const std::vector<float> row = {5e-38f, 0.0f, -2e-38f, std::nanf("")};  // normal, / 7 and / 127 not
    for (RowEncoding e : {RowEncoding::kInt8, RowEncoding::kInt4}) {
      const EncodedRow encoded = EncodeRow(row, e);
      EXPECT_EQ(encoded.scale, 1.0f) << static_cast<int>(e);
      std::vector<float> decoded(row.size(), -1.0f);
      ASSERT_TRUE(DecodeRow(e, encoded.scale, encoded.bytes, decoded).ok());
      for (float v : decoded) EXPECT_EQ(v, 0.0f) << static_cast<int>(e);
    }
  });
  flushed.join();
}

}  // namespace
}  // namespace edgetrain::agent
