#include "cli/command_line.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/job_loading.h"
#include "cli/run_report.h"
#include "core/duration_text.h"
#include "core/edit_distance.h"
#include "core/parallelism_choice.h"

namespace edgetrain::cli {
namespace {

constexpr size_t kColumns = 80;
constexpr size_t kNameColumn = 30;

// `text` broken into lines of at most `width` columns at spaces.
std::string Wrap(const std::string& text, size_t width) {
  std::string out, line;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

// CLI11's help with descriptions wrapped to fit 80 columns, also where the
// full help indents each command's options by two more.
class WrappingFormatter : public CLI::Formatter {
 public:
  WrappingFormatter() { column_width(kNameColumn); }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return Wrap(opt->get_description(), kColumns - kNameColumn - 2);
  }
  std::string make_description(const CLI::App* app) const override {
    const std::string desc = app->get_description();
    return desc.empty() ? "" : Wrap(desc, kColumns - 4) + "\n";
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), Wrap(sub->get_description(), kColumns - kNameColumn),
                             kNameColumn);
    return out.str();
  }
};

constexpr const char* kExitCodes =
    "Exit codes: 0 success, 1 runtime failure, 2 invalid manifest, profile or command line, 130 interrupted (143 by "
    "SIGTERM, 129 by SIGHUP).";
// edgetrain run's: what it means for training (every other command said so
// too, credentials and validate included: a new user's trial).
constexpr const char* kRunExitCodes =
    "Exit codes: 0 success (also when the budget ends before the target; see reached_target), 1 runtime failure, "
    "2 invalid manifest or command line, 130 interrupted (143 by SIGTERM, 129 by SIGHUP).";

// An integer in [min, max], named as such when it is not one at all.
CLI::Validator WholeNumber(int min, int max) {
  const std::string range = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        int n = 0;
        const bool number = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos &&
                            value.size() < 10 && (n = std::stoi(value)) >= min && n <= max;
        return number ? "" : "expected " + range + ", got \"" + value + "\"";
      },
      "", "");
}

// A duration option (core/duration_text.h) of at least `least`, refused with
// an example of one, as each of edgetrain's durations is.
template <typename Into>
CLI::Option* AddDuration(CLI::App* command, const std::string& name, Into& into, Duration least,
                         const std::string& example, const std::string& description) {
  return command
      ->add_option_function<std::string>(
          name,
          [&into, name, least, example](const std::string& text) {
            const StatusOr<Duration> parsed = ParseDuration(text);
            // Too long is said as such: "of at least 1s" of 200000h read as
            // if it were too short (a user's trial).
            if (!parsed.ok() && parsed.status().message().find("at most") != std::string::npos) {
              throw CLI::ValidationError(name, parsed.status().message());
            }
            if (!parsed.ok() || *parsed < least) {
              const std::string floor = least > Duration::zero() ? " of at least " + FormatDuration(least) + "," : "";
              throw CLI::ValidationError(name, "expected a duration" + floor + " such as " + example +
                                                   " (units ms, s, m, h), got \"" + text + "\"");
            }
            into = *parsed;
          },
          description)
      ->option_text("DURATION");
}

// --link-command-timeout, of the commands that lay out kernel-shaped links:
// `how_long` begins its description.
void AddLinkCommandTimeout(CLI::App& command, Duration& into, const std::string& how_long) {
  AddDuration(&command, "--link-command-timeout", into, std::chrono::milliseconds(1), "10s",
              how_long + " each `ip` or `tc` that lays out or shapes the links may take before it is killed and the "
                         "run fails (default " + FormatDuration(kDefaultLinkCommandTimeout) + ")");
}

// What every option that takes a value is given: not nothing, and not an
// option of the command, which CLI11 takes as the value of one given none
// (`--output --json` trained into a folder named "--json" and printed no
// JSON, exit 0: a user's trial).
CLI::Validator AValue() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value.empty()) return "expected a value, got an empty one";
        if (value.rfind("--", 0) == 0) {
          return "expected a value, got the option " + value + " (an option given none takes the next word)";
        }
        return "";
      },
      "", "");
}

