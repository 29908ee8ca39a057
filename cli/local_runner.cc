#include "cli/local_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "http/http_client.h"
#include "agent/data/sample_directory.h"
#include "agent/storage/checkpoint.h"
#include "api/team_request.h"
#include "api/trainingjob.h"
#include "cli/agent_launcher.h"
#include "cli/ephemeral_credentials.h"
#include "cli/child_process.h"
#include "cli/job_loading.h"
#include "cli/log_tail.h"
#include "cli/model_card.h"
#include "cli/netns_links.h"
#include "cli/output_folder_lock.h"
#include "cli/progress_display.h"
#include "cli/run_curves.h"
#include "cli/run_folder.h"
#include "cli/run_observer.h"
#include "cli/run_plan.h"
#include "cli/run_report.h"
#include "cli/run_supervisor.h"
#include "cli/stage_planning.h"
#include "cli/storage_fault.h"
#include "core/cluster_placement.h"
#include "core/dataset_info.h"
#include "core/duration_text.h"
#include "core/job_plan.h"
#include "core/job_progress.h"
#include "core/node_view.h"
#include "core/number_text.h"
#include "core/round_deadline.h"
#include "core/spec_changes.h"
#include "core/starved_streams.h"
#include "core/stream_rate.h"
#include "operator/controller/job_labels.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

// The output folder made if need be, and a file written in it and removed.
Status CheckWritableFolder(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return FailedPreconditionError("cannot make the output folder " + folder + ": " + ec.message());
  const fs::path probe = fs::path(folder) / (".edgetrain-write-check-" + std::to_string(::getpid()));
  // With the system's reason (a read-only folder and a full disk read
  // alike), and the probe removed whether or not it could be written.
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const bool written = fd >= 0 && ::write(fd, "ok", 2) == 2 && ::fsync(fd) == 0;
  const std::string why = written ? "" : std::strerror(errno);
  if (fd >= 0) ::close(fd);
  fs::remove(probe, ec);
  if (!written) return FailedPreconditionError("cannot write in the output folder " + folder + ": " + why);
  return Status::Ok();
}

// The output folder, when this run made it: left empty (a run refused
// before it wrote anything), it goes when the run ends. Every refused run
// left an empty folder behind (a new user's trial).
class MadeOutputFolder {
 public:
  // The folders of `folder`'s path that do not exist yet, the deepest first:
  // the run makes them all (--output a/b/c).
  explicit MadeOutputFolder(const std::string& folder) {
    std::error_code ec;
    for (fs::path p = fs::absolute(folder, ec); !ec && !p.empty() && !fs::exists(p, ec) && !ec;
         p = p.parent_path()) {
      made_.push_back(p);
      if (p == p.parent_path()) break;
    }
  }
  MadeOutputFolder(const MadeOutputFolder&) = delete;
  MadeOutputFolder& operator=(const MadeOutputFolder&) = delete;
  // Another run holds it (it made it too, at the same moment): it is that
  // run's to keep. Removed while still empty, the other run's lock was on a
  // folder gone, and the folder made anew by its writes unlocked (found in
  // review).
  void Keep() { made_.clear(); }
  ~MadeOutputFolder() {
    for (const fs::path& p : made_) {
      std::error_code ec;
      if (!fs::is_empty(p, ec) || ec || !fs::remove(p, ec)) return;
    }
  }

 private:
  std::vector<fs::path> made_;
};

// What running again does with a checkpoint an earlier run left, which a
// --fresh run that failed had not replaced yet: it said "without --fresh it
// would go on from" a finished run's, which starts over (a user's trial).
std::string WhatAnEarlierCheckpointGives(const std::string& path) {
  const auto kept = agent::LoadCheckpoint(path);
  if (!kept.ok()) {
    return "the same command starts over; without --fresh, a run again is refused: " + kept.status().message();
  }
  if (*kept && !(*kept)->complete) {
    return "the same command starts over, and without --fresh it would go on from that earlier run's checkpoint";
  }
  return "that run finished, so a run again starts over, with --fresh or without";
}

// Drawing a run of days takes seconds; past this the picture is given up.
constexpr std::chrono::seconds kDrawGrace{60};
// Debian's Prometheus starts in about a second; a loaded machine may take more.
constexpr std::chrono::seconds kObserverReady{30};
constexpr const char* kPrometheus = "/usr/bin/prometheus";
// A local run's certificates outlive any run it makes; they go with it anyway.
constexpr std::chrono::hours kCredentialsValidity{24 * 30};

MachineSize ThisMachine() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return {static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))),
          pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size / (1 << 20) : 0};
}

// --observe: the local Prometheus, said where it is; what failed said on `err`.
StatusOr<RunObserver> StartObserver(const RunOptions& options, const LocalRunPlan& plan, Clock& clock,
                                    std::ostream& err, const std::atomic<bool>& interrupted) {
  auto started = RunObserver::Start(kPrometheus, fs::path(plan.job.output_dir) / "prometheus", options.observe_port,
                                    options.observe_rules, clock, kObserverReady, &interrupted);
  if (started.status().code() == StatusCode::kCancelled) return started.status();
  if (!started.ok()) {
    err << "error: --observe: " << started.status().message() << "\n";
    return started.status();
  }
  err << "observe: Prometheus at " << started->url() << " scrapes every agent each second (its data: "
      << started->dir().string() << ")\n";
  return started;
}

// Whether the local Prometheus holds a series of this run: a run over within
// its first scrapes (a digits team of 2 s) holds none. An answer it could not
// give counts as held.
bool HoldsTheRun(const RunObserver& observer) {
  const StatusOr<bool> held = observer.Holds("edgetrain_job_samples_total");
  return !held.ok() || *held;
}

// After the run, the local Prometheus serves its series: until the person
// interrupts, or for as long as a script said (--observe-keep).
void ServeAfterTheRun(RunObserver& observer, const RunOptions& options, const std::atomic<bool>& interrupted,
                      Clock& clock, std::ostream& err) {
  const std::optional<Duration>& keep = options.observe_keep;
  err << "observe: Prometheus at " << observer.url() << " serves the run's series; "
      << (keep ? "for " + FormatDuration(*keep) : std::string("Ctrl-C stops it")) << "\n";
  const TimePoint until = keep ? clock.Now() + *keep : kNever;
  while (!interrupted.load() && clock.Now() < until) {
    if (const std::optional<std::string> ended = observer.Ended()) {
      err << "observe: Prometheus ended (" << *ended << "; its log: " << (observer.dir() / "prometheus.log").string()
          << "): nothing serves the run's series now\n";
      break;
    }
    clock.SleepFor(std::chrono::milliseconds(100));
  }
  observer.Stop(options.stop_grace);
}

// Where the series stay once the run's Prometheus has stopped: an interrupted
// run stopped it at once, and nothing said they were kept (a new user's
// trial found them by starting a Prometheus on a copy).
void SayWhereTheSeriesStay(const RunObserver& observer, std::ostream& err) {
  err << "observe: the run's series stay in " << (observer.dir() / "data").string() << " ("
      << observer.ServeAgainCommand() << " serves them again)\n";
}

}  // namespace

// How a person resumes a job whose checkpoint is kept: the same command,
// unless it asked to start afresh, which would start afresh again (a new
// user's trial ran --fresh, had its coordinator killed, and was told to run
// the same command).
static std::string HowToResume(const RunOptions& options) {
  return options.fresh ? "run the command again without --fresh to resume from it"
                       : "run the same command again to resume from it (--fresh starts over)";
}

void RemoveLeftovers(std::ostream& err, Duration link_command_timeout) {
  std::error_code ec;
  for (const auto& folder : RemoveAbandonedRunFolders(fs::temp_directory_path(ec))) {
    err << "note: removed " << folder.string() << ", left by a runner that was killed\n";
  }
  if (auto namespaces = NetnsLinks::RemoveStale(link_command_timeout); !namespaces.empty()) {
    std::string names;
    for (const auto& n : namespaces) names += (names.empty() ? "" : ", ") + n;
    err << "note: removed the network namespaces " << names << ", left by a runner that was killed\n";
  }
}

// What run and validate both do first: the manifest, the cluster profile, and
// the plan, with the notes and warnings a person should see. The exit code when
// something is wrong (said on `err`), else kExitOk with `checked` filled in.
struct CheckedRun {
  api::TrainingJobManifest job;
  std::optional<ClusterProfile> profile;
  LocalRunPlan plan;
  // Run, not validate: a checkpoint to resume moves the devices along their
  // traces (GoOnWhereTheRunLeft) before anything is said of them or planned.
  bool to_run = false;
  // What GoOnWhereTheRunLeft says of the run it resumes, said once the run
  // holds its output folder: a second run into a folder in use said it went
  // on from the first's checkpoint, then was refused (a new user's trial).
  std::string resuming_notes;
};

