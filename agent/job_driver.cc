#include "agent/job_driver.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "agent/storage/atomic_file.h"
#include "agent/storage/crc32.h"
#include "agent/storage/evaluation_log.h"
#include "core/budget.h"
#include "core/finite_step.h"
#include "core/number_text.h"
#include "core/spec_changes.h"
#include "core/training_schedule.h"

namespace edgetrain::agent {
namespace {

// Whether the folder's model is of a run that finished (at its budget or
// target), which a run interrupted before it ends must not replace: its
// card says so. A card from before cards said it is taken for one unless
// this run resumes its job, as then.
bool FinishedModelIn(const std::string& card_path, bool resuming) {
  std::ifstream in(card_path);
  const nlohmann::json card = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (card.is_object() && card.contains("finished") && card["finished"].is_boolean()) {
    return card["finished"].get<bool>();
  }
  return !resuming;
}

// What the budget counts of the job's progress: its energy as reported (0
// until an energy model has), and what its silent workers have drawn since.
BudgetUse UseOf(const JobProgress& p) {
  return {p.samples, p.energy_joules ? *p.energy_joules + UnreportedEnergy(p) : 0};
}

// What of the classes' names changed: the labels whose name is not the one
// it was, "label 2 was tl and is tr now".
std::string ClassesChanged(const std::vector<std::string>& then, const std::vector<std::string>& now) {
  std::string said = "the class folders, whose names sort into labels:";
  if (then.size() != now.size()) {
    said += " " + std::to_string(then.size()) + " classes when it was written, " + std::to_string(now.size()) + " now;";
  }
  int listed = 0;
  for (size_t label = 0; label < std::min(then.size(), now.size()); ++label) {
    if (then[label] == now[label]) continue;
    if (listed++ == 4) {
      said += " ...";
      break;
    }
    said += (listed > 1 ? ", label " : " label ") + std::to_string(label) + " was " + then[label] + " and is " +
            now[label] + " now";
  }
  return said + "; the checkpoint's weights learned the labels as they were";
}

}  // namespace

JobDriver::JobDriver(const JobPlan& plan, TrainingEngine& engine, Clock& clock, ProgressBoard& board,
                     CoordinatorMetrics& metrics, std::ostream& log)
    : plan_(plan), engine_(engine), clock_(clock), board_(board), metrics_(metrics), log_(log) {}

// How a person gets past a checkpoint the job cannot take up: on a cluster
// there is no --fresh, and a job failed on one was told only of it (a new
// user's trial).
constexpr const char* kStartAfresh =
    "; move it away, or start afresh (edgetrain run --fresh; under the operator, another spec.output.path)";

StatusOr<std::optional<JobCheckpoint>> JobDriver::Resume() {
  const std::string path = plan_.CheckpointPath();
  // Not a file (a folder of that name): read as damaged, and replaced under
  // --fresh only when the run ended, its training lost to a rename that
  // could not be (a user's trial). Refused before anything trains, either way.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    return InvalidArgumentError(path + " is " +
                                (std::filesystem::is_directory(path, ec) ? "a folder" : "not a regular file") +
                                ", where the job's checkpoint goes: move it away");
  }
  StatusOr<std::optional<JobCheckpoint>> loaded = LoadCheckpoint(path);
  if (!loaded.ok()) {
    // Asked to start afresh, a checkpoint that cannot be read is replaced
    // like any other: --fresh said so, and it failed on one (a new user's trial).
    if (plan_.fresh) {
      log_ << plan_.job << ": starting afresh as asked; " << loaded.status().message() << " will be replaced\n";
      return std::optional<JobCheckpoint>();
    }
    // A damaged file is the input at fault, as another model's checkpoint
    // is: read again, it is as damaged (exit 2, which the operator does not
    // restart, and after which the runner does not say to run again).
    const StatusCode code =
        loaded.status().code() == StatusCode::kDataLoss ? StatusCode::kInvalidArgument : loaded.status().code();
    return Status(code, loaded.status().message() + kStartAfresh);
  }
  std::optional<JobCheckpoint> checkpoint = std::move(*loaded);
  if (!checkpoint) return checkpoint;
  const JobCheckpoint& c = *checkpoint;
  if (c.job != plan_.job) {
    // Another job's unfinished work is not replaced unasked: it was, with
    // only a note (a new user's trial). A finished one's may be.
    if (!c.complete && !plan_.fresh) {
      return InvalidArgumentError(path + " holds job " + c.job + "'s unfinished checkpoint, at iteration " +
                                  std::to_string(c.iteration) +
                                  "; give this job another output folder, or start afresh over it "
                                  "(edgetrain run --fresh)");
    }
    log_ << plan_.job << ": " << path << " is job " << c.job << "'s; starting afresh and replacing it\n";
    return std::optional<JobCheckpoint>();
  }
  if (plan_.fresh) {
    log_ << plan_.job << ": starting afresh as asked; the checkpoint at iteration " << c.iteration
         << " will be replaced\n";
    return std::optional<JobCheckpoint>();
  }
  if (c.complete) {
    log_ << plan_.job << ": the last run completed at iteration " << c.iteration
         << "; starting afresh, and its model will be replaced\n";
    return std::optional<JobCheckpoint>();
  }
  if (Status restored = engine_.Restore(c); !restored.ok()) {
    // The manifest and the folder disagree: running again unchanged gives the
    // same, which is exit 2's meaning, and the operator does not restart it.
    // What changed is said, as a resume that takes the change says it (a
    // new user's team of 3 resumed as 2 was told only "a different model,
    // optimizer or team").
    std::string changed;
    for (const std::string& change : SpecChanges(c.spec_json, plan_.spec_json)) {
      changed += (changed.empty() ? " (the manifest changed since it was written: " : "; ") + change;
    }
    if (!changed.empty()) changed += ")";
    // The same manifest run with a cluster profile or without: a team's
    // engine, or a job of one's (a user's resume with --nodes was told
    // nothing of what differed).
    const bool team_checkpoint = c.ledger.has_value(), team_run = !plan_.workers.empty() && !plan_.pipeline;
    if (changed.empty() && team_checkpoint != team_run) {
      changed = team_checkpoint ? " (written by a team, and this run is a job of one: a team's checkpoint resumes "
                                  "with its cluster profile, edgetrain run --nodes)"
                                : " (written by a job of one, and this run is a team: with a cluster profile, "
                                  "edgetrain run --nodes, even a job of one worker runs as a team of one)";
    }
    return InvalidArgumentError(path + " " + restored.message() + changed + kStartAfresh);
  }
  // Only the runner's own line names `edgetrain run --fresh`: on a cluster this log is a pod's.
  log_ << plan_.job << ": resumed from " << path << " at iteration " << c.iteration << ", " << c.samples
       << " samples, " << c.elapsed_s << " s of training\n";
  changed_since_checkpoint_ = SpecChanges(c.spec_json, plan_.spec_json);
  for (const std::string& change : changed_since_checkpoint_) {
    log_ << plan_.job << ": its manifest changed since the checkpoint: " << change << "\n";
  }
  // The same module file's path, exported anew with its shapes as they were:
  // its weights are taken up from the checkpoint, as a resume means, and
  // its code is the file's now (another activation, another dropout),
  // which nothing had said (a user's trial).
  const bool module_named_anew =
      std::any_of(changed_since_checkpoint_.begin(), changed_since_checkpoint_.end(),
                  [](const std::string& change) { return change.starts_with("spec.model."); });
  if (c.module_crc32 && module_crc32_ && *c.module_crc32 != *module_crc32_ && !module_named_anew) {
    changed_since_checkpoint_.push_back(
        "the module file " + plan_.spec.model.torchscript_path +
        " (exported anew, its parameters shaped as before): its code is the file's as it is now, its weights "
        "the checkpoint's");
    log_ << plan_.job << ": its module changed since the checkpoint: " << changed_since_checkpoint_.back() << "\n";
  }
  // The same manifest on other data: its files rewritten in place. Its
  // epochs count over the data as it is now; a run resumed on a set cut to
  // a seventh was past its epochs before a step, and ended saying so with
  // nothing of why (a user's trial). A manifest that names other data says
  // so itself.
  const bool data_named_anew = std::any_of(changed_since_checkpoint_.begin(), changed_since_checkpoint_.end(),
                                           [](const std::string& change) { return change.starts_with("spec.data."); });
  if (const int64_t now = engine_.SamplesPerEpoch();
      c.samples_per_epoch > 0 && now != c.samples_per_epoch && !data_named_anew) {
    changed_since_checkpoint_.push_back(
        "the training data: " + WithThousands(c.samples_per_epoch) + " samples a pass when it was written, " +
        WithThousands(now) + " now (its files changed); spec.budget.epochs counts passes over the data as it is now");
    log_ << plan_.job << ": its training data changed since the checkpoint: " << changed_since_checkpoint_.back()
         << "\n";
  }
  // Class folders renamed since: the labels, which the folders' names sort
  // into, mean other classes than the checkpoint's weights learned, and a
  // resume went on unsaid (a user's trial).
  if (!c.class_names.empty() && !class_names_.empty() && c.class_names != class_names_ && !data_named_anew) {
    changed_since_checkpoint_.push_back(ClassesChanged(c.class_names, class_names_));
    log_ << plan_.job << ": its classes changed since the checkpoint: " << changed_since_checkpoint_.back() << "\n";
  }
  return checkpoint;
}

