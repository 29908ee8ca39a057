#include "core/row_scheduler.h"

#include <algorithm>

namespace edgetrain {

int MandatoryAfter(int staleness_bound) { return staleness_bound >= 2 ? staleness_bound - 1 : staleness_bound; }

std::vector<size_t> SelectPushRows(std::span<const PushCandidate> candidates, int64_t iteration, int staleness_bound,
                                   int64_t byte_budget, RowOrder order) {
  std::vector<size_t> chosen;
  std::vector<std::pair<double, const PushCandidate*>> optional;
  int64_t spent = 0;
  const double bound = std::max(1, staleness_bound);
  const int mandatory_after = MandatoryAfter(staleness_bound);
  for (const auto& c : candidates) {
    // A row already pushed at this iteration holds no new gradient, only what
    // its compression left behind; an idle push resending that every few
    // milliseconds would fill the link ahead of the next iteration's rows.
    if (c.last_pushed >= iteration) continue;
    int64_t staleness = iteration - c.last_pushed;
    if (c.demanded || staleness >= mandatory_after) {
      chosen.push_back(c.row);
      spent += c.bytes;
      continue;
    }
    if (c.residual_energy <= 0) continue;
    double score = order == RowOrder::kStaleness
                       ? static_cast<double>(staleness)
                       : c.residual_energy / static_cast<double>(std::max<int64_t>(1, c.bytes)) *
                             (1.0 + static_cast<double>(staleness) / bound);
    optional.push_back({score, &c});
  }
  // Highest score first; ties by row index, so the choice is deterministic.
  std::sort(optional.begin(), optional.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second->row < b.second->row;
  });
  for (const auto& [score, c] : optional) {
    if (spent + c->bytes > byte_budget) continue;  // a smaller row may still fit
    chosen.push_back(c->row);
    spent += c->bytes;
  }
  return chosen;
}

std::vector<size_t> SelectPullRows(std::span<const PullCandidate> candidates, int64_t byte_budget) {
  std::vector<size_t> chosen;
  std::vector<const PullCandidate*> optional;
  int64_t spent = 0;
  for (const auto& c : candidates) {
    if (c.mandatory) {
      chosen.push_back(c.row);
      spent += c.bytes;
    } else if (c.missed_updates > 0) {
      optional.push_back(&c);
    }
  }
  std::sort(optional.begin(), optional.end(), [](const PullCandidate* a, const PullCandidate* b) {
    return a->missed_updates != b->missed_updates ? a->missed_updates > b->missed_updates : a->row < b->row;
  });
  for (const PullCandidate* c : optional) {
    if (spent + c->bytes > byte_budget) continue;
    chosen.push_back(c->row);
    spent += c->bytes;
  }
  // A budget smaller than any row still moves the most out-of-date one: the
  // link is never left idle while rows wait.
  if (chosen.empty() && !optional.empty()) chosen.push_back(optional.front()->row);
  return chosen;
}

}  // namespace edgetrain
