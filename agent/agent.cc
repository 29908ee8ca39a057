#include "agent/agent.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/credentials_watch.h"
#include "agent/data/dataset.h"
#include "agent/dp/coordinator.h"
#include "agent/dp/coordinator_service.h"
#include "agent/dp/worker.h"
#include "agent/emulated_device.h"
#include "agent/failure_report.h"
#include "agent/job_driver.h"
#include "agent/pipeline/pipeline_head.h"
#include "agent/pipeline/stage_runner.h"
#include "agent/plan_watcher.h"
#include "agent/progress_board.h"
#include "agent/refusal_report.h"
#include "agent/solo_engine.h"
#include "agent/storage/atomic_file.h"
#include "agent/telemetry/metrics.h"
#include "agent/torch/stage_trainer.h"
#include "agent/torch/trainer.h"
#include "agent/transport/transport.h"
#include "api/result_json.h"
#include "core/bandwidth_trace.h"
#include "core/job_plan.h"
#include "core/number_text.h"
#include "core/partition.h"
#include "core/stream_rate.h"
#include "http/http_server.h"
#include "http/socket_address.h"
#include "pki/job_identity.h"
#include "pki/tls_folder.h"

namespace edgetrain::agent {
namespace {

constexpr const char* kPrometheusText = "text/plain; version=0.0.4; charset=utf-8";

StatusOr<JobPlan> ReadPlan(const std::string& path) {
  // The system's reason kept, and its code: a plan not there yet (a volume
  // still mounting) is a failure a restart may mend, exit 1, where a plan
  // that does not decode is wrong input, exit 2. Said as "cannot read plan
  // PATH" alone, both exited 2 (found in review).
  auto text = ReadWholeFile(path);
  std::error_code ec;
  if (!text.ok() && std::filesystem::is_directory(path, ec)) {
    return InvalidArgumentError("--plan: " + path + " is a folder, not a plan file");
  }
  if (!text.ok()) return text.status().WithContext("--plan");
  auto plan = DecodeJobPlan(*text);
  if (!plan.ok()) return plan.status().WithContext(path);
  return plan;
}

// The emulated link of a worker's slot: its trace, shifted and scaled. A trace
// that does not load fails the run: an unshaped link would measure something
// else than what was asked.
StatusOr<std::optional<BandwidthTrace>> EmulatedLink(const JobPlan& plan, int rank) {
  if (static_cast<size_t>(rank) >= plan.workers.size() || !plan.workers[rank].link) {
    return std::optional<BandwidthTrace>();
  }
  const LinkSpec& link = *plan.workers[rank].link;
  auto text = ReadWholeFile(link.trace_path);
  if (!text.ok()) return FailedPreconditionError("worker " + std::to_string(rank) + "'s link: " + text.status().message());
  auto trace = BandwidthTrace::Parse(*text, link.trace_path);
  if (!trace.ok()) return trace.status().WithContext("worker " + std::to_string(rank) + "'s link");
  return std::optional<BandwidthTrace>(trace->Shifted(link.offset_s).Scaled(link.scale));
}

bool KernelShaped(const JobPlan& plan, int rank) {
  return static_cast<size_t>(rank) < plan.workers.size() && plan.workers[rank].link &&
         plan.workers[rank].link->kernel_shaped;
}

// The links the coordinator shapes itself (the downlinks of every worker
// whose link the agents emulate); none for a link the kernel shapes.
StatusOr<std::vector<std::optional<BandwidthTrace>>> ShapedDownlinks(const JobPlan& plan) {
  std::vector<std::optional<BandwidthTrace>> links;
  for (int w = 0; w < plan.spec.parallelism.workers; ++w) {
    EDGETRAIN_ASSIGN_OR_RETURN(std::optional<BandwidthTrace> trace, EmulatedLink(plan, w));
    links.push_back(KernelShaped(plan, w) ? std::nullopt : std::move(trace));
  }
  return links;
}

// What every agent serves over HTTP — GET /metrics and /healthz, and for a
// job's coordinator /progress — announced with `http HOST:PORT`.
class Endpoint {
 public:
  Status Start(const std::string& address, bool serve_progress, std::ostream& lines) {
    EDGETRAIN_ASSIGN_OR_RETURN(server_, http::HttpServer::Start(address));
    if (serve_progress) {
      server_->Handle("/progress", [this] {
        // The job driver's clock is the real one: what it published ages by it.
        return http::HttpResponse{200, "application/json", EncodeJobProgress(board_.SnapshotAt(RealClock().Now())) + "\n"};
      });
    }
    server_->Handle("/metrics", [this] { return http::HttpResponse{200, kPrometheusText, metrics_.Render()}; });
    server_->Handle("/healthz", [] { return http::HttpResponse{200, "text/plain", "ok\n"}; });
    lines << "http " << server_->address() << std::endl;
    return Status::Ok();
  }
  ProgressBoard& board() { return board_; }
  MetricsRegistry& metrics() { return metrics_; }

