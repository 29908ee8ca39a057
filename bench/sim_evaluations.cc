#include "bench/sim_evaluations.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace edgetrain::bench {

std::vector<Evaluated> ReadEvaluations(const std::string& path) {
  std::vector<Evaluated> evals;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream row(line);
    std::string cell;
    std::vector<std::string> cells;
    while (std::getline(row, cell, ',')) cells.push_back(cell);
    if (cells.size() < 4) continue;
    Evaluated e{std::stod(cells[0]), std::stoll(cells[1]), std::stoll(cells[2]), std::stod(cells[3]), std::nullopt};
    if (cells.size() > 4 && !cells[4].empty()) e.energy = std::stod(cells[4]);
    evals.push_back(e);
  }
  return evals;
}

std::optional<Evaluated> Sustained(const std::vector<Evaluated>& evals, double target, int window) {
  for (size_t i = static_cast<size_t>(window) - 1; i < evals.size(); ++i) {
    double sum = 0;
    for (size_t k = i + 1 - static_cast<size_t>(window); k <= i; ++k) sum += evals[k].accuracy;
    if (sum / window >= target) return evals[i];
  }
  return std::nullopt;
}

std::optional<double> Median(std::vector<std::optional<double>> values) {
  std::vector<double> v;
  for (auto x : values) {
    if (x) v.push_back(*x);
  }
  if (v.empty() || v.size() * 2 <= values.size()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::optional<double> MedianToTarget(std::vector<std::optional<double>> values) {
  if (values.empty()) return std::nullopt;
  // A miss sorts after every figure.
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a && (!b || *a < *b); });
  const size_t n = values.size();
  if (n % 2) return values[n / 2];
  const auto &low = values[n / 2 - 1], &high = values[n / 2];
  if (!low || !high) return std::nullopt;
  return (*low + *high) / 2;
}

}  // namespace edgetrain::bench
