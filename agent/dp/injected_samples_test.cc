#include "agent/dp/injected_samples.h"

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

v1::InjectedSamples Pixels(const std::string& bytes, std::vector<int64_t> labels) {
  v1::InjectedSamples sent;
  sent.set_pixels(bytes);
  sent.set_pixel_scale(0.5f);
  for (int64_t l : labels) sent.add_labels(l);
  return sent;
}

TEST(InjectedSamplesTest, TopsUpABatchByItsShareWithWhatWasSentOldestFirst) {
  // Samples of 2 features; a quarter of a batch of 8 is 2, and it keeps 5 at hand.
  InjectedSamples injected(InjectionSpec{1.0, 0.25}, 2, 10, 8);
  EXPECT_EQ(injected.Wanted(), 5);
  ASSERT_TRUE(injected.Keep(Pixels(std::string("\x02\x04\x06\x08\x0a\x0c", 6), {1, 2, 3})).ok());
  EXPECT_EQ(injected.Wanted(), 2);
  std::vector<float> x(2 * 10, -1);
  std::vector<int64_t> y(10, -1);
  EXPECT_EQ(injected.TopUp(8, x.data(), y.data()), 2);
  EXPECT_EQ(y[8], 1);
  EXPECT_EQ(y[9], 2);
  EXPECT_EQ(x[16], 1.0f);  // pixel 2 at scale 0.5
  EXPECT_EQ(x[17], 2.0f);
  EXPECT_EQ(x[19], 4.0f);
  EXPECT_EQ(injected.TopUp(3, x.data(), y.data()), 1);  // a quarter of 3 rounds to 1: the last one kept
  EXPECT_EQ(injected.TopUp(8, x.data(), y.data()), 0);  // none left
  EXPECT_EQ(injected.used(), 3);
}

TEST(InjectedSamplesTest, RefusesWhatIsNoSampleOfThisDataSetAndSkipsLabelsOutOfRange) {
  InjectedSamples injected(InjectionSpec{1.0, 0.25}, 2, 10, 8);
  const Status refused = injected.Keep(Pixels("\x01\x02\x03", {1, 2}));
  EXPECT_EQ(refused.message(), "injected samples of 3 bytes for 2 labels are no samples of this data set");
  ASSERT_TRUE(injected.Keep(Pixels("\x01\x02\x03\x04", {12, 4})).ok());
  std::vector<float> x(2 * 12);
  std::vector<int64_t> y(12);
  EXPECT_EQ(injected.TopUp(8, x.data(), y.data()), 1);
  EXPECT_EQ(y[8], 4);
}

}  // namespace
}  // namespace edgetrain::agent
