#include "agent/agent.h"

#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/data/dataset.h"
#include "agent/dp/coordinator.h"
#include "agent/dp/worker.h"
#include "agent/failure_report.h"
#include "agent/progress_board.h"
#include "agent/solo_training.h"
#include "agent/storage/atomic_file.h"
#include "agent/telemetry/http_server.h"
#include "agent/telemetry/metrics.h"
#include "agent/torch/trainer.h"
#include "agent/transport/transport.h"
#include "core/job_plan.h"
#include "core/partition.h"

namespace edgetrain::agent {
namespace {

StatusOr<JobPlan> ReadPlan(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return NotFoundError("cannot read plan " + path);
  auto plan = DecodeJobPlan(*text);
  if (!plan.ok()) return plan.status().WithContext(path);
  return plan;
}

constexpr const char* kPrometheusText = "text/plain; version=0.0.4; charset=utf-8";

// What every agent serves over HTTP — GET /metrics and /healthz, and for a
// coordinator /progress — announced with `http HOST:PORT`; and the coordinator's
// final `result` line.
class ProgressEndpoint {
 public:
  ProgressEndpoint(std::ostream& lines, std::ostream& log) : lines_(lines), log_(log) {}

  // `before_scrape` refreshes metrics that are read off the board, not pushed.
  Status Start(const std::string& address, bool serve_progress, std::function<void()> before_scrape = {}) {
    EDGETRAIN_ASSIGN_OR_RETURN(server_, HttpServer::Start(address));
    if (serve_progress) {
      server_->Handle("/progress", [this] {
        return HttpResponse{200, "application/json", EncodeJobProgress(board_.Snapshot()) + "\n"};
      });
    }
    server_->Handle("/metrics", [this, before_scrape] {
      if (before_scrape) before_scrape();
      return HttpResponse{200, kPrometheusText, metrics_.Render()};
    });
    server_->Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
    lines_ << "http " << server_->address() << std::endl;
    return Status::Ok();
  }
  ProgressBoard& board() { return board_; }
  MetricsRegistry& metrics() { return metrics_; }

  int Succeed(const JobProgress& result) {
    lines_ << "result " << EncodeJobProgress(result) << std::endl;
    return kExitOk;
  }
  int Fail(const Status& status) {
    board_.Update([&](JobProgress& p) {
      p.state = JobState::kFailed;
      p.stop_reason = "failed: " + status.message();
    });
    log_ << "edgetrain-agent: " << status.message() << "\n";
    lines_ << "result " << EncodeJobProgress(board_.Snapshot()) << std::endl;
    return ExitCodeFor(status);
  }

