#include "cli/run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "api/result_json.h"
#include "cli/progress_display.h"
#include "core/bandwidth_estimator.h"
#include "core/chance_accuracy.h"
#include "core/encoding_choice.h"
#include "core/step_cost.h"

namespace edgetrain::cli {
namespace {

// The team's stall: a plain mean of its workers' own fractions, each over
// the worker's own time, so that one there for a minute of a long run weighs
// as its table row reads, not by its seconds.
double MeanStallFraction(const JobProgress& p) {
  if (p.workers.empty()) return 0;
  double sum = 0;
  for (const auto& w : p.workers) sum += w.stall_fraction;
  return sum / static_cast<double>(p.workers.size());
}

// The job's, over every run: its devices' and those of the runs before that
// this one has not.
int64_t BytesSent(const JobProgress& p) {
  int64_t sum = p.departed_bytes_sent;
  for (const auto& w : p.workers) sum += w.bytes_sent;
  return sum;
}

int64_t BytesReceived(const JobProgress& p) {
  int64_t sum = p.departed_bytes_received;
  for (const auto& w : p.workers) sum += w.bytes_received;
  return sum;
}

// The team's stream counts, summed over its workers; `streams`: any worker is
// on one. Injected samples came from the coordinator, not from a stream.
struct StreamTotals {
  bool streams = false;
  int64_t arrived = 0, dropped = 0, refused_files = 0, injected = 0;
};

StreamTotals StreamTotalsOf(const JobProgress& p) {
  StreamTotals t;
  for (const auto& w : p.workers) {
    t.injected += w.injected;
    if (!w.stream) continue;
    t.streams = true;
    t.arrived += w.stream->arrived;
    t.dropped += w.stream->dropped;
    t.refused_files += w.stream->refused_files;
  }
  return t;
}

// Whether `w` waited for its stream's samples most of its time: short of
// samples, not of compute or link.
bool WaitedMostlyForItsStream(const WorkerProgress& w) {
  return w.stream && w.wall_s > 0 && w.stream->wait_s > 0.5 * w.wall_s;
}

// Whether a team's batches vary in size: a stream's, compute-weighted or topped up.
bool VariableBatches(const JobSpec& spec) {
  return spec.data.stream || spec.data.compute_weighted || spec.data.injection;
}

// Samples injected into workers' batches; and of workers whose samples
// arrived as streams, what arrived, what they trained on, what their
// buffers dropped, and how long they waited for samples.
void PrintStreams(const JobProgress& p, std::ostream& out) {
  std::string injected;
  for (const auto& w : p.workers) {
    if (w.injected > 0) injected += "  worker " + std::to_string(w.rank) + ": " + WithThousands(w.injected);
  }
  if (!injected.empty()) out << "  injected samples (of labels their parts lack, from the coordinator):" << injected << "\n";
  if (!StreamTotalsOf(p).streams) return;
  out << "  stream    arrived  trained on    dropped   buffered  uncounted   waited for samples\n";
  bool uncounted_any = false, trained_again = false;
  for (const auto& w : p.workers) {
    if (!w.stream) continue;
    const StreamProgress& s = *w.stream;
    const int64_t trained = w.samples - w.injected;
    // Taken from the buffer into a batch whose gradient no round counted:
    // shown, so that a row adds up to what arrived.
    const int64_t uncounted = std::max<int64_t>(0, s.arrived - trained - s.dropped - s.backlog);
    uncounted_any = uncounted_any || uncounted > 0;
    trained_again = trained_again || trained > s.arrived;
    char line[200];
    std::snprintf(line, sizeof line, "  %6d %10s %11s %10s %10s %10s   %.1f s (%.0f%%)\n", w.rank,
                  WithThousands(s.arrived).c_str(), WithThousands(trained).c_str(), WithThousands(s.dropped).c_str(),
                  WithThousands(s.backlog).c_str(), WithThousands(uncounted).c_str(), s.wait_s,
                  w.wall_s > 0 ? 100 * s.wait_s / w.wall_s : 0.0);
    out << line;
  }
  if (uncounted_any) {
    out << "  uncounted: taken into batches whose gradients no round counted (late for their round, sent over a "
           "link that broke, or in hand when the run ended), or left in a buffer by an interrupted run this one "
           "resumed\n";
  }
  if (trained_again) {
    out << "  trained on more than arrived: a resumed run reads again whole the file of its folder it had taken "
           "only part of, and trains on those samples again\n";
  }
  // Files of a stream's folder a worker could not read, said here and not
  // only in its log: samples the user expected that were never trained on.
  for (const auto& w : p.workers) {
    if (!w.stream || w.stream->refused_files == 0) continue;
    out << "  worker " << w.rank << " left out " << w.stream->refused_files << " file"
        << (w.stream->refused_files == 1 ? "" : "s") << " of its folder"
        << (w.stream->refused_files == 1 ? ": " : ", the last it left out: ") << w.stream->last_refused;
    // Only the last is in its progress (a user's trial saw one file of
    // several named). Not "named in worker-N.log": that log goes with the
    // run's folder unless kept, and a resumed run's names none of an earlier
    // run's (a new user's trial).
    if (w.stream->refused_files > 1) {
      out << " (edgetrain partition JOB.yaml names each it would leave out now; so does worker " << w.rank
          << "'s log as each was, kept with --keep-logs)";
    }
    out << "\n";
  }
}

// Of a team whose batches follow each worker's measured compute: the batch
// each was dealt as the run ended (a new user saw no sign of the weighting).
void PrintDealtBatches(const JobSpec& spec, const JobProgress& p, const std::vector<std::string>& names,
                       std::ostream& out) {
  if (!spec.data.compute_weighted || p.workers.empty()) return;
  std::string dealt;
  for (const auto& w : p.workers) {
    dealt += (dealt.empty() ? "" : ", ") + WorkerName(w.rank, names) + " " + WithThousands(w.batch_size);
  }
  out << "  batches dealt by measured compute (spec.data.computeWeighted; " << spec.data.batch_size
      << " a worker until measured), as the run ended: " << dealt << "\n";
}

// Of workers that choose their compression (adaptive): how often each chose
// top-k, and what top-k kept of its gradient when it last measured.
void PrintCompression(const JobProgress& p, std::ostream& out) {
  std::string line;
  for (const auto& w : p.workers) {
    if (!w.compression || w.compression->pushes == 0) continue;
    const CompressionProgress& c = *w.compression;
    char part[160];
    std::snprintf(part, sizeof part, "%s  worker %d: top-k in %.0f%% of pushes, now %s (top-k keeps %.2f of the norm)",
                  line.empty() ? "" : "\n", w.rank,
                  100.0 * static_cast<double>(c.topk_pushes) / static_cast<double>(c.pushes), c.encoding.c_str(),
                  c.topk_kept_norm);
    line += part;
  }
  if (line.empty()) return;
  char head[120];
  std::snprintf(head, sizeof head, "  adaptive compression (top-k while it keeps %.1f of the norm, else int8):\n",
                kTopKKeepsEnough);
  out << head << line << "\n";
}

}  // namespace

// Loopback's estimates say nothing of a device: an unshaped one says so.
bool Unshaped(const WorkerSlot* device) { return device && !device->link; }

// The worker's estimate of its uplink, then the coordinator's of its
// downlink: a team pushing small messages (sign rows) has only the second
// timed, and one column of the uplink alone read "-" on every row of the
// robot team (a new user's trial).
std::string LinkColumn(const WorkerProgress& w, const WorkerSlot* device) {
  if (Unshaped(device)) return "unshaped";
  if (w.bandwidth_mbps <= 0 && w.downlink_mbps <= 0) return "-";  // emulated, too little through it to time
  auto either = [](double mbps) { return mbps > 0 ? Fixed(mbps, 1) : std::string("-"); };
  return either(w.bandwidth_mbps) + "/" + either(w.downlink_mbps);
}

// Modelled joules as the summary says them: under 10 J to a tenth, under 1 J
// to a hundredth (a job stopped at an energy budget of 0.001 J said "0 J",
// and rows of "0" summed to a total of 0.57 J: a new user's trial, review).
std::string JoulesText(double j) { return j >= 10 ? WithThousands(std::llround(j)) : Fixed(j, j >= 1 ? 1 : 2); }

std::string WhoTheTeamWaitedOn(const JobProgress& p, const std::vector<std::string>& names) {
  // Those who held it a twentieth of the time or more, longest first.
  std::vector<const WorkerProgress*> held;
  for (const auto& w : p.workers) {
    if (p.elapsed_s > 0 && w.held_team_s >= 0.05 * p.elapsed_s) held.push_back(&w);
  }
  std::sort(held.begin(), held.end(), [](auto* a, auto* b) { return a->held_team_s > b->held_team_s; });
  std::string said;
  for (size_t i = 0; i < held.size(); ++i) {
    // Under a second to a hundredth: a short run's twentieth read "0.0 s".
    const double s = held[i]->held_team_s;
    said += (i == 0 ? "" : i + 1 == held.size() ? " and " : ", ") + WorkerName(held[i]->rank, names) + " for " +
            Fixed(s, s >= 1 ? 1 : 2) + " s";
  }
  return said;
}

namespace {

// Why it stopped, in words.
std::string StoppedBy(const JobProgress& p) {
  if (!p.stop_reason) return "stopped";
  switch (*p.stop_reason) {
    case StopReason::kTarget: return "stopped at its target";
    case StopReason::kEpochs: return "stopped after its epochs";
    case StopReason::kWallClock: return "stopped at its wall-clock budget";
    case StopReason::kEnergy: return "stopped at its energy budget";
    case StopReason::kCancelled: return "interrupted";
    case StopReason::kFailed: return "failed";
  }
  return "stopped";
}

}  // namespace

ComputingAlone ComputingAloneOf(const JobSpec& spec, const JobProgress& p) {
  // Every worker computing without a wait, at its own pace (over its
  // compute time, which leaves out waits and reconnections). A team
  // iteration of fixed batches is a batch from each, so the team's rate is
  // the mean of theirs; the samples of varying batches add up.
  // By its own count where it gave one: the rounds counted only its
  // batches in time, and its compute time is of every batch, so a robot
  // whose link was out read as computing at an eighth of its pace (a new
  // user's trial: 45 batches a second beside its teammates' 369, the same
  // device).
  const bool variable = VariableBatches(spec);
  double rate_sum = 0;
  ComputingAlone alone;
  for (const auto& w : p.workers) {
    if (w.computed_samples_per_s > 0 && (variable || w.batch_size > 0)) {
      rate_sum += variable ? w.computed_samples_per_s : w.computed_samples_per_s / w.batch_size;
      ++alone.rated;
      continue;
    }
    const int64_t done = variable ? w.samples : w.batch_size > 0 ? w.samples / w.batch_size : 0;
    if (w.compute_s <= 0 || done <= 0) continue;
    rate_sum += static_cast<double>(done) / w.compute_s;
    ++alone.rated;
  }
  // A worker none of whose batches a round counted (all late, its link in a
  // dip) has no pace to read; the team's, a mean, is then that of the others.
  // Not for varying batches, whose limit is a sum over every worker.
  if (alone.rated == static_cast<int>(p.workers.size()) || (!variable && alone.rated > 0)) {
    alone.pace = variable ? rate_sum : rate_sum / alone.rated;
  }
  return alone;
}

std::string SizeText(double bytes) {
  return bytes >= 10e6 ? Fixed(bytes / 1e6, 0) + " MB" : bytes >= 0.1e6 ? Fixed(bytes / 1e6, 1) + " MB"
                                                                          : Fixed(bytes / 1e3, 0) + " kB";
}

std::string WhatTheTeamGained(const JobSpec& spec, const JobProgress& p) {
  if (p.workers.empty() || p.iteration <= 0 || p.elapsed_s <= 0) return "";
  // Batches that vary (a stream's, weighted ones) make the team's iteration a
  // count of samples, not of rounds: what was sent is set against the rounds
  // (the furthest any worker pushed for), and the pace is in samples. So
  // under deadline, whose rounds closed without a worker count for less than
  // an iteration each: fp16 rows read as 85% of float32's, set against 60%
  // fewer iterations than rounds, where bsp's read 51% (a new user's trial).
  const bool variable = VariableBatches(spec);
  const bool by_rounds = variable || spec.sync.policy == SyncPolicy::kDeadline;
  int64_t rounds = p.iteration;
  if (by_rounds) {
    rounds = 0;
    for (const auto& w : p.workers) rounds = std::max(rounds, w.iteration);
  }
  // What bsp with float32 rows would have sent for as many rounds: the
  // whole model up and down, for each worker, every round.
  const double whole = static_cast<double>(rounds) * static_cast<double>(p.workers.size()) * 4.0 *
                       static_cast<double>(StepCostOf(spec).parameters);
  const double up = static_cast<double>(BytesSent(p)), down = static_cast<double>(BytesReceived(p));
  const ComputingAlone alone = ComputingAloneOf(spec, p);
  std::string said = "on the wire " + SizeText(up) + " up and " + SizeText(down) + " down";
  if (whole > 0) {
    // Over 100% uncompressed: each row's header and each message's framing
    // on top of its floats, and the pushes a silent worker sends to say it
    // lives; said, since a share over the whole read as wrong (a new user).
    const double share = (up + down) / (2 * whole);
    said += ", " + Fixed(100 * share, 0) + "% of float32 rows both ways " +
            (by_rounds ? "in each of " + CountOf(rounds, "round", "rounds") : std::string("every iteration")) +
            (share >= 1.005 ? " (headers and framing included)" : "");
  }
  said += "; stalled " + Fixed(100 * MeanStallFraction(p), 0) + "% of the time; ";
  const double pace = static_cast<double>(variable ? p.samples : p.iteration) / p.elapsed_s;
  said += variable ? WithThousands(std::llround(pace)) + " samples/s" : Fixed(pace, 1) + " team iterations/s";
  if (alone.pace) {
    const double limit = *alone.pace;
    said += " against " + (variable ? WithThousands(std::llround(limit)) : Fixed(limit, 1)) + " computing alone (" +
            Fixed(100 * pace / limit, 0) + "%" +
            (alone.rated == static_cast<int>(p.workers.size())
                 ? std::string()
                 : ", the pace of the " + CountOf(alone.rated, "worker", "workers") + " with a batch counted") +
            ")";
  }
  // Streams bound what a team can train on, whatever its compute: the
  // samples of theirs trained on, against what arrived.
  const StreamTotals totals = StreamTotalsOf(p);
  if (totals.streams && totals.arrived > 0) {
    const double arriving = static_cast<double>(totals.arrived) / p.elapsed_s;
    const double of_streams = static_cast<double>(p.samples - totals.injected) / p.elapsed_s;
    said += " and " + WithThousands(std::llround(arriving)) + " arriving (" + Fixed(100 * of_streams / arriving, 0) +
            "% trained on" + (totals.injected > 0 ? ", injected samples aside" : "") + ")";
  }
  return said;
}

namespace {

// What a team's iteration was, counted: a batch from each worker's worth of
// samples. Under deadline a round may close without a worker whose link fell
// behind, and counts for the batches it had: a new user read "540 rounds of
// a batch from each of 4 workers" beside workers of 720 batches each and one
// of 1.
std::string TeamIterations(const JobSpec& spec, int64_t iterations, int workers) {
  const std::string counted = CountOf(iterations, "team iteration", "team iterations");
  const std::string each = CountOf(workers, "worker", "workers");
  if (VariableBatches(spec)) return counted + " (in full batches' worth of samples from each of " + each + ")";
  if (spec.sync.policy == SyncPolicy::kDeadline && workers > 1) {  // one worker is never late for its own round
    return counted + " (each the samples of a batch from each of " + each +
           "; a round closed without a late worker counts for the batches it had)";
  }
  return counted + " (a batch from each of " + each + ")";
}

void PrintModelLine(const JobProgress& p, std::ostream& out) {
  if (p.model_path.empty() && p.samples <= 0) {
    out << "  model: none written by this run (nothing trained; a model.pt already there, if any, is as it was)\n";
  } else if (p.model_path.empty()) {
    out << "  model: none written by this run (interrupted: run it again to resume; a model.pt already there is "
           "kept)\n";
  } else {
    out << "  model: " << p.model_path << "\n";
  }
}

// A pipeline's stages: what each device held and how its time went, its
// bubbles being the time it waited in a step for a neighbour's micro-batch.
void PrintStages(const PipelineLayout& layout, const std::vector<WorkerSlot>& devices,
                 double predicted_samples_per_s, const JobProgress& p, std::ostream& out) {
  // The plan's, or the stages given (--stages, spec.parallelism.stages): a
  // loss or a move changes the stages, said below and in the table. A hand
  // layout read "as planned" (a new user's trial).
  // Relaid: its stages or their devices changed mid-run; a redeal within a
  // group keeps both, its shares dealt by what each device computed.
  // A device let go of as a straggler, or left out by a measurement's
  // layout, relays its stage too (a new user's run compared with the plan
  // after its slowed device had gone).
  const bool relaid = p.replays && (p.replays->count > 0 || p.replays->covered > 0 || p.replays->repartitions > 0 ||
                                    p.replays->restored_stages > 0 || p.replays->rejoined > 0 ||
                                    p.replays->stragglers > 0 || p.replays->left_out > 0);
  const bool changed = relaid || (p.replays && p.replays->redealt > 0);
  const bool given = layout.stages_given;
  out << "  " << (changed ? (given ? "as given, " : "as planned, ") : "") << layout.stages.size()
      << (layout.stages.size() == 1 ? " stage, " : " stages, ") << layout.micro_batches
      << (layout.micro_batches == 1 ? " micro-batch a step" : " micro-batches a step");

  // How far the run was from the plan's cost model, which counts the passes,
  // links and optimizer but not the runtime's own messages.
  // Not for a resumed run: its rate is over the runs it resumed too, which
  // may have run another plan (a new user's read 44% where this run alone
  // trained at about 80%).
  // Nor the evaluations' pauses, which the prediction of training leaves
  // out: a steady 99% read 87% with one 3 s evaluation (a new user's trial).
  // Nor once the layout changed mid-run (a loss, a move): the run's rate
  // spans the plan and what came after it (a new user read 67% of the plan
  // where the run had trained at about 36% of it before a loss and at twice
  // the re-plan's prediction after).
  // Nor over a few steps, the first of which pay for warming up: a run
  // stopped after 2 read 35% of its plan (a new user's trial).
  constexpr int64_t kStepsToJudgeAPace = 10;
  if (relaid && predicted_samples_per_s > 0) {
    out << (given ? "; the cost model predicted " : "; the plan predicted ")
        << WithThousands(std::llround(predicted_samples_per_s)) << " samples/s, its layout changed mid-run (below)";
  } else if (predicted_samples_per_s > 0 && p.samples_per_second > 0 && !p.resumed_from_iteration &&
             p.iteration < kStepsToJudgeAPace) {
    out << (given ? "; the cost model predicted " : "; the plan predicted ")
        << WithThousands(std::llround(predicted_samples_per_s)) << " samples/s (not compared: "
        << p.iteration << (p.iteration == 1 ? " step" : " steps") << ", too few to judge a pace by)";
  } else if (predicted_samples_per_s > 0 && p.samples_per_second > 0 && !p.resumed_from_iteration) {
    const double training_s = p.elapsed_s - p.evaluation_s;
    const bool paused = p.evaluation_s > 0 && training_s > 0;
    const double rate = paused ? static_cast<double>(p.samples) / training_s : p.samples_per_second;
    out << "; trained at " << std::llround(100 * rate / predicted_samples_per_s)
        << (given ? "% of the cost model's predicted " : "% of the plan's predicted ")
        << WithThousands(std::llround(predicted_samples_per_s)) << " samples/s";
    if (paused) out << " (its " << Fixed(p.evaluation_s, p.evaluation_s < 0.1 ? 2 : 1) << " s of evaluations left out)";
  } else if (predicted_samples_per_s > 0 && p.resumed_from_iteration) {
    // Said, not compared: the line had gone missing from resumed runs alone
    // (a new user's trial).
    out << (given ? "; the cost model predicted " : "; the plan predicted ")
        << WithThousands(std::llround(predicted_samples_per_s))
        << " samples/s (not compared: a resumed run's rate spans the runs before it)";
  }
  out << "\n";
  // Stopped before its first step: a table of zeros says nothing the plan,
  // printed as the run started, did not (a new user's Ctrl-C).
  if (p.samples <= 0) return;
  // What devices lost mid-run cost, and what the head made of the devices left.
  if (p.replays && (p.replays->count > 0 || p.replays->covered > 0)) {
    const JobProgress::Replays& r = *p.replays;
    // A device of a group is covered by its group, the step's other passes
    // standing; other losses run the step again on every stage.
    out << "  devices lost:";
    if (r.covered > 0 && r.covered_shares == 0) {
      // Lost once all it computed of the step was in: no one covered it
      // (it read "covered by its group (0 shares computed again)": a user's trial).
      out << " " << r.covered << (r.covered == 1 ? " with all it computed in, nothing run again"
                                                 : " with all they computed in, nothing run again");
    } else if (r.covered > 0) {
      // What its group computed for it, and of that what it had computed
      // before: the work lost with it.
      out << " " << r.covered << (r.covered == 1 ? " covered by its group (" : " covered by their groups (")
          << r.covered_shares << (r.covered_shares == 1 ? " share" : " shares") << " computed by another device, "
          << r.rerun_shares << " of them again)";
    }
    if (r.replayed_steps > 0) {
      out << (r.covered > 0 ? ";" : "") << " " << r.replayed_steps << (r.replayed_steps == 1 ? " step" : " steps")
          << " run again on the devices left (" << r.micro_batches << " micro-batch"
          << (r.micro_batches == 1 ? "" : "es") << ")";
    }
    out << "; " << Fixed(r.recovery_s, 2) << " s from the losses to their steps done";
    if (r.restored_stages > 0) {
      out << "; " << r.restored_stages << (r.restored_stages == 1 ? " stage" : " stages")
          << " rebuilt on a neighbour from the head's replica, " << WithThousands(r.steps_lost)
          << (r.steps_lost == 1 ? " step" : " steps") << " of its layers' updates lost";
    }
    out << "\n";
  }
  // Devices let go of for how they ran rather than lost to a link or a crash.
  if (p.replays && p.replays->hung + p.replays->stragglers + p.replays->left_out > 0) {
    const JobProgress::Replays& r = *p.replays;
    std::vector<std::string> said;
    if (r.hung > 0) {
      said.push_back(std::to_string(r.hung) + " taken for hung (a pass far past its deadline, its heartbeats still coming)");
    }
    if (r.stragglers > 0) {
      said.push_back(std::to_string(r.stragglers) + (r.stragglers == 1 ? " straggler" : " stragglers") +
                     " (ran a share far slower than its group's fastest)");
    }
    if (r.left_out > 0) {
      said.push_back(std::to_string(r.left_out) + " left out of the stages laid out anew (at the pace measured, " +
                     "predicted faster without " + (r.left_out == 1 ? "it)" : "them)"));
    }
    out << "  let go of for how they ran:";
    for (size_t i = 0; i < said.size(); ++i) out << (i ? "; " : " ") << said[i];
    out << "\n";
  }
  // Devices back in a stage, lost or let go of before: the terminal's note
  // said one was back, and the summary nothing (a new user's trial).
  if (p.replays && p.replays->rejoined > 0) {
    out << "  back in a stage: " << p.replays->rejoined << (p.replays->rejoined == 1 ? " device" : " devices")
        << " lost or let go of before, each rejoining between steps\n";
  }
  // The head's re-plan over the devices left, after a loss or a device let
  // go of (a new user read "16 micro-batches" above where the log said 32
  // since a straggler went).
  if (p.replays && p.replays->replanned_micro_batches > 0) {
    const JobProgress::Replays& r = *p.replays;
    // The count the run started with, said where it stayed (it read as a
    // change: a new user's trial).
    const bool same = layout.micro_batches == r.replanned_micro_batches;
    out << "  planned again for the devices it last had: " << r.replanned_micro_batches << " micro-batch"
        << (r.replanned_micro_batches == 1 ? "" : "es") << " a step" << (same ? ", as before" : "") << ", predicted "
        << WithThousands(std::llround(r.replanned_samples_per_s)) << " samples/s\n";
  }
  if (p.replays && p.replays->redealt > 0) {
    out << "  micro-batches dealt anew within groups " << p.replays->redealt
        << (p.replays->redealt == 1 ? " time" : " times") << ", by what their devices computed a second\n";
  }
  if (p.replays && p.replays->repartitions > 0) {
    // A layout anew may move no layer and leave a device out: "layers moved"
    // beside the planned layers read as a contradiction (a new user's trial).
    // Nor is every one a drift: a device back is laid out anew too (a
    // user's trial read its rejoin put down to the devices' pace).
    out << "  stages laid out anew " << p.replays->repartitions
        << (p.replays->repartitions == 1 ? " time" : " times")
        << " (layers moved as the devices' pace drifted, devices left out, or a device back taken in); as they "
           "ended:\n";
  }
  // Layers by the names the plan gave them (conv1-classifier), where it
  // has them; a layout given by hand, by their places (0-8).
  auto layer_name = [&](int l) {
    const auto& from = layout.planned_from;
    return from && static_cast<size_t>(l) < from->layers.size() ? from->layers[static_cast<size_t>(l)].name
                                                                 : std::to_string(l);
  };
  struct Row {
    int first_layer;
    std::string layers, device;
    const WorkerProgress* worker;
  };
  std::vector<Row> rows;
  size_t width = std::string("layers").size();
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const PipelineStagePlan& stage = layout.stages[s];
    for (int rank : stage.ranks) {
      const auto w = std::find_if(p.workers.begin(), p.workers.end(), [&](const auto& x) { return x.rank == rank; });
      // A device in no stage at the end holds no layers: said below the table.
      if (w == p.workers.end() || (!w->active && !w->layers)) continue;
      // As they ended: layers move between stages as devices drift.
      const auto [first, end] = w->layers.value_or(std::pair{stage.first_layer, stage.end_layer});
      const std::string layers = end - first == 1 ? layer_name(first) : layer_name(first) + "-" + layer_name(end - 1);
      const std::string device = static_cast<size_t>(rank) < devices.size() ? devices[rank].node : "rank " + std::to_string(rank);
      rows.push_back({first, layers, device, &*w});
      width = std::max(width, layers.size());
    }
  }
  // Stages numbered as they ended, by their first layer: a stage rebuilt on
  // its neighbour, or devices laid out anew, renumber those after (the table
  // read 1, 2, 4 after a loss, where the log said "now stage 2 of 3").
  std::vector<int> firsts;
  for (const Row& row : rows) firsts.push_back(row.first_layer);
  std::sort(firsts.begin(), firsts.end());
  firsts.erase(std::unique(firsts.begin(), firsts.end()), firsts.end());
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.first_layer < b.first_layer; });
  out << "  stage  " << std::string("layers").append(width - 6, ' ')
      << "  device         last step   compute s   bubbles    MB sent   MB recv   energy J\n";
  for (const Row& row : rows) {
    const WorkerProgress& w = *row.worker;
    char line[300];
    // Over the device's link to the head, both ways: activations and
    // gradients relayed, its group's gradient exchange, replicas.
    // The step it last took part in, over every run of the job: a count of
    // its steps read as such after a resume gave this run's devices the
    // whole job's (a new user's trial). Its energy, as a team's table gives
    // each worker's: only the total was printed (another).
    const auto stage = static_cast<size_t>(std::lower_bound(firsts.begin(), firsts.end(), row.first_layer) - firsts.begin());
    std::snprintf(line, sizeof line, "  %5zu  %-*s  %-14s %9s %11.1f %8.0f%% %10.1f %9.1f %10.1f\n", stage + 1,
                  static_cast<int>(width), row.layers.c_str(), row.device.c_str(), WithThousands(w.iteration).c_str(),
                  w.compute_s, 100 * w.stall_fraction, static_cast<double>(w.bytes_sent) / 1e6,
                  static_cast<double>(w.bytes_received) / 1e6, w.energy_joules);
    out << line;
  }
  std::string gone;
  for (const WorkerProgress& w : p.workers) {
    if (w.active || w.layers) continue;
    const std::string device =
        static_cast<size_t>(w.rank) < devices.size() ? devices[w.rank].node : "rank " + std::to_string(w.rank);
    gone += (gone.empty() ? "" : ", ") + device + " (its last step " + WithThousands(w.iteration) + ", " +
            Fixed(static_cast<double>(w.bytes_sent) / 1e6, 1) + " MB sent, " +
            Fixed(static_cast<double>(w.bytes_received) / 1e6, 1) + " MB received, " + Fixed(w.energy_joules, 1) +
            " J)";
  }
  if (!gone.empty()) out << "  not in the pipeline at the end: " << gone << "\n";
  // What the rows and those leave out of the job's totals: the devices of the
  // runs it resumed that are in none of its ranks now (another profile). The
  // rows summed to 464 of 644 J, unsaid (a new user's trial).
  double listed_j = 0;
  for (const WorkerProgress& w : p.workers) listed_j += w.energy_joules;
  const double earlier_j = p.energy_joules ? *p.energy_joules - listed_j : 0;
  if (p.departed_bytes_sent > 0 || p.departed_bytes_received > 0 || earlier_j >= 0.05) {
    out << "  devices of the runs it resumed that are not in this one: "
        << Fixed(static_cast<double>(p.departed_bytes_sent) / 1e6, 1) << " MB sent, "
        << Fixed(static_cast<double>(p.departed_bytes_received) / 1e6, 1) << " MB received, "
        << Fixed(std::max(0.0, earlier_j), 1) << " J\n";
  }
  // A device's figures go on over the job's runs, whatever stages it held
  // in each: a one-stage run resumed from an even split's showed its
  // gateway's 34% bubbles and 55 MB, with no neighbour (a new user's trial).
  if (p.resumed_from_iteration) {
    out << "  each device's compute, bubbles and MB over this run and those it resumed (from iteration "
        << WithThousands(*p.resumed_from_iteration) << "), in whatever stages it held then\n";
  }
}

