#pragma once
// The job's evaluations as they happen, one CSV row each, flushed at once:
// `seconds,iteration,samples,accuracy,energy_joules`. What benchmarks read to
// draw accuracy against time and find when a target was reached.

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace edgetrain::agent {

class EvaluationLog {
 public:
  // Starts `path` afresh with its header at the first Record, or, for a job
  // resumed from its checkpoint at iteration `resumed_at`, appends to it:
  // rows of iterations past the checkpoint, which a crash lost and the run
  // trains again, are dropped first, so that no iteration has two rows.
  // Afresh, an earlier run's file stays until then: a run that evaluates
  // nothing (it took no step) leaves it, with the model it describes.
  // Lines that were no row (edited by hand, damaged) are left out too, their
  // numbers in `unread` for the run to say: they vanished unsaid (a new
  // user's trial), where progress.jsonl's say so.
  static StatusOr<EvaluationLog> Open(const std::string& path, std::optional<int64_t> resumed_at,
                                      std::vector<int>* unread = nullptr);
  void Record(double seconds, int64_t iteration, int64_t samples, double accuracy, std::optional<double> energy_joules);
  // The fresh file started, if it is not yet: before this run's first
  // checkpoint, which a resume keeps the rows up to. An earlier run's rows
  // had stayed in it, and a run that resumed from a checkpoint written before
  // its first evaluation kept them as its own, drawn as its curve (found in
  // review).
  void Begin();
  // Its rows on disk, before a checkpoint that a resume keeps the rows up
  // to: a power cut had left the checkpoint and lost the rows before it.
  Status Sync();

 private:
  EvaluationLog(std::string path, std::ofstream out) : path_(std::move(path)), out_(std::move(out)) {}
  std::string path_;
  std::ofstream out_;  // open once appending, or once the fresh file is started
};

}  // namespace edgetrain::agent