 private:
  ProgressBoard board_;
  MetricsRegistry metrics_;
  std::unique_ptr<http::HttpServer> server_;
};

// What every role starts from: its plan, endpoint, data and model.
struct AgentSetup {
  const AgentFlags& flags;
  const JobPlan& plan;
  TransportSecurity security;  // how this team's agents talk (SecurityOf)
  Endpoint& endpoint;
  TrainTestSplit data;
  std::unique_ptr<Trainer> trainer;
  std::ostream& lines;
  std::ostream& log;
  // Of the training set as read, before a coordinator or a head lets it go:
  // labels it holds no sample of (LabelsWithoutSamplesWarning); empty: none.
  std::string labels_without_samples = {};
};

// A job's result line, the launch contract's last: its final progress, or
// what failed. Printed whatever happened.
int ReportJob(const StatusOr<JobProgress>& result, Endpoint& endpoint, std::ostream& lines, std::ostream& log) {
  if (result.ok()) {
    lines << "result " << EncodeJobProgress(*result) << std::endl;
    return kExitOk;
  }
  endpoint.board().Update([&](JobProgress& p) {
    p.state = JobState::kFailed;
    p.stop_reason = StopReason::kFailed;
    p.error = result.status().message();
  });
  return ReportFailure(result.status(), lines, log, endpoint.board().Snapshot());
}

// What only the data read says: a built-in set's size edgetrain run knows
// before it starts (cli/run_plan.cc), one from files is known once read.
// `holders`: among how many its training samples are dealt.
void WarnOfItsData(const AgentSetup& s, int64_t train_size, int holders, JobDriver& driver) {
  // A team's coordinator and a pipeline's head hold the model the job saves
  // and train none of it: a batch norm's running statistics, which only
  // training moves, are settled on a share of the training set before each
  // evaluation (SettleSamples), not those the workers reached; said, as the
  // saved model's statistics are then of another pass over other batches.
  if (!s.plan.workers.empty() && s.trainer && s.trainer->HoldsBuffers()) {
    driver.Warn("the module holds buffers (a batch norm's running statistics, say), which only training moves: "
                "the model a team or a pipeline evaluates and saves has them settled by passes over 32 of its "
                "batches of training samples before each evaluation and save, not those its workers' training "
                "reached");
  }
  if (s.trainer && !s.trainer->Caution().empty()) driver.Warn(s.trainer->Caution());
  if (!s.plan.spec.data.files) return;
  if (std::string warning = BatchOverShareWarning(train_size, holders, s.plan.spec.data.batch_size); !warning.empty()) {
    driver.Warn(warning);
  }
  if (!s.labels_without_samples.empty()) driver.Warn(s.labels_without_samples);
}

// A job that ended for want of peers (Unavailable: none came, or a stage did
// not) with what its server refused, when it refused any; else, over mutual
// TLS, where the refusal may be: a worker that refused this agent's
// certificate left nothing on this side, whose "no worker connected" sent a
// user to look at the network (a user's trial).
StatusOr<JobProgress> WithRefusals(StatusOr<JobProgress> result, const RefusalReport& refusals, bool tls) {
  if (result.ok() || result.status().code() != StatusCode::kUnavailable) return result;
  const std::string refused = refusals.Summary();
  if (!refused.empty()) return Status(result.status().code(), std::string(result.status().message()) + "; " + refused);
  if (!tls || !result.status().message().starts_with("no worker connected")) return result;
  return Status(result.status().code(), std::string(result.status().message()) +
                                            "; this agent refused none for its certificate, and a peer that "
                                            "refused this agent's says why in its own log");
}

// A job of one agent: the whole job trained in this process.
StatusOr<JobProgress> RunSoloRole(AgentSetup& s, const std::atomic<bool>& cancel) {
  const JobSpec& spec = s.plan.spec;
  std::vector<int64_t> samples;
  if (s.plan.shard) {
    samples = PartitionSamples(s.data.train.labels, s.data.train.info.classes, s.plan.shard->parts,
                               spec.data.partition, spec.seed)[s.plan.shard->part];
    s.log << "training on part " << s.plan.shard->part << " of " << s.plan.shard->parts << ": " << samples.size()
          << " samples\n";
    // An empty part is refused: the engine takes no samples for the whole
    // set, and a part of none trained a whole epoch of every sample (found
    // in review), the baseline a bench measured with it not the part's.
    if (samples.empty()) {
      return InvalidArgumentError("part " + std::to_string(s.plan.shard->part) + " of " +
                                  std::to_string(s.plan.shard->parts) + " holds none of the " +
                                  std::to_string(s.data.train.size()) + " training samples: fewer parts");
    }
  }
  RealClock clock;
  // A job of one is its own worker: no per-worker series of a team.
  CoordinatorMetrics metrics(s.endpoint.metrics(), s.plan.job, 0, spec.budget.energy_joules);
  metrics.SetActiveWorkers(1);
  SoloEngine engine(spec, *s.trainer, s.data, std::move(samples),
                    {s.plan.slowdown, s.plan.power, PassCpuClock(s.plan.intra_op_threads)}, clock);
  JobDriver driver(s.plan, engine, clock, s.endpoint.board(), metrics, s.log);
  driver.SetPublishEvery(s.flags.progress_every);
  driver.NameClasses(s.data.test.class_names);
  WarnOfItsData(s, s.data.train.size(), s.plan.shard ? s.plan.shard->parts : 1, driver);
  return driver.Run(cancel);
}

// What a coordinator or a head keeps of the training set, which it trains on
// none of, to settle its model's buffers on before it evaluates and saves
// (Trainer::SettleBuffers): 32 of the job's batches, spread over the set.
// A batch norm's default momentum of 0.1 then leaves 0.9^32, 3%, of the
// statistics before. Nothing for a model without buffers.
Dataset SettleSamples(const AgentSetup& s) {
  constexpr int64_t kSettleBatches = 32;
  if (!s.trainer || !s.trainer->HoldsBuffers()) return {};
  return SpreadSamples(s.data.train, kSettleBatches * s.plan.spec.data.batch_size);
}

// The coordinator of a data-parallel team: ROG's parameter server. It prints
// `listening HOST:PORT` once workers can connect.
StatusOr<JobProgress> RunCoordinatorRole(AgentSetup& s, const std::atomic<bool>& cancel) {
  const JobSpec& spec = s.plan.spec;
  // The coordinator evaluates on the test set and needs only the size of the
  // training set, whose samples are the workers': they go, unless it keeps
  // the pool injected samples come from.
  const int64_t train_size = s.data.train.size();
  // The workers' parts as each of them deals them, from the same labels and
  // seed: a skewed one's sizes are known only here, before the set goes.
  std::string small_parts;
  if (!spec.data.stream || !spec.data.stream->directory) {
    small_parts = SmallPartsWarning(PartitionSamples(s.data.train.labels, s.data.train.info.classes,
                                                     spec.parallelism.workers, spec.data.partition, spec.seed),
                                    spec.data.partition, spec.data.batch_size);
  }
  Dataset settle = SettleSamples(s);
  if (!spec.data.injection) s.data.train = {};
  EDGETRAIN_ASSIGN_OR_RETURN(std::vector<std::optional<BandwidthTrace>> downlinks, ShapedDownlinks(s.plan));
  RealClock clock;
  CoordinatorMetrics metrics(s.endpoint.metrics(), s.plan.job, spec.parallelism.workers, spec.budget.energy_joules);
  CoordinatorTimings timings;
  timings.first_worker_timeout = s.flags.first_worker_timeout;
  timings.first_push_deadline = s.flags.first_push_deadline;
  timings.stop_grace = s.flags.stop_grace;
  Coordinator coordinator(s.plan, *s.trainer, s.data.test, train_size, clock, s.log, metrics, timings);
  coordinator.SettleBuffersOn(std::move(settle));
  CoordinatorService service(s.plan, coordinator, clock, std::move(downlinks));
  if (spec.data.injection) service.InjectFrom(s.data.train);
  JobDriver driver(s.plan, coordinator, clock, s.endpoint.board(), metrics, s.log);
  driver.SetPublishEvery(s.flags.progress_every);
  // The test set's, the train set's alike (ReadImageFolders): the train set
  // was dropped above, its workers' to read.
  driver.NameClasses(s.data.test.class_names);
  WarnOfItsData(s, train_size, spec.parallelism.workers, driver);
  if (!small_parts.empty()) driver.Warn(small_parts);
  ConnectionMetrics connections(s.endpoint.metrics(), s.plan.job);
  RefusalReport refusals("coordinator", s.log, connections);
  EDGETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<TrainingServer> server,
                             StartTrainingServer(s.flags.listen, s.security, service, refusals));
  s.log << "coordinator: " << spec.parallelism.workers << " worker(s), policy " << NameOf(spec.sync.policy)
        << ", a model of " << s.trainer->ParameterCount() << " parameters\n";
  s.lines << "listening " << server->address() << std::endl;
  // A re-plan reaches a running coordinator through its plan file.
  PlanWatcher watcher(s.flags.plan, s.plan.generation, clock, s.flags.plan_poll, [&](const JobPlan& next) {
    EDGETRAIN_ASSIGN_OR_RETURN(auto links, ShapedDownlinks(next));
    return service.AdoptPlan(next, links);
  }, s.log);
  auto result = driver.Run(cancel);
  server->Shutdown();
  return WithRefusals(std::move(result), refusals, s.security.tls);
}


// A worker or stage that stopped because this agent was signalled, not
// because its coordinator said the job is over: not a success. It exited 0
// before, and a run whose stage was SIGTERMed went on without a word (a new
// user's trial); 143 (130 for SIGINT: main.cc) lets its supervisor say so.
bool StoppedFromOutside(const std::string& stop_reason, const std::atomic<bool>& cancel) {
  return cancel.load() && stop_reason == "cancelled";
}
// A worker of a data-parallel team: its partition, its gradients, its link.
int RunWorkerRole(AgentSetup& s, const std::atomic<bool>& cancel) {
  s.data.test = {};  // a worker never evaluates
  WorkerOptions options;
  options.rank = s.flags.rank;
  auto connector = GrpcConnector(s.flags.coordinator, s.security, s.flags.keepalive);
  options.coordinator = connector.get();
  options.metrics = &s.endpoint.metrics();
  options.timings.connect_attempt = s.flags.connect_attempt;
  options.thread_cpu_seconds = PassCpuClock(s.plan.intra_op_threads);
  auto fail = [&](Status status) {
    // Refused by the coordinator (another job, an older generation): this
    // worker's plan is not the job's, which is bad input, as bad flags are.
    if (status.code() == StatusCode::kFailedPrecondition) status = InvalidArgumentError(status.message());
    return ReportFailure(status.WithContext("worker " + std::to_string(s.flags.rank)), s.lines, s.log);
  };
  auto uplink = EmulatedLink(s.plan, s.flags.rank);
  if (!uplink.ok()) return fail(uplink.status());
  if (*uplink) options.link_peak_mbps = (*uplink)->PeakMbps();
  if (!KernelShaped(s.plan, s.flags.rank)) options.uplink = std::move(*uplink);
  auto stream_rate = StreamRateOf(s.plan.spec, s.plan.workers, s.flags.rank, ReadWholeFile);
  if (!stream_rate.ok()) return fail(stream_rate.status());
  options.stream_rate = std::move(*stream_rate);
  s.log << "worker " << s.flags.rank << ": training on its part of " << DescribeData(s.plan.spec.data)
        << " with coordinator " << s.flags.coordinator << "\n";
  RealClock clock;
  auto summary = RunWorker(s.plan, options, *s.trainer, s.data.train, clock, s.log, cancel);
  if (!summary.ok()) return fail(summary.status());
  nlohmann::json result = {{"rank", s.flags.rank},
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
  s.lines << "result " << api::ResultJson(result) << std::endl;
  return StoppedFromOutside(summary->stop_reason, cancel) ? kExitTerminated : kExitOk;
}

// The head of a pipeline (docs/pipeline.md): the job's driver, and the relay
// between its stages. It prints `listening HOST:PORT` once stages can connect.
StatusOr<JobProgress> RunHeadRole(AgentSetup& s, const std::atomic<bool>& cancel) {
  const JobSpec& spec = s.plan.spec;
  const int64_t train_size = s.data.train.size();
  Dataset settle = SettleSamples(s);
  s.data.train = {};  // the stages read their samples; the head only evaluates
  // What each layer holds, and so each stage (to deal a checkpoint out to
  // them, and to move layers between them): parameter tensors, from the same
  // layers they build.
  PipelineHead::Rebalancing rebalancing;
  // Stages given (edgetrain run --stages, spec.parallelism.stages) stay as
  // given: a comparison's even split ended with layers moved (a new user's
  // trial), no longer what was asked.
  rebalancing.every = s.plan.pipeline->stages_given ? 0 : s.flags.rebalance_every;
  rebalancing.within = s.flags.rebalance_within;
  for (int l = 0; l < s.plan.pipeline->stages.back().end_layer; ++l) {
    EDGETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<StageTrainer> t,
                               CreateStageTrainer({spec.model, s.data.test.info, spec.seed, s.plan.intra_op_threads,
                                                   l, l + 1, SampleShape(spec.data)}));
    rebalancing.layer_shapes.push_back(t->ParameterShapes());
  }
  StageShapes shapes;
  for (const PipelineStagePlan& stage : s.plan.pipeline->stages) {
    shapes.emplace_back();
    for (int l = stage.first_layer; l < stage.end_layer; ++l) {
      shapes.back().insert(shapes.back().end(), rebalancing.layer_shapes[l].begin(), rebalancing.layer_shapes[l].end());
    }
  }
  RealClock clock;
  std::set<int> devices;  // those the plan gives a stage: the others get no pod
  for (const PipelineStagePlan& stage : s.plan.pipeline->stages) devices.insert(stage.ranks.begin(), stage.ranks.end());
  CoordinatorMetrics metrics(s.endpoint.metrics(), s.plan.job, static_cast<int>(devices.size()),
                             spec.budget.energy_joules, /*links=*/false);
  PipelineHead head(s.plan, *s.trainer, s.data.test, train_size, std::move(shapes), clock, s.log);
  head.SettleBuffersOn(std::move(settle));
  head.SetRebalancing(std::move(rebalancing));
  head.SetHungPasses({s.flags.hung_pass_factor, s.flags.hung_pass_floor});
  head.SetStragglers({s.flags.straggler_factor, s.flags.straggler_rejoin_after});
  head.SetRestartGather(s.flags.RestartGather());
  std::vector<int> stage_of_rank;
  for (size_t r = 0; r < s.plan.workers.size(); ++r) {
    auto stage = StageOfRank(*s.plan.pipeline, static_cast<int>(r));
    stage_of_rank.push_back(stage.ok() ? *stage : -1);
  }
  PipelineMetrics pipeline_metrics(s.endpoint.metrics(), s.plan.job, stage_of_rank);
  head.SetMetrics(&pipeline_metrics);
  JobDriver driver(s.plan, head, clock, s.endpoint.board(), metrics, s.log);
  driver.SetPublishEvery(s.flags.progress_every);
  driver.NameClasses(s.data.test.class_names);  // the train set's, dropped above
  WarnOfItsData(s, train_size, 1, driver);  // a pipeline's batch is the whole set's
  ConnectionMetrics connections(s.endpoint.metrics(), s.plan.job);
  RefusalReport refusals("head", s.log, connections);
  EDGETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<TrainingServer> server,
                             StartTrainingServer(s.flags.listen, s.security, head, refusals, s.flags.keepalive));
  s.log << "head: " << CountOf(static_cast<int64_t>(s.plan.pipeline->stages.size()), "stage", "stages") << " on "
        << CountOf(static_cast<int64_t>(s.plan.workers.size()), "device", "devices") << ", "
        << CountOf(s.plan.pipeline->micro_batches, "micro-batch", "micro-batches") << " a step, a model of "
        << s.trainer->ParameterCount() << " parameters\n";
  s.lines << "listening " << server->address() << std::endl;
  auto result = driver.Run(cancel);
  server->Shutdown();
  return WithRefusals(std::move(result), refusals, s.security.tls);
}

