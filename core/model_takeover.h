#pragma once
// Which worker's copy of the model a coordinator that starts behind its team
// trains on from (docs/data-parallelism.md, "A coordinator that starts
// behind").
//
// Every worker of a data-parallel team holds a copy of the whole model, each
// row at most S iterations behind the coordinator's (core/staleness_ledger.h).
// So when the coordinator's own state is gone — placed anew because its node
// was lost or is leaving, its checkpoint on that node — or is older than the
// team's (a restart on a checkpoint taken up to checkpointEvery ago), the
// freshest copy among its workers is a better start than its own: the team
// loses a few iterations instead of all of them, or of checkpointEvery.
//
// Each worker's Hello says how far along its copy is (its least row clock;
// 0 for a fresh process). Once the team has gathered, the coordinator asks
// the worker whose copy is furthest along, and only if that is ahead of its
// own. A worker that cannot deliver (its stream ends, its copy does not fit
// the model or is not finite) is passed over for the next; once a copy is
// taken, or none is ahead, that is settled for the rest of the job: later
// hellos are teammates rejoining, not a team to take over from.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain {

class ModelTakeover {
 public:
  explicit ModelTakeover(int workers);

  // Worker `w`'s Hello: its copy's least row clock, the job's training time
  // as it last heard it, counted on since, and the job's energy as it last
  // heard it.
  void Offered(int w, int64_t clock, double job_elapsed_s = 0, double job_energy_j = 0);
  // What `w` offered cannot be had (its stream ended, or its copy was
  // refused): it is passed over, whatever it offers again.
  void Withdrawn(int w);

  // With the team gathered and the coordinator's own least row clock `own`:
  // the worker to ask now, if one is to be asked. Asking is settled (nullopt
  // from then on) once a copy is taken or none is ahead of `own`.
  std::optional<int> Donor(int64_t own);
  // The worker asked, until it answers or is passed over: the others'
  // Welcomes wait for it.
  std::optional<int> asked() const { return asked_; }
  // What `w` offered: its copy's least row clock; -1: nothing.
  int64_t offer(int w) const { return offers_[w]; }
  // The job's training time `w` offered with its copy: the taken copy's
  // becomes the job's clock.
  double offered_elapsed_s(int w) const { return elapsed_s_[w]; }
  // The most of the job's energy any worker offered: each as its last
  // coordinator said it, the freshest word the most.
  double most_energy_offered() const {
    return energy_j_.empty() ? 0 : *std::max_element(energy_j_.begin(), energy_j_.end());
  }
  // The copy of the worker asked was taken.
  void Taken();
  bool settled() const { return settled_; }

 private:
  std::vector<int64_t> offers_;  // per worker: its copy's clock; -1: none to take
  std::vector<double> elapsed_s_;  // per worker: the job's training time it offered
  std::vector<double> energy_j_;   // per worker: the job's energy it offered
  std::vector<bool> passed_over_;
  std::optional<int> asked_;
  bool settled_ = false;
};

}  // namespace edgetrain
