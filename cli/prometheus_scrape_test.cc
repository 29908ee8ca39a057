// A real Prometheus server (Debian's) scrapes a running team — coordinator and
// workers — and every edgetrain metric must be there, and the ones that count
// work must move; each series carries exactly the labels it should.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <cctype>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/http_client.h"
#include "cli/child_process.h"
#include "cli/child_process_testing.h"
#include "cli/run_observer.h"
#include "core/clock.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kBin = std::string(EDGETRAIN_BINARY_DIR) + "/bin/";

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

using Labels = std::map<std::string, std::string>;

// The series an instant query returns, each by its full label set, with its
// value (of a range selector: its last in the range).
std::optional<std::map<Labels, double>> Series(const std::string& prometheus, const std::string& query) {
  auto reply = http::HttpGet(prometheus, "/api/v1/query?query=" + UrlEncode(query));
  if (!reply.ok() || reply->status != 200) return std::nullopt;
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (j.is_discarded() || j.value("status", "") != "success") return std::nullopt;
  std::map<Labels, double> out;
  for (const auto& r : j["data"]["result"]) {
    const auto& value = r.contains("values") ? r["values"].back() : r["value"];
    out[r["metric"].get<Labels>()] = std::stod(value[1].get<std::string>());
  }
  return out;
}

// Sum of a metric's samples, as Prometheus last scraped them; nullopt if absent.
std::optional<double> Query(const std::string& prometheus, const std::string& metric) {
  auto series = Series(prometheus, "sum(" + metric + ")");
  if (!series || series->empty()) return std::nullopt;
  return series->begin()->second;
}

// The series Prometheus stored under `name` in the last minute. A range, not an
// instant query: on a busy machine a scrape may time out (the timeout is the 1 s
// interval), and the instant query would then miss that target's series.
std::optional<std::map<Labels, double>> Stored(const std::string& prometheus, const std::string& name) {
  return Series(prometheus, name + "[1m]");
}

std::set<Labels> LabelSets(const std::map<Labels, double>& series) {
  std::set<Labels> out;
  for (const auto& [labels, value] : series) out.insert(labels);
  return out;
}