int CheckStreamFolders(const api::TrainingJobManifest& job, std::ostream& err) {
  const auto& stream = job.spec.data.stream;
  if (!stream || !stream->directory) return kExitOk;
  const fs::path top(*stream->directory);
  std::error_code ec;
  if (fs::exists(top, ec) && !fs::is_directory(top, ec)) {
    // It had been a note, and the run trained on nothing for its whole
    // budget, exit 0 (a new user's trial).
    err << "error: spec.data.stream.directory: " << top.string()
        << " is a file, not a folder: worker RANK reads the CSV files put into its worker-RANK/ folder in it "
           "(docs/streams.md)\n";
    return kExitInvalid;
  }
  if (!fs::exists(top, ec)) {
    // Said apart from one that is empty: a typo waited, and trained on
    // nothing, as one whose source had not started (a user's ~/incoming,
    // which a manifest leaves as written, was read under its folder).
    const bool tilde = top.string().find("/~") != std::string::npos || top.string().starts_with("~");
    err << "note: " << top.string() << " does not exist yet"
        << (tilde ? " (a ~ in spec.data.stream.directory is no home folder: write the path out)" : "")
        << ": worker RANK trains on the CSV files put into its worker-RANK/ folder in it (docs/streams.md), and "
           "waits for them\n";
    return kExitOk;
  }
  std::vector<std::string> dry;
  // A file of more rows than a worker's buffer holds is read alone once the
  // buffer is empty, and the rows past the buffer are dropped (a trial's 300
  // rows into a buffer of 256 lost 44 on each worker, unsaid before the run).
  const int64_t buffer = StreamBufferCapacity(*stream, job.spec.data.batch_size);
  // Only a file large enough to hold more rows is read to count them (a row
  // is at least a label and its values, each a character and a separator):
  // a folder filled before the run is not read whole before it starts.
  const DatasetInfo info = InfoOf(job.spec.data);
  const auto least_row_bytes = static_cast<std::uintmax_t>(2 * (info.channels * info.height * info.width + 1));
  std::vector<std::pair<std::string, int64_t>> too_large;
  for (int rank = 0; rank < job.spec.parallelism.workers; ++rank) {
    const fs::path folder = fs::path(*stream->directory) / ("worker-" + std::to_string(rank));
    // Files of other names are left alone (agent/data/sample_directory.h):
    // a user who dropped data.txt there is told, not left to wait on it.
    bool readable = false;
    std::vector<std::string> other, folders;
    std::error_code listing;  // the folder's own: an entry's failure below does not end the listing
    for (fs::directory_iterator it(folder, listing), end; !listing && it != end; it.increment(listing)) {
      const std::string name = it->path().filename().string();
      if (name[0] == '.') continue;
      if (it->is_directory(ec)) {
        folders.push_back(name + "/");
      } else if (agent::IsStreamFileName(name)) {
        readable = true;
        std::error_code unsized;  // not `ec`, which ends the listing
        const std::uintmax_t bytes = it->file_size(unsized);
        if (unsized || bytes <= static_cast<std::uintmax_t>(buffer) * least_row_bytes) continue;
        const std::optional<int64_t> rows = agent::StreamFileRows(it->path().string());
        if (rows && *rows > buffer) too_large.emplace_back(it->path().string(), *rows);
      } else if (it->is_regular_file(ec)) {
        other.push_back(name);
      }
    }
    // Only a folder not there yet waits for its source: one that cannot be
    // listed (not allowed, a file where it should be) had its worker train
    // on nothing, exit 0 (found in review).
    if (listing && listing != std::errc::no_such_file_or_directory) {
      // Said as the worker says it.
      const std::string why = listing == std::errc::not_a_directory ? "a file, not a folder" : listing.message();
      err << "error: " << folder.string() << " cannot be read: " << why << ": worker " << rank
          << " trains on the CSV files put into it (docs/streams.md)\n";
      return kExitInvalid;
    }
    if (!readable) dry.push_back(folder.string());
    // Files in a folder of its folder are not read either (a new user's
    // worker-0/sub/1.csv went unsaid).
    if (!folders.empty()) {
      std::sort(folders.begin(), folders.end());
      err << "note: " << folder.string() << " holds " << folders.size() << " folder" << (folders.size() > 1 ? "s" : "")
          << ", not read (a worker reads only the NAME.csv files directly in its own): " << folders.front();
      if (folders.size() > 1) err << " and " << folders.size() - 1 << " more";
      err << "\n";
    }
    if (other.empty()) continue;
    std::sort(other.begin(), other.end());
    err << "note: " << folder.string() << " holds " << other.size() << " file" << (other.size() > 1 ? "s" : "")
        << " not named NAME.csv, left alone: " << other.front();
    if (other.size() > 1) err << " and " << other.size() - 1 << " more";
    err << "\n";
  }
  // What the folder holds that no worker reads: a worker-N of no rank,
  // another name, CSV files beside the worker folders (a new user's 50
  // samples in worker-7 of a team of two went unsaid, as did a path that
  // was a file, not a folder).
  std::vector<std::string> unread;
  for (fs::directory_iterator it(top, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    bool ours = false;
    for (int rank = 0; rank < job.spec.parallelism.workers && !ours; ++rank) ours = name == "worker-" + std::to_string(rank);
    const bool folder = it->is_directory(ec);
    if (!ours && (folder || agent::IsStreamFileName(name))) unread.push_back(name + (folder ? "/" : ""));
  }
  if (!unread.empty()) {
    std::sort(unread.begin(), unread.end());
    err << "note: " << top.string() << " holds what no worker of " << job.spec.parallelism.workers
        << " reads: " << unread.front();
    if (unread.size() > 1) err << " and " << unread.size() - 1 << " more";
    err << " (worker RANK reads worker-RANK/, RANK from 0 to " << job.spec.parallelism.workers - 1 << ")\n";
  }
  if (!too_large.empty()) {
    std::sort(too_large.begin(), too_large.end());
    const auto& [path, rows] = too_large.front();
    err << "warning: " << path << " holds " << WithThousands(rows) << " rows, more than a worker's buffer of "
        << WithThousands(buffer) << " samples: it is read alone once the buffer is empty, and "
        << WithThousands(rows - buffer) << " of its rows are dropped";
    if (too_large.size() > 1) {
      err << " (and " << too_large.size() - 1 << " more such file" << (too_large.size() > 2 ? "s" : "") << ")";
    }
    err << "; split it into files of at most " << WithThousands(buffer) << " rows, or raise "
        << (stream->buffer == StreamBuffer::kTruncate ? "spec.data.batchSize (buffer: truncate holds one batch)"
                                                        : "spec.data.stream.bufferCapacity")
        << "\n";
  }
  if (dry.empty()) return kExitOk;
  err << "note: nothing to read yet in " << dry.front();
  if (dry.size() > 1) err << " and " << dry.size() - 1 << " more worker folder" << (dry.size() > 2 ? "s" : "");
  err << ": worker RANK trains on the CSV files put into " << *stream->directory
      << "/worker-RANK/ (docs/streams.md), and waits for them\n";
  return kExitOk;
}

// A profile's node that placement would give no worker of the job (too
// little memory for a worker's pod, transient where the job allows none):
// edgetrain run puts worker i on node i whatever, so it trains there, and the
// same profile under the operator, or `edgetrain plan --nodes`, would not (a
// new user's node of 2Mi trained here and was refused by plan). Placed as
// plan places it, the coordinator's pod included, so that what is said is
// what plan says: with the coordinator left out, a site where it fits
// nowhere was said to fit it, and a job of one was said nothing (a user's
// trial).
static void NoteNodesPlacementRefuses(const api::TrainingJobManifest& job, const ClusterProfile& profile,
                                      const LocalRunPlan& plan, std::ostream& err) {
  StatusOr<TeamRequest> request = api::TeamRequestOf(job, api::PodDefaults{});
  if (!request.ok()) return;
  std::vector<NodeView> nodes;
  for (const NodeProfile& node : profile.nodes) {
    StatusOr<NodeView> view = NodeViewOf(node);
    if (!view.ok()) return;  // the plan read the profile; a node it could not is said there
    nodes.push_back(*view);
  }
  std::set<std::string> used;
  for (const WorkerSlot& slot : plan.devices) used.insert(slot.node);
  const TeamPlacement placement = PlaceTeam(nodes, *request);
  if (!placement.placed) {
    // No node would do (every one of 2Mi): said too, not only of some nodes.
    err << "note: " << job.name << " would not be placed on these nodes on a cluster ("
        << placement.unschedulable << "; edgetrain plan --nodes says the same); edgetrain run trains there anyway, "
        << "on this machine\n";
    return;
  }
  for (const NodeVerdict& v : placement.verdicts) {
    if (v.excluded.empty() || !used.count(v.node)) continue;
    err << "note: " << v.node << " would hold no worker of " << job.name << " on a cluster (" << v.excluded
        << "; edgetrain plan --nodes says the same); edgetrain run trains there anyway, on this machine\n";
  }
}

// A link out from the run's start, said of each node once: a team whose
// worker's trace was at 0 for the whole budget trained 0 team iterations and
// exited 0, unsaid (a user's trial).
static void NoteLinksOutFromTheStart(const std::vector<WorkerSlot>& workers, std::optional<Duration> wall_clock,
                                     std::ostream& err) {
  std::set<std::string> said;
  for (const WorkerSlot& w : workers) {
    if (!w.link || w.link->silent_until_s <= 0 || !said.insert(w.node).second) continue;
    const Duration until = FromSeconds(w.link->silent_until_s);
    if (wall_clock && until >= *wall_clock) {
      err << "note: " << w.node << "'s link carries nothing in the run's " << FormatDuration(*wall_clock)
          << " of wall clock (its trace is at 0 Mbit/s for its first " << FormatDuration(until)
          << "): nothing on it reaches the rest of the job in this run\n";
    } else {
      err << "note: " << w.node << "'s link carries nothing for the run's first " << FormatDuration(until)
          << " (its trace is at 0 Mbit/s until then)\n";
    }
  }
}

// A deadline team whose quorum, rounded up, is every worker: no round closes
// without one, as under bsp. Said, with the quorum that would: a team of 3
// stood 8 s for a robot whose link was out, the docs' "three of four" its
// only hint (a user's trial). Not of a pipeline, hybrid or auto job, whose
// stages are not planned yet here: spec.sync is a data-parallel team's (a
// user's trial read the note for a pipeline of two devices).
static void NoteAQuorumOfEveryWorker(const LocalRunPlan& plan, std::ostream& err) {
  const JobSpec& spec = plan.job.spec;
  const int workers = spec.parallelism.workers;
  if (spec.parallelism.mode != ParallelismMode::kDataParallel || plan.job.workers.empty() || workers < 2 ||
      spec.sync.policy != SyncPolicy::kDeadline) {
    return;
  }
  const double quorum = spec.sync.quorum.value_or(kDefaultQuorum);
  if (quorum >= 1 || RoundDeadline(quorum, 0).QuorumOf(workers) < workers) return;
  const std::string fewer = PlainNumber(std::floor(100.0 * (workers - 1) / workers) / 100);
  err << "note: spec.sync.quorum " << PlainNumber(quorum) << (spec.sync.quorum ? "" : " (the default)") << " of " << workers
      << " workers is all " << workers
      << " (a share is rounded up): no round of the deadline policy closes without one, as under bsp, so a link in "
         "a dip holds the team (one out altogether is counted out past its arrival deadline); a quorum of "
      << fewer << " closes rounds at " << workers - 1 << " of " << workers << "\n";
}

// Each worker's stream rate, by rank, as its agent will read it; none for a
// stream from a folder, or one the agent will refuse (the profile's traces
// were read and checked with the profile: said when the agent starts).
static std::vector<std::optional<StreamRate>> StreamRates(const JobSpec& spec, const std::vector<WorkerSlot>& slots) {
  std::vector<std::optional<StreamRate>> rates(slots.size());
  for (size_t rank = 0; rank < slots.size(); ++rank) {
    auto rate = StreamRateOf(spec, slots, static_cast<int>(rank), ReadTraceText);
    if (rate.ok()) rates[rank] = std::move(*rate);
  }
  return rates;
}

// A run that resumes goes on along its devices' traces from where the last
// left them, not from their start (GoneOnFor, core/job_plan.h): before the
// notes of what the links and compute do and before a pipeline is planned,
// which a slowdown changed mid-run would otherwise plan wrong (found in
// review).
//
// Resumed on other devices than the run it goes on from (another --nodes
// profile, or the same one edited), the run says which, as it says what of
// the manifest changed (it said the manifest's changes, and nothing of the
// profile's).
static void GoOnWhereTheRunLeft(const RunOptions& options, LocalRunPlan& plan, std::ostream& err) {
  if (options.fresh) return;
  const auto kept = agent::LoadCheckpoint(plan.job.CheckpointPath());
  if (!kept.ok() || !kept->has_value() || (*kept)->complete || !((*kept)->elapsed_s > 0)) return;
  // Another job's is refused, not resumed: said that it goes on from it,
  // then refused (a user's trial). So is one its engine cannot take up: a
  // data-parallel team's, with its ledger, for a pipeline's head, or another
  // team's or none for a team (a new user's pipeline run into a
  // data-parallel run's folder was said to go on from it, then refused).
  if ((*kept)->job != plan.job.job) return;
  const ParallelismSpec& parallelism = plan.job.spec.parallelism;
  const bool pipeline = parallelism.mode != ParallelismMode::kDataParallel && parallelism.workers >= 2;
  const bool team = parallelism.mode == ParallelismMode::kDataParallel && !plan.job.workers.empty();
  const std::optional<agent::LedgerState>& ledger = (*kept)->ledger;
  if ((pipeline && ledger) ||
      (team && (!ledger || ledger->workers != static_cast<int>(plan.job.workers.size())))) {
    return;
  }
  // Read here, where the checkpoint is read once at the start: it was read
  // again for this alone, a model's parameters and all.
  if (team) {
    for (size_t rank = 0; rank < (*kept)->workers.size(); ++rank) {
      plan.carried_energy[static_cast<int>(rank)] = (*kept)->workers[rank].energy_j;
    }
  }
  if (const std::vector<std::string> changes = DeviceChanges((*kept)->devices_json, plan.job.devices_record);
      !changes.empty()) {
    err << "note: the devices differ from those the run it resumes was started on; it resumes on these:\n";
    for (const std::string& change : changes) err << "  " << change << "\n";
  }
  const double elapsed_s = (*kept)->elapsed_s;
  bool traced = false;
  for (WorkerSlot& slot : plan.job.workers) {
    traced = traced || slot.link || !slot.slowdown_changes.empty() || (slot.stream && !slot.stream->trace_path.empty());
    slot = GoneOnFor(std::move(slot), elapsed_s);
  }
  for (WorkerSlot& slot : plan.devices) slot = GoneOnFor(std::move(slot), elapsed_s);
  if (traced) {
    err << "note: the devices' links, streams and compute changes go on from " << Fixed(elapsed_s, 1)
        << " s into their traces, where the run it resumes left them\n";
  }
}

int CheckRun(const RunOptions& options, std::ostream& err, CheckedRun& checked) {
  api::SupportCheck support;
  if (int code = LoadJob(options.manifest_path, err, checked.job, support); code != kExitOk) return code;
  if (!options.nodes_path.empty()) {
    checked.profile = LoadProfile(options.nodes_path, err);
    if (!checked.profile) return kExitInvalid;
  }
  for (const auto& note : support.notes) err << "note: " << note << "\n";
  if (int code = CheckStreamFolders(checked.job, err); code != kExitOk) return code;
  // A node's own stream feeds a job whose stream names neither rates nor a
  // folder: beside a folder's, it was ignored unsaid (a new user's trial).
  if (checked.profile && checked.job.spec.data.stream && checked.job.spec.data.stream->directory) {
    std::vector<std::string> streaming;
    for (const NodeProfile& node : checked.profile->nodes) {
      if (node.stream) streaming.push_back(node.name);
    }
    if (!streaming.empty()) {
      err << "note: the profile's streams (" << streaming.front()
          << (streaming.size() > 1 ? " and " + std::to_string(streaming.size() - 1) + " more" : std::string())
          << ") do not feed " << checked.job.name << ": its samples are the files of "
          << *checked.job.spec.data.stream->directory << "\n";
    }
  }
  std::error_code ec;
  auto planned = PlanLocalRun(checked.job, checked.profile, options, fs::current_path(ec), ThisMachine());
  if (!planned.ok()) {
    err << "error: " << planned.status().message() << "\n";
    return ExitCodeFor(planned.status());
  }
  checked.plan = std::move(*planned);
  if (checked.to_run) {
    // As the profile gave them, before going on along their traces: going on is no change.
    if (!checked.plan.devices.empty()) checked.plan.job.devices_record = DevicesRecord(checked.plan.devices);
    std::ostringstream resuming;
    GoOnWhereTheRunLeft(options, checked.plan, resuming);
    checked.resuming_notes = resuming.str();
  }
  for (const auto& warning : checked.plan.warnings) err << "warning: " << warning << "\n";
  if (checked.profile) NoteNodesPlacementRefuses(checked.job, *checked.profile, checked.plan, err);
  // A drift the run will see and no prediction before it counts (a new
  // user's trial: nothing said the profile's change was there).
  std::set<std::string> drifting;
  const std::optional<Duration> wall_clock = checked.job.spec.budget.wall_clock;
  const StagesAsked asked = StagesOf(options.stages, checked.job.spec);
  for (const WorkerSlot& w : checked.plan.job.workers) {
    if (w.slowdown_changes.empty() || !drifting.insert(w.node).second) continue;
    // A change past the wall clock is never reached (a new user's trial: a
    // change at 10m in a run of 50 s was said to come "during the run").
    if (wall_clock && FromSeconds(w.slowdown_changes.front().at_s) >= *wall_clock) {
      err << "note: " << w.node << "'s compute changes only after the run's " << FormatDuration(*wall_clock)
          << " of wall clock (" << w.Slowdown().Said() << "): this run never sees it\n";
      continue;
    }
    err << "note: " << w.node << "'s compute changes during the run (" << w.Slowdown().Said()
        << "): what is predicted before it starts counts its slowdown at the start"
        << (checked.job.spec.parallelism.mode == ParallelismMode::kDataParallel ? ""
            : asked.given()
                ? "; " + asked.named() + " keeps its stages and shares as given"
                : "; if the plan gives it a stage, the pipeline's head moves layers, deals a group's micro-batches "
                  "anew, or leaves the device out, once it measures the drift")
        << "\n";
  }
  NoteLinksOutFromTheStart(checked.plan.job.workers, wall_clock, err);
  NoteAQuorumOfEveryWorker(checked.plan, err);
  const std::optional<double> wall_clock_s = wall_clock ? std::optional<double>(ToSeconds(*wall_clock)) : std::nullopt;
  for (const std::string& warning :
       StarvedStreamWarnings(checked.job.spec, StreamRates(checked.job.spec, checked.plan.job.workers), wall_clock_s)) {
    err << "warning: " << warning << "\n";
  }
  return kExitOk;
}

// A pipeline, hybrid or auto job's stages, from the layers the agent measures
// here and the planner; said before training starts.
int PlanPipelineRun(const RunOptions& options, std::ostream& err, CheckedRun& checked,
                    const std::atomic<bool>& interrupted) {
  if (checked.job.spec.parallelism.mode == ParallelismMode::kDataParallel) {
    if (auto note = StageFlagsNotTaken(checked.job, options.stages, options.micro_batches)) {
      err << "note: " << *note << "\n";
    }
    return kExitOk;
  }
  const StagesAsked asked = StagesOf(options.stages, checked.job.spec);
  if (auto note = StagesOverridden(checked.job.spec, options.stages)) err << "note: " << *note << "\n";
  if (Status judged = CheckStagesAsked(checked.job, asked, options.micro_batches, checked.plan.job.workers.size());
      !judged.ok()) {
    err << "error: " << checked.job.name << ": " << judged.message() << "\n";
    return ExitCodeFor(judged);
  }
  err << "measuring the model's layers on this machine for the pipeline planner\n";
  auto chosen = PlanStages(checked.job, checked.profile, options.agent_binary, asked, options.micro_batches,
                           checked.plan, &interrupted);
  // Said by the caller, which hears the interrupt itself.
  if (chosen.status().code() == StatusCode::kCancelled) return kExitOk;
  if (!chosen.ok()) {
    err << "error: " << checked.job.name << ": " << chosen.status().message() << "\n";
    return ExitCodeFor(chosen.status());
  }
  err << "parallelism: " << *chosen << "\n";
  // The stages run are the spec's the checkpoint keeps: a run resumed with
  // other --stages than its last said nothing of it, where the same change
  // made in spec.parallelism.stages is listed (a user's trial).
  if (!options.stages.empty() && options.stages != checked.job.spec.parallelism.stages) {
    nlohmann::json spec = nlohmann::json::parse(checked.plan.job.spec_json);
    spec["parallelism"]["stages"] = options.stages;
    checked.plan.job.spec_json = spec.dump();
    checked.plan.job.spec.parallelism.stages = options.stages;
  }
  if (checked.plan.job.pipeline) {
    const int devices = TrainingDevices(checked.plan), workers = checked.job.spec.parallelism.workers;
    // The plan may leave devices out (a model on one device of four): say
    // which train, beside the workers the job asked for.
    if (devices < workers) {
      const size_t stages = checked.plan.job.pipeline->stages.size();
      err << (checked.plan.job.pipeline->stages_given ? "  as given, " : "  as planned, ") << devices << " of its "
          << workers << " workers' devices "
          << (devices == 1 ? "trains (" : "train (") << stages << (stages == 1 ? " stage" : " stages")
          << "); the others stay idle\n";
    }
    // Sending each micro-batch's gradient is for a stage of several devices:
    // with none in the plan it changes nothing (a user's trial wondered).
    const auto& stages = checked.plan.job.pipeline->stages;
    if (checked.job.spec.fault_tolerance.gradient_each_micro_batch &&
        std::none_of(stages.begin(), stages.end(), [](const PipelineStagePlan& s) { return s.ranks.size() > 1; })) {
      err << "note: spec.faultTolerance.gradientEachMicroBatch changes nothing here: no stage of the plan has "
             "several devices\n";
    }
    // Nothing else holds its layers: said before it trains, not learned from
    // the error when its device goes (a new user's trial).
    if (checked.plan.job.pipeline->stages.size() == 1 && checked.plan.job.pipeline->stages[0].ranks.size() == 1) {
      const int every = checked.job.spec.fault_tolerance.checkpoint_every;
      err << "  one stage on one device: losing it ends the job, with no other stage to rebuild it on; a run again "
          << (every > 0 ? "resumes from the last checkpoint (every " + std::to_string(every) +
                              " steps, spec.faultTolerance.checkpointEvery)"
                        : std::string("starts over (spec.faultTolerance.checkpointEvery is 0)"))
          << "\n";
    }
    // The cost model's devices compute side by side; emulated here, they take
    // turns on this machine's cores (a new user's 4-stage run trained at 22%
    // of its prediction, on 2 cores, and nothing said why).
    const int cores = ThisMachine().cores;
    if (cores > 0 && devices > cores) {
      err << "note: the plan's " << devices << " devices are emulated on this machine's " << cores
          << (cores == 1 ? " core" : " cores") << ": their passes take turns, which the prediction does not "
          << "count\n";
    }
  }
  return kExitOk;
}

int ValidateManifest(const RunOptions& options, bool defaulted, std::ostream& out, std::ostream& err) {
  CheckedRun checked;
  if (int code = CheckRun(options, err, checked); code != kExitOk) return code;
  // The manifest as written, its paths not made this machine's: what the API
  // server would store (a relative path is the volume's on a cluster; a new
  // user read /tmp/... beside spec.data.volume), and what the operator judges.
  auto text = ReadText(options.manifest_path);
  auto as_written = text.ok() ? api::ParseTrainingJob(*text, options.manifest_path)
                              : StatusOr<api::TrainingJobManifest>(text.status());
  if (defaulted) {
    out << (as_written.ok() ? as_written->object : checked.job.object).dump() << "\n";
  } else {
    out << options.manifest_path << ": valid; " << DescribeJob(checked.job);
    if (checked.profile) {
      out << "\n" << options.nodes_path << ": valid; " << DescribePlacement(checked.plan, *checked.profile);
    }
    out << "\n";
    // Valid here, and what the operator would refuse of the same manifest: a
    // new user's "valid" for an output path of /data, which kubectl apply
    // then saw Failed (InvalidSpec).
    if (as_written.ok()) {
      const api::SupportCheck in_cluster = api::CheckSupport(*as_written, api::Runner::kKubernetes);
      for (const auto& e : in_cluster.invalid) {
        err << "note: in a cluster the operator would refuse it (InvalidSpec): " << e.ToString() << "\n";
      }
      for (const auto& e : in_cluster.unsupported) {
        err << "note: in a cluster the operator cannot do it yet (NotSupported): " << e.ToString() << "\n";
      }
    }
    // validate does not load LibTorch: what is in the files is not its to
    // judge (a new user read "valid" for a state_dict and for arrays of the
    // wrong shape, which run then refused).
    const JobSpec& spec = checked.job.spec;
    const bool own_model = !spec.model.torchscript_path.empty(), own_data = spec.data.files.has_value();
    if (own_model || own_data) {
      err << "note: " << (own_model && own_data ? "the model's and the data's files are there"
                          : own_model          ? "the model's file is there"
                                               : "the data's files are there")
          << "; what is in " << (own_model && !own_data ? "it" : "them") << " ("
          << (own_model ? "a TorchScript module of that input and output" : "")
          << (own_model && own_data ? "; " : "") << (own_data ? "samples of that shape, labels of those classes" : "")
          << ") is checked by edgetrain run before it trains, not here\n";
    }
  }
  return kExitOk;
}

namespace {

// The checkpoint in the output folder as this run found it, and whether the
// one there now is the run's to resume from: one it wrote, or, unless it
// started afresh, the one it resumed from. A --fresh run that failed or was
// stopped before its first checkpoint said an earlier run's was "kept: run
// the command again without --fresh to resume from it", and the next run
// started that earlier job over (a new user's trial).
class FolderCheckpoint {
 public:
  FolderCheckpoint(std::string path, bool fresh) : path_(std::move(path)), fresh_(fresh), before_(WrittenAt()) {}

  // There, and this run's to resume from.
  bool Resumable() const {
    const std::optional<fs::file_time_type> now = WrittenAt();
    return now && (!fresh_ || now != before_) && !FinishedBefore();
  }
  // One an earlier run left that this run had not replaced: under --fresh,
  // any; else a finished one (an unfinished one is resumed). A failed run
  // said "no checkpoint was written ...: a run again starts over" beside a
  // finished run's checkpoint.bin (a new user's trial).
  bool EarlierLeft() const { return before_ && WrittenAt() == before_ && (fresh_ || FinishedBefore()); }
  bool fresh() const { return fresh_; }
  // One this run wrote: not "kept as it was" (a team that failed on its
  // data at iteration 5 had written it into an empty folder: a user's trial).
  bool WrittenByThisRun() const {
    const std::optional<fs::file_time_type> now = WrittenAt();
    return now && now != before_;
  }
  // ", at iteration N," of the checkpoint there, for the line that says it is
  // kept: a run whose coordinator was killed after its last checkpoint had
  // shown iterations past it, and resumed from further back unsaid (a
  // user's trial). Empty where it cannot be read.
  std::string AtIteration() const {
    const std::optional<Read> kept = ReadNow();
    return kept ? ", at iteration " + WithThousands(kept->iteration) + "," : "";
  }
  // Whether it can be read, and is `job`'s: a run of it can resume from it.
  bool ReadableAndOf(const std::string& job) const {
    const std::optional<Read> kept = ReadNow();
    return kept && kept->job == job;
  }
  // Whose it is, as the run says it: another job's was called this job's,
  // after the run had refused it as another's (a user's trial).
  std::string Whose(const std::string& job) const {
    const std::optional<Read> kept = ReadNow();
    return kept && kept->job != job ? "job " + kept->job + "'s checkpoint" : "the job's checkpoint";
  }

 private:
  // What the lines above say of the checkpoint, read once a version of the
  // file: a failed run's last words had loaded the whole of it, model and
  // optimizer state, up to three times.
  struct Read {
    std::string job;
    int64_t iteration = 0;
    bool complete = false;
  };
  std::optional<Read> ReadNow() const {
    const std::optional<fs::file_time_type> at = WrittenAt();
    if (!at) return std::nullopt;
    if (read_at_ != at) {
      read_at_ = at;
      const auto kept = agent::LoadCheckpoint(path_);
      read_.reset();
      if (kept.ok() && kept->has_value()) read_ = Read{(*kept)->job, (*kept)->iteration, (*kept)->complete};
    }
    return read_;
  }

  // Of a file: a folder in its place is none (a run refused for one said
  // "the job's checkpoint ... is kept as it was": a new user's trial).
  std::optional<fs::file_time_type> WrittenAt() const {
    std::error_code unreadable;
    if (!fs::is_regular_file(path_, unreadable)) return std::nullopt;
    const fs::file_time_type t = fs::last_write_time(path_, unreadable);
    return unreadable ? std::nullopt : std::optional(t);
  }
  // A finished run's checkpoint, which this run did not write: the next run
  // starts afresh rather than from it. A run that failed to start (its port
  // taken) offered it "to resume from" (a new user's trial).
  bool FinishedBefore() const {
    if (!before_ || WrittenAt() != before_) return false;
    const std::optional<Read> kept = ReadNow();
    return kept && kept->complete;
  }

  const std::string path_;
  const bool fresh_;
  const std::optional<fs::file_time_type> before_;
  mutable std::optional<fs::file_time_type> read_at_;  // the version read_ is of
  mutable std::optional<Read> read_;
};

// What a person most needs after a run failed: whether the work is lost, and
// what running again does. `inputs_at_fault`: running the same command fails
// the same way.
void SayWhatTheFailureLeft(const FolderCheckpoint& checkpoint, const LocalRunPlan& plan, const RunOptions& options,
                           bool inputs_at_fault, const std::string& why, std::ostream& err) {
  const std::string& folder = plan.job.output_dir;
  const bool resumable = checkpoint.Resumable();  // reads the checkpoint: once
  // A full disk is not mended by running again: the advice alone, "run the
  // same command again to resume from it", sent a user round the same
  // failure at every checkpoint (a new user's trial).
  const std::string storage = StorageAtFault(why, folder, plan.job.CheckpointPath());
  if (resumable && inputs_at_fault) {
    err << checkpoint.Whose(plan.job.job) << " in " << folder
        << (checkpoint.WrittenByThisRun() ? ", which this run wrote before it failed, is kept" : " is kept as it was")
        << "; the same command fails the same way until what the error says is dealt with\n";
  } else if (resumable && !checkpoint.ReadableAndOf(plan.job.job)) {
    // Another job's, or one that cannot be read: no run of this job resumes
    // from it, where "run the same command again to resume from it" had sent
    // the user to a refusal (found in review).
    const bool unread = checkpoint.AtIteration().empty();
    err << (unread ? "the checkpoint" : checkpoint.Whose(plan.job.job)) << " in " << folder
        << (unread ? ", which cannot be read," : "") << " is kept as it was; "
        << "a run of this job into " << folder << " refuses it: give another --output, or --fresh to start over\n";
  } else if (resumable) {
    err << "the job's checkpoint in " << folder << checkpoint.AtIteration() << " is kept: "
        << storage << HowToResume(options) << "\n";
  } else if (inputs_at_fault) {
    // One an earlier run left is said too: "no checkpoint was written" read
    // as none there, beside an earlier run's at iteration 141 (a user's
    // trial).
    err << "no checkpoint was written in " << folder
        << (checkpoint.EarlierLeft() ? " by this run (the one there is an earlier run's: " +
                                           WhatAnEarlierCheckpointGives(plan.job.CheckpointPath()) + ")"
                                     : std::string())
        << "; the same command fails the same way until what the error says is dealt with\n";
  } else if (!storage.empty() && !checkpoint.EarlierLeft()) {
    err << "no checkpoint was written in " << folder << ": " << storage << "run again (it starts over)\n";
  } else {
    const int every = plan.job.spec.fault_tolerance.checkpoint_every;
    err << "no checkpoint was written in " << folder
        << (every > 0 ? " (one every " + std::to_string(every) + " iterations, spec.faultTolerance.checkpointEvery)"
                      : " (spec.faultTolerance.checkpointEvery is 0)")
        << (!checkpoint.EarlierLeft() ? ": a run again starts over\n"
            : "; the one there is an earlier run's" +
                  std::string(checkpoint.fresh() ? ", which this --fresh run had not yet replaced" : "") + ": " +
                  WhatAnEarlierCheckpointGives(plan.job.CheckpointPath()) + "\n");
  }
}

// What the workers spent that their coordinator never heard of (after their
// last report), added to the checkpoint the run ended with: a run resumed
// from it carried the coordinator's count alone, and an interrupted robot
// team's resumed run lost 8 J of robot-4's, 66 J in another, and showed a
// device's total going down (a user's trial).
Status CarryUnreportedEnergy(const std::string& path, const JobProgress& p, const std::map<int, double>& unreported) {
  if (unreported.empty()) return Status::Ok();
  auto kept = agent::LoadCheckpoint(path);
  if (!kept.ok()) return kept.status();
  if (!kept->has_value()) return Status::Ok();
  agent::JobCheckpoint& c = **kept;
  // Only the one this run ended with: one an earlier run left is that run's.
  if (c.iteration != p.iteration || c.samples != p.samples) return Status::Ok();
  for (const auto& [rank, joules] : unreported) {
    if (rank < 0 || static_cast<size_t>(rank) >= c.workers.size()) continue;
    c.workers[static_cast<size_t>(rank)].energy_j += joules;
    c.energy_joules += joules;
  }
  return agent::SaveCheckpoint(path, c);
}

// Each worker's own account, printed as it exited: what it spent after its
// last report reached the coordinator is in it. Returns that, by rank.
std::map<int, double> TakeWorkersOwnResults(std::vector<ChildProcess>& workers, JobProgress& result,
                                            const std::map<int, double>& carried) {
  std::map<int, double> own, pace;
  for (size_t rank = 0; rank < workers.size(); ++rank) {
    while (std::optional<std::string> line = workers[rank].ReadLine(Duration::zero())) {
      if (line->rfind("result ", 0) != 0) continue;
      const nlohmann::json said = nlohmann::json::parse(line->substr(7), nullptr, false);
      if (!said.is_object()) continue;
      if (said.contains("energyJoules") && said["energyJoules"].is_number()) {
        own[static_cast<int>(rank)] = said["energyJoules"].get<double>();
      }
      // Its own samples are of every batch it computed, as its computeSeconds are.
      if (said.value("computeSeconds", 0.0) > 0 && said.value("samples", int64_t{0}) > 0) {
        pace[static_cast<int>(rank)] = said["samples"].get<double>() / said["computeSeconds"].get<double>();
      }
    }
  }
  TakeWorkersOwnPace(result, pace);
  return TakeWorkersOwnEnergy(result, own, carried);
}

// The run's picture, report.png, drawn from its curves, or why not. Nothing
// trained, nothing to draw: a picture of empty axes would only replace one an
// earlier run of the job left. Interrupted beside a finished run's model,
// which it keeps, neither: the picture stays that model's (the folder held
// one run's model and another's picture: a new user's trial), and this run's
// is drawn when it resumes and ends; its records, which the resumed run goes
// on from, are said to be this run's (a user's trial drew the picture again
// from them, of another run than the model's). Not drawn, a picture an earlier run
// left stays: said, or it reads as this run's (a resumed --no-curves run
// left the interrupted one's: a new user's trial).
// The picture's drawing is after the summary's "s in all", and said with
// its own time: its second or so was in no figure (a new user's trial).
void DrawTheRun(const RunCurves& curves, const JobProgress& result, const std::string& title,
                const std::vector<std::string>& nodes, const RunOptions& options, Clock& clock, std::ostream& out,
                std::ostream& err) {
  if (result.samples <= 0) return;
  const bool kept_earlier_model = result.model_path.empty();
  if (!options.curves) {
    if (fs::exists(curves.picture_path())) {
      err << "note: " << curves.picture_path().string() << " is an earlier run's, not drawn again (--no-curves)\n";
    }
  } else if (kept_earlier_model && fs::exists(curves.picture_path())) {
    err << "note: " << curves.picture_path().string()
        << " is left as the earlier run drew it, beside its model; this run's is drawn once it resumes and ends "
           "(evaluations.csv and progress.jsonl beside them are this run's, which it resumes from)\n";
  } else {
    std::string drew_saying;
    const TimePoint began = clock.Now();
    const Status drawn =
        DrawRunCurves(curves, BinaryBeside("edgetrain-plot-run"), title, nodes, kDrawGrace, &drew_saying);
    if (drawn.ok()) {
      if (!drew_saying.empty()) err << "note: " << drew_saying << "\n";
      out << "curves: " << curves.picture_path().string() << " (drawn in " << Fixed(ToSeconds(clock.Now() - began), 1)
          << " s)\n";
    } else if (!curves.empty()) {
      err << "note: no " << curves.picture_path().string() << ": " << drawn.message() << "\n";
    }
  }
}

// The run's exit code once it ended without failing, and what an interrupted
// run leaves to resume.
int ExitOf(const Supervision& outcome, const FolderCheckpoint& checkpoint, const RunOptions& options,
           const JobPlan& plan, std::ostream& err) {
  if (outcome.interrupted) {
    // Said where the run ends, as a failure's note says it: the first line
    // ("saving where it got to") did not say that running again resumes.
    // Only of a checkpoint this run wrote or resumed from: one left by a
    // finished run, on which this one was stopped before training, is not
    // taken up again (the next run starts over).
    // A team stopped before its first whole iteration has trained samples,
    // and written them (a user's trial: a checkpoint at iteration 0, unsaid).
    const bool its_own = outcome.result && (outcome.result->iteration > 0 || outcome.result->samples > 0 ||
                                            outcome.result->resumed_from_iteration);
    if (its_own && checkpoint.Resumable()) {
      err << "interrupted: the job's checkpoint in " << plan.output_dir << checkpoint.AtIteration()
          << " is kept: " << HowToResume(options) << "\n";
    }
    return kExitInterrupted;
  }
  // Stopped by a signal this run did not send (to the coordinator's agent,
  // by a person or a supervisor): not done, and resumable. It exited 0, as
  // if the job had ended (a new user's trial).
  if (outcome.result->state == JobState::kInterrupted) {
    err << "interrupted: " << plan.job << "'s coordinator was stopped by a signal this run did not send; "
        << HowToResume(options) << "\n";
    return kExitTerminated;
  }
  return kExitOk;
}

// The run itself; RunLocal adds --json's failure line for a run refused early.
// `job_name` is set once the manifest is read, for a failure line.
int RunJob(const RunOptions& options, std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupted,
           const std::atomic<bool>* forced, std::string& job_name) {
  RealClock clock;
  const TimePoint started = clock.Now();
  CheckedRun checked;
  checked.to_run = true;
  const int checked_code = CheckRun(options, err, checked);
  job_name = checked.job.name;
  if (checked_code != kExitOk) return checked_code;
  const api::TrainingJobManifest& job = checked.job;
  const std::optional<ClusterProfile>& profile = checked.profile;
  LocalRunPlan& plan = checked.plan;
  if (job.object["spec"].value("suspend", false)) {
    out << job.name << " is suspended (spec.suspend: true); nothing to run\n";
    return kExitOk;
  }
  if (options.observe && plan.kernel_links) {
    err << "error: --observe scrapes the agents over this machine's loopback, and under --links netns each agent's "
           "loopback is its own namespace's: observe a run with --links process (the links are shaped alike)\n";
    return kExitInvalid;
  }
  // The file system's root is no job's folder: `--output /` wrote model.pt,
  // checkpoint.bin and the rest into / and ended "model: //model.pt", exit 0
  // (a user's trial), where a cluster refuses it.
  std::error_code root_ec;
  if (fs::absolute(plan.job.output_dir, root_ec).lexically_normal() == "/") {
    err << "error: the output folder is " << plan.job.output_dir << ", the file system's root, where a run writes "
        << "model.pt, checkpoint.bin and its logs: give the job a folder of its own (spec.output.path, or "
        << "--output)\n";
    return kExitInvalid;
  }
  // Before loading data or measuring layers: a folder the model cannot go to
  // fails the run now, not after it.
  MadeOutputFolder made_output(plan.job.output_dir);
  if (Status writable = CheckWritableFolder(plan.job.output_dir); !writable.ok()) {
    err << "error: " << writable.message() << " (spec.output.path, or --output)\n";
    // The path given, not the run, is at fault: the same command fails the
    // same way (it exited 1, a runtime failure's code).
    return kExitInvalid;
  }
  // One run at a time into it (cli/output_folder_lock.h), held to the end.
  StatusOr<OutputFolderLock> output_lock = OutputFolderLock::Take(plan.job.output_dir);
  if (!output_lock.ok()) {
    made_output.Keep();
    err << "error: " << output_lock.status().message() << "\n";
    return kExitInvalid;
  }
  err << checked.resuming_notes;
  // So too the progress log (it failed only once the agents had started, and
  // left them a checkpoint to resume from).
  std::ofstream progress_log;
  if (!options.progress_log.empty()) {
    progress_log.open(options.progress_log, std::ios::trunc);
    if (!progress_log) {
      err << "error: cannot write " << options.progress_log << " (--progress-log)\n";
      return kExitInvalid;
    }
  }
  // After what refuses a run at once: measuring the layers takes seconds.
  if (int code = PlanPipelineRun(options, err, checked, interrupted); code != kExitOk) return code;
  // Interrupted before any agent said it serves: nothing has trained,
  // nothing is to save, and nothing is said to have failed.
  auto not_started = [&] {
    err << "interrupted: " << job.name << " had not started; nothing was written\n";
    if (options.json) {
      // The final line --json promises, as after an interrupt a moment later.
      JobProgress none;
      none.state = JobState::kInterrupted;
      none.stop_reason = StopReason::kCancelled;
      out << JsonLine(job, plan, none, ToSeconds(clock.Now() - started)) << "\n" << std::flush;
    }
    return kExitInterrupted;
  };
  // Ctrl-C while the layers were measured. The plan was printed and three
  // agents started before the interrupt was heard, 6.6 s after it (a new
  // user's trial); the measuring agent is now stopped at once.
  if (interrupted.load()) return not_started();
  RemoveLeftovers(err, options.link_command_timeout);
  // Before the agents, so that a missing prometheus or a port in use fails the
  // run before it trains.
  std::optional<RunObserver> observer;
  if (options.observe) {
    auto started = StartObserver(options, plan, clock, err, interrupted);
    if (started.status().code() == StatusCode::kCancelled) return not_started();
    if (!started.ok()) return ExitCodeFor(started.status());
    observer.emplace(std::move(*started));
  }
  std::unique_ptr<NetnsLinks> links;
  if (plan.kernel_links) {
    auto created = NetnsLinks::Create(plan.devices, clock, {.command_timeout = options.link_command_timeout});
    if (!created.ok()) {
      err << "error: " << created.status().message() << "\n";
      return ExitCodeFor(created.status());
    }
    links = std::move(*created);
  }
  std::error_code ec;
  const std::string model = plan.job.ModelPath();
  std::string earlier_model = fs::exists(model, ec) ? model : "";
  // Another job's finished model is replaced too, as its finished
  // checkpoint is; said with whose it is (model.json), where a user reusing
  // an output folder lost a Fashion-MNIST model to a digits run on a note
  // that named only the file (a user's trial).
  if (!earlier_model.empty()) {
    const std::string trained_by = ModelCardField(model, "job");
    if (!trained_by.empty() && trained_by != job.name) earlier_model += ", job " + trained_by + "'s finished model";
  }
  const FolderCheckpoint checkpoint(plan.job.CheckpointPath(), options.fresh);
  // The run folder holds the plan and the agents' logs; kept when a run fails,
  // unless the agent refused its inputs before anything trained.
  StatusOr<fs::path> temporary = SafeTemporaryFolder("the run's plan, which its agents read, and their logs");
  if (!temporary.ok()) {
    err << "error: " << temporary.status().message() << "\n";
    return ExitCodeFor(temporary.status());
  }
  auto folder = RunFolder::Create(*temporary, job.name);
  if (!folder.ok()) {
    err << "error: " << folder.status().message() << "\n";
    return ExitCodeFor(folder.status());
  }
  // A team's agents talk over mutual TLS with credentials of this run alone,
  // gone when it ends; plaintext only when asked for.
  std::optional<EphemeralCredentials> credentials;
  std::vector<std::string> transport;
  if (plan.team && options.insecure) {
    err << "WARNING: --insecure: the agents' gradients and model travel in plaintext, and anyone who reaches the "
           "coordinator's port can join the job; for loopback only\n";
    transport = {"--insecure"};
  } else if (plan.team) {
    auto made = EphemeralCredentials::Make(plan.job.job, kCredentialsValidity);
    if (!made.ok()) {
      err << "error: " << made.status().message() << "\n";
      folder->Remove();  // nothing ran: no logs to keep
      return ExitCodeFor(made.status());
    }
    credentials.emplace(std::move(*made));
    transport = {"--tls-dir=" + credentials->dir()};
  }
  AgentLauncher launcher(options.agent_binary.empty() ? AgentBeside() : options.agent_binary, folder->path(), plan,
                         links.get(), options.http_port, std::move(transport), clock);
  launcher.SetProgressEvery(options.progress_every);
  launcher.SetInterrupt(&interrupted);
  launcher.SetStartTimeout(options.start_timeout);
  std::optional<ChildProcess> coordinator;
  std::vector<ChildProcess> workers;
  std::vector<int> worker_ranks;  // each worker's rank: a pipeline's plan may leave devices out
  // `log`: the agent whose log says why (the coordinator's unless a worker failed).
  // `inputs_at_fault`: the agent refused the manifest's files, its checkpoint
  // or its numbers (a loss gone non-finite), so running the same command
  // again would fail the same way; `refused_at_start`: before anything
  // trained, when the log's tail printed here says all there is.
  auto failed = [&](const std::string& why, std::string log_name = "", bool inputs_at_fault = false,
                    bool refused_at_start = false) {
    const bool drop_logs = refused_at_start && !options.keep_logs;
    for (auto& w : workers) w.Signal(SIGTERM);
    if (coordinator) {
      coordinator->Signal(SIGTERM);
      coordinator->Wait(options.stop_grace);
    }
    if (log_name.empty()) log_name = launcher.coordinator_log();
    const std::string log = (folder->path() / log_name).string();
    // A log with nothing in it is not headed as if it said something (a
    // user's trial read "last lines of coordinator.log:" and nothing after).
    const std::string tail = LogTail(log, 15);
    err << "error: " << why << "\n";
    if (!tail.empty()) err << "last lines of " << log_name << ":\n" << tail;
    // A folder kept for each input refused at the start only piles up (a new
    // user's trial found four): the log's tail above says what was wrong.
    if (!drop_logs) err << "logs: " << folder->path().string() << "\n";
    SayWhatTheFailureLeft(checkpoint, plan, options, inputs_at_fault, why, err);
    if (options.json) out << FailureJsonLine(job.name, why) << "\n" << std::flush;
    if (drop_logs) {
      folder->Remove();
    } else {
      folder->Keep();
    }
    return inputs_at_fault ? kExitInvalid : interrupted.load() ? kExitInterrupted : kExitFailed;
  };

  auto started_coordinator = launcher.StartCoordinator();
  if (!started_coordinator.ok()) {
    if (started_coordinator.status().code() == StatusCode::kNotFound) {
      err << "error: " << started_coordinator.status().message() << " (pass --agent PATH to name the agent binary)\n";
      folder->Remove();  // nothing ran: nothing to keep, and no lock to mistake for a killed runner's
      return ExitCodeFor(started_coordinator.status());
    }
    // Ctrl-C as it started: said as one a moment later is, not as a
    // failure ("error: interrupted while coordinator started", stop reason
    // "failed", its logs kept: a new user's trial).
    if (started_coordinator.status().code() == StatusCode::kCancelled) {
      folder->Remove();
      return not_started();
    }
    const bool refused = started_coordinator.status().code() == StatusCode::kInvalidArgument;
    return failed(started_coordinator.status().message(), "", refused, refused);
  }
  coordinator.emplace(std::move(*started_coordinator));
  err << "training " << DescribeJob(job) << (profile ? " on the devices of " + profile->name : "") << "\n";
  if (plan.team) {
    err << "  " << plan.agents << " agents, about " << plan.memory_mb << " MB of memory\n";
  }
  // When the links started following their traces (agents start their own
  // shapers as they start; the kernel's start here).
  if (links) links->StartShaping();
  const TimePoint links_started = clock.Now();
  // Every worker started at once, then each waited for until it says its
  // address; a Ctrl-C meanwhile stops the team as it is.
  auto worker_failed = [&](int rank, const Status& why) {
    const bool refused = why.code() == StatusCode::kInvalidArgument;
    // Named once: the launcher's words name it already when it started
    // ("error: worker 1: worker 1 ended as it started": a user's trial).
    const std::string name = "worker " + std::to_string(rank);
    return failed(why.message().starts_with(name + " ") ? why.message() : name + ": " + why.message(),
                  "worker-" + std::to_string(rank) + ".log", refused, refused);
  };
  for (int rank = 0; plan.team && rank < job.spec.parallelism.workers; ++rank) {
    if (plan.job.pipeline && !StageOfRank(*plan.job.pipeline, rank).ok()) continue;  // a device the plan leaves out
    if (interrupted.load()) break;
    auto worker = launcher.SpawnWorker(rank);
    if (!worker.ok()) return worker_failed(rank, worker.status());
    workers.push_back(std::move(*worker));
    worker_ranks.push_back(rank);
  }
  if (plan.team && !workers.empty()) {
    err << "  waiting for " << workers.size() << (workers.size() == 1 ? " worker" : " workers")
        << " to load their data and say where they serve\n";
  }
  for (size_t i = 0; i < workers.size() && !interrupted.load(); ++i) {
    if (Status up = launcher.AwaitWorker(workers[i], worker_ranks[i]); !up.ok()) {
      return worker_failed(worker_ranks[i], up);
    }
  }
  err << DescribeEndpoints(launcher.endpoints(), plan.job.pipeline.has_value());
  if (observer) {
    std::vector<ScrapeTarget> targets;
    // Labelled with the pod names the operator gives the same agents, so the
    // dashboards' queries find them as on a cluster.
    for (const AgentEndpoint& e : launcher.endpoints()) {
      targets.push_back({e.http, e.rank < 0 ? operator_::CoordinatorPodName(job.name)
                                            : operator_::WorkerPodName(job.name, e.rank)});
    }
    if (Status scraped = observer->Scrape(targets, job.namespace_.empty() ? "default" : job.namespace_);
        !scraped.ok()) {
      return failed("--observe: " + scraped.message());
    }
  }

  const std::string http = launcher.coordinator_http();
  auto progress = [&]() -> std::optional<std::string> {
    // The coordinator's HTTP endpoint lives in the hub's namespace under --links netns.
    auto reply = links ? links->InHubThread([&] { return http::HttpGet(http, "/progress"); })
                       : std::optional(http::HttpGet(http, "/progress"));
    if (reply && reply->ok() && (*reply)->status == 200) return (*reply)->body;
    return std::nullopt;
  };
  RunWatch watch;
  watch.progress = progress;
  RunCurves curves(plan.job.output_dir);
  bool curves_lost = false;
  watch.sink = [&](const std::string& body, const JobProgress* decoded) {
    const double t = ToSeconds(clock.Now() - links_started);
    if (progress_log.is_open()) progress_log << SnapshotLine(t, body) << std::flush;
    if (decoded == nullptr) return;  // not a snapshot to draw; the display says what it makes of it
    if (Status recorded = curves.Record(t, *decoded, body); !recorded.ok() && !curves_lost) {
      err << "warning: no report of this run's curves: " << recorded.message() << "\n";
      curves_lost = true;
    }
  };
  if (links) watch.health = [&] { return links->health(); };
  for (const WorkerSlot& slot : plan.job.workers) watch.nodes[slot.rank] = slot.node;
  if (!plan.job.workers.empty()) watch.team_gathers_for = job.spec.fault_tolerance.node_loss_grace;
  // A pipeline's head resumes without a device that never came (replay on),
  // and a fresh one, or one with replay off, does not start without it.
  if (plan.job.pipeline) {
    watch.resumes = job.spec.fault_tolerance.replay && checkpoint.Resumable() &&
                    checkpoint.ReadableAndOf(plan.job.job);
  }
  watch.last_words = [&](int rank) {
    return LastWords((folder->path() / ("worker-" + std::to_string(rank) + ".log")).string());
  };
  watch.earlier_model = earlier_model;
  if (!options.stages.empty()) watch.set_by_options["spec.parallelism.stages"] = "--stages";
  if (forced) watch.forced = [forced] { return forced->load(); };
  if (job.spec.data.stream && job.spec.data.stream->directory) {
    // A resumed run reads only files past those it trained on; a fresh one
    // has no record of them (a new user fed old files in again unawares).
    // (Not "again": an earlier run may have read another folder.)
    watch.afresh_also = "its workers read every file in " + *job.spec.data.stream->directory +
                        " from the first, any an earlier run of it trained on included";
  }
  std::vector<WatchedProcess*> team;
  for (auto& w : workers) team.push_back(&w);
  SupervisionTimes times;
  times.interrupt_grace = options.interrupt_grace;
  times.stop_grace = options.stop_grace;
  RunSupervisor supervisor(job.name, *coordinator, team, clock, err, times,
                           plan.job.pipeline ? StopOrder::kCoordinatorFirst : StopOrder::kAllAtOnce, worker_ranks);
  std::vector<std::string> nodes;
  for (const WorkerSlot& slot : plan.devices) nodes.push_back(slot.node);
  ProgressDisplay display(err, options.terminal, clock, std::chrono::seconds(5), nodes);
  Supervision outcome = supervisor.Run(interrupted, display, watch);
  if (!outcome.failure.empty()) return failed(outcome.failure, outcome.failure_log, outcome.inputs_at_fault);
  if (outcome.result->state != JobState::kSucceeded && outcome.result->state != JobState::kInterrupted) {
    // A data file, model or checkpoint the agent refused is the inputs' fault, not the run's.
    const bool inputs_at_fault = outcome.coordinator_exit == kExitInvalid;
    // Refused before a step: nothing trained to fail (a wrong output size,
    // a state_dict file, bad data read "training failed": a user's trial).
    // A step that failed (a loss NaN at step 1, iteration 0 since nothing of
    // it is kept) has the job's clock running.
    const bool refused_at_start = inputs_at_fault && outcome.result->iteration == 0 &&
                                  outcome.result->samples == 0 && outcome.lost_workers == 0 &&
                                  outcome.result->elapsed_s <= 0;
    return failed((refused_at_start ? "refused before training: " : "training failed: ") + outcome.result->error,
                  "", inputs_at_fault, refused_at_start);
  }

  if (plan.team && !plan.job.pipeline) {
    const std::map<int, double> unreported = TakeWorkersOwnResults(workers, *outcome.result, plan.carried_energy);
    if (Status carried = CarryUnreportedEnergy(plan.job.CheckpointPath(), *outcome.result, unreported); !carried.ok()) {
      err << "warning: the workers' energy after their last report is not in the checkpoint: " << carried.message()
          << "\n";
    }
  }
  // The coordinator's final word, with the final model's evaluation, ends the
  // curves and the progress log (whose last line was the last one polled).
  const std::string final_word = EncodeJobProgress(*outcome.result);
  const double ended_s = ToSeconds(clock.Now() - links_started);
  (void)curves.Record(ended_s, *outcome.result, final_word);
  if (progress_log.is_open()) progress_log << SnapshotLine(ended_s, final_word) << std::flush;
  const double wall_s = ToSeconds(clock.Now() - started);
  PrintSummary(job, plan, *outcome.result, wall_s, out, outcome.ended);
  DrawTheRun(curves, *outcome.result, job.name, nodes, options, clock, out, err);
  if (options.json) out << JsonLine(job, plan, *outcome.result, wall_s, outcome.ended) << "\n";
  if (options.keep_logs || outcome.lost_workers > 0) {
    err << "logs: " << folder->path().string() << "\n";
    folder->Keep();
  } else {
    folder->Remove();
  }
  out << std::flush;
  if (const std::optional<std::string> ended = observer ? observer->Ended() : std::nullopt) {
    err << "observe: Prometheus ended during the run (" << *ended
        << "; its log: " << (observer->dir() / "prometheus.log").string()
        << "): the series it scraped before then are kept, and nothing serves them now\n";
    observer->Stop(options.stop_grace);
    SayWhereTheSeriesStay(*observer, err);
  } else if (observer && !HoldsTheRun(*observer)) {
    // Neither served nor said to stay: that line and the two after it said
    // so of nothing (new users' trials).
    err << "observe: the run ended before Prometheus scraped it (it scrapes each second, from a second or two "
           "after the agents start): it holds no series of this run; watch a run of tens of seconds\n";
  } else if (observer) {
    // Not after a Ctrl-C that came once training had stopped: it said to stop.
    if (!outcome.interrupted && !interrupted.load()) ServeAfterTheRun(*observer, options, interrupted, clock, err);
    SayWhereTheSeriesStay(*observer, err);
  }
  return ExitOf(outcome, checkpoint, options, plan.job, err);
}

// Passes what is written on to `to`, keeping count of it and the last line
// that began "error: ": what --json's failure line says when a run is refused
// before it starts.
class RecordingBuffer : public std::streambuf {
 public:
  explicit RecordingBuffer(std::streambuf* to) : to_(to) {}
  int64_t written() const { return written_; }
  const std::string& last_error() const { return last_error_; }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    Record(static_cast<char>(c));
    return to_->sputc(static_cast<char>(c));
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) Record(s[i]);
    return to_->sputn(s, n);
  }
  int sync() override { return to_->pubsync(); }

 private:
  void Record(char c) {
    ++written_;
    if (c != '\n') {
      line_ += c;
      return;
    }
    // An error's indented lines below it are part of it ("error: --nodes:",
    // then what was wrong with the file).
    constexpr std::string_view kError = "error: ";
    if (line_.starts_with(kError)) {
      last_error_ = line_.substr(kError.size());
      in_error_ = true;
    } else if (in_error_ && line_.starts_with("  ")) {
      last_error_ += " " + line_.substr(line_.find_first_not_of(' '));
    } else {
      in_error_ = false;
    }
    line_.clear();
  }
  std::streambuf* to_;
  int64_t written_ = 0;
  std::string line_, last_error_;
  bool in_error_ = false;
};

}  // namespace

int RunLocal(const RunOptions& options, std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupted,
             const std::atomic<bool>* forced) {
  std::string job_name;
  if (!options.json) return RunJob(options, out, err, interrupted, forced, job_name);
  // A run refused before it starts (a manifest, a profile, a folder) ends with
  // the same failure line as one that fails later: a script reading stdout
  // gets one JSON line either way.
  RecordingBuffer out_buffer(out.rdbuf()), err_buffer(err.rdbuf());
  std::ostream recorded_out(&out_buffer), recorded_err(&err_buffer);
  const int code = RunJob(options, recorded_out, recorded_err, interrupted, forced, job_name);
  recorded_out.flush();
  recorded_err.flush();
  if (code != kExitOk && code != kExitInterrupted && out_buffer.written() == 0) {
    // A manifest the schema refused still names its job, where it can be read:
    // the line said "job": "" (a new user's trial).
    if (job_name.empty()) job_name = JobNameIn(options.manifest_path);
    out << FailureJsonLine(job_name, err_buffer.last_error().empty() ? "exit " + std::to_string(code)
                                                                      : err_buffer.last_error())
        << "\n"
        << std::flush;
  }
  return code;
}

}  // namespace edgetrain::cli
