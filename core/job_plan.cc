#include "core/job_plan.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace edgetrain {

using Json = nlohmann::json;

WorkerSlot GoneOnFor(WorkerSlot slot, double elapsed_s) {
  if (!(elapsed_s > 0)) return slot;
  if (slot.link) {
    slot.link->offset_s += elapsed_s;
    // What is left of a silence from the start; one that began later is not
    // known here, and the note it gave is said before the run.
    slot.link->silent_until_s = std::max(0.0, slot.link->silent_until_s - elapsed_s);
  }
  if (slot.stream && !slot.stream->trace_path.empty()) slot.stream->offset_s += elapsed_s;
  std::vector<SlowdownChange> ahead;
  for (SlowdownChange change : slot.slowdown_changes) {
    change.at_s -= elapsed_s;
    if (change.at_s > 0) {
      ahead.push_back(change);
    } else {
      slot.slowdown = change.slowdown;  // already in force; changes come in time order
    }
  }
  slot.slowdown_changes = std::move(ahead);
  return slot;
}

StatusOr<std::optional<StreamRate>> StreamRateOf(const JobSpec& spec, const std::vector<WorkerSlot>& slots, int rank,
                                                 const TextReader& read) {
  const auto& stream = spec.data.stream;
  if (!stream || stream->directory) return std::optional<StreamRate>();
  if (rank >= 0 && static_cast<size_t>(rank) < stream->rates_per_second.size()) {
    return std::optional<StreamRate>(StreamRate::Constant(stream->rates_per_second[static_cast<size_t>(rank)]));
  }
  const WorkerSlot* slot = rank >= 0 && static_cast<size_t>(rank) < slots.size() ? &slots[static_cast<size_t>(rank)]
                                                                                   : nullptr;
  const std::string worker = "worker " + std::to_string(rank);
  if (!slot || !slot->stream) {
    return FailedPreconditionError(worker + ": spec.data.stream gives no rate for it, and its plan slot no stream");
  }
  if (slot->stream->trace_path.empty()) return std::optional<StreamRate>(StreamRate::Constant(slot->stream->per_second));
  const StatusOr<std::string> text = read(slot->stream->trace_path);
  if (!text.ok()) return FailedPreconditionError(worker + "'s stream: " + text.status().message());
  EDGETRAIN_ASSIGN_OR_RETURN(StreamRate rate, StreamRate::Parse(*text, slot->stream->trace_path));
  return std::optional<StreamRate>(rate.From(slot->stream->offset_s));
}

int64_t SlotSince(const JobPlan& plan, int rank) {
  for (const WorkerSlot& w : plan.workers) {
    if (w.rank == rank && w.since_generation > 0) return std::min(w.since_generation, plan.generation);
  }
  return plan.generation;
}

StatusOr<int> StageOfRank(const PipelineLayout& layout, int rank) {
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const auto& ranks = layout.stages[s].ranks;
    if (std::find(ranks.begin(), ranks.end(), rank) != ranks.end()) return static_cast<int>(s);
  }
  return NotFoundError("rank " + std::to_string(rank) + " holds no stage of the pipeline");
}

Status CheckPipelineLayout(const PipelineLayout& layout, size_t workers) {
  if (layout.stages.empty()) return InvalidArgumentError("plan: a pipeline needs a stage");
  if (layout.micro_batches < 1) return InvalidArgumentError("plan: pipeline.microBatches must be >= 1");
  std::vector<bool> taken(workers, false);
  int next = 0;
  for (size_t i = 0; i < layout.stages.size(); ++i) {
    const PipelineStagePlan& s = layout.stages[i];
    const std::string which = "plan: pipeline stage " + std::to_string(i + 1);
    if (s.first_layer != next || s.end_layer <= s.first_layer) {
      return InvalidArgumentError(which + " must start where the one before ends and hold a layer");
    }
    if (s.ranks.empty()) return InvalidArgumentError(which + " has no worker");
    for (int r : s.ranks) {
      if (r < 0 || static_cast<size_t>(r) >= workers || taken[r]) {
        return InvalidArgumentError(which + ": rank " + std::to_string(r) + " is not a worker of the plan or has a stage");
      }
      taken[r] = true;
    }
    next = s.end_layer;
  }
  if (const auto& from = layout.planned_from) {
    if (from->devices.size() != workers) {
      return InvalidArgumentError("plan: pipeline.plannedFrom has " + std::to_string(from->devices.size()) +
                                  " devices for " + std::to_string(workers) + " workers");
    }
    if (static_cast<int>(from->layers.size()) != next) {
      return InvalidArgumentError("plan: pipeline.plannedFrom has " + std::to_string(from->layers.size()) +
                                  " layers, the stages " + std::to_string(next));
    }
    for (const PipelineDevice& d : from->devices) {
      if (!(d.speed > 0)) return InvalidArgumentError("plan: pipeline.plannedFrom: device " + d.name + " has no speed");
    }
    // The head plans again from it: with no micro-batch count to try, the
    // planner had none to pick (found in review).
    if (from->max_micro_batches < 1) {
      return InvalidArgumentError("plan: pipeline.plannedFrom.maxMicroBatches must be >= 1");
    }
  }
  return Status::Ok();
}

