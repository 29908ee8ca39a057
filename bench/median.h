#pragma once
// The median of a benchmark's timed repeats (the upper middle of an even
// count): what a timing benchmark under bench/ reports of them.

#include <algorithm>
#include <vector>

namespace edgetrain::bench {

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace edgetrain::bench
