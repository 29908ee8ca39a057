#pragma once
// What the pipeline's head knows of one device (a rank) of its stages: its
// stream, whether and when it was lost, how silent it may fall before it is
// taken for lost, what its hello offered, its answer to the step, its share
// and totals, and the replica it is sending. Guarded by the head's lock.

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "agent/pipeline/replica_parts.h"
#include "agent/transport/transport.h"
#include "core/arrival_deadline.h"
#include "core/clock.h"
#include "core/pass_deadline.h"
#include "core/replica_relay.h"

namespace edgetrain::agent {

struct StageLink {
  int rank = 0;
  int stage = 0;
  WorkerStream* stream = nullptr;  // while served
  bool sending = false;            // the driver's commands and the relays share the stream
  // Its messages forwarded to another device, a send under way on that one's
  // stream, and when the last ended: while the head waits on another's link
  // it reads nothing of this one's, whose silence is then the head's own,
  // not the device's. A neighbour slow to receive had its sender taken for
  // lost in its place (found in review).
  int forwarding = 0;
  TimePoint forwarded_at{};
  bool lost = false;
  TimePoint lost_at{};  // when it was last heard (silent) or its stream ended
  // Lost mid-step, and its shares of the step computed by another of its
  // group (or all of them in already): the step goes on without it, and it
  // leaves its group once the step is done.
  bool covered = false;
  // An announced transfer on the way: its bytes, since when, and until when
  // silence is its time on the wire; the uplink's rate such transfers took.
  int64_t announced_bytes = 0;
  TimePoint announced_at{};
  TimePoint transfer_until{};
  double uplink_bytes_per_s = 0;
  // When it is overdue mid-step: learned from the gaps between its messages
  // (its heartbeats, and the passes' outputs, which may take a slow link
  // longer); until a gap is learned, nodeLossGrace. Set when it says hello.
  ArrivalDeadline heard;
  // The least silence it is taken for lost after: four heartbeats (the
  // grace, without heartbeats). A stage's only device is given twice that:
  // taken for lost, its layers come back from a replica, less the updates
  // since (up to replicateEvery steps), where a device of a group costs a
  // step replayed; on 2 cores shared with a cluster's stand-in a stage fell
  // silent 1.08 s at the end of a run with no fault, and lost 60 steps of
  // updates (a new user's trial).
  Duration silent_floor{};
  // When the pass its last heartbeat said was under way began; none: no
  // pass, or a message since. How long a pass may run (HungPasses), from
  // the longest of each step's passes.
  std::optional<TimePoint> busy_since;
  PassDeadline passes;
  // Steps running in which it ran its share a straggler's pace; when it was
  // let go of for how it ran (hung, a straggler) may rejoin no sooner than
  // back_after, and how many times it was.
  int slow_steps = 0;
  int64_t joined_after = 0;  // the step after which it last joined a stage (0: from the start)
  TimePoint back_after{};
  int held_back = 0;
  // What its hello offered of its planned layers: the step committed (0:
  // nothing), whether the next is pending too, and the job's clock and
  // energy then.
  int64_t offered_step = 0;
  bool offered_pending = false;
  double offered_elapsed_s = 0;
  double offered_energy_j = 0;  // the job's energy, as the old head last said it
  // And the neighbouring stages' replicas it keeps: by their layers, their steps.
  std::map<std::pair<int, int>, int64_t> offered_replicas;
  // Of the replicas it sends, those the head relays on to the neighbours,
  // and the step of the one whose parts are being relayed (-1: none).
  ReplicaRelay relay;
  int64_t relaying_step = -1;
  int64_t done_step = 0;
  int done_attempt = 0;
  TimePoint done_at{};  // when its answer to the step came
  double held_s = 0;    // what it spent between taking the step's word and answering (StepDone)
  double work_s = 0;    // of that, its own work: the rest it waited for its neighbours
  double compute_s = 0;
  double idle_s = 0;
  // What went over its link, as the head's stream with it saw it: all it
  // sent the head (activations or gradients to relay, its group's
  // gradients, replicas, state) and all the head sent it.
  int64_t bytes_up = 0;
  int64_t bytes_down = 0;
  double energy_j = 0;  // modelled, as its StepDones report it
  double loss_sum = 0;  // of its last step (the last stage's)
  int64_t step_samples = 0;
  // The loss its gradient's parts brought (gradientEachMicroBatch), of the
  // attempt at a step they were of: its own, should it be lost before its answer.
  double parts_loss = 0;
  int64_t parts_step = -1;
  int parts_attempt = -1;
  // Its own share of the steps, as its stage dealt them among its group:
  // the samples it trained on, over every run, and its share of the last
  // step's batch. Every device of a group showed the whole job's (a new
  // user's trial).
  int64_t samples = 0;
  // None before its first step is dealt: then shown as the job's batch. A
  // device dealt no sample shows 0, not the whole batch (found in review).
  std::optional<int64_t> batch_share;
  std::optional<v1::StageState> state;
  // A replica coming in parts, put together.
  ReplicaAssembly replica;
  TimePoint replica_began{};  // when its first part came
};

}  // namespace edgetrain::agent
