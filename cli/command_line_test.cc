#include "cli/command_line.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/job_loading.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

struct Parsed {
  std::variant<CommandLine, int> result;
  std::string out, err;
  const CommandLine& line() const { return std::get<CommandLine>(result); }
  int exit() const { return std::holds_alternative<int>(result) ? std::get<int>(result) : -1; }
};

Parsed Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "edgetrain");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Parsed p{ParseCommandLine(static_cast<int>(argv.size()), argv.data(), out, err), "", ""};
  p.out = out.str();
  p.err = err.str();
  return p;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(CommandLineTest, ReadsEveryOptionOfRun) {
  Parsed p = Parse({"run", "job.yaml", "--nodes", "n.yaml", "--links", "netns", "--json", "--output", "out",
                    "--threads", "2", "--http-port", "9100", "--keep-logs", "--progress-log", "p.jsonl", "--agent",
                    "/bin/true", "--fresh", "--stages", "even", "--no-curves", "--observe", "--observe-port", "0",
                    "--observe-keep", "90s", "--observe-rules", "alerts.yaml", "--insecure", "--progress-every",
                    "10ms", "--link-command-timeout", "3s", "--interrupt-grace", "2m", "--stop-grace", "1m",
                    "--start-timeout", "5m"});
  ASSERT_EQ(p.exit(), -1) << p.err;
  const RunOptions& run = p.line().run;
  EXPECT_EQ(p.line().command, Command::kRun);
  EXPECT_EQ(run.manifest_path, "job.yaml");
  EXPECT_EQ(run.nodes_path, "n.yaml");
  EXPECT_EQ(run.links, "netns");
  EXPECT_TRUE(run.json);
  EXPECT_EQ(run.output_dir, "out");
  EXPECT_EQ(run.threads, 2);
  EXPECT_EQ(run.http_port, 9100);
  EXPECT_TRUE(run.keep_logs);
  EXPECT_EQ(run.progress_log, "p.jsonl");
  EXPECT_EQ(run.agent_binary, "/bin/true");
  EXPECT_TRUE(run.fresh);
  EXPECT_EQ(run.stages, "even");
  EXPECT_FALSE(run.curves);
  EXPECT_TRUE(run.observe);
  EXPECT_EQ(run.observe_port, 0);
  EXPECT_EQ(run.observe_keep, std::optional<Duration>(std::chrono::seconds(90)));
  EXPECT_EQ(run.progress_every, std::optional<Duration>(std::chrono::milliseconds(10)));
  EXPECT_EQ(run.observe_rules, "alerts.yaml");
  EXPECT_TRUE(run.insecure);
  EXPECT_EQ(run.link_command_timeout, std::chrono::seconds(3));
  EXPECT_EQ(run.interrupt_grace, std::chrono::minutes(2));
  EXPECT_EQ(run.stop_grace, std::chrono::minutes(1));
  EXPECT_EQ(run.start_timeout, std::chrono::minutes(5));
  EXPECT_EQ(Parse({"run", "job.yaml"}).line().run.link_command_timeout, kDefaultLinkCommandTimeout);
  EXPECT_EQ(Parse({"run", "job.yaml"}).line().run.interrupt_grace, std::chrono::seconds(30));
  EXPECT_EQ(Parse({"run", "job.yaml"}).line().run.stop_grace, std::chrono::seconds(15));
  EXPECT_TRUE(Parse({"run", "job.yaml"}).line().run.curves) << "curves are drawn unless asked not to";
  EXPECT_FALSE(Parse({"run", "job.yaml"}).line().run.insecure) << "mutual TLS unless asked not to";
}

