#include "core/float_sums.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

std::vector<float> Normal(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, 0.01f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(FloatSumsTest, AgreeWithOneRunningTotalForEveryLength) {
  for (size_t n = 0; n <= 40; ++n) {  // short of, at and past the eight lanes
    const std::vector<float> v = Normal(n, n + 1);
    double magnitudes = 0, squares = 0;
    float largest = 0;
    for (float x : v) {
      magnitudes += std::fabs(x);
      squares += double{x} * x;
      largest = std::max(largest, std::fabs(x));
    }
    EXPECT_NEAR(SumOfMagnitudes(v), magnitudes, 1e-15) << n;
    EXPECT_NEAR(SquaredNorm(v), squares, 1e-15) << n;
    EXPECT_NEAR(FiniteSquaredNorm(v), squares, 1e-15) << n;
    EXPECT_EQ(LargestFiniteMagnitude(v), largest) << n;
  }
}

TEST(FloatSumsTest, DivergedValuesCountOnlyWhereAsked) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {1.0f, -2.0f, std::nanf(""), -inf, 3.0f, 0.5f, -0.0f, 4.0f, -5.0f, inf};
  EXPECT_EQ(FiniteSquaredNorm(v), 1 + 4 + 9 + 0.25 + 16 + 25);
  EXPECT_EQ(LargestFiniteMagnitude(v), 5.0f);
  EXPECT_TRUE(std::isnan(SquaredNorm(v)));
  EXPECT_TRUE(std::isinf(SumOfMagnitudes({v.data() + 3, 1})));
  EXPECT_FALSE(IsFiniteBits(std::nanf("")));
  EXPECT_FALSE(IsFiniteBits(-inf));
  EXPECT_TRUE(IsFiniteBits(std::numeric_limits<float>::max()));
  EXPECT_TRUE(IsFiniteBits(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(LargestFiniteMagnitude(std::vector<float>{std::nanf(""), inf}), 0.0f);
  EXPECT_EQ(LargestFiniteMagnitude({}), 0.0f);
  EXPECT_EQ(MagnitudeBound(v), inf);
  EXPECT_EQ(MagnitudeBound({v.data(), 2}), 2.0f);
  for (size_t at = 0; at < 20; ++at) {  // a NaN in every lane and in the tail
    std::vector<float> w(19, -0.5f);
    if (at < w.size()) w[at] = std::nanf("");
    EXPECT_EQ(MagnitudeBound(w), at < w.size() ? inf : 0.5f) << at;
  }
}

}  // namespace
}  // namespace edgetrain
