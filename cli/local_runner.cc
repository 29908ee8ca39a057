#include "cli/local_runner.h"

#include <unistd.h>

#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/telemetry/http_client.h"
#include "api/trainingjob.h"
#include "cli/child_process.h"
#include "cli/local_support.h"
#include "cli/netns_links.h"
#include "cli/progress_display.h"
#include "cli/run_folder.h"
#include "core/duration_text.h"
#include "core/job_plan.h"
#include "core/job_progress.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kPollEvery{200};
constexpr seconds kStartupTimeout{60};
constexpr seconds kStopGrace{15};
// Workers get this long after the coordinator's result to have exited by themselves.
constexpr seconds kWorkerStopGrace{2};
// After Ctrl-C the coordinator saves and reports; past this, everything is killed.
constexpr seconds kInterruptGrace{30};

std::string AgentBeside() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path() / "edgetrain-agent").string();
}

std::string LogTail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += "  | " + l + "\n";
  return out;
}

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double MeanStallFraction(const JobProgress& p) {
  if (p.workers.empty()) return 0;
  double sum = 0;
  for (const auto& w : p.workers) sum += w.stall_fraction;
  return sum / static_cast<double>(p.workers.size());
}

int64_t BytesSent(const JobProgress& p) {
  int64_t sum = 0;
  for (const auto& w : p.workers) sum += w.bytes_sent;
  return sum;
}

int64_t BytesReceived(const JobProgress& p) {
  int64_t sum = 0;
  for (const auto& w : p.workers) sum += w.bytes_received;
  return sum;
}

void PrintSummary(const api::TrainingJobManifest& job, const JobPlan& plan, const JobProgress& p, double wall_s,
                  std::ostream& out) {
  out << job.name << ": test accuracy " << Fixed(p.accuracy.value_or(0), 4);
  if (job.spec.budget.target_accuracy) {
    out << " (target " << *job.spec.budget.target_accuracy << (p.reached_target ? " reached)" : " not reached)");
  }
  out << ", stopped by " << p.stop_reason << "\n";
  out << "  " << WithThousands(p.iteration) << " iterations, " << WithThousands(p.samples) << " samples, "
      << WithThousands(static_cast<int64_t>(p.samples_per_second)) << " samples/s; " << Fixed(p.elapsed_s, 1)
      << " s of training, " << Fixed(wall_s, 1) << " s in all\n";
  if (p.energy_joules) {
    out << "  energy (modelled, docs/energy.md): " << WithThousands(static_cast<int64_t>(*p.energy_joules)) << " J\n";
  }
  if (!plan.workers.empty()) {
    out << "  worker  node           iterations   rows sent    MB sent   MB recv   link Mbit/s   stall   energy J\n";
    for (const auto& w : p.workers) {
      const std::string node = static_cast<size_t>(w.rank) < plan.workers.size() ? plan.workers[w.rank].node : "?";
      char line[200];
      std::snprintf(line, sizeof line, "  %6d  %-14s %10s %11s %10.1f %9.1f %13.1f %6.0f%% %10.0f\n", w.rank,
                    node.c_str(), WithThousands(w.iteration).c_str(), WithThousands(w.rows_sent).c_str(),
                    static_cast<double>(w.bytes_sent) / 1e6, static_cast<double>(w.bytes_received) / 1e6,
                    w.bandwidth_mbps, 100 * w.stall_fraction,
                    w.energy_joules);
      out << line;
    }
  }
  out << "  model: " << p.model_path << "\n";
}

std::string JsonLine(const api::TrainingJobManifest& job, const JobProgress& p, double wall_s) {
  auto nullable = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"job", job.name},
      {"accuracy", nullable(p.accuracy)},
      {"loss", p.loss},
      {"iterations", p.iteration},
      {"samples", p.samples},
      {"epochs", p.epoch},
      {"wall_s", wall_s},
      {"train_s", p.elapsed_s},
      {"samples_per_s", p.samples_per_second},
      {"reached_target", p.reached_target},
      {"target_accuracy", nullable(job.spec.budget.target_accuracy)},
      {"stop_reason", p.stop_reason},
      {"workers", job.spec.parallelism.workers},
      {"stall_fraction", MeanStallFraction(p)},
      {"bytes_sent", BytesSent(p)},
      {"bytes_received", BytesReceived(p)},
      {"energy_joules", nullable(p.energy_joules)},
      {"model_path", p.model_path},
  };
  return j.dump();
}

