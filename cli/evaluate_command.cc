#include "cli/evaluate_command.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/agent_launcher.h"
#include "cli/child_process.h"
#include "core/exit_codes.h"

namespace edgetrain::cli {

int EvaluateModel(const EvaluateOptions& options, std::ostream& out, std::ostream& err) {
  const std::string agent = options.agent_binary.empty() ? AgentBeside() : options.agent_binary;
  // Why it fails comes back in its result line; its log adds nothing.
  auto evaluator = ChildProcess::Spawn(
      {agent, "evaluate", "--model=" + options.model_path, "--dataset=" + options.dataset}, "/dev/null");
  if (!evaluator.ok()) {
    err << "error: " << evaluator.status().message() << " (pass --agent PATH to name the agent binary)\n";
    return ExitCodeFor(evaluator.status());
  }
  std::optional<std::string> result;
  while (auto line = evaluator->ReadLine(std::chrono::minutes(5))) {
    if (line->rfind("result ", 0) == 0) result = line->substr(7);
  }
  const int exit = evaluator->Wait(std::chrono::seconds(15));
  const auto json = nlohmann::json::parse(result.value_or("{}"), nullptr, /*allow_exceptions=*/false);
  if (exit != kExitOk || !json.contains("accuracy")) {
    const std::string why = json.is_object() ? json.value("error", "") : "";
    err << "error: " << (why.empty() ? "the agent exited (status " + std::to_string(exit) + ") without a result" : why)
        << "\n";
    return exit != kExitOk ? exit : kExitFailed;
  }
  if (options.json) {
    out << json.dump() << "\n";
  } else {
    char line[160];
    std::snprintf(line, sizeof line, ": test accuracy %.4f on %s (%lld test samples), loss %.4f\n",
                  json["accuracy"].get<double>(), options.dataset.c_str(),
                  static_cast<long long>(json["samples"].get<int64_t>()), json["loss"].get<double>());
    out << options.model_path << line;
  }
  return kExitOk;
}

}  // namespace edgetrain::cli