TEST(CommandLineTest, ReadsTheOtherCommands) {
  Parsed validate = Parse({"validate", "job.yaml", "--nodes", "n.yaml", "--defaulted"});
  ASSERT_EQ(validate.exit(), -1) << validate.err;
  EXPECT_EQ(validate.line().command, Command::kValidate);
  EXPECT_EQ(validate.line().run.nodes_path, "n.yaml");
  EXPECT_TRUE(validate.line().defaulted);

  // What follows -- is the other program's, --help included.
  Parsed netns = Parse({"netns-run", "--nodes", "n.yaml", "--workers", "4", "--log-dir", "logs",
                        "--link-command-timeout", "500ms", "--", "python3", "ddp.py", "--help"});
  ASSERT_EQ(netns.exit(), -1) << netns.err;
  EXPECT_EQ(netns.line().command, Command::kNetnsRun);
  EXPECT_EQ(netns.line().netns.workers, 4);
  EXPECT_EQ(netns.line().netns.log_dir, "logs");
  EXPECT_EQ(netns.line().netns.link_command_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(netns.line().netns.command, (std::vector<std::string>{"python3", "ddp.py", "--help"}));

  EXPECT_EQ(Parse({"version"}).line().command, Command::kVersion);
  EXPECT_EQ(Parse({"--version"}).line().command, Command::kVersion);
  EXPECT_EQ(Parse({"partition", "job.yaml"}).line().command, Command::kPartition);
  Parsed plan = Parse({"plan", "job.yaml", "--nodes", "site.yaml", "--json"});
  ASSERT_EQ(plan.exit(), -1) << plan.err;
  EXPECT_EQ(plan.line().command, Command::kPlan);
  EXPECT_EQ(plan.line().plan.manifest_path, "job.yaml");
  EXPECT_EQ(plan.line().plan.nodes_path, "site.yaml");
  EXPECT_TRUE(plan.line().plan.json);
  EXPECT_EQ(Parse({"plan", "job.yaml", "--kubeconfig", "kc"}).line().plan.kubeconfig, "kc");
  EXPECT_EQ(Parse({"plan", "job.yaml", "--nodes", "site.yaml", "--agent", "/bin/true"}).line().plan.agent_binary,
            "/bin/true");
  // Judged as run's and evaluate's are: a missing one exited 1 once the plan measured layers (a user's trial).
  EXPECT_EQ(Parse({"plan", "job.yaml", "--nodes", "site.yaml", "--agent", "bin/agent"}).exit(), kExitInvalid);
  EXPECT_NE(Parse({"plan", "job.yaml", "--kubeconfig", "kc", "--nodes", "site.yaml"}).exit(), -1)
      << "one site at a time";
  Parsed evaluate = Parse({"evaluate", "out/model.pt", "--dataset", "digits", "--json"});
  ASSERT_EQ(evaluate.exit(), -1) << evaluate.err;
  EXPECT_EQ(evaluate.line().command, Command::kEvaluate);
  EXPECT_EQ(evaluate.line().evaluate.model_path, "out/model.pt");
  EXPECT_EQ(evaluate.line().evaluate.dataset, "digits");
  EXPECT_TRUE(evaluate.line().evaluate.json);
  Parsed credentials = Parse({"credentials", "robots", "tls", "--validity", "48h"});
  ASSERT_EQ(credentials.exit(), -1) << credentials.err;
  EXPECT_EQ(credentials.line().command, Command::kCredentials);
  EXPECT_EQ(credentials.line().credentials.job, "robots");
  EXPECT_EQ(credentials.line().credentials.dir, "tls");
  EXPECT_EQ(credentials.line().credentials.validity, std::chrono::hours(48));
}

TEST(CommandLineTest, AMistakeIsOneLineWithAPointerToHelp) {
  struct Case {
    std::vector<std::string> args;
    const char* error;
  } cases[] = {
      {{"run", "a.yaml", "--frobnicate"}, "edgetrain run: unknown option --frobnicate (see edgetrain run --help)"},
      // A typo of an option's name: the option meant (a new user's trial).
      {{"run", "a.yaml", "--node", "n.yaml"},
       "edgetrain run: unknown option --node (did you mean --nodes?) (see edgetrain run --help)"},
      {{"run", "a.yaml", "b.yaml"}, "edgetrain run: unexpected argument \"b.yaml\" (see edgetrain run --help)"},
      {{"run"}, "edgetrain run: JOB.yaml is required (see edgetrain run --help)"},
      {{"run", "a.yaml", "--threads", "0"}, "edgetrain run: --threads: expected a whole number from 1 to 256, got \"0\""},
      {{"run", "a.yaml", "--links", "kernel"}, "edgetrain run: --links: "},
      // A word was said to be "not in range 1 to 1048576", and --stages named itself twice (a new user's trial).
      {{"run", "a.yaml", "--micro-batches", "abc"},
       "edgetrain run: --micro-batches: expected a whole number from 1 to 1048576, got \"abc\""},
      // An option given no value took the next option as one (a user's trial).
      {{"run", "j.yaml", "--output", "--fresh"},
       "edgetrain run: --output: expected a value, got the option --fresh (an option given none takes the next word)"},
      {{"run", "j.yaml", "--output", ""}, "edgetrain run: --output: expected a value, got an empty one"},
      {{"run", "j.yaml", "--agent", "/nonexistent/agent"}, "edgetrain run: --agent: no such file: /nonexistent/agent"},
      {{"evaluate", "model.pt", "--agent", "/etc/passwd"}, "edgetrain evaluate: --agent: /etc/passwd is not executable"},
      {{"run", "j.yaml", "--agent", "/tmp"}, "edgetrain run: --agent: /tmp is a folder, not the agent's binary"},
      // (A user's trial: an empty folder read "cannot make : Invalid argument", exit 1; a
      // validity too long was said to be too short.)
      {{"credentials", "job", ""}, "edgetrain credentials: dir: expected a value, got an empty one"},
      // CLI11's own words, said plainly (a user's trial read "1 required TEXT missing").
      {{"run", "j.yaml", "--nodes"}, "edgetrain run: --nodes: expected a value, got none"},
      {{"run", "j.yaml", "--nodes", "a", "--nodes", "b"}, "edgetrain run: --nodes: given more than once"},
      {{"credentials", "job", "d", "--validity", "200000h"},
       "edgetrain credentials: --validity: invalid duration \"200000h\": longer than edgetrain counts (at most "
       "100000h, 11 years)"},
      {{"validate", "j.yaml", "--nodes", "--defaulted"},
       "edgetrain validate: --nodes: expected a value, got the option --defaulted"},
      {{"run", "a.yaml", "--stages", ""},
       "edgetrain run: --stages: expected planned, even, data-parallel, or a layout such as 0-1:0,1/2:2, got \"\""},
      {{"plan", "a.yaml", "--stages", "evn"},
       "edgetrain plan: --stages: expected planned, even, data-parallel, or a layout such as 0-1:0,1/2:2, got \"evn\" "
       "(did you mean even?)"},
      {{"plan", "a.yaml", "--micro-batches", "0"},
       "edgetrain plan: --micro-batches: expected a whole number from 1 to 1048576, got \"0\""},
      {{"netns-run", "--nodes", "n.yaml", "--workers", "abc", "--", "true"},
       "edgetrain netns-run: --workers: expected a whole number from 1 to 250, got \"abc\""},
      {{"netns-run", "--nodes", "n.yaml", "--", "true"}, "edgetrain netns-run: --workers is required"},
      {{"frobnicate"}, "edgetrain: unknown command \"frobnicate\" (see edgetrain --help)"},
      {{"evalute", "model.pt"},
       "edgetrain: unknown command \"evalute\" (did you mean evaluate?) (see edgetrain --help)"},
      {{"--frobnicate"}, "edgetrain: unknown option --frobnicate"},
      {{}, "edgetrain: which command? run, validate, plan, partition, evaluate, credentials, netns-run or version (see "
       "edgetrain --help)"},
      {{"evaluate", "model.pt", "--dataset", "digits", "--job", "j.yaml"}, "edgetrain evaluate: --dataset excludes --job"},
      {{"run", "j.yaml", "--observe", "--observe-keep", "soon"},
       "edgetrain run: --observe-keep: expected a duration such as 10m (units ms, s, m, h), got \"soon\""},
      {{"run", "j.yaml", "--progress-every", "0s"},
       "edgetrain run: --progress-every: expected a duration of at least 1ms, such as 10ms (units ms, s, m, h), got "
       "\"0s\""},
      {{"credentials", "robots"}, "edgetrain credentials: dir is required"},
      {{"credentials", "robots", "tls", "--validity", "0s"},
       "edgetrain credentials: --validity: expected a duration of at least 1s, such as 720h (units ms, s, m, h), "
       "got \"0s\""},
  };
  for (const auto& c : cases) {
    Parsed p = Parse(c.args);
    EXPECT_EQ(p.exit(), kExitInvalid) << c.error;
    ASSERT_EQ(Lines(p.err).size(), 1u) << p.err;
    EXPECT_EQ(p.err.rfind(c.error, 0), 0u) << p.err;
    EXPECT_NE(p.err.find("--help)"), std::string::npos) << p.err;
    EXPECT_TRUE(p.out.empty());
  }
}

// A run asked for JSON ends with its failure line, a bad flag too (a user's trial).
TEST(CommandLineTest, ARunAskedForJsonEndsWithItsFailureLineOnABadFlag) {
  Parsed p = Parse({"run", "missing.yaml", "--json", "--threads", "0"});
  EXPECT_EQ(p.exit(), kExitInvalid);
  const auto line = nlohmann::json::parse(p.out);
  EXPECT_EQ(line["stop_reason"], "failed");
  EXPECT_EQ(line["job"], "");
  EXPECT_NE(line["error"].get<std::string>().find("--threads"), std::string::npos) << p.out;
  EXPECT_TRUE(Parse({"run", "missing.yaml", "--threads", "0"}).out.empty()) << "none without --json";
  // The manifest named though parsing stopped before it was taken (its job was "").
  const fs::path manifest = fs::temp_directory_path() / "command-line-named.yaml";
  std::ofstream(manifest) << "apiVersion: edgetrain.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: named}\n";
  Parsed no_value = Parse({"run", manifest.string(), "--json", "--nodes"});
  EXPECT_EQ(nlohmann::json::parse(no_value.out, nullptr, false).value("job", ""), "named") << no_value.out;
  fs::remove(manifest);
  // An option no command takes, and a second manifest, alike (they printed none).
  for (const std::vector<std::string>& args : {std::vector<std::string>{"run", "missing.yaml", "--json", "--bogus"},
                                                std::vector<std::string>{"run", "missing.yaml", "b.yaml", "--json"}}) {
    Parsed extra = Parse(args);
    EXPECT_EQ(extra.exit(), kExitInvalid);
    const auto said = nlohmann::json::parse(extra.out, nullptr, false);
    ASSERT_TRUE(said.is_object()) << extra.out;
    EXPECT_EQ(said["stop_reason"], "failed");
    EXPECT_FALSE(said["error"].get<std::string>().empty());
  }
}

// Only training has budgets and targets to say its exit codes by.
TEST(CommandLineTest, OnlyRunsHelpSaysABudgetEndingBeforeTheTargetIsASuccess) {
  Parsed run = Parse({"run", "--help"});
  ASSERT_EQ(run.exit(), kExitOk);
  EXPECT_NE(run.out.find("reached_target"), std::string::npos) << run.out;
  for (const char* command : {"credentials", "validate", "evaluate"}) {
    Parsed help = Parse({command, "--help"});
    ASSERT_EQ(help.exit(), kExitOk) << command;
    EXPECT_NE(help.out.find("Exit codes: 0 success, 1 runtime failure"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("reached_target"), std::string::npos) << help.out;
  }
}

TEST(CommandLineTest, TheHelpNamesEveryFlagAndFitsEightyColumns) {
  Parsed help = Parse({"--help"});
  ASSERT_EQ(help.exit(), kExitOk);
  for (const char* flag : {"run", "--nodes", "--links", "--json", "--output", "--threads", "--http-port", "--keep-logs",
                           "--progress-log", "--agent", "--fresh", "validate", "--defaulted", "partition", "netns-run", "--workers",
                           "--log-dir", "COMMAND", "evaluate", "MODEL", "--dataset", "version", "Exit codes: 0 success"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag << " is missing from\n" << help.out;
  }
  for (const auto& line : Lines(help.out)) EXPECT_LE(line.size(), 80u) << line;

  Parsed run_help = Parse({"run", "--help"});
  ASSERT_EQ(run_help.exit(), kExitOk);
  EXPECT_NE(run_help.out.find("--progress-log"), std::string::npos) << run_help.out;
  EXPECT_EQ(run_help.out.find("--workers"), std::string::npos) << "netns-run's, not run's";
  for (const auto& line : Lines(run_help.out)) EXPECT_LE(line.size(), 80u) << line;
}

}  // namespace
}  // namespace edgetrain::cli