// The agents of one run, and what they said.
class LocalRun {
 public:
  LocalRun(const RunOptions& options, std::ostream& err, fs::path run_dir)
      : options_(options), err_(err), run_dir_(std::move(run_dir)),
        agent_(options.agent_binary.empty() ? AgentBeside() : options.agent_binary) {}

  // Starts an agent; with `links`, inside the hub's namespace (rank < 0) or worker `rank`'s.
  StatusOr<ChildProcess> Start(const std::vector<std::string>& flags, const std::string& log, int threads,
                               const NetnsLinks* links = nullptr, int rank = -1) {
    std::vector<std::string> argv = {agent_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    if (links) argv = rank < 0 ? links->InHub(argv) : links->InWorker(rank, argv);
    // BLAS threads on top of LibTorch's own would oversubscribe the cores.
    const std::string n = std::to_string(threads);
    return ChildProcess::Spawn(argv, (run_dir_ / log).string(), {{"OPENBLAS_NUM_THREADS", n}, {"OMP_NUM_THREADS", n}});
  }

  // Waits for the launch contract's line starting with `what ` from `child`.
  StatusOr<std::string> Await(ChildProcess& child, const std::string& what) {
    auto deadline = std::chrono::steady_clock::now() + kStartupTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto line = child.ReadLine(kPollEvery);
      if (line && line->rfind(what + " ", 0) == 0) return line->substr(what.size() + 1);
      if (!line && child.stdout_closed()) return UnavailableError("the agent exited before it printed `" + what + "`");
    }
    return DeadlineExceededError("the agent did not print `" + what + "` within 60 s");
  }

  const fs::path& run_dir() const { return run_dir_; }

 private:
  const RunOptions& options_;
  std::ostream& err_;
  fs::path run_dir_;
  std::string agent_;
};

}  // namespace

void RemoveLeftovers(std::ostream& err) {
  std::error_code ec;
  for (const auto& folder : RemoveAbandonedRunFolders(fs::temp_directory_path(ec))) {
    err << "note: removed " << folder.string() << ", left by a runner that was killed\n";
  }
  if (auto namespaces = NetnsLinks::RemoveStale(); !namespaces.empty()) {
    std::string names;
    for (const auto& n : namespaces) names += (names.empty() ? "" : ", ") + n;
    err << "note: removed the network namespaces " << names << ", left by a runner that was killed\n";
  }
}

int ValidateManifest(const std::string& manifest_path, bool defaulted, std::ostream& out, std::ostream& err) {
  api::TrainingJobManifest job;
  LocalSupport support;
  int code = LoadJob(manifest_path, err, job, support);
  if (code != kExitOk) return code;
  for (const auto& note : support.notes) err << "note: " << note << "\n";
  if (defaulted) {
    out << job.object.dump() << "\n";
  } else {
    out << manifest_path << ": valid; " << DescribeJob(job) << "\n";
  }
  return kExitOk;
}