// What the table cannot show by itself: a link not timed, and figures a
// worker last sent well before the end (its link down, or its pushes all
// dropped), which the team's totals stop at too.
void PrintTableNotes(const JobProgress& p, const LocalRunPlan& plan, const std::vector<std::string>& names,
                     std::ostream& out) {
  bool untimed = false;
  std::string behind, away, uncounted;
  for (const auto& w : p.workers) {
    const WorkerSlot* device = static_cast<size_t>(w.rank) < plan.devices.size() ? &plan.devices[w.rank] : nullptr;
    untimed = untimed || (!Unshaped(device) && (w.bandwidth_mbps <= 0 || w.downlink_mbps <= 0));
    // It pushed, and no round counted a batch of it: each came after its
    // round had closed (a new user read 0 batches beside 38,130 rows sent).
    if (w.samples == 0 && w.rows_sent > 0) uncounted += (uncounted.empty() ? "" : ", ") + WorkerName(w.rank, names);
    // Against the job's training time, only a gap of seconds and a tenth of
    // the run counts. A worker's clock runs while it is connected (each
    // stream's time, summed), so what it lacks is time before it joined,
    // between a broken stream and the next, or after its last report. Only
    // the last is silence at the end, as the coordinator heard it: the
    // shortfall alone named a worker that had joined late, its link out at
    // the start, as one that stopped early (a user's trial). (Its silence is
    // read as the team finishes, a second or so past the training's end.)
    const double least_gap = std::max(3.0, 0.1 * p.elapsed_s);
    const double short_s = p.elapsed_s - w.wall_s;
    const double silent_s = std::min(w.silent_s, short_s);
    if (w.active && w.wall_s > 0 && silent_s > least_gap) {
      behind += (behind.empty() ? "" : ", ") + WorkerName(w.rank, names) + " " + Fixed(silent_s, 1) + " s";
    }
    if (w.wall_s > 0 && short_s - silent_s > least_gap) {
      away += (away.empty() ? "" : ", ") + WorkerName(w.rank, names) + " " + Fixed(short_s - silent_s, 1) + " s";
    }
  }
  // Workers of the runs it resumed that this team has not (it resumed with
  // fewer): in the totals above, in no row. The rows summed to 545,792 of
  // 600,000 samples and 316 of 378 J, unsaid (a new user's trial).
  if (p.departed_bytes_sent > 0 || p.departed_bytes_received > 0) {
    int64_t listed_samples = 0;
    double listed_j = 0;
    for (const auto& w : p.workers) listed_samples += w.samples, listed_j += w.energy_joules;
    out << "  workers of the runs it resumed that are not in this team: "
        << WithThousands(std::max<int64_t>(0, p.samples - listed_samples)) << " samples, "
        << Fixed(static_cast<double>(p.departed_bytes_sent) / 1e6, 1) << " MB sent, "
        << Fixed(static_cast<double>(p.departed_bytes_received) / 1e6, 1) << " MB received, "
        << Fixed(std::max(0.0, p.energy_joules.value_or(listed_j) - listed_j), 1)
        << " J: in the totals above, in no row\n";
  }
  if (untimed) {
    out << "  up/down -: not timed: a message must be " << kLeastTimedBytes / 1024
        << " KiB or more to time a link, smaller ones passing a shaper's burst at once"
        << (plan.kernel_links ? "; under the kernel's shaping the downlink is timed by the worker, on an update's "
                                "parts after its first"
                              : "")
        << "\n";
  }
  if (!uncounted.empty()) {
    out << "  batches 0 beside rows sent (" << uncounted << "): every push came after its round had closed, and "
        << "rounds count only the batches that made them\n";
  }
  if (!away.empty()) {
    out << "  not connected all the while the team trained (" << away << "; it joined after the team started, or "
        << "rejoined after its stream broke): its row, its stall too, counts the time it was\n";
  }
  if (!behind.empty() && p.stop_reason != StopReason::kCancelled) {
    // Said in order: the worker, how long before the end its last report
    // came, and what that means for its row ("came before the end from
    // robot-4 4.1 s" read as garbled: a new user's trial).
    // A fresh run takes each worker's energy from its own count at its end
    // (TakeWorkersOwnEnergy): said so, where it read as if the energy
    // stopped there too (a user's trial).
    out << "  each worker's row is as of its last report, and these reported last before the end: " << behind
        << " before it; nothing of theirs reached the coordinator since, so their figures stop there"
        << ", but for energy, which is each worker's own count to its end"
        << "\n";
  }
}

