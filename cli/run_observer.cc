#include "cli/run_observer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "agent/storage/atomic_file.h"
#include "cli/log_tail.h"
#include "core/quoted_text.h"
#include "http/http_client.h"
#include "http/socket_address.h"

namespace edgetrain::cli {

namespace fs = std::filesystem;

namespace {

// Each second, as the dashboards' $__rate_interval expects (4 scrapes).
constexpr const char* kScrapeInterval = "1s";

// `text` as a YAML single-quoted scalar: a quote in it doubled. An output
// folder named o'bs made a config Prometheus could not parse (found in review).
std::string SingleQuoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return quoted + "'";
}

std::string Config(const fs::path& targets, const std::string& rules) {
  std::string config = std::string("# Written by edgetrain run --observe.\n") +
                       "global: {scrape_interval: " + kScrapeInterval + ", evaluation_interval: " + kScrapeInterval +
                       "}\n" +
                       "scrape_configs:\n"
                       "  - job_name: edgetrain-agents\n"
                       "    file_sd_configs:\n"
                       "      - files: [" + SingleQuoted(targets.string()) + "]\n";
  if (!rules.empty()) config += "rule_files: [" + SingleQuoted(rules) + "]\n";
  return config;
}

// What Prometheus logged as errors (a rules file that does not parse, a port
// in use), else the end of its log: its last lines are often only "one or more
// errors occurred" after the error that says which.
std::string ErrorsLogged(const fs::path& log) {
  std::ifstream in(log);
  std::string errors;
  for (std::string line; std::getline(in, line);) {
    if (line.find("level=error") != std::string::npos) errors += "  | " + line + "\n";
  }
  return errors.empty() ? LogTail(log.string(), 8) : errors;
}

// The rules file, as Prometheus's own promtool reads it (beside prometheus
// in Debian's package): one it refuses is the command line's mistake, said
// before anything starts, where Prometheus exiting on it said so in its log's
// words, exit 1, and left its folder behind (a user's trial). Without
// promtool, Prometheus itself judges it.
Status CheckRules(const std::string& prometheus, const std::string& rules) {
  const std::string promtool = (fs::path(prometheus).parent_path() / "promtool").string();
  std::error_code ec;
  if (!fs::exists(promtool, ec)) return Status::Ok();
  std::string log = (fs::temp_directory_path(ec) / "edgetrain-promtool-XXXXXX").string();
  const int fd = ::mkstemp(log.data());
  if (fd < 0) return Status::Ok();
  ::close(fd);
  StatusOr<ChildProcess> check = ChildProcess::Spawn({promtool, "check", "rules", rules}, log);
  int exit = 0;
  if (check.ok()) {
    while (check->ReadLine(std::chrono::seconds(10))) {
    }  // "Checking FILE": the file is named already
    exit = check->Wait(std::chrono::seconds(10));
  }
  // What it found wrong, on its stderr.
  std::string said;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    const size_t text = line.find_first_not_of(" \t");
    if (text != std::string::npos) said += "  | " + line.substr(text) + "\n";
  }
  fs::remove(log, ec);
  if (!check.ok() || exit == 0) return Status::Ok();
  if (!said.empty() && said.back() == '\n') said.pop_back();
  return InvalidArgumentError("--observe-rules " + rules + " is not a Prometheus rules file (promtool check rules):\n" +
                              said);
}

}  // namespace