// A stage of a pipeline: its layers of the model, on its share of each
// micro-batch. Cut off by the head (taken for lost while silent: paused, its
// link out a while), it says hello again with a fresh trainer of its planned
// layers: with replay on, the head takes it back between steps and brings
// it the stages' state (docs/pipeline.md); a head that refuses, or is gone
// past spec.faultTolerance.reachGrace, ends it as before.
int RunStageRole(AgentSetup& s, const std::atomic<bool>& cancel) {
  s.data.test = {};  // a stage never evaluates
  auto fail = [&](Status status) {
    if (status.code() == StatusCode::kFailedPrecondition) status = InvalidArgumentError(status.message());
    return ReportFailure(status.WithContext("stage agent " + std::to_string(s.flags.rank)), s.lines, s.log);
  };
  auto index = StageOfRank(*s.plan.pipeline, s.flags.rank);
  if (!index.ok()) return fail(index.status());
  const PipelineStagePlan& mine = s.plan.pipeline->stages[*index];
  auto trainer = CreateStageTrainer({s.plan.spec.model, s.data.train.info, s.plan.spec.seed,
                                     s.plan.intra_op_threads, mine.first_layer, mine.end_layer,
                                     SampleShape(s.plan.spec.data)});
  if (!trainer.ok()) return fail(trainer.status());
  StageOptions options;
  options.rank = s.flags.rank;
  options.connect_attempt = s.flags.connect_attempt;
  options.connect_timeout = s.plan.spec.fault_tolerance.ReachGrace();
  options.heartbeat = s.flags.heartbeat;
  // A lost neighbour's layers, taken on: this device's trainer of more layers.
  options.take_layers = [&s](int first, int end) {
    return CreateStageTrainer({s.plan.spec.model, s.data.train.info, s.plan.spec.seed, s.plan.intra_op_threads,
                               first, end, SampleShape(s.plan.spec.data)});
  };
  // One intra-op thread: the passes run on the computing thread, whose CPU
  // clock then measures the device's work without its neighbours' on shared
  // cores.
  options.thread_cpu_seconds = PassCpuClock(s.plan.intra_op_threads);
  DeviceEnergyMetrics energy_metrics(s.endpoint.metrics(), s.plan.job, s.flags.rank);
  options.energy_metrics = &energy_metrics;
  auto connector = GrpcConnector(s.flags.coordinator, s.security, s.flags.keepalive);
  options.head = connector.get();
  auto uplink = EmulatedLink(s.plan, s.flags.rank);
  if (!uplink.ok()) return fail(uplink.status());
  if (!KernelShaped(s.plan, s.flags.rank)) options.uplink = std::move(*uplink);
  s.log << "stage " << *index + 1 << " (layers " << mine.first_layer << "-" << mine.end_layer - 1 << ", "
        << (*trainer)->ParameterCount() << " parameters) with head " << s.flags.coordinator << "\n";
  RealClock clock;
  // Its first trainer, built above to say its size, is the first session's.
  std::unique_ptr<StageTrainer> first = std::move(*trainer);
  const TrainerMaker fresh_trainer = [&]() -> StatusOr<std::unique_ptr<StageTrainer>> {
    if (first) return std::move(first);
    return CreateStageTrainer({s.plan.spec.model, s.data.train.info, s.plan.spec.seed, s.plan.intra_op_threads,
                               mine.first_layer, mine.end_layer, SampleShape(s.plan.spec.data)});
  };
  auto summary =
      RunStageRejoining(s.plan, options, fresh_trainer, s.data.train, clock, s.log, cancel,
                        // A head lost with its node is placed anew, as a team's coordinator is: its
                        // stages wait for it as long as a team's workers wait for theirs.
                        std::max(s.flags.head_return_grace, s.plan.spec.fault_tolerance.CoordinatorPatience()));
  if (!summary.ok()) return fail(summary.status());
  nlohmann::json result = {{"rank", s.flags.rank},
                           {"stage", *index},
                           {"steps", summary->steps},
                           {"computeSeconds", summary->compute_s},
                           {"idleSeconds", summary->idle_s},
                           {"activationBytesSent", summary->activation_bytes_sent},
                           {"stopReason", summary->stop_reason}};
  s.lines << "result " << api::ResultJson(result) << std::endl;
  return StoppedFromOutside(summary->stop_reason, cancel) ? kExitTerminated : kExitOk;
}