// Each worker's row, and what the rows cannot show by themselves
// (PrintTableNotes). Stopped before the team's first step (a Ctrl-C while its
// workers gathered), one line instead: a table of zeros, and a note that no
// link was timed, said nothing (a new user's trial).
void PrintWorkerTable(const JobProgress& p, const LocalRunPlan& plan, const std::vector<std::string>& names,
                      std::ostream& out) {
  const bool stepped = p.samples > 0 || std::any_of(p.workers.begin(), p.workers.end(), [](const WorkerProgress& w) {
                         return w.samples > 0 || w.rows_sent > 0 || w.bytes_sent > 0;
                       });
  if (!stepped) {
    out << "  no step trained: nothing to show of each worker\n";
    return;
  }
  // Batches that vary are counted by what they held: samples.
  const bool variable = VariableBatches(plan.job.spec);
  out << "  worker  node           " << (variable ? " samples" : " batches")
      << "   rows sent    MB sent   MB recv  up/down Mbit/s   stall   energy J\n";
  for (const auto& w : p.workers) {
    const WorkerSlot* device = static_cast<size_t>(w.rank) < plan.devices.size() ? &plan.devices[w.rank] : nullptr;
    const int64_t batches = variable ? w.samples : w.batch_size > 0 ? w.samples / w.batch_size : 0;
    char line[200];
    std::snprintf(line, sizeof line, "  %6d  %-14s %8s %11s %10.1f %9.1f %15s %6.0f%% %10s\n", w.rank,
                  WorkerName(w.rank, names).c_str(), WithThousands(batches).c_str(),
                  WithThousands(w.rows_sent).c_str(), static_cast<double>(w.bytes_sent) / 1e6,
                  static_cast<double>(w.bytes_received) / 1e6, LinkColumn(w, device).c_str(), 100 * w.stall_fraction,
                  JoulesText(w.energy_joules).c_str());
    out << line;
  }
  PrintTableNotes(p, plan, names, out);
}

}  // namespace