std::string EncodeJobPlan(const JobPlan& plan) {
  Json workers = Json::array();
  const auto power = [](const PowerProfile& p) {
    return Json{
        {"computeWatts", p.compute_watts}, {"communicateWatts", p.communicate_watts}, {"idleWatts", p.idle_watts}};
  };
  for (const auto& w : plan.workers) {
    Json slot = {{"rank", w.rank}, {"node", w.node}, {"slowdown", w.slowdown}, {"power", power(w.power)}};
    if (w.since_generation > 0) slot["sinceGeneration"] = w.since_generation;
    if (!w.slowdown_changes.empty()) {
      Json changes = Json::array();
      for (const SlowdownChange& c : w.slowdown_changes) changes.push_back({{"atSeconds", c.at_s}, {"slowdown", c.slowdown}});
      slot["slowdownChanges"] = changes;
    }
    if (w.link) {
      slot["link"] = {{"trace", w.link->trace_path}, {"offsetSeconds", w.link->offset_s}, {"scale", w.link->scale},
                      {"shapedBy", w.link->kernel_shaped ? "kernel" : "agents"}};
    }
    if (w.stream) {
      slot["stream"] = w.stream->trace_path.empty() ? Json{{"ratePerSecond", w.stream->per_second}}
                                                    : Json{{"rateTrace", w.stream->trace_path}};
      if (w.stream->offset_s > 0) slot["stream"]["rateTraceOffsetSeconds"] = w.stream->offset_s;
    }
    workers.push_back(slot);
  }
  Json j = {
      {"workers", workers},
      {"job", plan.job},
      {"generation", plan.generation},
      {"spec", Json::parse(plan.spec_json)},
      {"outputDir", plan.output_dir},
      {"intraOpThreads", plan.intra_op_threads},
      {"slowdown", plan.slowdown},
      {"power", power(plan.power)},
      {"fresh", plan.fresh},
  };
  if (!plan.devices_record.empty()) {
    j["devicesRecord"] = Json::parse(plan.devices_record, nullptr, /*allow_exceptions=*/false);
  }
  if (plan.shard) j["shard"] = {{"parts", plan.shard->parts}, {"part", plan.shard->part}};
  if (plan.pipeline) {
    Json stages = Json::array();
    for (const PipelineStagePlan& s : plan.pipeline->stages) {
      stages.push_back({{"firstLayer", s.first_layer}, {"endLayer", s.end_layer}, {"ranks", s.ranks}});
    }
    j["pipeline"] = {{"stages", stages}, {"microBatches", plan.pipeline->micro_batches}};
    if (plan.pipeline->stages_given) j["pipeline"]["stagesGiven"] = true;
    if (const auto& from = plan.pipeline->planned_from) {
      Json devices = Json::array();
      for (const PipelineDevice& d : from->devices) {
        devices.push_back({{"name", d.name}, {"speed", d.speed}, {"memoryBytes", d.memory_bytes},
                           {"upBytesPerSecond", d.up_bytes_per_s}, {"downBytesPerSecond", d.down_bytes_per_s},
                           {"transient", d.transient}});
        if (d.emulated_slowdown != 1) devices.back()["emulatedSlowdown"] = d.emulated_slowdown;
      }
      // The layers, the transport and a stage's own passes in the agent's
      // own format (core/layer_cost.h).
      const Json measured = Json::parse(EncodeLayerCosts(from->layers, from->transport, from->stage_pass));
      j["pipeline"]["plannedFrom"] = {{"layers", measured["layers"]},
                                      {"devices", devices},
                                      {"stateFactor", from->state_factor},
                                      {"maxMicroBatches", from->max_micro_batches}};
      for (const char* key : kKeysBesideTheLayers) {
        if (measured.contains(key)) j["pipeline"]["plannedFrom"][key] = measured[key];
      }
    }
  }
  return j.dump(2) + "\n";
}

PipelineProblem ProblemOf(const PlannedFrom& from, const JobSpec& spec) {
  PipelineProblem problem;
  problem.layers = from.layers;
  problem.devices = from.devices;
  problem.batch_size = spec.data.batch_size;
  problem.state_factor = from.state_factor;
  problem.max_micro_batches = from.max_micro_batches;
  problem.transport = from.transport;
  problem.stage_pass = from.stage_pass;
  problem.gradient_each_micro_batch = spec.fault_tolerance.gradient_each_micro_batch;
  return problem;
}