TEST(PrometheusScrapeTest, EveryMetricIsScrapedAndTheWorkMoves) {
  ASSERT_TRUE(fs::exists("/usr/bin/prometheus")) << "scripts/deps installs Debian's prometheus package";
  fs::path dir = fs::path(testing::TempDir()) / "prometheus-scrape";
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json plan = {
      {"job", "scraped"}, {"generation", 1}, {"outputDir", (dir / "out").string()}, {"intraOpThreads", 1},
      {"workers", {{{"rank", 0}, {"node", "a"}, {"slowdown", 1}}, {{"rank", 1}, {"node", "b"}, {"slowdown", 1}}}},
      {"spec", nlohmann::json::parse(R"({
        "model": {"name": "mlp", "hidden": [128, 64]},
        "data": {"dataset": "fashion-mnist", "batchSize": 64, "partition": {"kind": "iid"}},
        "parallelism": {"mode": "dataParallel", "workers": 2},
        "sync": {"granularity": "row", "policy": "rog", "stalenessBound": 4, "compression": "none"},
        "optimizer": {"name": "adam", "learningRate": 0.001, "weightDecay": 0},
        "budget": {"wallClock": "3m", "energyJoules": 0},
        "evaluation": {"everyIterations": 30},
        "faultTolerance": {"replicateEvery": 100, "replay": true, "checkpointEvery": 50, "maxRecoveries": 5,
                           "nodeLossGrace": "30s"},
        "seed": 2})")}};
  std::ofstream(dir / "plan.json") << plan.dump();

  auto coordinator = ChildProcess::Spawn({kBin + "edgetrain-agent", "--role=coordinator", "--job=scraped", "--rank=0",
                                          "--world=2", "--plan=" + (dir / "plan.json").string(),
                                          "--listen=127.0.0.1:0", "--http=127.0.0.1:0", TeamTlsFlag(dir, "scraped")},
                                         (dir / "coordinator.log").string());
  ASSERT_TRUE(coordinator.ok());
  auto coordinator_http = LineStartingWith(*coordinator, "http ");
  auto listening = LineStartingWith(*coordinator, "listening ");
  ASSERT_TRUE(coordinator_http && listening);
  std::vector<ChildProcess> workers;
  std::vector<std::string> targets = {*coordinator_http};
  for (int rank = 0; rank < 2; ++rank) {
    auto w = ChildProcess::Spawn({kBin + "edgetrain-agent", "--role=worker", "--job=scraped", "--rank=" + std::to_string(rank),
                                  "--world=2", "--plan=" + (dir / "plan.json").string(), "--coordinator=" + *listening,
                                  "--http=127.0.0.1:0", TeamTlsFlag(dir, "scraped")},
                                 (dir / ("worker-" + std::to_string(rank) + ".log")).string());
    ASSERT_TRUE(w.ok());
    auto http = LineStartingWith(*w, "http ");
    ASSERT_TRUE(http.has_value());
    targets.push_back(*http);
    workers.push_back(std::move(*w));
  }

  const std::string prometheus = "127.0.0.1:" + std::to_string(FreePort());
  {
    std::ofstream config(dir / "prometheus.yml");
    config << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
              "scrape_configs:\n  - job_name: edgetrain\n    static_configs:\n      - targets: [";
    for (size_t i = 0; i < targets.size(); ++i) config << (i ? ", " : "") << "'" << targets[i] << "'";
    config << "]\n";
  }
  auto server = ChildProcess::Spawn({"/usr/bin/prometheus", "--config.file=" + (dir / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (dir / "tsdb").string(),
                                     "--web.listen-address=" + prometheus},
                                    (dir / "prometheus.log").string());
  ASSERT_TRUE(server.ok());

  const std::vector<std::string> moving = {
      "edgetrain_sent_bytes_total", "edgetrain_sent_rows_total", "edgetrain_received_bytes_total",
      "edgetrain_received_rows_total", "edgetrain_row_staleness_iterations_count", "edgetrain_iteration_seconds_count",
      "edgetrain_energy_joules_total", "edgetrain_samples_total", "edgetrain_job_samples_total",
      "edgetrain_job_energy_joules_total", "edgetrain_coordinator_received_bytes_total",
      "edgetrain_coordinator_sent_bytes_total", "edgetrain_coordinator_received_rows_total",
      "edgetrain_coordinator_sent_rows_total", "edgetrain_job_checkpoints_total"};
  const std::vector<std::string> present = {
      "edgetrain_link_bandwidth_bytes_per_second", "edgetrain_stall_seconds_total", "edgetrain_loss",
      "edgetrain_rejoins_total", "edgetrain_job_accuracy", "edgetrain_job_loss", "edgetrain_job_active_workers",
      "edgetrain_job_rejoins_total", "edgetrain_job_workers", "edgetrain_job_energy_budget_joules",
      "edgetrain_row_staleness_iterations_bucket", "edgetrain_iteration_seconds_bucket"};

  // First scrape of everything, then a later one: counters must have grown.
  std::map<std::string, double> first;
  auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    first.clear();
    for (const auto& m : moving)
      if (auto v = Query(prometheus, m)) first[m] = *v;
    bool all = first.size() == moving.size();
    for (const auto& m : present) all = all && Query(prometheus, m).has_value();
    if (all && first["edgetrain_job_checkpoints_total"] > 0) break;
    std::this_thread::sleep_for(milliseconds(250));
  }
  for (const auto& m : moving) EXPECT_TRUE(first.count(m)) << m << " was never scraped";
  for (const auto& m : present) EXPECT_TRUE(Query(prometheus, m).has_value()) << m << " was never scraped";
  EXPECT_EQ(Query(prometheus, "edgetrain_job_active_workers"), 2.0);
  auto accuracy = Query(prometheus, "edgetrain_job_accuracy");
  ASSERT_TRUE(accuracy.has_value());
  EXPECT_GT(*accuracy, 0.3) << "the job's accuracy gauge holds an evaluation";

  // Every series by its full label set, as Prometheus stored it: the scrape's
  // own job and instance, and ours, trainingjob and worker. An agent label
  // named `job` would have been renamed exported_job by the scrape.
  auto labels = [](const std::string& name, const std::string& instance, Labels ours) {
    ours["__name__"] = name;
    ours["job"] = "edgetrain";
    ours["instance"] = instance;
    return ours;
  };
  const std::string& coordinator_target = targets[0];
  std::map<std::string, std::set<Labels>> expected;
  for (std::string name : {"edgetrain_samples_total", "edgetrain_sent_bytes_total", "edgetrain_loss",
                           "edgetrain_stall_seconds_total", "edgetrain_iteration_seconds_count"}) {
    for (int rank = 0; rank < 2; ++rank) {
      expected[name].insert(
          labels(name, targets[1 + rank], {{"trainingjob", "scraped"}, {"worker", std::to_string(rank)}}));
    }
  }
  for (int rank = 0; rank < 2; ++rank) {
    const Labels worker = {{"trainingjob", "scraped"}, {"worker", std::to_string(rank)}};
    for (const char* state : {"compute", "communicate", "idle"}) {
      Labels l = worker;
      l["state"] = state;
      expected["edgetrain_energy_joules_total"].insert(labels("edgetrain_energy_joules_total", targets[1 + rank], l));
    }
    Labels up = worker, down = worker;
    up["direction"] = "up";
    down["direction"] = "down";
    const std::string bandwidth = "edgetrain_link_bandwidth_bytes_per_second";
    expected[bandwidth].insert(labels(bandwidth, targets[1 + rank], up));
    expected[bandwidth].insert(labels(bandwidth, coordinator_target, down));
  }
  for (std::string name : {"edgetrain_job_samples_total", "edgetrain_job_accuracy", "edgetrain_job_energy_joules_total",
                           "edgetrain_job_workers", "edgetrain_job_energy_budget_joules"}) {
    expected[name] = {labels(name, coordinator_target, {{"trainingjob", "scraped"}})};
  }
  // Each target's first scrape lands on its own schedule (and on a busy machine a
  // scrape may time out): wait until every one has been stored.
  std::map<std::string, std::set<Labels>> stored;
  deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& [name, want] : expected) {
      auto got = Stored(prometheus, name);
      stored[name] = got ? LabelSets(*got) : std::set<Labels>{};
    }
    if (stored == expected) break;
    std::this_thread::sleep_for(milliseconds(250));
  }
  for (const auto& [name, want] : expected) EXPECT_EQ(stored[name], want) << name;
  EXPECT_EQ(Query(prometheus, "edgetrain_job_workers"), 2.0);
  EXPECT_EQ(Query(prometheus, "edgetrain_job_energy_budget_joules"), 0.0) << "spec.budget.energyJoules: none";
  auto renamed = Series(prometheus, "{exported_job!=\"\"}[1m]");
  ASSERT_TRUE(renamed.has_value());
  EXPECT_TRUE(renamed->empty()) << "no series of ours clashes with the scrape's job label";

  std::map<std::string, double> later;
  deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all_moved = true;
    for (const auto& m : moving) {
      auto v = Query(prometheus, m);
      later[m] = v.value_or(0);
      all_moved = all_moved && v && *v > first[m];
    }
    if (all_moved) break;
    std::this_thread::sleep_for(milliseconds(250));
  }
  for (const auto& m : moving) EXPECT_GT(later[m], first[m]) << m << " did not move between scrapes";

  server->Signal(SIGTERM);
  coordinator->Signal(SIGTERM);
  EXPECT_EQ(coordinator->Wait(seconds(30)), 0);
  for (auto& w : workers) w.Wait(seconds(30));
  server->Wait(seconds(10));
}