JobCheckpoint JobDriver::Checkpoint(const JobProgress& p) {
  JobCheckpoint c;
  c.job = plan_.job;
  c.plan_generation = plan_.generation;
  c.iteration = p.iteration;
  c.samples = p.samples;
  c.elapsed_s = p.elapsed_s;
  c.energy_joules = p.energy_joules.value_or(0);
  c.spec_json = plan_.spec_json;
  c.module_crc32 = module_crc32_;
  c.devices_json = plan_.devices_record;
  c.accuracy = p.accuracy;
  c.evaluated_iteration = p.evaluated_iteration;
  if (p.loss > 0) c.loss = p.loss;  // 0: no batch trained yet
  c.samples_per_epoch = engine_.SamplesPerEpoch();
  c.class_names = class_names_;
  engine_.Snapshot(c);
  return c;
}

Status JobDriver::WriteModelCard(const JobProgress& p) {
  const JobSpec& spec = plan_.spec;
  nlohmann::json card = {
      {"job", plan_.job},
      {"model", NameOf(spec.model.kind)},
      {"dataset", DescribeData(spec.data)},
      {"workers", spec.parallelism.workers},
      // A pipeline's stages synchronise as its 1F1B schedule does: spec.sync
      // is a data-parallel team's (a new user's pipeline said "deadline").
      {"policy", spec.parallelism.workers > 1 && !plan_.pipeline ? nlohmann::json(NameOf(spec.sync.policy))
                                                                 : nlohmann::json(nullptr)},
      {"iteration", p.iteration},
      {"samples", p.samples},
      {"accuracy", p.accuracy ? nlohmann::json(*p.accuracy) : nlohmann::json(nullptr)},
      // Of a run that ended at its budget or target, not one interrupted:
      // an interrupted run that resumes keeps such a model until it ends.
      {"finished", p.stop_reason && *p.stop_reason != StopReason::kCancelled},
      {"weights", "model.pt"},
      {"format", spec.model.kind == ModelKind::kTorchScript
                     ? "TorchScript module, its code and trained parameters: torch.jit.load runs it (docs/own-model.md)"
                     : "TorchScript archive of the model's parameters and buffers (docs/launch-contract.md)"},
  };
  // Image folders' names, label i the i-th: what a prediction of label 2
  // means, where folders 0-11 make "10" label 2 (a user's trial).
  if (!class_names_.empty()) card["classes"] = class_names_;
  return WriteFileAtomically(plan_.output_dir + "/model.json", card.dump(2) + "\n");
}