void PrintSummary(const api::TrainingJobManifest& job, const LocalRunPlan& plan, const JobProgress& p, double wall_s,
                  std::ostream& out, const std::map<int, std::string>& ended) {
  const int workers = job.spec.parallelism.workers;
  if (p.samples <= 0) {
    // Stopped before its first step (Ctrl-C while it loaded or connected):
    // an untrained model's accuracy says nothing. Counted in samples: a
    // team's iterations are whole rounds' worth, and half a round trained
    // something (a summary said "nothing trained" beside "32 samples").
    out << job.name << ": nothing trained, " << StoppedBy(p) << "\n";
  } else if (!p.accuracy) {
    // Resumed, and stopped again before this run's first step: its model
    // is the checkpoint's, not evaluated (it read "test accuracy 0.0000").
    // Interrupted once it trained, its evaluation may be left to the run that
    // resumes from its checkpoint.
    const bool interrupted = p.stop_reason == StopReason::kCancelled &&
                             p.iteration > p.resumed_from_iteration.value_or(0);
    out << job.name << ": "
        << (p.resumed_from_iteration && p.iteration == *p.resumed_from_iteration
                ? "no step this run, its checkpoint as it was"
            : interrupted ? "test accuracy not measured (left to the run that resumes)"
                          : "test accuracy not measured")
        << ", " << StoppedBy(p) << "\n";
  } else if (p.stop_reason == StopReason::kCancelled && p.evaluated_iteration &&
             *p.evaluated_iteration != p.iteration) {
    // Interrupted: the final model's evaluation, a slow one, is left to the
    // run that resumes (agent/job_driver.cc); the accuracy is an earlier model's.
    out << job.name << ": test accuracy " << Fixed(*p.accuracy, 4) << " at "
        << (plan.job.pipeline ? "step " : "iteration ") << *p.evaluated_iteration
        << " (the final model's evaluation left to the run that resumes), " << StoppedBy(p) << "\n";
  } else {
    // Interrupted beside an earlier run's model.pt, which it keeps: what was
    // measured is this run's model, which only its checkpoint holds ("final
    // model" beside "model: none written" read as the kept one's: a new
    // user's trial).
    const bool kept_earlier = p.model_path.empty() && p.stop_reason == StopReason::kCancelled;
    // At its target the job keeps the model that reached it, not the rounds
    // that closed while it stopped (agent/job_driver.cc): named by its
    // iteration, where "final model" beside 2,011 iterations read as theirs
    // (a new user's trial).
    const bool kept_at_target = p.stop_reason == StopReason::kTarget && p.evaluated_iteration &&
                                *p.evaluated_iteration != p.iteration;
    const std::optional<double> target = job.spec.budget.target_accuracy;
    std::string which = "final model";
    if (kept_earlier) which = "this run's model, which its checkpoint holds";
    if (kept_at_target) {
      which = "the model of " + std::string(plan.job.pipeline ? "step " : "iteration ") +
              WithThousands(*p.evaluated_iteration) + ", kept as it reached the target";
    }
    out << job.name << ": test accuracy " << Fixed(*p.accuracy, 4) << " (" << which;
    if (target && kept_at_target) {
      out << " " << *target;
    } else if (target) {
      out << "; target " << *target << (p.reached_target ? " reached" : " not reached");
    }
    out << "), " << StoppedBy(p) << "\n";
    const int classes = job.spec.data.files ? job.spec.data.files->classes : 10;  // the built-in sets have 10
    if (AboutWhatGuessingScores(*p.accuracy, classes)) {
      out << "  note: " << Fixed(*p.accuracy, 4) << " is about what guessing scores on " << classes
          << " classes (1 in " << classes << "): the model has not learned; a learning rate too high or too low, "
             "too short a budget, or labels that do not go with their samples are the usual causes\n";
    }
    // A loss far past what even guessing gives is a model whose outputs are
    // extreme: finite, so training went on, exit 0, and the summary said
    // nothing of a loss of 4e27 (a feature of 1e30 among ones of about 1: a
    // new user's trial). A hundred times guessing's is past any model's
    // that is merely wrong.
    const double guessing = std::log(static_cast<double>(std::max(2, classes)));
    if (std::isfinite(p.loss) && p.loss > 100 * guessing) {
      char said[64];
      std::snprintf(said, sizeof said, "%.3g", p.loss);
      out << "  note: the training loss is " << said << ", where guessing among " << classes << " classes gives "
          << Fixed(guessing, 2) << ": the model's outputs are extreme; a feature far larger than the rest of its "
             "data, or a learning rate too high, are the usual causes\n";
    }
  }
  out << "  "
      << (plan.job.pipeline ? CountOf(p.iteration, "step", "steps") + " (each the whole batch through the stages), "
          : plan.team       ? TeamIterations(plan.job.spec, p.iteration, workers) + ", "
                            : CountOf(p.iteration, "iteration", "iterations") + ", ")
      << CountOf(p.samples, "sample", "samples") << ", "
      << WithThousands(static_cast<int64_t>(std::llround(p.samples_per_second))) << " samples/s; "
      // Under a second to two places: "0.0 s of training" stood beside
      // 324,671 samples/s of a run of 0.04 s (a new user's trial).
      << Fixed(p.elapsed_s, p.elapsed_s < 1 ? 2 : 1) << " s of training";
  if (p.resumed_from_iteration) {
    out << " over this run and those it resumed (from iteration " << WithThousands(*p.resumed_from_iteration) << ")";
  }
  out << ", " << Fixed(wall_s, 1) << " s in all" << (p.resumed_from_iteration ? " this run" : "") << "\n";
  auto energy = [&] {
    if (p.energy_joules) out << "  energy (modelled, docs/energy.md): " << JoulesText(*p.energy_joules) << " J\n";
  };
  if (plan.job.pipeline) {
    energy();
    PrintStages(*plan.job.pipeline, plan.devices, plan.predicted_samples_per_s, p, out);
    PrintModelLine(p, out);
    return;
  }
  if (plan.team) {
    if (const std::string gained = WhatTheTeamGained(plan.job.spec, p); !gained.empty()) out << "  " << gained << "\n";
  }
  energy();
  if (!plan.devices.empty()) {
    std::vector<std::string> names;
    for (const WorkerSlot& slot : plan.devices) names.push_back(slot.node);
    // A stream's worker is often late for want of samples, not of compute or link.
    const bool streams = StreamTotalsOf(p).streams;
    // Every worker short of samples most of the time: the streams set the
    // pace, whether or not a teammate held the others meanwhile (none did,
    // as a new user's team of two starved streams had it, and nothing was said).
    const bool starved = streams && std::all_of(p.workers.begin(), p.workers.end(), WaitedMostlyForItsStream);
    if (starved) {
      out << "  every worker waited for its stream's samples most of the time: the streams set the pace, not a "
             "teammate (each one's wait is below)\n";
    } else if (const std::string waited = WhoTheTeamWaitedOn(p, names); !waited.empty()) {
      // A worker the team waited on that itself waited for its stream's
      // samples most of its time: its stream, not its compute or link, set the pace.
      std::string starved_by_stream;
      int stream_bound = 0;
      for (const auto& w : p.workers) {
        if (!WaitedMostlyForItsStream(w)) continue;
        if (p.elapsed_s <= 0 || w.held_team_s < 0.05 * p.elapsed_s) continue;
        starved_by_stream += (starved_by_stream.empty() ? "" : ", ") + WorkerName(w.rank, names) + " waited for " +
                             "its stream's samples " + Fixed(100 * w.stream->wait_s / w.wall_s, 0) + "% of its time";
        ++stream_bound;
      }
      std::string why;
      if (stream_bound > 0) {
        why = "; " + starved_by_stream + (stream_bound == 1 ? ": its stream" : ": their streams") +
              " set the team's pace";
      } else if (streams) {
        why = "; how long each waited for its stream's samples is below";
      }
      out << "  the team waited on " << waited << " (teammates needed rows only they could give" << why << ")\n";
    }
    // Those whose process ended on its own are said with how (the summary
    // said only "counted out, or gone" of a worker stopped by a NaN loss on
    // its data, and the run exited 0: a new user's trial).
    std::string out_at_end;
    bool unexplained = false;
    for (const auto& w : p.workers) {
      if (w.active) continue;
      out_at_end += (out_at_end.empty() ? "" : ", ") + WorkerName(w.rank, names);
      if (const auto how = ended.find(w.rank); how != ended.end()) {
        out_at_end += " (its agent ended: " + how->second + ")";
      } else {
        unexplained = true;
      }
    }
    // Interrupted, every worker left because it was told to: no news.
    const bool interrupted = p.stop_reason == StopReason::kCancelled;
    if (!out_at_end.empty() && !interrupted) {
      out << "  not in the team at the end: " << out_at_end
          << (unexplained ? " (counted out, or gone; its figures stop where it left)" : "; its figures stop where it left")
          << "\n";
    }
    // Pushes the coordinator refused, none of them applied: gradients no
    // model that trains has (a feature of 3e38 in a worker's part), said
    // here and not only in the coordinator's log (a worker trained 2 batches
    // of the team's 12, unsaid: a new user's trial).
    for (const auto& w : p.workers) {
      if (w.refused_pushes == 0) continue;
      out << "  " << WorkerName(w.rank, names) << ": " << CountOf(w.refused_pushes, "push", "pushes")
          << " refused by the coordinator, none of it applied; the last " << w.last_refusal
          << (w.quarantined.empty() ? "" : "; quarantined, the team went on without it") << "\n";
    }
    PrintWorkerTable(p, plan, names, out);
    PrintStreams(p, out);
    PrintDealtBatches(plan.job.spec, p, names, out);
    PrintCompression(p, out);
  }
  PrintModelLine(p, out);
}

