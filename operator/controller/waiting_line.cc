#include "operator/controller/waiting_line.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "api/job_conditions.h"
#include "api/trainingjob.h"
#include "operator/controller/gang.h"
#include "operator/controller/job_labels.h"
#include "operator/controller/job_status.h"
#include "operator/controller/model_check.h"

namespace edgetrain::operator_ {
namespace {

namespace phase = api::phase;
namespace condition = api::condition;

// A pod just created is taken to hold its node for this long at most, should
// the informer never show it (it was deleted before it was seen).
constexpr auto kAssumedFor = std::chrono::minutes(1);

bool Waits(const Json& job) {
  const Json status = job.value("status", Json::object());
  const std::string p = status.value("phase", phase::kPending);
  // A pipeline no plan of which fits the nodes placement gave it could not
  // use its turn, and had held that room from younger jobs: it is given the
  // room its elders leave when it looks again (--unschedulable-retry).
  const Json* placed = FindCondition(status, condition::kPlaced);
  const bool no_plan_fits = placed && placed->value("reason", "") == api::reason::kNoPipelineFits &&
                            placed->value("observedGeneration", int64_t{-1}) ==
                                job.value("/metadata/generation"_json_pointer, int64_t{0});
  // Waiting: not placed, not ended, not suspended, not invalid.
  return p == phase::kPending && !ConditionIs(status, condition::kPlaced, true) && !no_plan_fits &&
         !ConditionIs(status, condition::kInvalid, true) && !job.value("/spec/suspend"_json_pointer, false);
}


// First in line: the higher priority, then the older, then the key.
bool Before(int pa, const std::string& ca, const std::string& ka, int pb, const std::string& cb,
            const std::string& kb) {
  return std::make_tuple(-pa, std::cref(ca), std::cref(ka)) < std::make_tuple(-pb, std::cref(cb), std::cref(kb));
}

// Adds what a placed team holds to the nodes, as if its pods were bound.
void Reserve(std::vector<NodeView>& nodes, const std::map<std::string, size_t>& index,
             const TeamPlacement& placement, const TeamRequest& request) {
  auto hold = [&](const std::string& node, const ResourceAmounts& r) {
    auto it = index.find(node);
    if (it != index.end()) nodes[it->second].bound.Add(r);
  };
  hold(placement.coordinator_node, request.coordinator_requests);
  for (const std::string& node : placement.worker_nodes) hold(node, request.worker_requests);
}

TeamPlacement Slim(TeamPlacement placement) {
  placement.verdicts.clear();
  placement.verdicts.shrink_to_fit();
  return placement;
}

}  // namespace

bool SameForPlacement(const NodeView& a, const NodeView& b) {
  auto taints = [](const std::vector<Taint>& t) {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const Taint& x : t) out.emplace_back(x.key, x.value, x.effect);
    return out;
  };
  return a.name == b.name && a.labels == b.labels && taints(a.taints) == taints(b.taints) && a.ready == b.ready &&
         a.cordoned == b.cordoned && a.allocatable == b.allocatable && a.compute_score == b.compute_score &&
         a.link_mbps == b.link_mbps && a.power.compute_watts == b.power.compute_watts &&
         a.power.communicate_watts == b.power.communicate_watts && a.power.idle_watts == b.power.idle_watts &&
         a.emulated_slowdown == b.emulated_slowdown && a.leaving == b.leaving &&
         a.emulated_stream.has_value() == b.emulated_stream.has_value() &&
         (!a.emulated_stream || a.emulated_stream->per_second == b.emulated_stream->per_second);
}

