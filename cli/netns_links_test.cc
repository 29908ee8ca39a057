// Kernel-shaped links in network namespaces: real namespaces, veths and tbf
// qdiscs, so these tests need root (CI runs as root; elsewhere they say why
// they skip).
#include "cli/netns_links.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/child_process.h"
#include "cli/child_process_testing.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

class NetnsLinksTest : public testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "network namespaces and tc need root";
    dir_ = fs::path(testing::TempDir()) / ("netns-" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  WorkerSlot Slot(int rank, const std::string& csv) {
    fs::path trace = dir_ / ("trace-" + std::to_string(rank) + ".csv");
    std::ofstream(trace) << csv;
    return {rank, "n" + std::to_string(rank), 1, LinkSpec{trace.string(), 0, 1}, {}};
  }
  fs::path dir_;
  RealClock clock_;
};

bool NamespaceExists(const std::string& name) { return fs::exists("/var/run/netns/" + name); }

TEST_F(NetnsLinksTest, ShapesTrafficBetweenAWorkerAndTheHubAndCleansUp) {
  std::vector<std::string> names;
  {
    auto links = NetnsLinks::Create({Slot(0, "seconds,mbps\n0,8\n")}, clock_);
    ASSERT_TRUE(links.ok()) << links.status().ToString();
    names = (*links)->Namespaces();
    ASSERT_EQ(names.size(), 2u);
    for (const auto& n : names) EXPECT_TRUE(NamespaceExists(n)) << n;
    EXPECT_EQ((*links)->UplinkMbps(0), 8);

    // 1 MB from the worker's namespace to a sink in the hub: about 1 s at 8 Mbit/s;
    // unshaped, a veth moves it in milliseconds.
    const std::string hub = (*links)->HubAddress(0);
    auto sink = ChildProcess::Spawn(
        (*links)->InHub({"/usr/bin/python3", "-c",
                         "import socket,sys\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                         "s.bind(('" + hub + "', 5077)); s.listen(1); print('ready', flush=True)\n"
                         "c,_=s.accept(); n=0\nwhile True:\n  b=c.recv(65536)\n  if not b: break\n  n+=len(b)\nprint(n, flush=True)"}),
        (dir_ / "sink.log").string());
    ASSERT_TRUE(sink.ok());
    ASSERT_EQ(sink->ReadLine(seconds(10)), "ready");
    const auto began = std::chrono::steady_clock::now();
    auto sender = ChildProcess::Spawn(
        (*links)->InWorker(0, {"/usr/bin/python3", "-c",
                               "import socket\ns=socket.create_connection(('" + hub + "', 5077))\n"
                               "s.sendall(b'x' * 1000000); s.close()"}),
        (dir_ / "sender.log").string());
    ASSERT_TRUE(sender.ok());
    EXPECT_EQ(sink->ReadLine(seconds(30)), "1000000");
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    EXPECT_GT(took, 0.7) << "the link was not shaped";
    EXPECT_LT(took, 5.0);
    EXPECT_EQ(sender->Wait(seconds(10)), 0);
    EXPECT_EQ(sink->Wait(seconds(10)), 0);
  }
  for (const auto& n : names) EXPECT_FALSE(NamespaceExists(n)) << n << " outlived its run";
}