// --agent's file, judged as the command line is (exit 2), not once the run
// has begun and fails to start it (exit 1; a user's trial).
CLI::Validator AnAgent() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) return path + " is a folder, not the agent's binary";
        if (!std::filesystem::is_regular_file(path, ec)) return "no such file: " + path;
        if (::access(path.c_str(), X_OK) != 0) return path + " is not executable";
        return "";
      },
      "", "");
}

void AddManifest(CLI::App& command, RunOptions& run) {
  command.add_option("JOB.yaml", run.manifest_path, "a TrainingJob manifest")->required();
}

// --stages and --micro-batches, as run trains them and plan predicts them
// (`does`: "kept" as given, "predicted" as given).
void AddStageOptions(CLI::App& command, std::string& stages, int& micro_batches, const std::string& does) {
  command
      .add_option("--stages", stages,
                  "a pipeline, hybrid or auto job's stages in place of its spec.parallelism.stages: the planner's "
                  "(planned, the spec's default), or for comparison "
                  "one device a stage with the layers dealt evenly (even), or one stage on every device "
                  "(data-parallel); or a layout by hand, each stage's layers and ranks, e.g. 0-1:0,1/2:2 "
                  "(layers 0-1 on ranks 0 and 1, layer 2 on rank 2); all but planned are " + does +
                      " as given, no layers moved between stages")
      ->option_text("planned|even|data-parallel|LAYOUT")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // CLI11 names the option before this. A word is judged here, as
            // the spec's is (a typo's nearest plan said: --stages evn was not);
            // a layout once the job's ranks are known.
            if (NamesAPlan(v) || v.find(':') != std::string::npos) return "";
            return std::string(ParseStageLayout(v, std::nullopt, 1).status().message());
          },
          "", ""));
  command
      .add_option("--micro-batches", micro_batches,
                  "a pipeline job's micro-batches a step, in place of the cost model's best for its stages")
      ->option_text("N")
      ->check(WholeNumber(1, 1 << 20));
}

// CLI11's words for a flag given no value or given twice, said plainly:
// "--nodes: 1 required TEXT missing", "At Most 1 required but received 2"
// (a user's trial). Anything else as it is.
std::string InPlainWords(const std::string& what) {
  static const std::regex missing(R"(^(\S+): \d+ required \S+ missing$)");
  static const std::regex twice(R"(^(\S+): At Most 1 required but received \d+$)");
  std::smatch m;
  if (std::regex_match(what, m, missing)) return m[1].str() + ": expected a value, got none";
  if (std::regex_match(what, m, twice)) return m[1].str() + ": given more than once";
  return what;
}

// What the user typed that no option of `command` takes, as one line, with
// the option it was closest to when one is a typo away (--node: --nodes).
std::string Unexpected(const std::vector<std::string>& extras, const CLI::App& command) {
  const std::string& first = extras.front();
  if (first.rfind("-", 0) != 0) return "unexpected argument \"" + first + "\"";
  const std::string typed = first.substr(0, first.find('='));
  std::vector<std::string> names;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  const std::string best = Nearest(typed, names);
  return "unknown option " + first + (best.empty() ? "" : " (did you mean " + best + "?)");
}

}  // namespace