WaitingLine::WaitingLine(kube::Store& jobs, kube::Store& pods, kube::Store& nodes, api::PodDefaults defaults,
                         Duration max_pass_age)
    : jobs_store_(jobs), defaults_(std::move(defaults)), max_pass_age_(max_pass_age) {
  // What the stores hold already, then every change.
  nodes.ForEach([&](const Json& o) { node_changes_[kube::KeyOf(o)] = Parse(o); });
  pods.ForEach([&](const Json& o) { pod_changes_[kube::KeyOf(o)] = See(&o); });
  jobs.ForEach([&](const Json& o) { job_changes_[kube::KeyOf(o)] = o; });
  nodes.AddListener([this](const std::string& key, const Json* node) {
    std::optional<CachedNode> parsed;
    if (node) parsed = Parse(*node);
    std::lock_guard lock(changes_mu_);
    node_changes_[key] = std::move(parsed);
  });
  pods.AddListener([this](const std::string& key, const Json* pod) {
    PodSeen seen = See(pod);
    std::lock_guard lock(changes_mu_);
    pod_changes_[key] = std::move(seen);
  });
  jobs.AddListener([this](const std::string& key, const Json* job) {
    std::lock_guard lock(changes_mu_);
    job_changes_[key] = job ? std::optional<Json>(*job) : std::nullopt;
  });
}

WaitingLine::CachedNode WaitingLine::Parse(const Json& node) {
  CachedNode fresh;
  StatusOr<NodeView> declared = NodeViewOfNode(node);
  if (!declared.ok()) {
    fresh.unreadable = declared.status().message();
    return fresh;
  }
  fresh.declared = *declared;
  const Json& meta = node.at("metadata");
  auto notes = meta.find("annotations");
  if (notes != meta.end() && notes->is_object() && notes->contains(kMeasuredAt) && (*notes)[kMeasuredAt].is_string()) {
    if (std::optional<kube::WallTime> at = kube::ParseKubeTime((*notes)[kMeasuredAt].get<std::string>())) {
      // The view as it is while the measurement is fresh; whether it is, is
      // asked at each pass.
      StatusOr<NodeView> measured = NodeViewOfNode(node, MeasuredLinks{*at, std::chrono::hours(1)});
      if (!measured.ok()) {
        fresh.unreadable = measured.status().message();
      } else {
        fresh.measured = *measured;
        fresh.measured_at = *at;
      }
    }
  }
  return fresh;
}

WaitingLine::PodSeen WaitingLine::See(const Json* pod) {
  PodSeen seen;
  seen.exists = pod != nullptr;
  if (pod && HoldsNode(*pod)) seen.holding = Holding{(*pod)["spec"]["nodeName"].get<std::string>(), PodRequests(*pod)};
  return seen;
}

void WaitingLine::Apply(kube::WallTime now) {
  std::map<std::string, std::optional<CachedNode>> nodes;
  std::map<std::string, PodSeen> pods;
  std::map<std::string, std::optional<Json>> jobs;
  {
    std::lock_guard lock(changes_mu_);
    std::swap(nodes, node_changes_);
    std::swap(pods, pod_changes_);
    std::swap(jobs, job_changes_);
  }
  for (const auto& [key, node] : nodes) ApplyNode(key, node ? &*node : nullptr);
  for (const auto& [key, pod] : pods) ApplyPod(key, pod);
  for (const auto& [key, job] : jobs) ApplyJob(key, job ? &*job : nullptr);
  // Assumptions the informer never confirmed: the room is free again.
  for (auto it = assumed_.begin(); it != assumed_.end();) {
    if (now != kube::WallTime{} && now >= it->second.until) {
      Hold(it->second.holding, -1);
      it = assumed_.erase(it);
      stale_ = true;
    } else {
      ++it;
    }
  }
}

void WaitingLine::ApplyNode(const std::string& name, const CachedNode* node) {
  auto old = nodes_.find(name);
  if (!node) {
    if (old != nodes_.end()) {
      nodes_.erase(old);
      stale_ = true;
    }
    return;
  }
  const CachedNode& fresh = *node;
  // A team publishing its measurement again (a newer measured-at, the same
  // figures) changes nothing placement reads, when the pass used that very
  // view: the operator's own patches do not throw the pass away. (Its
  // fresh_until, from the older time, ends it early if anything, never late.)
  auto pass_used = [&](const NodeView& view) {
    if (!pass_) return false;
    auto at = pass_->node_index.find(name);
    return at != pass_->node_index.end() && SameForPlacement(pass_->base[at->second], view);
  };
  const bool same = old != nodes_.end() && old->second.unreadable == fresh.unreadable &&
                    SameForPlacement(old->second.declared, fresh.declared) &&
                    old->second.measured.has_value() == fresh.measured.has_value() &&
                    (!fresh.measured || (SameForPlacement(*old->second.measured, *fresh.measured) &&
                                         (old->second.measured_at == fresh.measured_at || pass_used(*fresh.measured))));
  nodes_[name] = fresh;
  if (!same) stale_ = true;
}

