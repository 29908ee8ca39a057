#pragma once
// The `edgetrain` command line, read by CLI11: the command and its options.
// A mistake gets one line and a pointer to --help; the help names every flag
// of every command and fits 80 columns.

#include <ostream>
#include <variant>

#include "cli/credentials_command.h"
#include "cli/evaluate_command.h"
#include "cli/netns_run.h"
#include "cli/node_links_command.h"
#include "cli/plan_command.h"
#include "cli/run_options.h"

namespace edgetrain::cli {

enum class Command { kRun, kValidate, kPartition, kEvaluate, kNetnsRun, kNodeLinks, kPlan, kCredentials, kVersion };

struct CommandLine {
  Command command = Command::kRun;
  RunOptions run;          // run; validate and partition read its manifest_path (and nodes_path, json)
  bool defaulted = false;  // validate --defaulted
  NetnsRunOptions netns;
  NodeLinksOptions node_links;
  EvaluateOptions evaluate;
  PlanOptions plan;
  CredentialsOptions credentials;
};

// The command line, or the exit code when there is nothing to run: 0 after
// printing the help on `out`, 2 after saying on `err` what is wrong.
std::variant<CommandLine, int> ParseCommandLine(int argc, const char* const* argv, std::ostream& out,
                                                std::ostream& err);

}  // namespace edgetrain::cli
