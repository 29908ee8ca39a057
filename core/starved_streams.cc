#include "core/starved_streams.h"

#include <cmath>
#include <cstdio>

#include "core/duration_text.h"
#include "core/round_deadline.h"

namespace edgetrain {
namespace {

std::string Plain(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// Why the team's rounds wait for every worker, or empty when they do not.
std::string WhyRoundsWait(const SyncSpec& sync, int workers) {
  switch (sync.policy) {
    case SyncPolicy::kBsp: return "under spec.sync.policy bsp every round waits for every worker's gradient";
    case SyncPolicy::kRog:
    case SyncPolicy::kSsp:
      return "the others wait for it once they are spec.sync.stalenessBound iterations ahead";
    case SyncPolicy::kDeadline: {
      const double quorum = sync.quorum.value_or(kDefaultQuorum);
      const int q = RoundDeadline(quorum, 0).QuorumOf(workers);
      if (q < workers) return "";
      return "under spec.sync.policy deadline a quorum of " + Plain(quorum) + " of " + std::to_string(workers) +
             " workers is all " + std::to_string(workers) +
             ", so no round closes without it (a lower spec.sync.quorum closes rounds without it)";
    }
  }
  return "";
}

}  // namespace

std::vector<std::string> StarvedStreamWarnings(const JobSpec& spec, const std::vector<std::optional<StreamRate>>& rates,
                                               double horizon_s) {
  std::vector<std::string> out;
  const int workers = spec.parallelism.workers;
  if (!spec.data.stream || workers < 2) return out;
  const std::string why = WhyRoundsWait(spec.sync, workers);
  if (why.empty()) return out;
  const int least = StreamMinBatch(*spec.data.stream, spec.data.batch_size);
  for (size_t rank = 0; rank < rates.size(); ++rank) {
    if (!rates[rank]) continue;
    const double first = rates[rank]->WhenArrived(least);
    if (!(first > horizon_s)) continue;
    out.push_back("worker " + std::to_string(rank) + "'s stream brings its first batch's least of " +
                  std::to_string(least) + " samples (spec.data.stream.minBatchSize) only " +
                  (std::isfinite(first) ? "after " + FormatDuration(FromSeconds(first)) : std::string("never")) +
                  ", past the run's " + FormatDuration(FromSeconds(horizon_s)) + ", and " + why +
                  ": the team trains on nothing until then");
  }
  return out;
}

}  // namespace edgetrain
