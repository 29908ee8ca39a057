#include "agent/testing/simulated_team.h"

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "agent/dp/coordinator_service.h"
#include "agent/job_driver.h"
#include "agent/storage/atomic_file.h"

namespace edgetrain::agent::testing {
namespace {

constexpr const char* kAddress = "coordinator";

std::string FreshFolder() {
  std::string pattern = (std::filesystem::temp_directory_path() / "edgetrain-sim-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) std::abort();
  return pattern;
}

}  // namespace

// One coordinator process: its model, engine, service, driver and server.
struct SimulatedTeam::Incarnation {
  Incarnation(SimulatedTeam& team)
      : model(team.MakeTrainer(-1)), metrics(team.registry_, team.plan_.job, team.setup_.workers),
        coordinator(team.plan_, *model, team.data().test, team.data().train.size(), team.clock_, team.log_, metrics),
        service(team.plan_, coordinator, team.clock_, team.setup_.links),
        driver(team.plan_, coordinator, team.clock_, team.board_, metrics, team.log_) {
    if (team.plan_.spec.data.injection) service.InjectFrom(team.data().train);
  }
  std::unique_ptr<Trainer> model;
  CoordinatorMetrics metrics;
  Coordinator coordinator;
  CoordinatorService service;
  JobDriver driver;
  std::unique_ptr<TrainingServer> server;
  std::atomic<bool> cancel{false};
  ClockThread thread;
  StatusOr<JobProgress> result = InternalError("not finished");
};

SimulatedTeam::SimulatedTeam(TeamSetup setup) : setup_(std::move(setup)) {
  if (setup_.output_dir.empty()) setup_.output_dir = FreshFolder();
  setup_.links.resize(static_cast<size_t>(setup_.workers));
  setup_.slowdowns.resize(static_cast<size_t>(setup_.workers), 1.0);
  setup_.step_times.resize(static_cast<size_t>(setup_.workers), Duration::zero());
  setup_.sample_times.resize(static_cast<size_t>(setup_.workers), Duration::zero());
  if (!setup_.real) data_ = FakeData(setup_.train_samples, 100, setup_.model.classes);
  plan_.job = "sim-team";
  plan_.output_dir = setup_.output_dir;
  JobSpec& spec = plan_.spec;
  spec.data.dataset = setup_.real ? setup_.real->dataset : DatasetName::kDigits;
  if (setup_.real) spec.model = setup_.real->spec;
  spec.data.batch_size = setup_.batch_size;
  spec.data.partition = setup_.partition;
  spec.data.stream = setup_.stream;
  spec.data.injection = setup_.injection;
  spec.data.compute_weighted = setup_.compute_weighted;
  spec.parallelism.workers = setup_.workers;
  if (setup_.sync) {
    spec.sync = *setup_.sync;
  } else {
    spec.sync.policy = setup_.policy;
    spec.sync.staleness_bound = setup_.staleness_bound;
    spec.sync.compression = setup_.compression;
  }
  spec.optimizer = setup_.optimizer;
  spec.budget = setup_.budget;
  spec.evaluation.every_iterations = setup_.evaluate_every;
  spec.evaluation.every_seconds = setup_.evaluate_every_seconds;
  spec.fault_tolerance.checkpoint_every = setup_.checkpoint_every;
  spec.fault_tolerance.node_loss_grace = setup_.node_loss_grace;
  spec.seed = setup_.real ? setup_.real->seed : setup_.model.seed;
  // Of the spec a real plan carries as its manifest wrote it, what a resume
  // compares with its checkpoint's: the folder a stream reads.
  if (setup_.stream && setup_.stream->directory) {
    plan_.spec_json = nlohmann::json{{"data", {{"stream", {{"directory", *setup_.stream->directory}}}}}}.dump();
  }
  for (int w = 0; w < setup_.workers; ++w) {
    plan_.workers.push_back({w, "sim-" + std::to_string(w), setup_.slowdowns[w], std::nullopt, {}});
    gates_.push_back(std::make_unique<LinkGate>(clock_));
    worker_cancel_.push_back(std::make_unique<std::atomic<bool>>(false));
  }
  summaries_.assign(static_cast<size_t>(setup_.workers), InternalError("never started"));
  push_fates_.assign(kPushFates, 0);
  connector_ = network_.Connector(kAddress);
  network_.OnPushRead([this](const v1::WorkerMessage& m) {
    if (m.has_push() && m.push().has_stats()) ++pushes_delivered_;
  });
}

SimulatedTeam::~SimulatedTeam() = default;

std::unique_ptr<Trainer> SimulatedTeam::MakeTrainer(int rank) {
  std::unique_ptr<Trainer> trainer = MakeModelTrainer(rank);
  if (rank >= 0 && (setup_.poisoned_worker == rank || setup_.diverged_worker == rank)) {
    return std::make_unique<PoisonedTrainer>(std::move(trainer), /*loss_too=*/setup_.diverged_worker == rank);
  }
  return trainer;
}

std::unique_ptr<Trainer> SimulatedTeam::MakeModelTrainer(int rank) {
  if (!setup_.real) return std::make_unique<FakeTrainer>(setup_.model, clock_);
  auto made = setup_.real->make();
  if (!made.ok()) {
    log_ << "cannot build the model: " << made.status().message() << "\n";
    std::abort();
  }
  if (rank < 0) return std::move(*made);  // the coordinator computes no steps
  return std::make_unique<TimedTrainer>(std::move(*made), clock_, setup_.step_times[rank], setup_.sample_times[rank]);
}

void SimulatedTeam::StartCoordinator() {
  coordinator_ = std::make_unique<Incarnation>(*this);
  auto server = network_.Serve(kAddress, coordinator_->service);
  if (!server.ok()) std::abort();
  coordinator_->server = std::move(*server);
  if (cancel_) coordinator_->cancel = true;
  Incarnation* c = coordinator_.get();
  c->thread = clock_.StartThread("coordinator", [c] { c->result = c->driver.Run(c->cancel); });
}

void SimulatedTeam::EndCoordinator() {
  Incarnation& c = *coordinator_;
  c.server->Shutdown();
  c.cancel = true;
  c.thread.Join();
  result_ = c.result;
  const std::vector<int64_t> fates = c.coordinator.PushFates();
  for (int f = 0; f < kPushFates; ++f) push_fates_[f] += fates[f];
  coordinator_.reset();
}

void SimulatedTeam::RestartCoordinator(const std::optional<std::string>& checkpoint) {
  EndCoordinator();
  const std::string path = plan_.CheckpointPath();
  if (checkpoint) {
    if (!WriteFileAtomically(path, *checkpoint).ok()) std::abort();
  } else {
    std::remove(path.c_str());
  }
  // The new one resumes behind where the old one was: its progress is watched afresh.
  board_.Update([](JobProgress& p) { p = {}; });
  watched_ = {};
  StartCoordinator();
}

Status SimulatedTeam::AdoptPlan(const JobPlan& next) {
  EDGETRAIN_RETURN_IF_ERROR(coordinator_->service.AdoptPlan(next, setup_.links));
  plan_ = next;
  return Status::Ok();
}

void SimulatedTeam::Run(const std::function<void(SimulatedTeam&)>& script, bool start_workers) {
  clock_.Run("test", [&] {
    StartCoordinator();
    std::atomic<bool> over{false};
    ClockThread watch = clock_.StartThread("progress watch", [&] {
      while (!over) {
        const JobProgress now = board_.Snapshot();
        if (now.iteration < watched_.iteration || now.samples < watched_.samples) progress_went_back_ = true;
        watched_ = now;
        clock_.SleepFor(std::chrono::milliseconds(10));
      }
    });
    if (start_workers) {
      for (int w = 0; w < setup_.workers; ++w) StartWorker(w);
    }
    if (script) script(*this);
    coordinator_->thread.Join();  // the job ends by its budget, or by Stop
    over = true;
    watch.Join();
    EndCoordinator();
    for (auto& c : worker_cancel_) *c = true;  // a worker behind a dead link never heard Stop
    for (auto& t : worker_threads_) t.Join();
  });
}

void SimulatedTeam::StartWorker(int rank) {
  *worker_cancel_[rank] = false;
  std::shared_ptr<Trainer> trainer = MakeTrainer(rank);
  auto plan = std::make_shared<JobPlan>(plan_);
  worker_threads_.push_back(clock_.StartThread("worker " + std::to_string(rank), [this, rank, trainer, plan] {
    WorkerOptions options;
    options.rank = rank;
    options.coordinator = connector_.get();
    options.uplink = setup_.links[rank];
    options.gate = gates_[rank].get();
    options.metrics = &worker_registry_;
    summaries_[rank] = RunWorker(*plan, options, *trainer, data().train, clock_, log_, *worker_cancel_[rank]);
    if (!summaries_[rank].ok()) log_ << "worker " << rank << " failed: " << summaries_[rank].status().message() << "\n";
  }));
}

void SimulatedTeam::Stop() {
  cancel_ = true;
  if (coordinator_) coordinator_->cancel = true;
}

void SimulatedTeam::KillWorker(int rank) { *worker_cancel_[rank] = true; }

bool SimulatedTeam::WaitFor(const std::function<bool(const JobProgress&)>& holds, Duration timeout) {
  const TimePoint deadline = clock_.Now() + timeout;
  while (!holds(board_.Snapshot())) {
    if (clock_.Now() >= deadline) return false;
    clock_.SleepFor(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace edgetrain::agent::testing