void WaitingLine::Hold(const Holding& h, int sign) {
  ResourceAmounts& bound = bound_[h.node];
  bound.Add(h.requests, sign);
  // Back to nothing: the node's entry goes, so that nodes come and gone (spot
  // machines with names of their own) are not kept for ever (found in review).
  const bool nothing = bound.cpu_millis == 0 && bound.memory_bytes == 0 && bound.pods == 0 &&
                       std::all_of(bound.others.begin(), bound.others.end(), [](const OtherResource& o) {
                         return o.millis == 0;
                       });
  if (nothing) bound_.erase(h.node);
}

void WaitingLine::ApplyPod(const std::string& key, const PodSeen& pod) {
  const std::optional<Holding>& now = pod.holding;
  auto assumed = assumed_.find(key);
  if (assumed != assumed_.end() && pod.exists) {
    // The pod we created is seen: its holding replaces the assumption. The
    // pass already counted it, unless the pod holds something else.
    const Holding expected = assumed->second.holding;
    Hold(expected, -1);
    assumed_.erase(assumed);
    bool had = false;
    if (auto old = holdings_.find(key); old != holdings_.end()) {
      Hold(old->second, -1);
      holdings_.erase(old);
      had = true;
    }
    if (now) {
      Hold(*now, 1);
      holdings_[key] = *now;
    }
    if (had || !now || now->node != expected.node || now->requests != expected.requests) stale_ = true;
    return;
  }
  if (assumed != assumed_.end()) {  // gone before it was seen
    Hold(assumed->second.holding, -1);
    assumed_.erase(assumed);
    stale_ = true;
  }
  auto old = holdings_.find(key);
  const bool had = old != holdings_.end();
  if (had && now && old->second.node == now->node && old->second.requests == now->requests) return;
  if (!had && !now) return;  // holds nothing, before or after (a pending or finished pod's status)
  if (had) {
    Hold(old->second, -1);
    holdings_.erase(old);
  }
  if (now) {
    Hold(*now, 1);
    holdings_[key] = *now;
  }
  stale_ = true;
}

void WaitingLine::ApplyJob(const std::string& key, const Json* job) {
  auto old = line_.find(key);
  if (!job || !Waits(*job)) {
    if (old == line_.end()) return;
    line_.erase(old);
    // Only a job leaving with room reserved and not taken changes the pass: one
    // that took its turn leaves its pods holding that room, one that did not
    // fit reserved nothing, and one without a turn (placed before the pass was
    // made, its status then on its way) was not in it.
    if (pass_ && pass_->turn_of.count(key)) {
      const Turn& turn = pass_->turns[pass_->turn_of.at(key)];
      if (turn.placement.placed && !turn.taken) stale_ = true;
    }
    return;
  }
  Waiting w;
  w.priority_class = job->value("/spec/placement/priorityClassName"_json_pointer, std::string());
  w.created = job->value("/metadata/creationTimestamp"_json_pointer, std::string());
  // A TorchScript module's measured size is the status's: its step's cost.
  w.spec = job->value("spec", Json::object()).dump() + job->value("/status/modelCheck"_json_pointer, Json()).dump();
  w.backs_off_until = GangBackOffEnds(job->value("spec", Json::object()), job->value("status", Json::object()),
                                      job->value("/metadata/generation"_json_pointer, int64_t{0}));
  if (old != line_.end() && old->second.priority_class == w.priority_class && old->second.created == w.created &&
      old->second.spec == w.spec) {
    // Only its status changed (not its module's size), and it still waits:
    // the pass is made again only if its turn comes at another time.
    if (old->second.backs_off_until != w.backs_off_until) {
      old->second.backs_off_until = w.backs_off_until;
      stale_ = true;
    }
    return;
  }
  Json manifest = *job;
  manifest.erase("status");
  StatusOr<api::TrainingJobManifest> parsed = api::ParseTrainingJob(manifest.dump(), key);
  // A TorchScript job takes its turn once its module's size is known: until
  // then its check runs, and it holds no room in line.
  const std::optional<ModelSize> measured = CheckedSizeOf(job->value("status", Json::object()));
  if (parsed.ok() && (parsed->spec.model.kind != ModelKind::kTorchScript || measured)) {
    StatusOr<TeamRequest> request = api::TeamRequestOf(*parsed, defaults_, measured);
    if (request.ok()) w.request = *request;
  }
  if (old == line_.end()) {
    joined_.push_back(key);  // likely behind everyone: the pass may be extended
  } else {
    stale_ = true;
  }
  line_[key] = std::move(w);
}

