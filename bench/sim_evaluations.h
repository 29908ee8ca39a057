#pragma once
// What the benchmarks on the simulated clock (dp-sim, streams-sim) read of a
// run: its evaluations.csv, when it first held its target, and medians over
// seeds as bench/dp-links reports them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace edgetrain::bench {

struct Evaluated {
  double seconds = 0;
  int64_t iteration = 0;
  int64_t samples = 0;
  double accuracy = 0;
  std::optional<double> energy;
};

// A run's evaluations (docs/using-the-model.md's evaluations.csv), in order.
std::vector<Evaluated> ReadEvaluations(const std::string& path);

// The evaluation at which the mean of the last `window` first reaches `target`.
std::optional<Evaluated> Sustained(const std::vector<Evaluated>& evals, double target, int window = 5);

// The median of the runs that have a value; none when most have none, as
// bench/dp-links reports it. For figures that every run has but some lack
// (an accuracy, a stall).
std::optional<double> Median(std::vector<std::optional<double>> values);

// The median of a figure to the target, a run that never reached it counted
// as slower than every run that did (beyond the cap), not left out: 20, 22,
// 24 s and two misses is 24 s, where leaving them out made it 22 and
// flattered a mode that misses some seeds. None when the middle is a miss.
std::optional<double> MedianToTarget(std::vector<std::optional<double>> values);

inline nlohmann::json Nullable(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace edgetrain::bench
