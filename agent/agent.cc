#include "agent/agent.h"

#include <fstream>
#include <sstream>

#include "agent/data/dataset.h"
#include "agent/progress_board.h"
#include "agent/solo_training.h"
#include "agent/telemetry/http_server.h"
#include "agent/torch/trainer.h"
#include "core/job_plan.h"

namespace edgetrain::agent {
namespace {

StatusOr<JobPlan> ReadPlan(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot read plan " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto plan = DecodeJobPlan(text.str());
  if (!plan.ok()) return plan.status().WithContext(path);
  return plan;
}

}  // namespace

int RunAgent(const AgentFlags& flags, std::ostream& lines, std::ostream& log, const std::atomic<bool>& cancel) {
  if (flags.role != Role::kCoordinator || flags.world != 1) {
    log << "edgetrain-agent: jobs of more than one agent are not supported yet (got --world="
        << flags.world << ")\n";
    return kExitInvalid;
  }
  auto plan = ReadPlan(flags.plan);
  if (!plan.ok()) {
    log << "edgetrain-agent: " << plan.status().message() << "\n";
    return kExitInvalid;
  }
  if (plan->job != flags.job) {
    log << "edgetrain-agent: the plan is for job \"" << plan->job << "\", not \"" << flags.job << "\"\n";
    return kExitInvalid;
  }

  ProgressBoard board;
  auto server = HttpServer::Start(flags.http);
  if (!server.ok()) {
    log << "edgetrain-agent: " << server.status().message() << "\n";
    return kExitFailed;
  }
  (*server)->Handle("/progress", [&board] { return HttpResponse{200, "application/json", EncodeJobProgress(board.Snapshot()) + "\n"}; });
  (*server)->Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  lines << "http " << (*server)->address() << std::endl;

  auto fail = [&](const Status& status) {
    board.Update([&](JobProgress& p) {
      p.state = JobState::kFailed;
      p.stop_reason = "failed: " + status.message();
    });
    log << "edgetrain-agent: " << status.message() << "\n";
    lines << "result " << EncodeJobProgress(board.Snapshot()) << std::endl;
    return kExitFailed;
  };

  const JobSpec& spec = plan->spec;
  log << "loading " << NameOf(spec.data.dataset) << "\n";
  auto data = LoadDataset(spec.data.dataset, DefaultDataSearchPath());
  if (!data.ok()) return fail(data.status());
  log << "loaded " << data->train.size() << " training and " << data->test.size() << " test samples\n";

  auto trainer = CreateTrainer({spec.model, spec.optimizer, data->train.info, spec.seed, plan->intra_op_threads});
  if (!trainer.ok()) return fail(trainer.status());
  log << "model " << NameOf(spec.model.kind) << ": " << (*trainer)->ParameterCount() << " parameters, "
      << plan->intra_op_threads << " intra-op thread(s)\n";

  RealClock clock;
  auto result = RunSoloTraining({spec, plan->output_dir}, **trainer, *data, clock, board, cancel);
  if (!result.ok()) return fail(result.status());
  lines << "result " << EncodeJobProgress(*result) << std::endl;
  return kExitOk;
}

}  // namespace edgetrain::agent
