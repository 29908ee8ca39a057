#include "cli/local_runner.h"

#include <unistd.h>

#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/telemetry/http_client.h"
#include "api/trainingjob.h"
#include "cli/child_process.h"
#include "cli/local_support.h"
#include "cli/progress_display.h"
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

StatusOr<std::string> ReadText(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return NotFoundError("cannot read " + path + ": no such file");
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Reads, validates and checks a manifest; prints what is wrong and returns the
// exit code, or kExitOk with `job` filled in.
int LoadJob(const std::string& path, std::ostream& err, api::TrainingJobManifest& job, LocalSupport& support) {
  auto text = ReadText(path);
  if (!text.ok()) {
    err << "error: " << text.status().message() << "\n";
    return kExitInvalid;
  }
  auto parsed = api::ParseTrainingJob(*text, path);
  if (!parsed.ok()) {
    err << "error: " << path << " is not a valid TrainingJob:\n";
    std::istringstream lines(parsed.status().message());
    for (std::string line; std::getline(lines, line);) err << "  " << line << "\n";
    return kExitInvalid;
  }
  job = std::move(*parsed);
  support = CheckLocalSupport(job);
  if (!support.unsupported.empty()) {
    err << "error: " << path << " asks for what edgetrain run cannot do yet:\n";
    for (const auto& e : support.unsupported) err << "  " << e.ToString() << "\n";
    return kExitInvalid;
  }
  return kExitOk;
}

std::string DescribeJob(const api::TrainingJobManifest& job) {
  const JobSpec& s = job.spec;
  std::string budget;
  if (s.budget.wall_clock) budget += FormatClock(*s.budget.wall_clock) + " wall clock";
  if (s.budget.epochs) budget += (budget.empty() ? "" : ", ") + std::to_string(*s.budget.epochs) + " epochs";
  if (s.budget.target_accuracy) {
    std::ostringstream t;
    t << "target accuracy " << *s.budget.target_accuracy;
    budget += (budget.empty() ? "" : ", ") + t.str();
  }
  return job.name + ": " + std::string(NameOf(s.model.kind)) + " on " + std::string(NameOf(s.data.dataset)) + ", " +
         std::to_string(s.parallelism.workers) + " worker(s), until " + budget;
}

std::string AgentBeside(const std::string& self) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) exe = self;
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

void PrintSummary(const api::TrainingJobManifest& job, const JobProgress& p, double wall_s, std::ostream& out) {
  char accuracy[16];
  std::snprintf(accuracy, sizeof accuracy, "%.4f", p.accuracy.value_or(0));
  out << job.name << ": test accuracy " << accuracy;
  if (job.spec.budget.target_accuracy) {
    out << " (target " << *job.spec.budget.target_accuracy << (p.reached_target ? " reached)" : " not reached)");
  }
  out << ", stopped by " << p.stop_reason << "\n";
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f s of training, %.1f s in all", p.elapsed_s, wall_s);
  out << "  " << WithThousands(p.iteration) << " iterations, " << WithThousands(p.samples) << " samples, "
      << WithThousands(static_cast<int64_t>(p.samples_per_second)) << " samples/s; " << rate << "\n";
  out << "  model: " << p.model_path << "\n";
}

std::string JsonLine(const api::TrainingJobManifest& job, const JobProgress& p, double wall_s) {
  nlohmann::json j = {
      {"job", job.name},
      {"accuracy", p.accuracy ? nlohmann::json(*p.accuracy) : nlohmann::json(nullptr)},
      {"loss", p.loss},
      {"iterations", p.iteration},
      {"samples", p.samples},
      {"epochs", p.epoch},
      {"wall_s", wall_s},
      {"train_s", p.elapsed_s},
      {"samples_per_s", p.samples_per_second},
      {"reached_target", p.reached_target},
      {"target_accuracy", job.spec.budget.target_accuracy ? nlohmann::json(*job.spec.budget.target_accuracy)
                                                          : nlohmann::json(nullptr)},
      {"stop_reason", p.stop_reason},
      {"workers", job.spec.parallelism.workers},
      {"model_path", p.model_path},
  };
  return j.dump();
}

}  // namespace

int ValidateManifest(const std::string& manifest_path, std::ostream& out, std::ostream& err) {
  api::TrainingJobManifest job;
  LocalSupport support;
  int code = LoadJob(manifest_path, err, job, support);
  if (code != kExitOk) return code;
  for (const auto& note : support.notes) err << "note: " << note << "\n";
  out << manifest_path << ": valid; " << DescribeJob(job) << "\n";
  return kExitOk;
}