StatusOr<JobPlan> DecodeJobPlan(std::string_view json) {
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("plan: not a JSON object");
  JobPlan plan;
  try {
    plan.job = j.at("job").get<std::string>();
    plan.generation = j.at("generation").get<int64_t>();
    plan.spec_json = j.at("spec").dump();
    plan.output_dir = j.at("outputDir").get<std::string>();
    plan.intra_op_threads = j.at("intraOpThreads").get<int>();
    plan.slowdown = j.value("slowdown", 1.0);
    const auto read_power = [](const Json& p) {
      return PowerProfile{p.at("computeWatts").get<double>(), p.at("communicateWatts").get<double>(),
                          p.at("idleWatts").get<double>()};
    };
    if (j.contains("power")) plan.power = read_power(j["power"]);
    plan.fresh = j.value("fresh", false);
    if (j.contains("devicesRecord")) plan.devices_record = j.at("devicesRecord").dump();
    if (j.contains("shard")) plan.shard = DataShard{j["shard"].at("parts").get<int>(), j["shard"].at("part").get<int>()};
    for (const auto& w : j.value("workers", Json::array())) {
      WorkerSlot slot;
      slot.rank = w.at("rank").get<int>();
      slot.node = w.at("node").get<std::string>();
      slot.slowdown = w.at("slowdown").get<double>();
      slot.since_generation = w.value("sinceGeneration", int64_t{0});
      for (const auto& c : w.value("slowdownChanges", Json::array())) {
        slot.slowdown_changes.push_back({c.at("atSeconds").get<double>(), c.at("slowdown").get<double>()});
      }
      if (w.contains("power")) slot.power = read_power(w["power"]);
      if (w.contains("link")) {
        const Json& l = w["link"];
        slot.link = LinkSpec{l.at("trace").get<std::string>(), l.at("offsetSeconds").get<double>(),
                             l.at("scale").get<double>(), l.value("shapedBy", "agents") == "kernel"};
      }
      if (w.contains("stream")) {
        const Json& s = w["stream"];
        slot.stream = StreamSource{s.value("ratePerSecond", 0.0), s.value("rateTrace", std::string()),
                                   s.value("rateTraceOffsetSeconds", 0.0)};
      }
      plan.workers.push_back(slot);
    }
    if (j.contains("pipeline")) {
      PipelineLayout layout;
      layout.micro_batches = j["pipeline"].at("microBatches").get<int>();
      layout.stages_given = j["pipeline"].value("stagesGiven", false);
      for (const auto& s : j["pipeline"].at("stages")) {
        layout.stages.push_back(
            {s.at("firstLayer").get<int>(), s.at("endLayer").get<int>(), s.at("ranks").get<std::vector<int>>()});
      }
      if (j["pipeline"].contains("plannedFrom")) {
        const Json& f = j["pipeline"]["plannedFrom"];
        PlannedFrom from;
        StatusOr<std::vector<LayerCost>> layers = DecodeLayerCosts(Json{{"layers", f.at("layers")}}.dump());
        if (!layers.ok()) return layers.status().WithContext("plan: pipeline.plannedFrom");
        from.layers = std::move(*layers);
        for (const auto& d : f.at("devices")) {
          from.devices.push_back({d.at("name").get<std::string>(), d.at("speed").get<double>(),
                                  d.at("memoryBytes").get<int64_t>(), d.at("upBytesPerSecond").get<double>(),
                                  d.at("downBytesPerSecond").get<double>(), d.value("transient", false),
                                  d.value("emulatedSlowdown", 1.0)});
        }
        from.state_factor = f.at("stateFactor").get<double>();
        from.max_micro_batches = f.at("maxMicroBatches").get<int>();
        StatusOr<TransportCost> transport = DecodeTransportCost(f.dump());
        if (!transport.ok()) return transport.status().WithContext("plan: pipeline.plannedFrom");
        from.transport = *transport;
        StatusOr<StagePassCost> stage_pass = DecodeStagePassCost(f.dump());
        if (!stage_pass.ok()) return stage_pass.status().WithContext("plan: pipeline.plannedFrom");
        from.stage_pass = std::move(*stage_pass);
        layout.planned_from = std::move(from);
      }
      plan.pipeline = std::move(layout);
    }
  } catch (const Json::exception& e) {
    return InvalidArgumentError(std::string("plan: ") + e.what());
  }
  if (plan.intra_op_threads < 1) return InvalidArgumentError("plan: intraOpThreads must be >= 1");
  if (plan.slowdown < 1) return InvalidArgumentError("plan: slowdown must be >= 1");
  if (plan.shard && (plan.shard->parts < 1 || plan.shard->part < 0 || plan.shard->part >= plan.shard->parts)) {
    return InvalidArgumentError("plan: shard.part must be in [0, shard.parts)");
  }
  for (size_t i = 0; i < plan.workers.size(); ++i) {
    if (plan.workers[i].rank != static_cast<int>(i)) return InvalidArgumentError("plan: workers must be listed by rank");
    if (plan.workers[i].slowdown < 1) return InvalidArgumentError("plan: a worker's slowdown must be >= 1");
    double after = 0;
    for (const SlowdownChange& c : plan.workers[i].slowdown_changes) {
      if (c.slowdown < 1) return InvalidArgumentError("plan: a worker's slowdown must be >= 1");
      if (c.at_s < after) return InvalidArgumentError("plan: a worker's slowdown changes must be in the order of their times");
      after = c.at_s;
    }
  }
  if (plan.pipeline) EDGETRAIN_RETURN_IF_ERROR(CheckPipelineLayout(*plan.pipeline, plan.workers.size()));
  EDGETRAIN_ASSIGN_OR_RETURN(plan.spec, DecodeJobSpec(plan.spec_json));
  return plan;
}

}  // namespace edgetrain