// edgetrain run --observe: the runner's own Prometheus scrapes the coordinator
// and every worker with the labels a cluster's pod relabelling gives (namespace,
// pod), which the dashboards query; after the run it serves the run's series
// until the person interrupts, and the run still exits 0.
TEST(PrometheusScrapeTest, EdgetrainRunObserveScrapesEveryAgentAsTheDashboardsQueryThem) {
  fs::path dir = fs::path(testing::TempDir()) / "prometheus-observe";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "job.yaml") << R"(apiVersion: edgetrain.dev/v1alpha1
kind: TrainingJob
metadata: {name: observed}
spec:
  model: {name: mlp, hidden: [32]}
  data: {dataset: digits, batchSize: 32}
  parallelism: {workers: 2}
  optimizer: {name: adam, learningRate: 0.003}
  evaluation: {everyIterations: 20}
  budget: {wallClock: 6s}
)";
  auto run = ChildProcess::Spawn({kBin + "edgetrain", "run", (dir / "job.yaml").string(), "--output",
                                  (dir / "out").string(), "--observe", "--observe-port", "0", "--observe-keep", "2m"},
                                 (dir / "stderr.log").string(), {{"TMPDIR", dir.string()}});
  ASSERT_TRUE(run.ok());
  // The summary and the picture come before Prometheus is left serving.
  ASSERT_TRUE(LineStartingWith(*run, "curves: ").has_value()) << ReadFile(dir / "stderr.log");
  std::string said;
  for (int i = 0; i < 100 && said.find("serves the run's series; for 2m") == std::string::npos; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    said = ReadFile(dir / "stderr.log");
  }
  const std::regex announced("observe: Prometheus at http://([0-9.:]+) scrapes every agent each second");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(said, m, announced)) << said;
  const std::string prometheus = m[1].str();

  auto samples = Stored(prometheus, R"(edgetrain_samples_total{namespace="default",trainingjob="observed"})");
  ASSERT_TRUE(samples.has_value());
  std::set<std::string> pods;
  for (const auto& [labels, value] : *samples) {
    EXPECT_EQ(labels.at("job"), "edgetrain-agents");
    EXPECT_EQ(labels.at("pod"), "observed-worker-" + labels.at("worker"));
    EXPECT_GT(value, 0) << labels.at("pod") << " trained";
    pods.insert(labels.at("pod"));
  }
  EXPECT_EQ(pods, (std::set<std::string>{"observed-worker-0", "observed-worker-1"}));
  auto job = Stored(prometheus, R"(edgetrain_job_samples_total{namespace="default",pod="observed-coordinator"})");
  ASSERT_TRUE(job.has_value());
  ASSERT_EQ(job->size(), 1u) << "the coordinator, as the training dashboard's job panels read it";
  EXPECT_GT(job->begin()->second, 0);

  // A second observed run on the port this one's Prometheus still serves is
  // refused before it trains: the serving Prometheus answered its readiness
  // check, and its series went nowhere (a new user's trial).
  const std::string port = prometheus.substr(prometheus.rfind(':') + 1);
  auto second = ChildProcess::Spawn({kBin + "edgetrain", "run", (dir / "job.yaml").string(), "--output",
                                     (dir / "second").string(), "--observe", "--observe-port", port},
                                    (dir / "second.log").string(), {{"TMPDIR", dir.string()}});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->Wait(seconds(60)), 1);
  EXPECT_NE(ReadFile(dir / "second.log").find(prometheus + " already answers HTTP"), std::string::npos)
      << ReadFile(dir / "second.log");
  EXPECT_FALSE(fs::exists(dir / "second" / "prometheus")) << "no empty folder left by the refused run";
  EXPECT_EQ(said.find("ended before Prometheus scraped it"), std::string::npos) << "it was scraped";
  // On another port but into the same output folder, whose data this one's
  // Prometheus still serves: refused too, the folder being this run's until
  // it ends (cli/output_folder_lock.h). Its targets had become the serving
  // one's, and the two runs' series mixed (a trial's).
  auto third = ChildProcess::Spawn({kBin + "edgetrain", "run", (dir / "job.yaml").string(), "--output",
                                    (dir / "out").string(), "--fresh", "--observe", "--observe-port", "0"},
                                   (dir / "third.log").string(), {{"TMPDIR", dir.string()}});
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->Wait(seconds(60)), 2);
  EXPECT_NE(ReadFile(dir / "third.log").find("another edgetrain run is using " + (dir / "out").string() +
                                             " (training into it, or serving its series with --observe)"),
            std::string::npos)
      << ReadFile(dir / "third.log");

  run->Signal(SIGINT);
  EXPECT_EQ(run->Wait(seconds(30)), 0) << "the run had ended well before the person stopped Prometheus";
  EXPECT_FALSE(http::HttpGet(prometheus, "/-/ready").ok()) << "Prometheus stops with the runner";
  EXPECT_TRUE(fs::exists(dir / "out" / "prometheus" / "data")) << "the run's series stay for a later look";
  EXPECT_NE(ReadFile(dir / "stderr.log").find("observe: the run's series stay in " + (dir / "out" / "prometheus" / "data").string()),
            std::string::npos)
      << "and it says so";
}

