#include "core/starved_streams.h"

#include <cmath>

#include "core/duration_text.h"
#include "core/number_text.h"
#include "core/round_deadline.h"

namespace edgetrain {
namespace {

// Why the team waits for a starved worker and what it does meanwhile, or
// nothing when its rounds go on without it.
struct Wait {
  std::string why;
  std::string meanwhile;
};

std::optional<Wait> HowTheTeamWaits(const SyncSpec& sync, int workers) {
  switch (sync.policy) {
    case SyncPolicy::kBsp:
      return Wait{"under spec.sync.policy bsp every round waits for every worker's gradient",
                  "the team trains on nothing until then"};
    case SyncPolicy::kRog:
    case SyncPolicy::kSsp:
      return Wait{"under spec.sync.policy " + std::string(sync.policy == SyncPolicy::kRog ? "rog" : "ssp") +
                      " the others go at most spec.sync.stalenessBound iterations ahead of it",
                  "then the team trains on nothing until then"};
    case SyncPolicy::kDeadline: {
      const double quorum = sync.quorum.value_or(kDefaultQuorum);
      const int q = RoundDeadline(quorum, 0).QuorumOf(workers);
      if (q < workers) return std::nullopt;
      return Wait{"under spec.sync.policy deadline a quorum of " + PlainNumber(quorum) + " of " +
                      std::to_string(workers) + " workers is all " + std::to_string(workers) +
                      ", so no round closes without it (a lower spec.sync.quorum closes rounds without it)",
                  "the team trains on nothing until then"};
    }
  }
  return std::nullopt;
}

// Beyond this a Duration's nanoseconds overflow; and no run lasts so long.
constexpr double kLongestSaidSeconds = 100000 * 3600.0;

}  // namespace

std::vector<std::string> StarvedStreamWarnings(const JobSpec& spec, const std::vector<std::optional<StreamRate>>& rates,
                                               std::optional<double> wall_clock_s) {
  std::vector<std::string> out;
  const int workers = spec.parallelism.workers;
  if (!spec.data.stream || workers < 2) return out;
  const std::optional<Wait> wait = HowTheTeamWaits(spec.sync, workers);
  if (!wait) return out;
  const double horizon_s = wall_clock_s.value_or(kStarvedWithoutWallClockSeconds);
  const std::string past = wall_clock_s ? "past the run's " + FormatDuration(FromSeconds(*wall_clock_s))
                                        : std::string("past an hour (the run has no wall clock)");
  const int least = StreamMinBatch(*spec.data.stream, spec.data.batch_size);
  const std::string samples = "its first batch's least of " + std::to_string(least) +
                              " samples (spec.data.stream.minBatchSize)";
  for (size_t rank = 0; rank < rates.size(); ++rank) {
    if (!rates[rank]) continue;
    const double first = rates[rank]->WhenArrived(least);
    if (!(first > horizon_s)) continue;
    const std::string worker = "worker " + std::to_string(rank) + "'s stream ";
    const std::string when =
        !std::isfinite(first)            ? worker + "never brings " + samples
        : first > kLongestSaidSeconds    ? worker + "brings " + samples + " only after more than 100000h"
                                         : worker + "brings " + samples + " only after " +
                                               FormatDuration(FromSeconds(first));
    out.push_back(when + ", " + past + ", and " + wait->why + ": " + wait->meanwhile);
  }
  return out;
}

}  // namespace edgetrain