int WaitingLine::PriorityIn(Pass& pass, const std::string& priority_class, const Priority& priority) {
  if (priority_class.empty()) return 0;
  auto it = pass.priorities.find(priority_class);
  if (it == pass.priorities.end()) it = pass.priorities.emplace(priority_class, priority(priority_class)).first;
  return it->second;
}

NodeView WaitingLine::ViewOf(const CachedNode& node, const MeasuredLinks& measured) const {
  if (node.measured && measured.now != kube::WallTime{} && measured.now - node.measured_at <= measured.max_age) {
    return *node.measured;
  }
  return node.declared;
}

void WaitingLine::Compute(const Priority& priority, const MeasuredLinks& measured) {
  ++passes_;
  Pass pass;
  pass.made = measured.now;
  pass.fresh_until = kube::WallTime::max();
  for (const auto& [name, node] : nodes_) {
    if (!node.unreadable.empty()) continue;
    NodeView view = ViewOf(node, measured);
    if (node.measured && measured.now != kube::WallTime{} && measured.now - node.measured_at <= measured.max_age) {
      pass.fresh_until = std::min(
          pass.fresh_until,
          std::chrono::time_point_cast<kube::WallTime::duration>(node.measured_at + measured.max_age));
    }
    if (auto b = bound_.find(name); b != bound_.end()) view.bound = b->second;
    pass.node_index[name] = pass.base.size();
    pass.base.push_back(std::move(view));
  }
  // Jobs placed whose status has not come back yet still look waiting; their
  // pods are counted (assumed), so they take no turn - a second turn would
  // count them twice, and make the pass stale again when their status comes.
  std::set<std::string> in_flight;
  for (const auto& [pod, a] : assumed_) in_flight.insert(a.job);
  for (const auto& [key, w] : line_) {
    if (!w.request || in_flight.count(key) || !TakesTurn(w, measured.now, pass)) continue;
    Turn turn;
    turn.key = key;
    turn.priority = PriorityIn(pass, w.priority_class, priority);
    turn.created = w.created;
    turn.request = *w.request;
    pass.turns.push_back(std::move(turn));
  }
  std::sort(pass.turns.begin(), pass.turns.end(), [](const Turn& a, const Turn& b) {
    return Before(a.priority, a.created, a.key, b.priority, b.created, b.key);
  });
  pass.state = pass.base;
  for (size_t i = 0; i < pass.turns.size(); ++i) {
    Turn& turn = pass.turns[i];
    turn.placement = Slim(PlaceTeam(pass.state, turn.request));
    if (turn.placement.placed) Reserve(pass.state, pass.node_index, turn.placement, turn.request);
    pass.turn_of[turn.key] = i;
  }
  pass_ = std::move(pass);
  stale_ = false;
  joined_.clear();
}

bool WaitingLine::TakesTurn(const Waiting& w, kube::WallTime now, Pass& pass) {
  if (!w.backs_off_until || *w.backs_off_until <= now) return true;
  pass.fresh_until = std::min(pass.fresh_until, *w.backs_off_until);
  return false;
}