TEST_F(NetnsLinksTest, RatesFollowTheTrace) {
  auto links = NetnsLinks::Create({Slot(0, "seconds,mbps\n0,20\n0.3,0\n0.6,5\n")}, clock_);
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  EXPECT_EQ((*links)->UplinkMbps(0), 20);
  (*links)->StartShaping();
  for (double want : {0.0, 5.0}) {
    auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while ((*links)->UplinkMbps(0) != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    EXPECT_EQ((*links)->UplinkMbps(0), want);
  }
}

// A Ctrl-C at the terminal reaches the run's whole process group, and a
// benchmark stops a run by a SIGINT to its group: the `tc` changing a rate
// at that moment was killed with it, and the run ended "the links stopped
// following their traces" (a benchmark's run counted as failed, exit 130).
// The run's own handler (here one that does nothing, and restarts no call it
// interrupts) is the one that acts on it.
std::atomic<int> interrupts{0};  // lock-free: safe in a handler
void CountInterrupt(int) { ++interrupts; }

TEST_F(NetnsLinksTest, ASigintToTheRunsProcessGroupLeavesItsLinksFollowingTheirTraces) {
  // In a child of this test, in a process group of its own: the signals reach
  // no other process (this test's, when it leads a shell's pipeline, would
  // take `tee` with it), and its handler goes with it.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (::setpgid(0, 0) != 0) std::_Exit(3);
        struct sigaction count {};
        count.sa_handler = CountInterrupt;
        if (::sigaction(SIGINT, &count, nullptr) != 0) std::_Exit(3);
        std::string csv = "seconds,mbps\n";
        for (int i = 0; i < 100; ++i) csv += std::to_string(i * 0.01) + "," + (i % 2 ? "5" : "20") + "\n";
        Status health = InternalError("the links were not made");
        {
          auto links = NetnsLinks::Create({Slot(0, csv)}, clock_);
          if (links.ok()) {
            (*links)->StartShaping();
            const auto until = std::chrono::steady_clock::now() + seconds(1);
            while (std::chrono::steady_clock::now() < until) {
              ::killpg(::getpgrp(), SIGINT);
              std::this_thread::sleep_for(milliseconds(1));
            }
            health = (*links)->health();
          } else {
            health = links.status();
          }
        }  // the namespaces go before the child does
        std::fprintf(stderr, "interrupts %d; links: %s\n", interrupts.load(), health.ToString().c_str());
        std::_Exit(health.ok() && interrupts.load() > 100 ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

// What the node emulator builds on: the host reaches an address added in a
// worker's namespace (a pod's) through the host link, and faults rescale, cut
// and restore a link at once.
TEST_F(NetnsLinksTest, TheNodeEmulatorsLayoutRoutesPodsToTheHostAndTakesFaults) {
  auto links = NetnsLinks::Create({Slot(0, "seconds,mbps\n0,20\n"), {1, "wired", 1, std::nullopt, {}}}, clock_,
                                  {.subnet = 211, .host_link = true});
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  EXPECT_EQ((*links)->HostAddress(), "10.211.254.1");
  EXPECT_EQ((*links)->WorkerAddress(1), "10.211.1.2");
  const std::string pod = "10.211.1.17";
  ASSERT_EQ(std::system(("ip -n " + (*links)->WorkerNamespace(1) + " addr add " + pod + "/32 dev lo").c_str()), 0);
  auto server = ChildProcess::Spawn(
      (*links)->InWorker(1, {"/usr/bin/python3", "-c",
                             "import socket\ns=socket.socket(); s.bind(('" + pod + "', 5078)); s.listen(1)\n"
                             "print('ready', flush=True); c,_=s.accept(); c.sendall(c.recv(100).upper())"}),
      (dir_ / "server.log").string());
  ASSERT_TRUE(server.ok());
  ASSERT_EQ(server->ReadLine(seconds(10)), "ready");
  auto client = ChildProcess::Spawn({"/usr/bin/python3", "-c",
                                     "import socket\ns=socket.create_connection(('" + pod + "', 5078), timeout=5)\n"
                                     "s.sendall(b'pod'); print(s.recv(100).decode())"},
                                    (dir_ / "client.log").string());
  ASSERT_TRUE(client.ok());
  EXPECT_EQ(client->ReadLine(seconds(10)), "POD") << "the host reached a pod's address";
  EXPECT_EQ(client->Wait(seconds(10)), 0);

  (*links)->StartShaping();
  ASSERT_TRUE((*links)->SetScale(0, 0.5).ok());
  EXPECT_EQ((*links)->UplinkMbps(0), 10);
  ASSERT_TRUE((*links)->SetScale(0, 0).ok());
  EXPECT_EQ((*links)->UplinkMbps(0), 0) << "cut";
  EXPECT_EQ((*links)->UplinkMbps(1), -1) << "wired: unshaped";
  ASSERT_TRUE((*links)->SetScale(1, 0).ok());
  EXPECT_EQ((*links)->UplinkMbps(1), 0) << "a wired link cut";
  ASSERT_TRUE((*links)->SetScale(1, 1).ok());
  EXPECT_EQ((*links)->UplinkMbps(1), -1) << "restored: unshaped again";
  EXPECT_FALSE((*links)->SetScale(1, 0.5).ok()) << "nothing to rescale";
  EXPECT_TRUE((*links)->health().ok()) << (*links)->health().ToString();

  auto again = NetnsLinks::Create({Slot(0, "seconds,mbps\n0,20\n")}, clock_, {.subnet = 211, .host_link = true});
  EXPECT_FALSE(again.ok()) << "a second emulator cannot route the same subnet";
}

TEST_F(NetnsLinksTest, NodeLinksHoldsTheLinksUntilItsInputCloses) {
  std::ofstream(dir_ / "trace.csv") << "seconds,mbps\n0,40\n";
  std::ofstream(dir_ / "nodes.yaml") << "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\n"
                                        "metadata: {name: site}\nspec:\n  nodes:\n"
                                        "    - {name: gw}\n    - {name: robot, link: {trace: trace.csv}}\n";
  // Its commands come through a FIFO, as from the emulator's pipe.
  const fs::path fifo = dir_ / "commands";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto links = ChildProcess::Spawn({"/bin/sh", "-c", "exec \"$0\" \"$@\" <" + fifo.string(),
                                    std::string(EDGETRAIN_BINARY_DIR) + "/bin/edgetrain", "node-links", "--nodes",
                                    (dir_ / "nodes.yaml").string(), "--node", "robot", "--node", "gw", "--subnet",
                                    "212", "--host-link"},
                                   (dir_ / "stderr.log").string());
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  std::ofstream commands(fifo);
  const std::string ns = "et" + std::to_string(links->pid()) + "-w0";
  EXPECT_EQ(links->ReadLine(seconds(30)), "node robot namespace=" + ns + " address=10.212.0.2 gateway=10.212.0.1 pods=10.212.0.0/24");
  EXPECT_EQ(links->ReadLine(seconds(5)), "node gw namespace=et" + std::to_string(links->pid()) +
                                             "-w1 address=10.212.1.2 gateway=10.212.1.1 pods=10.212.1.0/24");
  EXPECT_EQ(links->ReadLine(seconds(5)), "host address=10.212.254.1");
  EXPECT_EQ(links->ReadLine(seconds(5)), "ready");
  EXPECT_TRUE(NamespaceExists(ns));
  for (const auto& [command, answer] : std::vector<std::pair<std::string, std::string>>{
           {"show robot", "ok mbps=40"}, {"scale robot 0.25", "ok"}, {"show robot", "ok mbps=10"},
           {"show gw", "ok unshaped"}, {"scale gw 2", "error: an unshaped link can be cut (0) and restored (1), not rescaled"},
           {"scale nobody 1", "error: no node \"nobody\""}}) {
    commands << command << std::endl;
    EXPECT_EQ(links->ReadLine(seconds(10)), answer) << command;
  }
  commands.close();
  EXPECT_EQ(links->Wait(seconds(30)), 0);
  EXPECT_FALSE(NamespaceExists(ns)) << "removed when its input closed";
}

TEST_F(NetnsLinksTest, RemovesNamespacesLeftByAKilledRunner) {
  // pid 4194304 is above Linux's pid limit: no such runner can be alive.
  ASSERT_EQ(std::system("ip netns add et4194304-w0"), 0);
  ASSERT_TRUE(NamespaceExists("et4194304-w0"));
  EXPECT_EQ(NetnsLinks::RemoveStale(), std::vector<std::string>{"et4194304-w0"});
  EXPECT_FALSE(NamespaceExists("et4194304-w0"));
}

// A namespace of the name this run would give one, made by someone else: the
// run fails saying so, and leaves it (it deleted it on its way out: a user's
// trial).
TEST_F(NetnsLinksTest, ANamespaceThisRunDidNotMakeIsLeftAlone) {
  for (const std::string taken : {"-hub", "-w1"}) {
    const std::string name = "et" + std::to_string(::getpid()) + taken;
    ASSERT_EQ(std::system(("ip netns add " + name).c_str()), 0);
    auto links = NetnsLinks::Create({Slot(0, "seconds,mbps\n0,8\n"), Slot(1, "seconds,mbps\n0,8\n")}, clock_);
    ASSERT_FALSE(links.ok());
    EXPECT_NE(links.status().message().find("a network namespace of that name is there already, not made by this "
                                            "run; remove it (ip netns del " + name + ")"),
              std::string::npos)
        << links.status().message();
    EXPECT_TRUE(NamespaceExists(name)) << name << " was removed";
    EXPECT_FALSE(NamespaceExists("et" + std::to_string(::getpid()) + (taken == "-hub" ? "-w0" : "-hub")))
        << "what this run made is removed";
    ASSERT_EQ(std::system(("ip netns del " + name).c_str()), 0);
  }
}

TEST_F(NetnsLinksTest, NetnsRunForwardsEveryRanksOutputAndCreatesItsLogFolder) {
  std::ofstream(dir_ / "trace.csv") << "seconds,mbps\n0,60\n";
  std::ofstream(dir_ / "nodes.yaml") << "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\n"
                                        "metadata: {name: pair}\nspec:\n  nodes:\n"
                                        "    - {name: a, link: {trace: trace.csv}}\n    - {name: b}\n";
  const fs::path logs = dir_ / "new" / "logs";
  auto run = ChildProcess::Spawn({std::string(EDGETRAIN_BINARY_DIR) + "/bin/edgetrain", "netns-run", "--nodes",
                                  (dir_ / "nodes.yaml").string(), "--workers", "2", "--log-dir", logs.string(), "--",
                                  "/bin/sh", "-c", "echo hello from $RANK of $WORLD_SIZE; echo oops $RANK >&2"},
                                 (dir_ / "stderr.log").string());
  ASSERT_TRUE(run.ok());
  std::vector<std::string> lines;
  while (auto line = run->ReadLine(seconds(30))) lines.push_back(*line);
  ASSERT_EQ(run->Wait(seconds(30)), 0);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"hello from 0 of 2", "rank 1: hello from 1 of 2"}));
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream log(logs / ("rank-" + std::to_string(rank) + ".log"));
    std::string text;
    std::getline(log, text);
    EXPECT_EQ(text, "oops " + std::to_string(rank));
  }
  // Ranks that fail: the highest status, and each named with its own.
  auto failing = ChildProcess::Spawn({std::string(EDGETRAIN_BINARY_DIR) + "/bin/edgetrain", "netns-run", "--nodes",
                                      (dir_ / "nodes.yaml").string(), "--workers", "2", "--log-dir", logs.string(),
                                      "--", "/bin/sh", "-c", "exit $((RANK + 5))"},
                                     (dir_ / "failing.log").string());
  ASSERT_TRUE(failing.ok());
  while (failing->ReadLine(seconds(30))) {
  }
  EXPECT_EQ(failing->Wait(seconds(30)), 6);
  std::ifstream said(dir_ / "failing.log");
  const std::string text((std::istreambuf_iterator<char>(said)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("rank 0 ended: exit 5"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1 ended: exit 6"), std::string::npos) << text;
}

// Interrupted, the ranks are told to stop, and killed with what they started
// once --stop-grace has passed: a rank that ignored SIGTERM held netns-run for
// ever, deaf to more Ctrl-Cs (found in review). And each rank is told when its
// link's trace began (bench/ddp_worker.py splits its stall by outages on it).
TEST_F(NetnsLinksTest, NetnsRunKillsRanksThatOutstayTheirGraceAndSaysWhenTheTracesBegan) {
  std::ofstream(dir_ / "trace.csv") << "seconds,mbps\n0,60\n";
  std::ofstream(dir_ / "nodes.yaml") << "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\n"
                                        "metadata: {name: pair}\nspec:\n  nodes:\n"
                                        "    - {name: a, link: {trace: trace.csv}}\n    - {name: b}\n";
  auto run = ChildProcess::Spawn({std::string(EDGETRAIN_BINARY_DIR) + "/bin/edgetrain", "netns-run", "--nodes",
                                  (dir_ / "nodes.yaml").string(), "--workers", "2", "--log-dir", dir_.string(),
                                  "--stop-grace", "1s", "--", "/bin/sh", "-c",
                                  "echo started $EDGETRAIN_LINKS_STARTED; trap '' TERM; sleep 300 & wait"},
                                 (dir_ / "stderr.log").string());
  ASSERT_TRUE(run.ok());
  const auto line = run->ReadLine(seconds(30));
  ASSERT_TRUE(line.has_value());
  EXPECT_TRUE(std::regex_match(*line, std::regex(R"((rank 1: )?started [0-9]+\.[0-9]{6})"))) << *line;
  const auto interrupted = std::chrono::steady_clock::now();
  ::kill(run->pid(), SIGINT);
  while (run->ReadLine(seconds(30))) {
  }
  EXPECT_EQ(run->Wait(seconds(30)), 130);
  EXPECT_LT(std::chrono::steady_clock::now() - interrupted, seconds(10));
  // Killed with it (SIGKILL to its process group), though the kernel may take a moment to end it.
  for (int tries = 0; tries < 100 && ProcessWith("sleep 300"); ++tries) std::this_thread::sleep_for(milliseconds(50));
  // Said whole where it fails (it did once more under the full suite's load,
  // after the kill at the end: which process, in which group and state).
  const std::optional<pid_t> left = ProcessWith("sleep 300");
  EXPECT_FALSE(left.has_value()) << "what a rank started goes with it: "
                                 << (left ? ReadFile("/proc/" + std::to_string(*left) + "/stat") : "")
                                 << "; netns-run's pid " << run->pid() << ", its stderr: "
                                 << ReadFile(dir_ / "stderr.log");
}

TEST_F(NetnsLinksTest, ATeamTrainsThroughKernelShapedLinks) {
  std::ofstream(dir_ / "trace.csv") << "seconds,mbps\n0,60\n";
  std::ofstream(dir_ / "nodes.yaml") << "apiVersion: edgetrain.dev/v1alpha1\nkind: ClusterProfile\n"
                                        "metadata: {name: wired}\nspec:\n  nodes:\n"
                                        "    - {name: a, link: {trace: trace.csv}}\n"
                                        "    - {name: b, link: {trace: trace.csv, scale: 0.5}}\n";
  std::ofstream(dir_ / "job.yaml") << "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: netns-team}\n"
                                      "spec:\n  model: {name: mlp, hidden: [32]}\n  data: {dataset: digits, batchSize: 32}\n"
                                      "  parallelism: {workers: 2}\n  sync: {policy: rog, stalenessBound: 4}\n"
                                      "  optimizer: {name: adam, learningRate: 0.003}\n  evaluation: {everyIterations: 20}\n"
                                      "  budget: {wallClock: 2m, epochs: 6}\n";
  auto run = ChildProcess::Spawn({std::string(EDGETRAIN_BINARY_DIR) + "/bin/edgetrain", "run", (dir_ / "job.yaml").string(),
                                  "--nodes", (dir_ / "nodes.yaml").string(), "--links", "netns", "--json", "--output",
                                  (dir_ / "out").string()},
                                 (dir_ / "stderr.log").string());
  ASSERT_TRUE(run.ok());
  std::vector<std::string> lines;
  while (auto line = run->ReadLine(seconds(120))) lines.push_back(*line);
  std::ifstream err(dir_ / "stderr.log");
  std::stringstream err_text;
  err_text << err.rdbuf();
  ASSERT_EQ(run->Wait(seconds(30)), 0) << err_text.str();
  auto result = nlohmann::json::parse(lines.back());
  EXPECT_EQ(result["stop_reason"], "epochs");
  EXPECT_GT(result["accuracy"].get<double>(), 0.75) << "it learned (chance is 0.1)";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/var/run/netns", ec)) {
    EXPECT_NE(entry.path().filename().string().rfind("et" + std::to_string(run->pid()), 0), 0u)
        << entry.path() << " outlived its run";
  }
}

}  // namespace
}  // namespace edgetrain::cli
