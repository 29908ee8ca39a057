#include "core/float_sums.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace edgetrain {
namespace {

constexpr size_t kLanes = 8;

// Folds `term(v)` over `values` into kLanes running sums, then adds them up.
template <typename Term>
double LaneSum(std::span<const float> values, Term term) {
  std::array<double, kLanes> lane{};
  const size_t whole = values.size() / kLanes * kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) lane[j] += term(values[i + j]);
  }
  double sum = 0;
  for (double s : lane) sum += s;
  for (size_t i = whole; i < values.size(); ++i) sum += term(values[i]);
  return sum;
}

}  // namespace

double SumOfMagnitudes(std::span<const float> values) {
  return LaneSum(values, [](float v) { return double{std::fabs(v)}; });
}

double SquaredNorm(std::span<const float> values) {
  return LaneSum(values, [](float v) { return double{v} * v; });
}

double FiniteSquaredNorm(std::span<const float> values) {
  return LaneSum(values, [](float v) {
    const double d = IsFiniteBits(v) ? v : 0.0f;
    return d * d;
  });
}

namespace {

// The largest of `magnitude(v)` over `values`, in kLanes running maxima; 0 for none.
template <typename Magnitude>
float LaneMax(std::span<const float> values, Magnitude magnitude) {
  std::array<float, kLanes> lane{};
  const size_t whole = values.size() / kLanes * kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const float m = magnitude(values[i + j]);
      lane[j] = m > lane[j] ? m : lane[j];
    }
  }
  float most = 0;
  for (float m : lane) most = std::max(most, m);
  for (size_t i = whole; i < values.size(); ++i) most = std::max(most, magnitude(values[i]));
  return most;
}

}  // namespace

float LargestFiniteMagnitude(std::span<const float> values) {
  return LaneMax(values, [](float v) { return IsFiniteBits(v) ? std::fabs(v) : 0.0f; });
}

float MagnitudeBound(std::span<const float> values) {
  return LaneMax(values, [](float v) { return IsFiniteBits(v) ? std::fabs(v) : std::numeric_limits<float>::infinity(); });
}

}  // namespace edgetrain