void TakeWorkersOwnPace(JobProgress& p, const std::map<int, double>& own) {
  // A resumed run whose budget was already spent trains no round, yet its
  // workers may each finish a first batch, LibTorch's slow first pass,
  // between the model's arrival and Stop: that pace, a tenth of theirs or
  // less, set beside the team's iterations of every run before, makes the
  // team seem to train faster than its workers compute (a path, found by
  // reading, to a "computing alone" of 640% seen twice). The checkpoint's
  // totals are then the workers' pace, over the same runs as the team's.
  if (p.resumed_from_iteration && p.iteration <= *p.resumed_from_iteration) return;
  for (WorkerProgress& w : p.workers) {
    if (const auto it = own.find(w.rank); it != own.end() && it->second > 0) w.computed_samples_per_s = it->second;
  }
}

std::map<int, double> TakeWorkersOwnEnergy(JobProgress& p, const std::map<int, double>& own,
                                           const std::map<int, double>& carried) {
  std::map<int, double> unreported;
  for (WorkerProgress& w : p.workers) {
    const auto it = own.find(w.rank);
    if (it == own.end()) continue;
    const auto before = carried.find(w.rank);
    const double this_run = w.energy_joules - (p.resumed_from_iteration && before != carried.end() ? before->second : 0);
    if (!(it->second > this_run)) continue;
    const double more = it->second - this_run;
    unreported[w.rank] = more;
    w.energy_joules += more;
    if (p.energy_joules) *p.energy_joules += more;
  }
  return unreported;
}

