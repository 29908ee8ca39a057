#include "core/edit_distance.h"

#include <algorithm>
#include <vector>

namespace edgetrain {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string Nearest(std::string_view word, const std::vector<std::string>& candidates, size_t below) {
  std::string best;
  for (const std::string& candidate : candidates) {
    if (const size_t d = EditDistance(word, candidate); d < below) below = d, best = candidate;
  }
  return best;
}

}  // namespace edgetrain