int RunLocal(const RunOptions& options, std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupted) {
  const auto started = std::chrono::steady_clock::now();
  api::TrainingJobManifest job;
  LocalSupport support;
  if (int code = LoadJob(options.manifest_path, err, job, support); code != kExitOk) return code;
  std::optional<ClusterProfile> profile;
  if (!options.nodes_path.empty()) {
    profile = LoadProfile(options.nodes_path, err);
    if (!profile) return kExitInvalid;
  }
  for (const auto& note : support.notes) err << "note: " << note << "\n";
  if (job.object["spec"].value("suspend", false)) {
    out << job.name << " is suspended (spec.suspend: true); nothing to run\n";
    return kExitOk;
  }

  const int workers = job.spec.parallelism.workers;
  const bool team = workers > 1 || profile.has_value();
  if (options.links != "process" && options.links != "netns") {
    err << "error: --links: expected process or netns, got \"" << options.links << "\"\n";
    return kExitInvalid;
  }
  const bool netns = options.links == "netns";
  if (netns && !team) {
    err << "error: --links netns emulates a team's links: give more than 1 worker or --nodes\n";
    return kExitInvalid;
  }
  std::error_code ec;
  fs::path output = !options.output_dir.empty() ? fs::path(options.output_dir)
                    : job.spec.output.path     ? fs::path(*job.spec.output.path)
                                               : fs::path("edgetrain-output") / job.name;
  output = fs::absolute(output, ec);

  JobPlan plan;
  plan.job = job.name;
  plan.spec_json = job.SpecJson();
  plan.output_dir = output.string();
  // One LibTorch thread per agent unless asked: measured on the example MLP, two
  // threads on two cores ran at half the samples/s of one (13.8k vs 25.7k).
  plan.intra_op_threads = options.threads > 0 ? options.threads : 1;
  if (team) {
    auto slots = PlaceWorkers(workers, profile);
    if (!slots.ok()) {
      err << "error: " << slots.status().message() << "\n";
      return kExitInvalid;
    }
    plan.workers = std::move(*slots);
  }
  RemoveLeftovers(err);
  // Kernel-shaped links replace the agents' own shaping, never add to it.
  std::unique_ptr<NetnsLinks> links;
  if (netns) {
    auto created = NetnsLinks::Create(plan.workers);
    if (!created.ok()) {
      err << "error: " << created.status().message() << "\n";
      return created.status().code() == StatusCode::kFailedPrecondition ? kExitFailed : kExitInvalid;
    }
    links = std::move(*created);
    for (auto& slot : plan.workers) slot.link.reset();
  }

  // The run folder holds the plan and the agents' logs; kept when a run fails.
  auto folder = RunFolder::Create(fs::temp_directory_path(ec), job.name);
  if (!folder.ok()) {
    err << "error: " << folder.status().message() << "\n";
    return kExitFailed;
  }
  LocalRun run(options, err, folder->path());
  const std::string plan_path = (run.run_dir() / "plan.json").string();
  std::ofstream(plan_path) << EncodeJobPlan(plan);
  const std::string world = "--world=" + std::to_string(workers);

  const std::string coordinator_log = team ? "coordinator.log" : "agent-0.log";
  std::vector<std::string> coordinator_flags = {"--role=coordinator", "--job=" + job.name, "--rank=0", world,
                                                "--plan=" + plan_path,
                                                netns ? "--listen=0.0.0.0:0" : "--listen=127.0.0.1:0",
                                                "--http=127.0.0.1:0"};
  auto coordinator = run.Start(coordinator_flags, coordinator_log, plan.intra_op_threads, links.get());
  if (!coordinator.ok()) {
    err << "error: " << coordinator.status().message() << " (pass --agent PATH to name the agent binary)\n";
    return kExitFailed;
  }
  err << "training " << DescribeJob(job) << (profile ? " on the devices of " + profile->name : "") << "\n";

  std::vector<ChildProcess> team_workers;
  // When the workers' links started following their traces (agents start their
  // own shapers as they start; the kernel's start here).
  auto links_started = std::chrono::steady_clock::now();
  auto failed = [&](const std::string& why) {
    coordinator->Signal(SIGTERM);
    for (auto& w : team_workers) w.Signal(SIGTERM);
    coordinator->Wait(kStopGrace);
    const std::string log = (run.run_dir() / coordinator_log).string();
    err << "error: " << why << "\nlast lines of " << coordinator_log << ":\n" << LogTail(log, 15)
        << "logs: " << run.run_dir().string() << "\n";
    folder->Keep();
    return kExitFailed;
  };

  auto http = run.Await(*coordinator, "http");
  if (!http.ok()) return failed(http.status().message());
  if (team) {
    auto listening = run.Await(*coordinator, "listening");
    if (!listening.ok()) return failed(listening.status().message());
    const std::string port = listening->substr(listening->rfind(':') + 1);
    if (links) links->StartShaping();
    links_started = std::chrono::steady_clock::now();
    for (int rank = 0; rank < workers; ++rank) {
      // Through its namespace's link, a worker reaches the coordinator at the hub.
      const std::string coordinator_address = links ? links->HubAddress(rank) + ":" + port : *listening;
      auto worker = run.Start({"--role=worker", "--job=" + job.name, "--rank=" + std::to_string(rank), world,
                               "--plan=" + plan_path, "--coordinator=" + coordinator_address, "--http=127.0.0.1:0"},
                              "worker-" + std::to_string(rank) + ".log", plan.intra_op_threads, links.get(), rank);
      if (!worker.ok()) return failed(worker.status().message());
      team_workers.push_back(std::move(*worker));
    }
  }

  std::ofstream progress_log;
  if (!options.progress_log.empty()) {
    progress_log.open(options.progress_log, std::ios::trunc);
    if (!progress_log) return failed("cannot write " + options.progress_log);
  }
  RealClock clock;
  ProgressDisplay display(err, options.terminal, clock);
  std::optional<JobProgress> result;
  std::vector<bool> reported(team_workers.size(), false);
  bool stopping = false;
  auto give_up_at = std::chrono::steady_clock::time_point::max();
  while (!result) {
    if (stopping && std::chrono::steady_clock::now() > give_up_at) {
      for (auto& w : team_workers) w.Signal(SIGKILL);
      coordinator->Signal(SIGKILL);
      err << "error: the agents did not stop within " << kInterruptGrace.count() << " s; killed them\n";
      return kExitInterrupted;
    }
    if (interrupted.load() && !stopping) {
      stopping = true;
      give_up_at = std::chrono::steady_clock::now() + kInterruptGrace;
      coordinator->Signal(SIGTERM);  // it stops the workers, saves the model, reports
      display.Finish();
      err << "interrupted: stopping " << job.name << " and saving its model...\n";
    }
    auto line = coordinator->ReadLine(kPollEvery);
    if (line && line->rfind("result ", 0) == 0) {
      auto decoded = DecodeJobProgress(line->substr(7));
      if (!decoded.ok()) return failed("unreadable result from the coordinator: " + decoded.status().message());
      result = *decoded;
      break;
    }
    if (!line && coordinator->stdout_closed()) break;
    for (size_t i = 0; i < team_workers.size(); ++i) {
      // A worker told to stop exits with 0; anything else is a loss the team absorbs.
      auto status = team_workers[i].Poll();
      if (status && *status != 0 && !reported[i]) {
        reported[i] = true;
        display.Finish();
        err << "warning: worker " << i << " exited (status " << *status << "; log worker-" << i
            << ".log); the team trains on without it\n";
      }
    }
    // The coordinator's HTTP endpoint lives in the hub's namespace under --links netns.
    auto progress = links ? links->InHubThread([&] { return agent::HttpGet(*http, "/progress"); })
                          : std::optional(agent::HttpGet(*http, "/progress"));
    if (progress && progress->ok() && (*progress)->status == 200) {
      if (auto p = DecodeJobProgress((*progress)->body); p.ok()) display.Show(*p);
      if (progress_log.is_open()) {
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - links_started).count();
        progress_log << "{\"t\": " << t << ", \"progress\": " << (*progress)->body.substr(0, (*progress)->body.find('\n'))
                     << "}\n" << std::flush;
      }
    }
  }
  display.Finish();
  int coordinator_exit = coordinator->Wait(kStopGrace);
  // Workers that heard Stop are gone already; one behind a dead link did not
  // hear it and would keep trying to reconnect: it is told to stop.
  const auto workers_done_by = std::chrono::steady_clock::now() + kWorkerStopGrace;
  for (auto& w : team_workers) {
    auto left = std::chrono::duration_cast<milliseconds>(workers_done_by - std::chrono::steady_clock::now());
    if (!w.ExitsWithin(std::max(left, milliseconds(0)))) w.Signal(SIGTERM);
  }
  for (auto& w : team_workers) w.Wait(kStopGrace);
  if (!result) return failed("the coordinator exited (status " + std::to_string(coordinator_exit) + ") without a result");
  if (result->state != JobState::kSucceeded) {
    return failed("training failed: " + result->stop_reason.substr(result->stop_reason.find(' ') + 1));
  }

  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  PrintSummary(job, plan, *result, wall_s, out);
  if (options.json) out << JsonLine(job, *result, wall_s) << "\n";
  if (options.keep_logs) {
    err << "logs: " << run.run_dir().string() << "\n";
    folder->Keep();
  } else {
    folder->Remove();
  }
  out << std::flush;
  // A Ctrl-C that came as the job was ending still means the run was interrupted.
  if (interrupted.load() && !stopping) err << "interrupted: " << job.name << " had already stopped; its model is saved\n";
  return interrupted.load() ? kExitInterrupted : kExitOk;
}

}  // namespace edgetrain::cli

