#include "agent/agent_flags.h"

#include <charconv>

namespace edgetrain::agent {
namespace {

Status ParseInt(const std::string& name, const std::string& value, int min, int& out) {
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return InvalidArgumentError("--" + name + ": expected an integer, got \"" + value + "\"");
  }
  if (out < min) return InvalidArgumentError("--" + name + ": must be >= " + std::to_string(min));
  return Status::Ok();
}

}  // namespace

StatusOr<AgentFlags> ParseAgentFlags(const std::vector<std::string>& args) {
  AgentFlags flags;
  bool has_role = false;
  for (const std::string& arg : args) {
    if (arg.rfind("--", 0) != 0 || arg.find('=') == std::string::npos) {
      return InvalidArgumentError("expected --name=value, got \"" + arg + "\"");
    }
    std::string name = arg.substr(2, arg.find('=') - 2);
    std::string value = arg.substr(arg.find('=') + 1);
    if (name == "role") {
      if (value == "coordinator") flags.role = Role::kCoordinator;
      else if (value == "worker") flags.role = Role::kWorker;
      else if (value == "stage") flags.role = Role::kStage;
      else return InvalidArgumentError("--role: must be coordinator, worker or stage, got \"" + value + "\"");
      has_role = true;
    } else if (name == "job") {
      flags.job = value;
    } else if (name == "rank") {
      EDGETRAIN_RETURN_IF_ERROR(ParseInt(name, value, 0, flags.rank));
    } else if (name == "world") {
      EDGETRAIN_RETURN_IF_ERROR(ParseInt(name, value, 1, flags.world));
    } else if (name == "coordinator") {
      flags.coordinator = value;
    } else if (name == "plan") {
      flags.plan = value;
    } else if (name == "listen") {
      flags.listen = value;
    } else if (name == "http") {
      flags.http = value;
    } else {
      return InvalidArgumentError("unknown flag --" + name);
    }
  }
  if (!has_role) return InvalidArgumentError("--role is required");
  if (flags.job.empty()) return InvalidArgumentError("--job is required");
  if (flags.plan.empty()) return InvalidArgumentError("--plan is required");
  if (flags.rank >= flags.world) {
    return InvalidArgumentError("--rank must be below --world (" + std::to_string(flags.rank) +
                                " >= " + std::to_string(flags.world) + ")");
  }
  return flags;
}

}  // namespace edgetrain::agent
