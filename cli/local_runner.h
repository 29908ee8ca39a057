#pragma once
// `edgetrain run JOB.yaml [--nodes PROFILE.yaml]`: the same TrainingJob a cluster
// would run, trained on this machine. The runner validates the manifest against
// the CRD, writes the plan, starts agents as local processes through the launch
// contract (docs/launch-contract.md) — one agent for a job of one worker, else a
// coordinator and a worker per rank, each emulating its device from the cluster
// profile — shows the job's progress from GET /progress, and reports. It never
// trains itself: what runs here is what runs in a pod.

#include <atomic>
#include <ostream>
#include <string>

#include "cli/job_loading.h"
#include "cli/run_options.h"

namespace edgetrain::cli {

// Progress and diagnostics go to `err`, the summary (and JSON line) to `out`.
// `interrupted` is set by the caller's SIGINT/SIGTERM handler.
// `forced`, if given: set at a second interrupt, when the agents are killed
// rather than waited for.
int RunLocal(const RunOptions& options, std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupted,
             const std::atomic<bool>* forced = nullptr);

// Removes what runners killed without warning (SIGKILL, the OOM killer) left
// behind, their run folders and network namespaces, and says so on `err`.
void RemoveLeftovers(std::ostream& err, Duration link_command_timeout);

// Of a job whose stream is a folder: a folder that has nothing for a worker
// yet is not an error (the source may start after the run), but a wrong path
// or layout would train on nothing for the whole budget without a word: says
// where each worker looks, what no worker reads, and files larger than a
// worker's buffer (which lose rows), as notes and warnings on `err`. A path
// that is a file is refused (kExitInvalid): nothing could ever arrive
// through it. run, validate and partition say the same.
int CheckStreamFolders(const api::TrainingJobManifest& job, std::ostream& err);

// `edgetrain validate JOB.yaml [--nodes PROFILE.yaml] [--defaulted]`: the same
// checks as run — the manifest, the cluster profile and the team's placement on
// it — without training; with `defaulted`, the manifest as the API server would
// store it (the CRD's defaults applied), as JSON.
int ValidateManifest(const RunOptions& options, bool defaulted, std::ostream& out, std::ostream& err);

}  // namespace edgetrain::cli