// Which part this agent plays, from its flags and its plan: a plan that
// places workers is a data-parallel team, one with a pipeline a pipeline, one
// without either a job of one.
enum class Part { kSolo, kCoordinator, kWorker, kHead, kStage };

StatusOr<Part> PartOf(const AgentFlags& flags, const JobPlan& plan) {
  if (plan.job != flags.job) {
    return InvalidArgumentError("the plan is for job \"" + plan.job + "\", not \"" + flags.job + "\"");
  }
  if (flags.world != plan.spec.parallelism.workers) {
    return InvalidArgumentError("--world=" + std::to_string(flags.world) + " but the plan has " +
                                std::to_string(plan.spec.parallelism.workers) + " worker(s)");
  }
  const bool team = !plan.workers.empty();
  switch (flags.role) {
    case Role::kStage:
      if (!plan.pipeline) return InvalidArgumentError("--role=stage needs a plan with a pipeline");
      if (flags.coordinator.empty()) return InvalidArgumentError("--role=stage needs --coordinator=HOST:PORT (the head)");
      return Part::kStage;
    case Role::kWorker:
      if (plan.pipeline) return InvalidArgumentError("the plan is a pipeline's: its agents are --role=stage");
      if (!team) return InvalidArgumentError("--role=worker needs a plan that places workers");
      if (flags.coordinator.empty()) return InvalidArgumentError("--role=worker needs --coordinator=HOST:PORT");
      return Part::kWorker;
    case Role::kCoordinator:
      if (plan.pipeline) return Part::kHead;
      return team ? Part::kCoordinator : Part::kSolo;
  }
  return InvalidArgumentError("unknown role");
}