StatusOr<RunObserver> RunObserver::Start(const std::string& prometheus, const fs::path& dir, int port,
                                         const std::string& rules, Clock& clock, Duration ready_timeout,
                                         const std::atomic<bool>* interrupted) {
  std::error_code ec;
  if (!fs::exists(prometheus, ec)) {
    return NotFoundError(prometheus + " is missing: --observe runs Debian's prometheus (apt-get install prometheus)");
  }
  const std::string rules_path = rules.empty() ? "" : fs::absolute(rules, ec).string();
  if (!rules.empty() && !fs::is_regular_file(rules_path, ec)) return InvalidArgumentError("no rules file at " + rules);
  if (!rules.empty()) EDGETRAIN_RETURN_IF_ERROR(CheckRules(prometheus, rules_path));
  if (port == 0) port = http::FreeLoopbackPort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  // Something that answers there already (an earlier run's Prometheus,
  // serving its series until Ctrl-C) would answer the readiness check below
  // for this one, which cannot bind the port: the run then said it was
  // observed while its series went nowhere (a new user's trial).
  if (auto answered = http::HttpGet(address, "/-/ready"); answered.ok()) {
    return UnavailableError(address + " already answers HTTP (an earlier run's --observe, still serving its series?)"
                            "\n--observe-port PORT takes another port (0: one the OS gives)");
  }
  // Made only once it will be used: a run refused above left an empty one.
  fs::create_directories(dir, ec);
  if (ec) return UnavailableError("cannot make " + dir.string() + ": " + ec.message());
  const fs::path targets = dir / "targets.json";
  std::ofstream(targets) << "[]\n";
  std::ofstream(dir / "prometheus.yml") << Config(targets, rules_path);
  const fs::path log = dir / "prometheus.log";
  fs::remove(log, ec);
  auto server = ChildProcess::Spawn({prometheus, "--config.file=" + (dir / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (dir / "data").string(),
                                     // Its data guarded against a second server (a later run
                                     // is kept out by the output folder's lock, cli/output_folder_lock.h).
                                     "--storage.tsdb.use-lockfile",
                                     "--web.listen-address=" + address},
                                    log.string());
  if (!server.ok()) return server.status();
  server->CloseStdout();
  const TimePoint deadline = clock.Now() + ready_timeout;
  while (true) {
    if (auto ended = server->Poll()) {
      std::string said = ErrorsLogged(log);
      if (!said.empty() && said.back() == '\n') said.pop_back();
      std::string hint;
      if (said.find("address already in use") != std::string::npos) {
        hint = "\n--observe-port PORT takes another port (0: one the OS gives)";
      }
      return UnavailableError("prometheus exited " + std::to_string(*ended) + " before it was ready (" +
                              log.string() + "):\n" + said + hint);
    }
    auto ready = http::HttpGet(address, "/-/ready");
    // Ready, and ours: one that lost a race for the port exits.
    if (ready.ok() && ready->status == 200 && !server->Poll()) break;
    if (interrupted && interrupted->load()) {
      // Killed after 2 s, not the start's whole wait: one deaf to SIGTERM
      // held the person who pressed Ctrl-C for the 30 s this path was
      // written to spare them (found in review). Not ready yet, it has
      // nothing of the run's to keep.
      server->Signal(SIGTERM);
      server->Wait(std::min<Duration>(ready_timeout, std::chrono::seconds(2)));
      return CancelledError("interrupted while prometheus started");
    }
    if (clock.Now() >= deadline) {
      server->Signal(SIGKILL);
      server->Wait(ready_timeout);
      return DeadlineExceededError("prometheus was not ready on " + address + " within " +
                                   std::to_string(static_cast<int>(ToSeconds(ready_timeout))) + " s");
    }
    clock.SleepFor(std::chrono::milliseconds(100));
  }
  return RunObserver(dir, address, std::move(*server));
}

RunObserver::~RunObserver() {
  if (server_) Stop(std::chrono::seconds(5));
}

Status RunObserver::Scrape(const std::vector<ScrapeTarget>& targets, const std::string& namespace_name) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& t : targets) {
    groups.push_back({{"targets", {t.address}}, {"labels", {{"namespace", namespace_name}, {"pod", t.pod}}}});
  }
  // Prometheus watches the file: written whole, then renamed over it.
  const fs::path file = dir_ / "targets.json";
  return agent::WriteFileAtomically(file.string(), groups.dump(2) + "\n");
}

StatusOr<bool> RunObserver::Holds(const std::string& metric) const {
  // count(last_over_time(METRIC[Ns])) over the seconds since it started and
  // two more (whole seconds, rounded down), its brackets escaped for the URL.
  const auto since = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - started_);
  const std::string window = std::to_string(std::max<int64_t>(1, since.count() + 2)) + "s";
  EDGETRAIN_ASSIGN_OR_RETURN(http::HttpReply reply,
                             http::HttpGet(address_, "/api/v1/query?query=count(last_over_time(" + metric + "%5B" +
                                                         window + "%5D))"));
  const nlohmann::json answer = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (reply.status != 200 || !answer.is_object() || !answer.contains("/data/result"_json_pointer)) {
    return UnavailableError("Prometheus answered " + std::to_string(reply.status) + " to a query");
  }
  return !answer["data"]["result"].empty();
}

std::optional<std::string> RunObserver::Ended() {
  if (!server_) return std::nullopt;
  const std::optional<int> status = server_->Poll();
  if (!status) return std::nullopt;
  return DescribeExitStatus(*status);
}

void RunObserver::Stop(Duration grace) {
  if (!server_) return;
  server_->Signal(SIGTERM);
  server_->Wait(grace);
  server_.reset();
  // The agents are gone: a server started again on this config would only
  // add their failed scrapes to the run's series.
  (void)agent::WriteFileAtomically((dir_ / "targets.json").string(), "[]\n");
}

std::string RunObserver::ServeAgainCommand() const {
  // On the run's own address: the port asked for, which this machine may
  // keep 9090 from (Debian's Prometheus holds it); the run's server is gone.
  return "prometheus " + ShellWord("--config.file=" + (dir_ / "prometheus.yml").string()) + " " +
         ShellWord("--storage.tsdb.path=" + (dir_ / "data").string()) + " --web.listen-address=" + address_;
}

}  // namespace edgetrain::cli