void WaitingLine::Extend(const Priority& priority, kube::WallTime now) {
  Pass& pass = *pass_;
  std::vector<Turn> joined;
  for (const std::string& key : joined_) {
    auto w = line_.find(key);
    if (w == line_.end() || !w->second.request || pass.turn_of.count(key) || !TakesTurn(w->second, now, pass)) {
      continue;
    }
    Turn turn;
    turn.key = key;
    turn.priority = PriorityIn(pass, w->second.priority_class, priority);
    turn.created = w->second.created;
    turn.request = *w->second.request;
    joined.push_back(std::move(turn));
  }
  joined_.clear();
  std::sort(joined.begin(), joined.end(), [](const Turn& a, const Turn& b) {
    return Before(a.priority, a.created, a.key, b.priority, b.created, b.key);
  });
  for (Turn& turn : joined) Insert(std::move(turn));
}

void WaitingLine::Insert(Turn turn) {
  Pass& pass = *pass_;
  ++extensions_;
  auto at = std::find_if(pass.turns.begin(), pass.turns.end(), [&](const Turn& t) {
    return Before(turn.priority, turn.created, turn.key, t.priority, t.created, t.key);
  });
  if (at == pass.turns.end()) {  // behind everyone: the young job, the usual case
    turn.placement = Slim(PlaceTeam(pass.state, turn.request));
    if (turn.placement.placed) Reserve(pass.state, pass.node_index, turn.placement, turn.request);
    pass.turn_of[turn.key] = pass.turns.size();
    pass.turns.push_back(std::move(turn));
    return;
  }
  // Ahead of some (jobs created in the same second arrive in any order): the
  // turns behind it that are not taken yet are placed again. Taken ones keep
  // their room - their pods hold it - and count before any is placed again.
  const size_t from = static_cast<size_t>(at - pass.turns.begin());
  pass.turns.insert(at, std::move(turn));
  pass.state = pass.base;
  for (size_t i = 0; i < pass.turns.size(); ++i) {
    const Turn& t = pass.turns[i];
    if ((t.taken || i < from) && t.placement.placed) Reserve(pass.state, pass.node_index, t.placement, t.request);
  }
  for (size_t i = from; i < pass.turns.size(); ++i) {
    Turn& t = pass.turns[i];
    if (t.taken) continue;
    t.placement = Slim(PlaceTeam(pass.state, t.request));
    if (t.placement.placed) Reserve(pass.state, pass.node_index, t.placement, t.request);
  }
  pass.turn_of.clear();
  for (size_t i = 0; i < pass.turns.size(); ++i) pass.turn_of[pass.turns[i].key] = i;
}

TeamPlacement WaitingLine::PlacementOf(const std::string& key, const TeamRequest& request,
                                       const std::string& priority_class, const std::string& created,
                                       const Priority& priority, const MeasuredLinks& measured) {
  std::lock_guard lock(mu_);
  Apply(measured.now);
  // Where its coordinator must go is the cluster's to say (its output
  // volume's node), not its spec's, which the line reads: taken from the
  // request, and the pass made again when it changes.
  if (auto w = line_.find(key); w != line_.end() && w->second.request) {
    std::optional<TeamRequest::Pin>& pin = w->second.request->coordinator_only_on;
    const auto node = [](const std::optional<TeamRequest::Pin>& p) { return p ? p->node : std::string(); };
    if (node(pin) != node(request.coordinator_only_on)) {
      pin = request.coordinator_only_on;
      stale_ = true;
    }
  }
  const bool expired = pass_ && (measured.now >= pass_->fresh_until || measured.now - pass_->made > max_pass_age_ ||
                                 measured.now < pass_->made);
  if (!pass_ || stale_ || expired) {
    Compute(priority, measured);
  } else {
    Extend(priority, measured.now);
  }
  Pass& pass = *pass_;
  if (auto it = pass.turn_of.find(key); it != pass.turn_of.end()) return pass.turns[it->second].placement;
  // Not in line as the cache has it (its status is about to say so, or its
  // spec did not parse there; or a job resumed, whose status still says
  // Suspended): the room its elders leave it, and the room of every turn
  // taken since the pass was made, whose pods hold it whatever their place in
  // line. Only elders' counted, a job suspended and resumed, older than the
  // one placed in its room meanwhile, was placed on the full node (a new
  // user's trial).
  const int mine = PriorityIn(pass, priority_class, priority);
  std::vector<NodeView> nodes = pass.base;
  for (const Turn& turn : pass.turns) {
    const bool elder = Before(turn.priority, turn.created, turn.key, mine, created, key);
    if ((elder || turn.taken) && turn.placement.placed) Reserve(nodes, pass.node_index, turn.placement, turn.request);
  }
  return PlaceTeam(nodes, request);
}