// How this agent's team talks. A team's agents need the job's credentials
// (--tls-dir) or a person's --insecure, said loudly; a job of one talks to no
// one. Credentials that cannot be read fail the agent here, before any data
// is loaded; its own certificate being one the job would refuse (expired, of
// another job) is said too, and the coordinator's refusal is left to say it
// again where the job is watched.
StatusOr<TransportSecurity> SecurityOf(const AgentFlags& flags, Part part, std::ostream& log) {
  if (part == Part::kSolo) return TransportSecurity::Insecure();
  if (flags.insecure) {
    log << "WARNING: --insecure: this team's gradients and model travel in plaintext, and anyone who reaches "
        << (flags.role == Role::kCoordinator ? "its port" : "the coordinator's port")
        << " can join the job or impersonate its coordinator; for a run on loopback only\n";
    // Said again, louder, where it is not on loopback (a security review
    // listened on 0.0.0.0 with only the line above).
    const bool coordinator = flags.role == Role::kCoordinator;
    const std::string& peer = coordinator ? flags.listen : flags.coordinator;
    StatusOr<http::HostPort> at = http::SplitHostPort(peer);
    if (at.ok() && !http::IsLoopbackHost(at->host)) {
      log << "WARNING: --insecure " << (coordinator ? "--listen=" : "--coordinator=") << peer
          << " is not a loopback address: "
          << (coordinator ? "any host that reaches it can push gradients into this job"
                          : "this worker's gradients and the model cross the network in plaintext")
          << "; give the job's credentials (--tls-dir) instead\n";
    }
    return TransportSecurity::Insecure();
  }
  if (flags.tls_dir.empty()) {
    return InvalidArgumentError("a team's agents talk over mutual TLS: give --tls-dir=DIR with the job's ca.crt, "
                                "tls.crt and tls.key, or --insecure for a run on loopback");
  }
  // What another user could swap is no credential: a folder every user
  // could write in let one replace the authority mid-run, and the
  // coordinator took in a worker of that user's (a security trial). Judged
  // as `edgetrain credentials` judges the folder it writes.
  if (const std::string unsafe = pki::WhoElseMayTouch(flags.tls_dir); !unsafe.empty()) {
    return InvalidArgumentError("--tls-dir: " + unsafe + ", who could swap the job's credentials in " +
                                flags.tls_dir + "; keep them in a folder of your own that others cannot write in "
                                "(chmod go-w on it and its files)");
  }
  if (const std::string readable = pki::WhoElseMayRead(flags.tls_dir); !readable.empty()) {
    log << "WARNING: --tls-dir: " << readable << ", " << pki::kReadableKeyRisk << "\n";
  }
  TransportSecurity security = TransportSecurity::MutualTls(flags.job, flags.tls_dir, flags.tls_reload);
  auto files = pki::ReadTlsFolder(security.files);
  if (!files.ok()) return InvalidArgumentError("--tls-dir: " + files.status().message());
  if (!pki::ValidityOf(files->ca_pem).ok()) {
    return InvalidArgumentError("--tls-dir: " + security.files.ca_path + " is not a PEM certificate");
  }
  if (Status pair = pki::CheckKeyPair({files->cert_pem, files->key_pem}); !pair.ok()) {
    return InvalidArgumentError("--tls-dir: " + pair.message());
  }
  if (const std::string refused =
          pki::WouldBeRefused(files->cert_pem, flags.job, files->ca_pem, std::chrono::system_clock::now());
      !refused.empty()) {
    log << "tls: this agent's own certificate would be refused by its job: " << refused << "\n";
  }
  return security;
}

}  // namespace