std::variant<CommandLine, int> ParseCommandLine(int argc, const char* const* argv, std::ostream& out,
                                                std::ostream& err) {
  CommandLine line;
  RunOptions& run = line.run;
  CLI::App app("Trains TrainingJob manifests on this machine, as a cluster would.", "edgetrain");
  app.formatter(std::make_shared<WrappingFormatter>());
  app.footer(Wrap(kExitCodes, kColumns));
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "print the version");

  CLI::App* run_command = app.add_subcommand(
      "run",
      "Train a TrainingJob manifest on this machine: the same YAML `kubectl apply` takes. With --nodes, each worker "
      "emulates a node of the cluster profile: its compute slowdown, and its link's bandwidth trace.");
  run_command->footer(Wrap(kRunExitCodes, kColumns));
  AddManifest(*run_command, run);
  run_command->add_option("--nodes", run.nodes_path,
                          "a cluster profile whose devices the workers emulate (their slowdown, link and, for a job's "
                          "stream without ratesPerSecond, their stream's rate)")
      ->option_text("PROFILE.yaml");
  run_command
      ->add_option("--links", run.links,
                   "how links are shaped: in the agents (process, the default) or, as root, by the kernel, each agent "
                   "in its own network namespace behind tbf qdiscs (netns)")
      ->option_text("process|netns")
      ->check(CLI::IsMember({"process", "netns"}));
  run_command->add_flag("--json", run.json,
                        "end with one JSON line of the result (of a run that failed: its job, stop_reason "
                        "\"failed\" and error)");
  run_command->add_option("--output", run.output_dir,
                          "where the model goes; overrides spec.output.path (default ./edgetrain-output/NAME)")
      ->option_text("DIR");
  run_command->add_option("--threads", run.threads, "LibTorch threads per agent (default 1: small models run fastest on one)")
      ->option_text("N")
      ->check(WholeNumber(1, 256));
  run_command->add_option("--http-port", run.http_port,
                          "serve the agents' HTTP on fixed ports: the coordinator on BASE, worker r on BASE+1+r "
                          "(default: ports the OS chooses)")
      ->option_text("BASE")
      ->check(WholeNumber(1, 65535));
  run_command->add_flag("--fresh", run.fresh,
                        "start over, even where the output folder holds a checkpoint of an interrupted run of the "
                        "job (which is resumed otherwise)");
  run_command->add_flag("--keep-logs", run.keep_logs,
                        "keep the run folder with the plan and every agent's log (a failed run keeps it anyway, "
                        "unless its inputs were refused before it trained)");
  run_command->add_flag("--insecure", run.insecure,
                        "a team's agents talk in plaintext instead of mutual TLS with the run's own certificates: "
                        "anyone who reaches their ports could join; for loopback only");
  run_command->add_flag_callback("--no-curves", [&run] { run.curves = false; },
                                 "do not draw report.png at the end (about a second); progress.jsonl is kept for a "
                                 "later draw");
  run_command->add_option("--progress-log", run.progress_log, "record every progress snapshot as a JSON line")
      ->option_text("FILE");
  AddLinkCommandTimeout(*run_command, run.link_command_timeout, "with --links netns, how long");
  AddDuration(run_command, "--interrupt-grace", run.interrupt_grace, std::chrono::milliseconds(1), "2m",
              "told to stop (Ctrl-C, a failure), how long the agents have to save where they got to and report "
              "before they are killed (default 30s; a second Ctrl-C kills them at once)");
  AddDuration(run_command, "--start-timeout", run.start_timeout, std::chrono::milliseconds(1), "5m",
              "how long each agent has to start, its data loaded, before the run fails (default " +
                  FormatDuration(kDefaultStartTimeout) + ")");
  AddDuration(run_command, "--stop-grace", run.stop_grace, std::chrono::milliseconds(1), "1m",
              "once the job has ended, how long the coordinator, then a team's workers still running, have to exit "
              "before they are killed, and --observe's Prometheus to stop (default 15s; not the agent's own "
              "--stop-grace)");
  AddDuration(run_command, "--progress-every", run.progress_every, std::chrono::milliseconds(1), "10ms",
              "how often the coordinator refreshes /progress (default 100ms); benchmarks that time from it set it "
              "finer");
  run_command->add_option("--agent", run.agent_binary, "the edgetrain-agent to start (default: the one beside edgetrain)")
      ->option_text("PATH")
      ->check(AnAgent());
  AddStageOptions(*run_command, run.stages, run.micro_batches, "kept");
  CLI::Option* observe = run_command->add_flag("--observe", run.observe,
                        "start a local Prometheus scraping every agent each second, with the labels the dashboards "
                        "of dashboards/ query; after the run it serves the run's series until Ctrl-C");
  run_command
      ->add_option("--observe-port", run.observe_port,
                   "the local Prometheus's port on 127.0.0.1, " + std::to_string(RunOptions{}.observe_port) +
                       " by default (0: one the OS gives)")
      ->option_text("PORT")
      ->capture_default_str()
      ->check(WholeNumber(0, 65535))
      ->needs(observe);
  AddDuration(run_command, "--observe-keep", run.observe_keep, Duration::zero(), "10m",
              "how long the local Prometheus serves after the run, for scripts (default: until Ctrl-C)")
      ->needs(observe);
  run_command->add_option("--observe-rules", run.observe_rules,
                          "a Prometheus rules file the local Prometheus evaluates, such as dashboards/alerts.yaml: "
                          "its alerts are at /api/v1/alerts (Debian's Prometheus has no web pages)")
      ->option_text("FILE")
      ->needs(observe);

  CLI::App* validate = app.add_subcommand(
      "validate", "Check a manifest against the TrainingJob CRD, and with --nodes the cluster profile and the team's "
                  "placement on it, without training.");
  AddManifest(*validate, run);
  validate->add_option("--nodes", run.nodes_path, "a cluster profile to check, and to place the workers on")
      ->option_text("PROFILE.yaml");
  validate->add_flag("--defaulted", line.defaulted, "print the manifest as JSON with the CRD's defaults applied");

  CLI::App* partition = app.add_subcommand(
      "partition", "Show how many training samples of each label every worker of the job gets, and which labels no "
                   "worker sees.");
  AddManifest(*partition, run);
  partition->add_flag("--json", run.json,
                      "print one JSON document instead: each worker's label counts and its sample indices, so that "
                      "another framework trains on exactly the same parts");

  PlanOptions& plan = line.plan;
  CLI::App* plan_command = app.add_subcommand(
      "plan", "Show where the operator would run the job's pods on a site, and why each node was used or not; for a "
              "pipeline, hybrid or auto job, also the stages the model would be split into, with their predictions "
              "against the even split and data parallelism.");
  plan_command->add_option("JOB.yaml", plan.manifest_path, "the TrainingJob manifest")->required();
  CLI::Option* plan_nodes = plan_command->add_option("--nodes", plan.nodes_path, "the site, as a cluster profile")
                                ->option_text("PROFILE.yaml");
  CLI::Option* plan_cluster =
      plan_command->add_option("--kubeconfig", plan.kubeconfig, "the live cluster: its Nodes and the pods bound there")
          ->option_text("FILE");
  plan_nodes->excludes(plan_cluster);
  plan_command->add_flag("--json", plan.json, "print the placement as one JSON document");
  plan_command->add_option("--agent", plan.agent_binary,
                           "the edgetrain-agent that measures a pipeline job's layers (default: the one beside edgetrain)")
      ->option_text("PATH")
      ->check(AnAgent());  // as run's and evaluate's: a missing one exited 1 (a user's trial)
  AddStageOptions(*plan_command, plan.stages, plan.micro_batches, "predicted");

  EvaluateOptions& evaluate = line.evaluate;
  CLI::App* evaluate_command = app.add_subcommand(
      "evaluate", "Print the test-set accuracy of a model an edgetrain run saved (its model.pt).");
  evaluate_command->add_option("MODEL", evaluate.model_path, "a model.pt")->required();
  CLI::Option* evaluate_dataset =
      evaluate_command->add_option("--dataset", evaluate.dataset,
                                   "the built-in data set whose test set to evaluate on (default: the one its "
                                   "model.json says it was trained on)")
          ->option_text("digits|fashion-mnist")
          ->check(CLI::IsMember({"digits", "fashion-mnist"}));
  evaluate_command->add_option("--job", evaluate.job_path, "evaluate on this TrainingJob's test data (its own files)")
      ->option_text("JOB.yaml")
      ->excludes(evaluate_dataset);
  evaluate_command->add_flag("--json", evaluate.json, "print the result as one JSON line");
  evaluate_command->add_option("--agent", evaluate.agent_binary, "the edgetrain-agent that evaluates")
      ->option_text("PATH")
      ->check(AnAgent());

  NetnsRunOptions& netns = line.netns;
  CLI::App* netns_run = app.add_subcommand(
      "netns-run",
      "As root: run COMMAND once per worker, each in its own network namespace behind the profile's kernel-shaped "
      "links (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, GLOO_SOCKET_IFNAME set, and EDGETRAIN_LINKS_STARTED, the "
      "traces' time 0 in seconds on CLOCK_MONOTONIC), for another framework to compare. "
      "Exits with the highest of the ranks' exit statuses (128+N for a rank killed by signal N), each rank that "
      "failed named on stderr; 130, 143 or 129 when interrupted.");
  netns_run->add_option("--nodes", netns.nodes_path, "the cluster profile whose links to emulate")
      ->option_text("PROFILE.yaml")
      ->required();
  netns_run->add_option("--workers", netns.workers, "how many copies of COMMAND to run")
      ->option_text("N")
      ->required()
      ->check(WholeNumber(1, 250));
  netns_run->add_option("--log-dir", netns.log_dir,
                        "where each rank's stderr goes, as rank-R.log (default: the current folder; created if need "
                        "be); their stdout is printed here, rank 0's as it is and the others' after \"rank R: \"")
      ->option_text("DIR");
  AddDuration(netns_run, "--stop-grace", netns.stop_grace, Duration::zero(), "15s",
              "how long the ranks have to end once interrupted (SIGTERM) before they are killed, with what they "
              "started (default 15s)");
  AddLinkCommandTimeout(*netns_run, netns.link_command_timeout, "how long");
  netns_run->add_option("COMMAND", netns.command, "the program and its arguments, after --")->required();

  NodeLinksOptions& node_links = line.node_links;
  CLI::App* node_links_command = app.add_subcommand(
      "node-links",
      "Private, for the node emulator (tests/kube): as root, hold the named nodes' kernel-shaped links, laid out as a "
      "K3s site, until standard input closes; reads `scale NODE FACTOR` and `show NODE` lines.");
  node_links_command->add_option("--nodes", node_links.nodes_path, "the cluster profile")
      ->option_text("PROFILE.yaml")
      ->required();
  node_links_command->add_option("--node", node_links.nodes, "a node to give a link (repeated, in order)")
      ->option_text("NAME")
      ->required();
  node_links_command->add_option("--subnet", node_links.subnet, "the links' addresses are 10.S.0.0/16 (default 77)")
      ->option_text("S")
      ->check(WholeNumber(1, 254));
  node_links_command->add_flag("--host-link", node_links.host_link,
                               "link this namespace (the host) to the hub, with a route to every node's pods");
  AddLinkCommandTimeout(*node_links_command, node_links.link_command_timeout, "how long");

  CredentialsOptions& credentials = line.credentials;
  CLI::App* credentials_command = app.add_subcommand(
      "credentials",
      "Write the files a team's agents started by hand need for mutual TLS (their --tls-dir): a new authority of "
      "the job and one certificate of it (ca.crt, tls.crt, tls.key). edgetrain run and the operator make their own.");
  // Not empty: '' as the folder read "cannot make : Invalid argument", exit 1 (a user's trial).
  const CLI::Validator given(
      [](std::string& value) { return value.empty() ? std::string("expected a value, got an empty one") : ""; }, "",
      "");
  credentials_command->add_option("job", credentials.job, "the job's name (metadata.name)")->required()->check(given);
  credentials_command->add_option("dir", credentials.dir, "the folder to write them into (made 0700 if missing)")
      ->required()
      ->check(given);
  AddDuration(credentials_command, "--validity", credentials.validity, std::chrono::seconds(1), "720h",
              "how long the certificate lasts (default 720h)");
  credentials_command->add_flag("--replace", credentials.replace,
                                "write over credentials the folder holds already (agents that hold them then refuse "
                                "the new ones)");

  CLI::App* version_command = app.add_subcommand("version", "Print the version.");
  for (CLI::App* command : {&app, run_command, validate, partition, plan_command, evaluate_command, node_links_command,
                            credentials_command, version_command}) {
    command->allow_extras();
  }
  for (CLI::App* command : {&app, run_command, validate, partition, plan_command, evaluate_command, netns_run,
                            node_links_command, credentials_command, version_command}) {
    // Options by name: a positional's words are its own (netns-run's
    // COMMAND may well hold a --help).
    for (CLI::Option* option : command->get_options(
             [](CLI::Option* o) { return o->get_items_expected_min() > 0 && o->nonpositional(); })) {
      option->check(AValue());
    }
  }

  auto hint = [&](const CLI::App* command) {
    const std::string name = command == &app ? "edgetrain" : "edgetrain " + command->get_name();
    return " (see " + name + " --help)";
  };
  auto selected = [&]() -> const CLI::App* {
    auto chosen = app.get_subcommands();
    return chosen.empty() ? &app : chosen.front();
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    // The full help names every command's options.
    out << (selected() == &app ? app.help("", CLI::AppFormatMode::All) : selected()->help("edgetrain"));
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    const CLI::App* command = selected();
    const std::string what = InPlainWords(e.what());
    err << (command == &app ? "edgetrain" : "edgetrain " + command->get_name()) << ": " << what << hint(command)
        << "\n";
    // A run asked for JSON ends with its failure line however early it
    // fails, a bad flag too (it printed none: a user's trial).
    const bool json = std::any_of(argv, argv + argc, [](const char* a) { return std::string_view(a) == "--json"; });
    if (command == run_command && json) {
      // The manifest the words name, when parsing stopped before it was
      // taken (`--nodes` given no value): its job was "" (a user's trial).
      std::string job = JobNameIn(run.manifest_path);
      for (int i = 1; i < argc && job.empty(); ++i) {
        if (argv[i][0] != '-' && std::string_view(argv[i]) != "run") job = JobNameIn(argv[i], true);
      }
      out << FailureJsonLine(job, what) << "\n";
    }
    return kExitInvalid;
  }
  const CLI::App* command = selected();
  std::vector<std::string> extras = command->remaining();
  std::erase(extras, "--");  // CLI11 hands back the separator of netns-run's command
  if (command == &app && !extras.empty() && extras.front().rfind("-", 0) != 0) {
    // A typo of a command is named, as one of an option is (`edgetrain evalute`).
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      commands.push_back(sub->get_name());
    }
    const std::string near = Nearest(extras.front(), commands);
    err << "edgetrain: unknown command \"" << extras.front() << "\""
        << (near.empty() ? "" : " (did you mean " + near + "?)") << hint(&app) << "\n";
    return kExitInvalid;
  }
  if (!extras.empty()) {
    const std::string unexpected = Unexpected(extras, *command);
    err << (command == &app ? "edgetrain" : "edgetrain " + command->get_name()) << ": " << unexpected
        << hint(command) << "\n";
    // Its failure line too, as for any other bad flag: an unknown option
    // and a second manifest printed none (a user's trial).
    if (command == run_command && run.json) out << FailureJsonLine(JobNameIn(run.manifest_path), unexpected) << "\n";
    return kExitInvalid;
  }
  if (version || command == version_command) {
    line.command = Command::kVersion;
  } else if (command == &app) {
    err << "edgetrain: which command? run, validate, plan, partition, evaluate, credentials, netns-run or version"
        << hint(&app)
        << "\n";
    return kExitInvalid;
  } else {
    line.command = command == run_command        ? Command::kRun
                   : command == validate         ? Command::kValidate
                   : command == partition        ? Command::kPartition
                   : command == plan_command     ? Command::kPlan
                   : command == evaluate_command ? Command::kEvaluate
                   : command == node_links_command ? Command::kNodeLinks
                   : command == credentials_command ? Command::kCredentials
                                                 : Command::kNetnsRun;
  }
  return line;
}

}  // namespace edgetrain::cli