// A run over within Prometheus's first scrapes leaves no series, which the
// runner then says, where it said it served them (a new user's trial: a
// digits team of 2 s). Whether any was scraped is asked of Prometheus itself:
// here one that scraped nothing (the observed run above asserts the other way).
// (In a folder whose name holds a quote: the config that named it had been
// one Prometheus could not parse.)
TEST(PrometheusScrapeTest, APrometheusThatScrapedNothingHoldsNoSeriesOfTheRun) {
  fs::path dir = fs::path(testing::TempDir()) / "prometheus-o'unscraped";
  fs::remove_all(dir);
  RealClock clock;
  auto observer = RunObserver::Start("/usr/bin/prometheus", dir, 0, "", clock, seconds(60));
  ASSERT_TRUE(observer.ok()) << observer.status().ToString();
  StatusOr<bool> held = observer->Holds("edgetrain_job_samples_total");
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_FALSE(*held);
  observer->Stop(seconds(10));
}

// A run's Prometheus killed under it is said to have ended, as the run is
// told before it says it serves the series (it said so, and waited for a
// Ctrl-C with nothing listening: a new user's trial); and the command the run
// gives to serve its data again serves it, on loopback, with nothing to scrape.
TEST(PrometheusScrapeTest, APrometheusKilledIsSaidToHaveEndedAndItsDataIsServedAgainAsTheRunSays) {
  fs::path dir = fs::path(testing::TempDir()) / "prometheus-killed";
  fs::remove_all(dir);
  RealClock clock;
  auto observer = RunObserver::Start("/usr/bin/prometheus", dir, 0, "", clock, seconds(60));
  ASSERT_TRUE(observer.ok()) << observer.status().ToString();
  EXPECT_EQ(observer->Ended(), std::nullopt);
  const std::optional<pid_t> server = ProcessWith("--storage.tsdb.path=" + (dir / "data").string());
  ASSERT_TRUE(server.has_value());
  ASSERT_EQ(::kill(*server, SIGKILL), 0);
  std::optional<std::string> ended;
  for (int i = 0; i < 100 && !(ended = observer->Ended()); ++i) std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(ended, "killed by SIGKILL");
  observer->Stop(seconds(10));
  EXPECT_EQ(ReadFile(dir / "targets.json"), "[]\n") << "the agents gone, nothing to scrape";

  // As a person runs it, on another port than 9090, which this machine may use.
  std::istringstream words(observer->ServeAgainCommand());
  std::vector<std::string> argv;
  for (std::string w; words >> w;) argv.push_back(w);
  ASSERT_EQ(argv.front(), "prometheus");
  argv.front() = "/usr/bin/prometheus";
  ASSERT_EQ(argv.back(), "--web.listen-address=" + observer->url().substr(7)) << "the run's own address";
  const std::string address = "127.0.0.1:" + std::to_string(http::FreeLoopbackPort());
  argv.back() = "--web.listen-address=" + address;
  auto again = ChildProcess::Spawn(argv, (dir / "again.log").string());
  ASSERT_TRUE(again.ok());
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    auto reply = http::HttpGet(address, "/-/ready");
    ready = reply.ok() && reply->status == 200;
    if (!ready) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(ready) << ReadFile(dir / "again.log");
  EXPECT_EQ(ReadFile(dir / "again.log").find("/etc/prometheus"), std::string::npos) << "the run's config, not Debian's";
  again->Signal(SIGTERM);
  again->Wait(seconds(10));
}