void JobDriver::Publish(const JobProgress& p) {
  // Who trains now, as the engine says: a pipeline's head keeps no ledger,
  // and its devices were shown as none active of all planned.
  if (!p.workers.empty()) {
    metrics_.SetActiveWorkers(static_cast<int>(
        std::count_if(p.workers.begin(), p.workers.end(), [](const WorkerProgress& w) { return w.active; })));
  }
  metrics_.SetLoss(p.loss);
  metrics_.SetSamples(p.samples);
  metrics_.SetEnergy(p.energy_joules.value_or(0));
  board_.Publish(p, clock_.Now());
}

double JobDriver::EvaluationGuess(const JobProgress& p) const {
  if (const std::optional<double> engines = engine_.EvaluationGuess()) return *engines;
  if (p.samples <= 0 || p.elapsed_s <= 0) return 0;
  // A sample forward is about a third of its training step (backward takes
  // about twice the forward), at one device's pace: the job's over its
  // devices (a team's workers and a pipeline's stages compute side by side,
  // and the coordinator or head evaluates alone).
  const double devices = static_cast<double>(std::max<size_t>(1, p.workers.size()));
  const double forward_s = p.elapsed_s * devices / static_cast<double>(p.samples) / 3;
  return forward_s * static_cast<double>(engine_.TestSamples());
}