int RunLocal(const RunOptions& options, std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupted) {
  const auto started = std::chrono::steady_clock::now();
  api::TrainingJobManifest job;
  LocalSupport support;
  if (int code = LoadJob(options.manifest_path, err, job, support); code != kExitOk) return code;
  for (const auto& note : support.notes) err << "note: " << note << "\n";
  if (job.object["spec"].value("suspend", false)) {
    out << job.name << " is suspended (spec.suspend: true); nothing to run\n";
    return kExitOk;
  }

  std::error_code ec;
  fs::path output = !options.output_dir.empty() ? fs::path(options.output_dir)
                    : job.spec.output.path     ? fs::path(*job.spec.output.path)
                                               : fs::path("edgetrain-output") / job.name;
  output = fs::absolute(output, ec);

  // The run folder holds the plan and the agents' logs; kept when a run fails.
  std::string pattern = (fs::temp_directory_path() / ("edgetrain-" + job.name + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) {
    err << "error: cannot create a run folder in " << fs::temp_directory_path() << "\n";
    return kExitFailed;
  }
  const fs::path run_dir = pattern;

  JobPlan plan;
  plan.job = job.name;
  plan.spec_json = job.SpecJson();
  plan.output_dir = output.string();
  // One LibTorch thread per agent unless asked: measured on the example MLP, two
  // threads on two cores ran at half the samples/s of one (13.8k vs 25.7k).
  plan.intra_op_threads = options.threads > 0 ? options.threads : 1;
  std::ofstream(run_dir / "plan.json") << EncodeJobPlan(plan);

  const std::string agent = options.agent_binary.empty() ? AgentBeside("edgetrain") : options.agent_binary;
  const std::string log = (run_dir / "agent-0.log").string();
  const std::string threads = std::to_string(plan.intra_op_threads);
  auto child = ChildProcess::Spawn(
      {agent, "--role=coordinator", "--job=" + job.name, "--rank=0", "--world=1",
       "--plan=" + (run_dir / "plan.json").string(), "--listen=127.0.0.1:0", "--http=127.0.0.1:0"},
      log,
      // BLAS threads on top of LibTorch's own would oversubscribe the cores.
      {{"OPENBLAS_NUM_THREADS", threads}, {"OMP_NUM_THREADS", threads}});
  if (!child.ok()) {
    err << "error: " << child.status().message() << " (pass --agent PATH to name the agent binary)\n";
    return kExitFailed;
  }
  err << "training " << DescribeJob(job) << "\n";

  auto failed = [&](const std::string& why) {
    child->Signal(SIGTERM);
    child->Wait(kStopGrace);
    err << "error: " << why << "\nlast lines of the agent's log:\n" << LogTail(log, 15) << "full log: " << log << "\n";
    return kExitFailed;
  };

  // Launch contract: the agent prints `http HOST:PORT` once it serves /progress.
  std::string http;
  auto deadline = std::chrono::steady_clock::now() + kStartupTimeout;
  while (http.empty()) {
    if (std::chrono::steady_clock::now() > deadline) return failed("the agent did not start within 60 s");
    auto line = child->ReadLine(kPollEvery);
    if (line && line->rfind("http ", 0) == 0) http = line->substr(5);
    if (!line && child->stdout_closed()) return failed("the agent exited before it started serving");
  }

  RealClock clock;
  ProgressDisplay display(err, options.terminal, clock);
  std::optional<JobProgress> result;
  bool stopping = false;
  while (!result) {
    if (interrupted.load() && !stopping) {
      stopping = true;
      child->Signal(SIGTERM);  // the agent finishes its step, saves the model, reports
      display.Finish();
      err << "interrupted: stopping " << job.name << " and saving its model...\n";
    }
    auto line = child->ReadLine(kPollEvery);
    if (line && line->rfind("result ", 0) == 0) {
      auto decoded = DecodeJobProgress(line->substr(7));
      if (!decoded.ok()) return failed("unreadable result from the agent: " + decoded.status().message());
      result = *decoded;
      break;
    }
    if (!line && child->stdout_closed()) break;
    if (auto progress = agent::HttpGet(http, "/progress"); progress.ok() && progress->status == 200) {
      if (auto p = DecodeJobProgress(progress->body); p.ok()) display.Show(*p);
    }
  }
  display.Finish();
  int agent_exit = child->Wait(kStopGrace);
  if (!result) return failed("the agent exited (status " + std::to_string(agent_exit) + ") without a result");
  if (result->state != JobState::kSucceeded) return failed("training failed: " + result->stop_reason.substr(result->stop_reason.find(' ') + 1));

  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  PrintSummary(job, *result, wall_s, out);
  if (options.json) out << JsonLine(job, *result, wall_s) << "\n";
  out << std::flush;
  fs::remove_all(run_dir, ec);
  return stopping ? kExitInterrupted : kExitOk;
}

}  // namespace edgetrain::cli