 private:
  std::ostream& lines_;
  std::ostream& log_;
  ProgressBoard board_;
  MetricsRegistry metrics_;
  std::unique_ptr<HttpServer> server_;
};

// A job of one agent: the whole job trained in this process.
int RunSoloAgent(const AgentFlags& flags, const JobPlan& plan, std::ostream& lines, std::ostream& log,
                 const std::atomic<bool>& cancel) {
  ProgressEndpoint endpoint(lines, log);
  // A job of one reports through the coordinator's metrics, read off its board.
  CoordinatorMetrics metrics(endpoint.metrics(), plan.job, 1);
  auto refresh = [&] {
    JobProgress p = endpoint.board().Snapshot();
    metrics.SetLoss(p.loss);
    metrics.SetSamples(p.samples);
    if (p.accuracy) metrics.SetAccuracy(*p.accuracy);
    metrics.SetEnergy(p.energy_joules.value_or(0));
  };
  if (Status started = endpoint.Start(flags.http, /*serve_progress=*/true, refresh); !started.ok()) {
    return ReportFailure(started, lines, log);
  }
  const JobSpec& spec = plan.spec;
  log << "loading " << NameOf(spec.data.dataset) << "\n";
  auto data = LoadDataset(spec.data.dataset, SearchPathWith(flags.data_dir));
  if (!data.ok()) return endpoint.Fail(data.status());
  log << "loaded " << data->train.size() << " training and " << data->test.size() << " test samples\n";
  auto trainer = CreateTrainer({spec.model, spec.optimizer, data->train.info, spec.seed, plan.intra_op_threads});
  if (!trainer.ok()) return endpoint.Fail(trainer.status());
  log << "model " << NameOf(spec.model.kind) << ": " << (*trainer)->ParameterCount() << " parameters, "
      << plan.intra_op_threads << " intra-op thread(s)\n";
  SoloTrainingOptions options{spec, plan.output_dir, {}, plan.slowdown};
  if (plan.shard) {
    options.samples = PartitionSamples(data->train.labels, data->train.info.classes, plan.shard->parts,
                                       spec.data.partition, spec.seed)[plan.shard->part];
    log << "training on part " << plan.shard->part << " of " << plan.shard->parts << ": " << options.samples.size()
        << " samples\n";
  }
  RealClock clock;
  auto result = RunSoloTraining(options, **trainer, *data, clock, endpoint.board(), cancel);
  if (!result.ok()) return endpoint.Fail(result.status());
  return endpoint.Succeed(*result);
}

// The coordinator of a data-parallel team: ROG's parameter server. It prints
// `listening HOST:PORT` once workers can connect.
int RunCoordinatorAgent(const AgentFlags& flags, const JobPlan& plan, std::ostream& lines, std::ostream& log,
                        const std::atomic<bool>& cancel) {
  ProgressEndpoint endpoint(lines, log);
  if (Status started = endpoint.Start(flags.http, /*serve_progress=*/true); !started.ok()) {
    return ReportFailure(started, lines, log);
  }
  const JobSpec& spec = plan.spec;
  auto data = LoadDataset(spec.data.dataset, SearchPathWith(flags.data_dir));
  if (!data.ok()) return endpoint.Fail(data.status());
  auto model = CreateTrainer({spec.model, spec.optimizer, data->test.info, spec.seed, plan.intra_op_threads});
  if (!model.ok()) return endpoint.Fail(model.status());

  // The coordinator evaluates on the test set and needs only the size of the
  // training set, whose samples are the workers': they go.
  const int64_t train_size = data->train.size();
  data->train = {};
  RealClock clock;
  Coordinator coordinator(plan, **model, data->test, train_size, clock, endpoint.board(), log, endpoint.metrics());
  if (Status restored = coordinator.Restore(); !restored.ok()) return endpoint.Fail(restored);
  auto server = StartTrainingServer(flags.listen, TransportSecurity{}, coordinator);
  if (!server.ok()) return endpoint.Fail(server.status());
  log << "coordinator: " << spec.parallelism.workers << " worker(s), policy " << NameOf(spec.sync.policy)
      << ", a model of " << (*model)->ParameterCount() << " parameters\n";
  lines << "listening " << (*server)->address() << std::endl;

  auto result = coordinator.Run(cancel);
  (*server)->Shutdown();
  if (!result.ok()) return endpoint.Fail(result.status());
  return endpoint.Succeed(*result);
}

// A worker of a data-parallel team: its partition, its gradients, its link.
int RunWorkerAgent(const AgentFlags& flags, const JobPlan& plan, std::ostream& lines, std::ostream& log,
                   const std::atomic<bool>& cancel) {
  if (flags.coordinator.empty()) {
    return ReportFailure(InvalidArgumentError("--role=worker needs --coordinator=HOST:PORT"), lines, log);
  }
  ProgressEndpoint endpoint(lines, log);
  if (Status started = endpoint.Start(flags.http, /*serve_progress=*/false); !started.ok()) {
    return ReportFailure(started, lines, log);
  }
  const JobSpec& spec = plan.spec;
  auto data = LoadDataset(spec.data.dataset, SearchPathWith(flags.data_dir));
  if (!data.ok()) return ReportFailure(data.status(), lines, log);
  auto trainer = CreateTrainer({spec.model, spec.optimizer, data->train.info, spec.seed, plan.intra_op_threads});
  if (!trainer.ok()) return ReportFailure(trainer.status(), lines, log);
  data->test = {};  // a worker never evaluates
  RealClock clock;
  WorkerOptions options;
  options.rank = flags.rank;
  options.coordinator = flags.coordinator;
  options.metrics = &endpoint.metrics();
  log << "worker " << flags.rank << ": training on its part of " << NameOf(spec.data.dataset) << " with coordinator "
      << flags.coordinator << "\n";
  auto summary = RunWorker(plan, options, **trainer, data->train, clock, log, cancel);
  if (!summary.ok()) return ReportFailure(summary.status().WithContext("worker " + std::to_string(flags.rank)), lines, log);
  nlohmann::json result = {{"rank", flags.rank},
                           {"iterations", summary->iterations},
                           {"samples", summary->samples},
                           {"computeSeconds", summary->compute_s},
                           {"stallSeconds", summary->stall_s},
                           {"wallSeconds", summary->wall_s},
                           {"rowsSent", summary->rows_sent},
                           {"bytesSent", summary->bytes_sent},
                           {"reconnects", summary->reconnects},
                           {"energyJoules", summary->energy_joules},
                           {"stopReason", summary->stop_reason}};
  lines << "result " << result.dump() << std::endl;
  return kExitOk;
}

}  // namespace

int RunAgent(const AgentFlags& flags, std::ostream& lines, std::ostream& log, const std::atomic<bool>& cancel) {
  if (flags.role == Role::kStage) {
    return ReportFailure(UnimplementedError("--role=stage (pipeline parallelism) is not supported yet"), lines, log);
  }
  auto plan = ReadPlan(flags.plan);
  if (!plan.ok()) return ReportFailure(InvalidArgumentError(plan.status().message()), lines, log);
  if (plan->job != flags.job) {
    return ReportFailure(InvalidArgumentError("the plan is for job \"" + plan->job + "\", not \"" + flags.job + "\""),
                         lines, log);
  }
  if (flags.world != plan->spec.parallelism.workers) {
    return ReportFailure(InvalidArgumentError("--world=" + std::to_string(flags.world) + " but the plan has " +
                                              std::to_string(plan->spec.parallelism.workers) + " worker(s)"),
                         lines, log);
  }
  // A plan that places workers is a data-parallel team; one without is a job of one.
  const bool team = !plan->workers.empty();
  if (flags.role == Role::kWorker) {
    if (!team) return ReportFailure(InvalidArgumentError("--role=worker needs a plan that places workers"), lines, log);
    return RunWorkerAgent(flags, *plan, lines, log, cancel);
  }
  return team ? RunCoordinatorAgent(flags, *plan, lines, log, cancel) : RunSoloAgent(flags, *plan, lines, log, cancel);
}

}  // namespace edgetrain::agent