double JobDriver::FirstEvaluationGuess(const JobProgress& p) const {
  const double tenth = 0.1 * ToSeconds(plan_.spec.budget.wall_clock.value_or(Duration::zero()));
  return std::max(tenth, EvaluationGuess(p));
}

void JobDriver::Warn(const std::string& warning) {
  log_ << plan_.job << ": warning: " << warning << "\n";
  warnings_.push_back(warning);
}

StatusOr<JobProgress> JobDriver::Run(const std::atomic<bool>& cancel) {
  const JobSpec& spec = plan_.spec;
  std::error_code ec;
  std::filesystem::create_directories(plan_.output_dir, ec);
  if (ec) return FailedPreconditionError("cannot create output directory " + plan_.output_dir + ": " + ec.message());
  const std::string model_path = plan_.ModelPath();
  if (spec.model.kind == ModelKind::kTorchScript) {
    if (StatusOr<std::string> module = ReadWholeFile(spec.model.torchscript_path); module.ok()) {
      module_crc32_ = Crc32(*module);
    }
  }
  EDGETRAIN_ASSIGN_OR_RETURN(std::optional<JobCheckpoint> resumed, Resume());
  // A finished run's model, which a run interrupted before it ends must not
  // replace, however often it is interrupted and resumed: a run resumed
  // from one that had kept it wrote its own over it at its interruption
  // (a user's trial: 0.8783 at iteration 9,926 replaced by 0.8744 at 4,940).
  const bool finished_model = std::filesystem::exists(model_path, ec) &&
                              FinishedModelIn(plan_.output_dir + "/model.json", resumed.has_value());
  const double elapsed_before = resumed ? resumed->elapsed_s : 0;
  std::vector<int> unread_rows;
  EDGETRAIN_ASSIGN_OR_RETURN(
      EvaluationLog evaluations,
      EvaluationLog::Open(plan_.output_dir + "/evaluations.csv",
                          resumed ? std::optional<int64_t>(resumed->iteration) : std::nullopt, &unread_rows));
  // Every checkpoint of this run starts its evaluations.csv first, if no
  // evaluation has: a resume keeps the rows up to the checkpoint, and an
  // earlier run's rows had stayed there and were taken for this run's (found
  // in review).
  // Each written counted, the periodic and the last ones alike, as
  // docs/metrics.md says: with checkpointEvery 0 the count stayed 0 with the
  // file written (found in review).
  auto save_checkpoint = [&](const JobCheckpoint& c) {
    evaluations.Begin();
    EDGETRAIN_RETURN_IF_ERROR(evaluations.Sync());
    Status saved = SaveCheckpoint(plan_.CheckpointPath(), c);
    if (saved.ok()) metrics_.AddCheckpoint();
    return saved;
  };
  // Said as a warning, which the runner shows and /progress lists.
  for (int line : unread_rows) {
    Warn(plan_.output_dir + "/evaluations.csv: line " + std::to_string(line) +
         " is not an evaluation row (seconds,iteration,samples,accuracy,energy_joules): left out");
  }

  EDGETRAIN_RETURN_IF_ERROR(engine_.Start(cancel));
  // The job's clock: training time, over every run of it.
  TimePoint start = clock_.Now() - FromSeconds(elapsed_before);
  Budget budget(spec.budget, engine_.SamplesPerEpoch(), start);
  board_.SetWallClock(spec.budget.wall_clock);
  JobProgress p = engine_.Progress();
  const int64_t first_iteration = p.iteration;
  const int64_t first_samples = p.samples;
  if (const std::optional<int64_t> most = budget.MaxSamples()) engine_.EndTicksAtSamples(*most, first_iteration);
  TrainingSchedule schedule(spec.evaluation, spec.fault_tolerance.checkpoint_every, p.iteration, clock_.Now());
  // A resumed job's last evaluation, until it evaluates again.
  std::optional<double> accuracy = resumed ? resumed->accuracy : std::nullopt;
  std::optional<int64_t> evaluated_iteration = resumed ? resumed->evaluated_iteration : std::nullopt;
  // The model this run last evaluated, by its iteration and samples: the
  // final evaluation is left out only for it. By samples too: a team's model
  // moves between iterations as late pushes land (a stream's team
  // interrupted at the iteration of its last evaluation kept that evaluation
  // as the final model's, 0.5806 where its model.pt scored 0.5972: a new
  // user's trial). One from before the checkpoint may be of another test set
  // or model (a manifest changed since).
  std::optional<std::pair<int64_t, int64_t>> evaluated_here;
  auto evaluated_now = [&](const JobProgress& q) {
    return evaluated_here == std::pair{q.iteration, q.samples};
  };
  // Unless the checkpoint was written after its own evaluation (the final
  // one, before the model is written) of a manifest unchanged since: it holds
  // the model evaluated. A run killed while it wrote the model evaluated it
  // again when resumed, and its evaluations had two rows of one iteration (a
  // new user's trial).
  if (resumed && resumed->accuracy && resumed->evaluated_iteration == resumed->iteration &&
      changed_since_checkpoint_.empty()) {
    evaluated_here = std::pair{resumed->iteration, resumed->samples};
  }
  if (accuracy) metrics_.SetAccuracy(*accuracy);
  double evaluating_s = 0;  // this run's evaluations: a pipeline or a job of one waits through them
  // The last evaluation's length: one due less than that before the
  // budget's end would run past it, and is left to the final model's.
  double evaluation_s = 0;
  bool said_left_to_final = false;
  int64_t stepped_iteration = p.iteration;
  TimePoint stepped_at = clock_.Now();
  auto fill = [&](JobProgress& q, TimePoint now) {
    if (q.iteration != stepped_iteration) {
      stepped_iteration = q.iteration;
      stepped_at = now;
    }
    q.since_step_s = ToSeconds(now - stepped_at);
    q.elapsed_s = ToSeconds(now - start);
    q.samples_per_second = q.elapsed_s > 0 ? static_cast<double>(q.samples) / q.elapsed_s : 0;
    q.evaluation_s = evaluating_s;
    q.accuracy = accuracy;
    q.evaluated_iteration = evaluated_iteration;
    q.warnings = warnings_;
    if (resumed) {
      q.resumed_from_iteration = resumed->iteration;
      q.resumed_with_changes = changed_since_checkpoint_;
    }
    q.fraction = budget.Fraction(now, UseOf(q));
    auto eta = budget.Eta(now, UseOf(q));
    q.eta_s = eta ? std::optional<double>(ToSeconds(*eta)) : std::nullopt;
  };
  auto evaluate = [&](JobProgress& q) -> Status {
    const TimePoint began = clock_.Now();
    // Said before it starts: a vgg's test set through a pipeline's head
    // takes seconds. With the job's clock as it now is (a checkpoint may
    // have been written since the step), unless training has stopped,
    // when the clock shown stays at its end.
    JobProgress shown = q;
    if (!shown.stop_reason) fill(shown, began);
    shown.evaluating = true;
    Publish(shown);
    StatusOr<double> evaluated = engine_.Evaluate();
    if (!evaluated.ok()) {
      Publish(q);  // no longer evaluating: a failed job's result says so
      return evaluated.status();
    }
    const double a = *evaluated;
    evaluation_s = ToSeconds(clock_.Now() - began);
    evaluating_s += evaluation_s;
    accuracy = a;
    evaluated_iteration = q.iteration;
    evaluated_here = std::pair{q.iteration, q.samples};
    q.accuracy = a;
    q.evaluated_iteration = q.iteration;
    metrics_.SetAccuracy(a);
    evaluations.Record(q.elapsed_s, q.iteration, q.samples, a, q.energy_joules);
    return Status::Ok();
  };

  // Interrupted while the team gathered: not one step (a pipeline's head
  // would send the first to stages it never welcomed, and take one not yet
  // there for lost).
  std::optional<StopReason> stop;
  if (cancel.load(std::memory_order_relaxed)) stop = StopReason::kCancelled;
  // A resumed job whose budget was spent already (its model then could not
  // be written, or its manifest now asks for fewer epochs) takes no step
  // past it: one step was always taken before the budget was looked at.
  if (!stop) stop = budget.Exhausted(clock_.Now(), UseOf(p));
  TimePoint published{};
  while (!stop) {
    if (Status advanced = engine_.Advance(); !advanced.ok()) {
      // Its result says that training had begun, by its time: a loss NaN at
      // step 1 (nothing of it kept, so iteration 0) read "refused before
      // training" (a new user's trial).
      p = engine_.Progress();
      fill(p, clock_.Now());
      Publish(p);
      return advanced;
    }
    if (const std::optional<TimePoint> began = engine_.JobClockStart(); began && *began < start) {
      start = *began;  // the team's clock, taken over with its model
      budget = Budget(spec.budget, engine_.SamplesPerEpoch(), start);
    }
    const TimePoint now = clock_.Now();
    p = engine_.Progress();
    fill(p, now);
    if (schedule.CheckpointDue(p.iteration)) {
      // Not of a model that diverged: what is kept never is (core/finite_step.h).
      const JobCheckpoint due = Checkpoint(p);
      EDGETRAIN_RETURN_IF_ERROR(FiniteWeights(due.iteration, due.parameters));
      EDGETRAIN_RETURN_IF_ERROR(save_checkpoint(due));
      schedule.Checkpointed(p.iteration);
    }
    std::optional<StopReason> exhausted = budget.Exhausted(now, UseOf(p));
    // Not by its epochs before the model has stepped in this run: a team
    // counts samples as each worker's batch comes, and workers whose batches
    // outgrow their parts (repeating samples) spent an epochs budget with one
    // push, before a round closed; the job saved the model it began with,
    // "stopped after its epochs", exit 0 (a new user's trial).
    if (exhausted == StopReason::kEpochs && p.iteration == first_iteration) exhausted.reset();
    bool evaluated = false;
    // At the budget's end the final model is evaluated once training has
    // stopped: one due now would only have run past the budget (a pipeline's
    // evaluation, its stages' weights fetched first, took 0.9-3.6 s), and so
    // would one due closer to the wall clock's end than the last evaluation
    // took, or, before any has said how long one takes, than a guess from
    // the pace of training (FirstEvaluationGuess) or in its last tenth
    // (pipelines of 35 and 45 s trained 36.8 and 56.4 s: their first
    // evaluations, at step 200, began 3 and about 4 s before the end; a vgg
    // pipeline of 12 s trained 17.7 s, its first evaluation begun at 7 s
    // taking 11 s on a loaded machine; new users' trials). By the wall clock only: an evaluation does not run an
    // epoch's iterations past their limit, and an epoch's end is a guess at
    // the pace.
    // Not the guess while more than half the wall clock is left: it is the
    // training pace's, which at small batches is mostly each pass's own cost,
    // where the test set goes through in chunks of many samples; at batches of 1 and
    // 4 it left out every evaluation of a vgg on fashion-mnist, silently, and
    // a target could never end the run (a new user's trial). One evaluation
    // then says how long they take. The price: that first one, of a length
    // not yet known, may run past the budget's end when it takes more than
    // half of it.
    bool runs_past = false;
    if (const std::optional<Duration> left = budget.WallClockLeft(now)) {
      const double left_s = ToSeconds(*left);
      const double wall_s = ToSeconds(*spec.budget.wall_clock);
      runs_past = evaluation_s > 0      ? left_s < evaluation_s
                  : left_s > wall_s / 2 ? false
                                        : left_s < FirstEvaluationGuess(p);
    }
    if (runs_past && !said_left_to_final && !exhausted && schedule.EvaluationDue(p.iteration, now)) {
      // Said once, so that a run whose evaluations.csv ends with the final
      // row alone says why (a new user's trial found them "silently skipped").
      log_ << plan_.job << ": the evaluation due at iteration " << p.iteration
           << " is left to the final one: the wall clock's end is nearer than an evaluation takes\n";
      said_left_to_final = true;
    }
    if (!exhausted && !runs_past && schedule.EvaluationDue(p.iteration, now)) {
      EDGETRAIN_RETURN_IF_ERROR(evaluate(p));
      schedule.Evaluated(p.iteration, now);
      evaluated = true;
      if (budget.TargetReached(*p.accuracy)) stop = StopReason::kTarget;
      // Published with the job's clock as it now is: a reader saw it move on
      // through the evaluation, and it went back to the step's (a new user's
      // terminal: elapsed 00:51, then 00:45).
      fill(p, clock_.Now());
    }
    if (!stop) stop = exhausted;
    if (!stop && cancel.load(std::memory_order_relaxed)) stop = StopReason::kCancelled;
    if (evaluated || now - published >= publish_every_) {
      Publish(p);
      published = now;
    }
  }

  // Training ends here: what finishing takes (a team's workers told to stop)
  // is not training time.
  const TimePoint end = clock_.Now();
  // Said while it finishes, which over a link in an outage takes seconds (a
  // team's workers get --stop-grace to hear Stop): progress said "training,
  // eta 0" for 6 s past a budget (a new user's trial).
  p.stop_reason = *stop;
  Publish(p);
  if (*stop == StopReason::kCancelled) engine_.Interrupted();
  EDGETRAIN_RETURN_IF_ERROR(
      engine_.Finish(*stop == StopReason::kTarget ? FinalModel::kLastEvaluated : FinalModel::kCurrent));
  p = engine_.Progress();
  fill(p, end);
  // Still finishing, as published above: the final evaluation's publish
  // without it let the job's clock as read run on past the budget's end,
  // then go back (found in review).
  p.stop_reason = *stop;
  const bool interrupted = *stop == StopReason::kCancelled;
  // Not one step this run: nothing is written, interrupted or at its budget
  // (a stream's team whose folder held nothing replaced a trained model.pt
  // with its untrained one: a new user's trial). A resumed job whose budget
  // was spent already still writes its checkpoint's model, which its run
  // may not have written.
  const bool stepped = p.iteration != first_iteration || p.samples != first_samples;
  const bool untrained = !stepped && (interrupted || !resumed);
  // The result reports the final model's accuracy on the full test set; of
  // a model that never trained in this run, the last evaluation's before its
  // checkpoint, if any. Interrupted, not when evaluating would keep the
  // person waiting: a vgg's test set through a pipeline's head took 17-23 s
  // after a Ctrl-C, the terminal silent, and a second Ctrl-C did nothing (a
  // new user's trial). The run resumed evaluates; this one's result keeps
  // the last evaluation, at its iteration.
  // (Not when it is evaluated already, a Ctrl-C during a scheduled
  // evaluation, nor when nothing trained: nothing is written to resume.)
  const double final_evaluation_s = evaluation_s > 0 ? evaluation_s : EvaluationGuess(p);
  const bool left_to_resume = interrupted && !untrained && !evaluated_now(p) &&
                              final_evaluation_s > kPromptEvaluationSeconds;
  if (left_to_resume) {
    log_ << plan_.job << ": interrupted; the final model's evaluation (about "
         << std::lround(final_evaluation_s * 10) / 10.0 << " s) is left to the run that resumes\n";
  }
  if (*stop != StopReason::kTarget && !evaluated_now(p) && !untrained && !left_to_resume) {
    // What trained is kept before the final evaluation, which can take long
    // (a vgg's test set through a pipeline's head, 3-30 s): a run killed
    // during it lost every step since the last periodic checkpoint (a new
    // user's trial: 8 s of a vgg's training, no checkpoint left). Unfinished,
    // so that a run again evaluates and writes the model; rewritten below.
    // Not when it cannot be written: the write below says why.
    JobCheckpoint trained = Checkpoint(p);
    trained.complete = false;
    if (FiniteWeights(trained.iteration, trained.parameters).ok()) {
      (void)save_checkpoint(trained);
    }
    EDGETRAIN_RETURN_IF_ERROR(evaluate(p));
  }
  if (untrained) {
    // Stopped before it trained at all (loading, gathering): nothing is
    // written, and whatever the folder held stays as it was.
    log_ << plan_.job << (interrupted ? ": interrupted before training" : ": nothing trained before its budget ended")
         << "; nothing was written\n";
    p.model_path = "";
  } else {
    JobCheckpoint last = Checkpoint(p);
    // An interrupted job is not over: run again, it resumes from here. A
    // finished one is marked so only once its model is written: marked
    // first, a disk that filled while the model was written left a
    // checkpoint that the next run took for a finished job's, and it
    // started over (a new user's trial).
    last.complete = false;
    EDGETRAIN_RETURN_IF_ERROR(FiniteWeights(last.iteration, last.parameters));
    // A checkpoint that cannot be written (a disk full) does not cost the
    // model, a third of its size and what the run was for: a run that
    // trained to its end wrote neither (a user's trial). It fails still,
    // saying the model is there.
    const Status checkpointed = save_checkpoint(last);
    if (!checkpointed.ok() && interrupted && finished_model) return checkpointed;
    if (interrupted && finished_model) {
      // A finished run's model is not replaced by one interrupted early:
      // the checkpoint resumes this run, and its model comes when it ends.
      log_ << plan_.job << ": interrupted; " << model_path << " is kept as the earlier run left it, and "
           << plan_.CheckpointPath() << " resumes this one\n";
      p.model_path = "";
    } else {
      p.model_path = model_path;
      Status modelled = engine_.SaveModel(p.model_path);
      // The card's accuracy is the written model's: none when its evaluation
      // was left to the run that resumes.
      JobProgress carded = p;
      if (left_to_resume) carded.accuracy.reset();
      // At its target the job keeps the model that reached it, not the
      // rounds that closed while it stopped: the card names that model's
      // iteration and samples (it said 2,209 of a model evaluated at 2,202:
      // a new user's trial).
      if (*stop == StopReason::kTarget && evaluated_here) {
        carded.iteration = evaluated_here->first;
        carded.samples = evaluated_here->second;
      }
      if (modelled.ok()) modelled = WriteModelCard(carded);
      if (!checkpointed.ok()) {
        return Status(checkpointed.code(),
                      checkpointed.message() + (modelled.ok() ? "; the model is written all the same, to " +
                                                                    p.model_path + " (its checkpoint is not)"
                                                              : "; nor the model: " + modelled.message()));
      }
      EDGETRAIN_RETURN_IF_ERROR(modelled);
      if (!interrupted) {
        last.complete = true;
        EDGETRAIN_RETURN_IF_ERROR(save_checkpoint(last));
      }
    }
  }
  p.reached_target = p.accuracy && budget.TargetReached(*p.accuracy);
  p.stop_reason = *stop;
  p.state = interrupted ? JobState::kInterrupted : JobState::kSucceeded;
  p.fraction = budget.Fraction(end, UseOf(p));
  p.eta_s = 0;
  Publish(p);
  return p;
}

}  // namespace edgetrain::agent