void WaitingLine::Placed(const std::string& key, const std::vector<Json>& pods, kube::WallTime now) {
  std::lock_guard lock(mu_);
  bool as_the_pass_said = false;
  if (pass_) {
    if (auto it = pass_->turn_of.find(key); it != pass_->turn_of.end()) {
      Turn& turn = pass_->turns[it->second];
      as_the_pass_said = turn.placement.placed && !turn.taken;
      turn.taken = true;
    }
  }
  bool assumed_anew = false;
  for (const Json& pod : pods) {
    if (!HoldsNode(pod)) continue;
    const std::string pod_key = kube::KeyOf(pod);
    if (holdings_.count(pod_key) || assumed_.count(pod_key)) continue;  // seen already
    assumed_anew = true;
    Assumed a{Holding{pod["spec"]["nodeName"].get<std::string>(), PodRequests(pod)},
              std::chrono::time_point_cast<kube::WallTime::duration>(now + kAssumedFor), key};
    Hold(a.holding, 1);
    assumed_[pod_key] = std::move(a);
  }
  // Nothing new held (pods asked for again, a quota refusing them): the pass
  // still says what a new one would. Each look at such a job had made every
  // waiting job's next placement a whole pass again (found in review).
  if (!as_the_pass_said && assumed_anew) stale_ = true;
}

void WaitingLine::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  for (auto it = assumed_.begin(); it != assumed_.end();) {
    if (it->second.job == key) {
      Hold(it->second.holding, -1);
      it = assumed_.erase(it);
    } else {
      ++it;
    }
  }
  stale_ = true;
}

std::vector<NodeView> WaitingLine::Views(const std::vector<std::string>& names, const MeasuredLinks& measured) {
  std::lock_guard lock(mu_);
  Apply(measured.now);
  std::vector<NodeView> out;
  for (const std::string& name : names) {
    auto it = nodes_.find(name);
    if (it == nodes_.end() || !it->second.unreadable.empty()) continue;
    out.push_back(ViewOf(it->second, measured));
    if (auto b = bound_.find(name); b != bound_.end()) out.back().bound = b->second;
  }
  return out;
}

std::vector<NodeView> WaitingLine::Cluster(const MeasuredLinks& measured) {
  std::lock_guard lock(mu_);
  Apply(measured.now);
  std::vector<NodeView> out;
  for (const auto& [name, node] : nodes_) {
    if (!node.unreadable.empty()) continue;
    out.push_back(ViewOf(node, measured));
    if (auto b = bound_.find(name); b != bound_.end()) out.back().bound = b->second;
  }
  return out;
}

bool WaitingLine::AnyNodeMatches(const std::map<std::string, std::string>& selector) {
  std::lock_guard lock(mu_);
  Apply({});
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& entry) {
    if (!entry.second.unreadable.empty()) return false;
    const auto& labels = entry.second.declared.labels;
    return std::all_of(selector.begin(), selector.end(), [&](const auto& kv) {
      auto it = labels.find(kv.first);
      return it != labels.end() && it->second == kv.second;
    });
  });
}

size_t WaitingLine::NodeCount() {
  std::lock_guard lock(mu_);
  Apply({});
  size_t n = 0;
  for (const auto& [name, node] : nodes_) n += node.unreadable.empty() ? 1 : 0;
  return n;
}

std::vector<std::string> WaitingLine::Unreadable() {
  std::lock_guard lock(mu_);
  Apply({});
  std::vector<std::string> out;
  for (const auto& [name, node] : nodes_) {
    if (!node.unreadable.empty()) out.push_back(name + ": " + node.unreadable);
  }
  return out;
}

uint64_t WaitingLine::passes() {
  std::lock_guard lock(mu_);
  return passes_;
}

uint64_t WaitingLine::extensions() {
  std::lock_guard lock(mu_);
  return extensions_;
}

}  // namespace edgetrain::operator_
