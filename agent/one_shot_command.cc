#include "agent/one_shot_command.h"

#include "agent/termination_log.h"
#include "api/result_json.h"
#include "core/exit_codes.h"

namespace edgetrain::agent {

std::optional<int> ParseOneShot(CLI::App& app, const std::vector<std::string>& args, std::ostream& lines,
                                const std::function<int(const Status&)>& fail) {
  try {
    // CLI11 takes a vector's arguments last first.
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::CallForHelp&) {  // --help: what a person asked for, not a failure
    lines << app.help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    return fail(InvalidArgumentError(e.what()));
  }
  return std::nullopt;
}

int FailOneShot(std::string_view command, const Status& status, const std::string& termination_log,
                std::ostream& lines, std::ostream& log) {
  log << "edgetrain-agent " << command << ": " << status.message() << "\n";
  const std::string result = api::ResultJson({{"error", status.message()}});
  lines << "result " << result << std::endl;
  if (!termination_log.empty()) WriteTerminationLog(termination_log, FitTerminationMessage(result), log);
  return ExitCodeFor(status);
}

}  // namespace edgetrain::agent
