#pragma once
// What a local run tells a person when it ends: the summary (and with --json,
// one JSON line), or why it failed with the last lines of the agent's log.

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "api/trainingjob.h"
#include "cli/run_plan.h"
#include "core/job_plan.h"
#include "core/job_progress.h"

namespace edgetrain::cli {

// "robot-team: test accuracy 0.8512 (final model; target 0.85 reached), stopped
// by target", the counts (a team's iterations named as the team's: each
// worker's own count differs), the modelled energy, whom the team waited on,
// a table of the workers (a link too little used to time shows "-", one not
// emulated "unshaped"), the model's path. `ended`: by rank, how each worker
// that ended on its own mid-run ended ("exit 2, an error of the job's own:
// ..."), said of it where it is out of the team at the end.
void PrintSummary(const api::TrainingJobManifest& job, const LocalRunPlan& plan, const JobProgress& p, double wall_s,
                  std::ostream& out, const std::map<int, std::string>& ended = {});
// What a team's way of synchronising bought, on one line: bytes on the wire
// (and their share of bsp's float32 rows both ways every iteration), the
// workers' stall, and the team's iteration rate against the rate of the same
// workers computing without a wait ("" before its first iteration).
// Bytes in megabytes as the run's table gives them, to as many places as a
// small total needs ("0 MB up" was said of 148,955 bytes, which the table gave
// as 0.1), and in kB under 0.1 MB.
std::string SizeText(double bytes);

std::string WhatTheTeamGained(const JobSpec& spec, const JobProgress& p);
// The team's pace had no worker waited, each at its own: team iterations a
// second (samples, for batches that vary); unset when not every worker's
// pace is known and they cannot stand for the team. `rated`: the workers
// whose pace it is.
struct ComputingAlone {
  std::optional<double> pace;
  int rated = 0;
};
ComputingAlone ComputingAloneOf(const JobSpec& spec, const JobProgress& p);
// Who the team waited on a twentieth of its time or more, longest first:
// "robot-2 for 31.2 s and robot-4 for 12.0 s"; empty when nobody did.
std::string WhoTheTeamWaitedOn(const JobProgress& p, const std::vector<std::string>& names);
// A team run's energy, each worker's as its own meter counted it to its end
// (`own`, by rank: the energyJoules of the result it printed on exiting, of
// this run alone). The coordinator counts what reached it: a worker's energy
// after its last report, or while its link was down, never did (a new user's
// robot-4 had 115 J by its own metrics beside 50 J in the summary). A resumed
// run's figures carry the runs before: `carried`, by rank, what its
// checkpoint held of each. Returns what each worker spent that its
// coordinator never heard of, by rank, added to `p`.
std::map<int, double> TakeWorkersOwnEnergy(JobProgress& p, const std::map<int, double>& own,
                                           const std::map<int, double>& carried = {});
// Each worker's own pace, samples a second of compute, by rank: its result's
// samples over its computeSeconds, late batches included (computed_samples_per_s);
// not taken where a resumed run trained nothing past its checkpoint.
void TakeWorkersOwnPace(JobProgress& p, const std::map<int, double>& own);
// The summary as one line of JSON, for scripts and benchmarks.
// `devices`: those the run trained on, which a pipeline's plan may make fewer
// than the job's workers. `ended`: the agents whose process ended on its own,
// by rank, and how (RunOutcome::ended).
std::string JsonLine(const api::TrainingJobManifest& job, const LocalRunPlan& plan, const JobProgress& p,
                     double wall_s, const std::map<int, std::string>& ended = {});
// The same line for a run that failed before it had a result (--json): the
// job, and the error the run printed, so that a script reads why.
std::string FailureJsonLine(const std::string& job, const std::string& error);
}  // namespace edgetrain::cli