// A rules file Prometheus would refuse is refused before it starts, in
// promtool's words, its folder not made (it exited 1 there, its log's words
// said and the folder left: a user's trial); the alerts the dashboards ship
// are read.
TEST(PrometheusScrapeTest, ARulesFilePrometheusWouldRefuseIsRefusedBeforeItStarts) {
  fs::path dir = fs::path(testing::TempDir()) / "prometheus-bad-rules";
  fs::remove_all(dir);
  const fs::path rules = fs::path(testing::TempDir()) / "bad.rules.yaml";
  std::ofstream(rules) << "not: rules\n";
  RealClock clock;
  auto refused = RunObserver::Start("/usr/bin/prometheus", dir, 0, rules.string(), clock, seconds(60));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("is not a Prometheus rules file (promtool check rules)"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("field not not found"), std::string::npos) << refused.status().message();
  EXPECT_FALSE(fs::exists(dir));
  auto shipped = RunObserver::Start("/usr/bin/prometheus", dir, 0, EDGETRAIN_SOURCE_DIR "/dashboards/alerts.yaml",
                                    clock, seconds(60));
  ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
  shipped->Stop(seconds(10));
}

// A Ctrl-C while Prometheus starts ends the wait at once, the server
// stopped: the run waited out its 30 s for a ready it no longer wanted.
TEST(PrometheusScrapeTest, AnInterruptWhileItStartsStopsItAtOnce) {
  fs::path dir = fs::path(testing::TempDir()) / "prometheus-interrupted";
  fs::remove_all(dir);
  RealClock clock;
  const std::atomic<bool> interrupted{true};
  const TimePoint began = clock.Now();
  auto observer = RunObserver::Start("/usr/bin/prometheus", dir, 0, "", clock, seconds(60), &interrupted);
  ASSERT_FALSE(observer.ok());
  EXPECT_EQ(observer.status().code(), StatusCode::kCancelled) << observer.status().ToString();
  EXPECT_LT(clock.Now() - began, seconds(20));
  EXPECT_FALSE(ProcessWith("--storage.tsdb.path=" + (dir / "data").string()).has_value()) << "stopped";
}

}  // namespace
}  // namespace edgetrain::cli