int RunAgent(const AgentFlags& flags, std::ostream& lines, std::ostream& log, const std::atomic<bool>& cancel) {
  auto plan = ReadPlan(flags.plan);
  auto part = plan.ok() ? PartOf(flags, *plan) : StatusOr<Part>(plan.status());
  if (!part.ok()) return ReportFailure(part.status(), lines, log);
  // Every role: its endpoints, its data, its model; then its part.
  Endpoint endpoint;
  const bool serves_job = *part != Part::kWorker && *part != Part::kStage;
  if (Status started = endpoint.Start(flags.http, serves_job, lines); !started.ok()) {
    return ReportFailure(started, lines, log);
  }
  auto security = SecurityOf(flags, *part, log);
  if (!security.ok()) return serves_job ? ReportJob(security.status(), endpoint, lines, log)
                                        : ReportFailure(security.status(), lines, log);
  RealClock watch_clock;
  std::optional<CredentialsWatch> credentials_watch;  // what becomes of --tls-dir, said in the log
  if (security->tls) credentials_watch.emplace(security->files, flags.job, watch_clock, security->reload, log);
  const JobSpec& spec = plan->spec;
  auto setup_failed = [&](const Status& status) {
    return serves_job ? ReportJob(status, endpoint, lines, log) : ReportFailure(status, lines, log);
  };
  log << "loading " << DescribeData(spec.data) << "\n";
  auto data = LoadData(spec.data, SearchPathWith(flags.data_dir));
  if (!data.ok()) return setup_failed(data.status());
  log << "loaded " << data->train.size() << " training and " << data->test.size() << " test samples\n";
  // A team's workers each train on a part of the set of their own (a
  // folder's stream aside, whose samples are its files'): with fewer samples
  // than workers some part is empty, and its worker crashed at its first
  // batch while the run said it had stopped after its epochs (found in review).
  if (const std::string short_of = TeamShortOfSamples(data->train.size(), spec.parallelism.workers);
      !plan->pipeline && !(spec.data.stream && spec.data.stream->directory) && !short_of.empty()) {
    return setup_failed(InvalidArgumentError(short_of + " (spec.parallelism.workers): each trains on a part of its "
                                             "own, of one sample at least; ask for at most " +
                                             std::to_string(data->train.size())));
  }
  // A stage builds its own layers only: the whole model may not fit its device.
  std::unique_ptr<Trainer> whole;
  if (*part != Part::kStage) {
    auto trainer =
        CreateTrainer({spec.model, data->train.info, spec.seed, plan->intra_op_threads, SampleShape(spec.data)});
    if (!trainer.ok()) return setup_failed(trainer.status());
    log << "model " << NameOf(spec.model.kind) << ": " << (*trainer)->ParameterCount() << " parameters, "
        << plan->intra_op_threads << " intra-op thread(s)\n";
    whole = std::move(*trainer);
  }
  // Judged here, on the whole set: a team's coordinator and a pipeline's
  // head keep none of it, and the warning never came for them (found in
  // review). Only for data from files: the built-in sets hold every label.
  std::string labels_without_samples =
      spec.data.files ? LabelsWithoutSamplesWarning(data->train.labels, data->train.info.classes) : "";
  AgentSetup setup{flags, *plan, std::move(*security), endpoint, std::move(*data), std::move(whole), lines, log,
                   std::move(labels_without_samples)};
  switch (*part) {
    case Part::kSolo: return ReportJob(RunSoloRole(setup, cancel), endpoint, lines, log);
    case Part::kCoordinator: return ReportJob(RunCoordinatorRole(setup, cancel), endpoint, lines, log);
    case Part::kWorker: return RunWorkerRole(setup, cancel);
    case Part::kHead: return ReportJob(RunHeadRole(setup, cancel), endpoint, lines, log);
    case Part::kStage: return RunStageRole(setup, cancel);
  }
  return kExitFailed;
}

}  // namespace edgetrain::agent