std::string JsonLine(const api::TrainingJobManifest& job, const LocalRunPlan& plan, const JobProgress& p,
                     double wall_s, const std::map<int, std::string>& ended) {
  const int devices = plan.job.pipeline ? TrainingDevices(plan) : job.spec.parallelism.workers;
  auto nullable = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"job", job.name},
      {"accuracy", nullable(p.accuracy)},
      // The iteration the accuracy is of: an interrupted run may leave its
      // final model's evaluation to the run that resumes.
      {"evaluated_iteration", p.evaluated_iteration ? nlohmann::json(*p.evaluated_iteration) : nullptr},
      // No batch trained, no loss (it read 0.0). By the loss itself, not the
      // iteration: a team's counts whole batches of every worker, and one that
      // trained 32 samples of its 64 said null where its progress line had
      // shown 1.517 (a new user's trial). A resumed run's goes on from its checkpoint's.
      {"loss", p.loss > 0 ? nlohmann::json(p.loss) : nlohmann::json(nullptr)},
      {"iterations", p.iteration},
      {"samples", p.samples},
      {"epochs", p.epoch},
      // This run's wall clock; training time over it and the runs it
      // resumed, so that a resumed run's train_s may pass its wall_s.
      {"wall_s", wall_s},
      {"train_s", p.elapsed_s},
      {"resumed_from_iteration", p.resumed_from_iteration ? nlohmann::json(*p.resumed_from_iteration) : nullptr},
      {"samples_per_s", p.samples_per_second},
      {"reached_target", p.reached_target},
      {"target_accuracy", nullable(job.spec.budget.target_accuracy)},
      {"stop_reason", p.stop_reason ? NameOf(*p.stop_reason) : ""},
      {"workers", job.spec.parallelism.workers},
      {"devices", devices},
      {"stall_fraction", MeanStallFraction(p)},
      {"bytes_sent", BytesSent(p)},
      {"bytes_received", BytesReceived(p)},
      {"energy_joules", nullable(p.energy_joules)},
      // null where this run wrote none (interrupted beside a finished run's
      // model, which it keeps), as the text's "none written by this run":
      // "" read as a path (a user's trial).
      {"model_path", p.model_path.empty() ? nlohmann::json() : nlohmann::json(p.model_path)},
  };
  const StreamTotals totals = StreamTotalsOf(p);
  if (totals.streams) {
    j["stream"] = {{"arrived", totals.arrived}, {"dropped", totals.dropped}, {"refused_files", totals.refused_files}};
  }
  if (totals.injected > 0) j["injected_samples"] = totals.injected;
  // The summary's "computing alone", which no file of the run's folder
  // gives: each worker's own pace is in the result it printed as it exited
  // (a new user could not work it out from computeSeconds in /progress).
  // Of a data-parallel team alone, as the summary says it: a pipeline's
  // devices compute parts of one step, and have no pace of their own to add.
  if (const ComputingAlone alone = ComputingAloneOf(job.spec, p); !plan.job.pipeline && alone.pace && p.iteration > 0) {
    j["computing_alone"] = {{"per_s", *alone.pace},
                            {"of", VariableBatches(job.spec) ? "samples" : "team iterations"},
                            {"workers", alone.rated}};
  }
  // A team that trained on without a worker whose agent ended (its part of
  // the data refused, say) succeeds: said here too, where a script looks (a
  // new user's trial: the line read as a run of every worker's data).
  if (!ended.empty()) {
    nlohmann::json agents = nlohmann::json::array();
    for (const auto& [rank, how] : ended) agents.push_back({{"rank", rank}, {"how", how}});
    j["agents_ended"] = agents;
  }
  // Replaced, not thrown: an agent's last words may quote a path that is
  // not UTF-8, and a throw here lost the line and the run's folder.
  return api::ResultJson(j);
}

std::string FailureJsonLine(const std::string& job, const std::string& error) {
  // The error may quote bytes that are not UTF-8 (a path, a file's line): replaced, not thrown.
  return api::ResultJson({{"job", job}, {"stop_reason", NameOf(StopReason::kFailed)}, {"error", error}});
}

}  // namespace edgetrain::cli
