#include "core/job_progress.h"

#include <algorithm>
#include <array>

#include <nlohmann/json.hpp>

namespace edgetrain {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::pair<JobState, std::string_view>, 5> kStateNames{{
    {JobState::kStarting, "starting"},
    {JobState::kTraining, "training"},
    {JobState::kSucceeded, "succeeded"},
    {JobState::kInterrupted, "interrupted"},
    {JobState::kFailed, "failed"},
}};

template <typename T>
Json Nullable(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}
// The head's last re-plan's figure, null before any: 0 read as a prediction
// of nothing (a user's trial).
Json ReplannedOrNull(const JobProgress::Replays& r, double figure) {
  return r.replanned_micro_batches > 0 ? Json(figure) : Json(nullptr);
}
// By rank, as a list: JSON's keys are strings.
Json ReplannedPaces(const std::map<int, double>& paces) {
  Json list = Json::array();
  for (const auto& [rank, pace] : paces) list.push_back({{"rank", rank}, {"pace", pace}});
  return list;
}
template <typename T>
std::optional<T> Optional(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

constexpr std::array<std::pair<StopReason, std::string_view>, 6> kStopReasonNames{{
    {StopReason::kTarget, "target"},
    {StopReason::kEpochs, "epochs"},
    {StopReason::kWallClock, "wallClock"},
    {StopReason::kEnergy, "energyJoules"},
    {StopReason::kCancelled, "cancelled"},
    {StopReason::kFailed, "failed"},
}};

}  // namespace

std::string_view NameOf(StopReason r) {
  for (const auto& [reason, name] : kStopReasonNames)
    if (reason == r) return name;
  return "?";
}

std::optional<StopReason> StopReasonNamed(std::string_view name) {
  for (const auto& [reason, n] : kStopReasonNames)
    if (n == name) return reason;
  return std::nullopt;
}

std::string_view NameOf(JobState s) {
  for (const auto& [state, name] : kStateNames)
    if (state == s) return name;
  return "?";
}

std::string EncodeJobProgress(const JobProgress& p) {
  Json workers = Json::array();
  for (const auto& w : p.workers) {
    workers.push_back({{"rank", w.rank},
                       {"batchSize", w.batch_size},
                       {"samples", w.samples},
                       {"bandwidthMbps", w.bandwidth_mbps},
                       {"stallFraction", w.stall_fraction},
                       {"iteration", w.iteration},
                       {"rowsSent", w.rows_sent},
                       {"bytesSent", w.bytes_sent},
                       {"bytesReceived", w.bytes_received},
                       {"active", w.active},
                       {"energyJoules", w.energy_joules},
                       {"stallSeconds", w.stall_s},
                       {"wallSeconds", w.wall_s},
                       {"heldTeamSeconds", w.held_team_s},
                       {"holdingTeam", w.holding_team},
                       {"downlinkMbps", w.downlink_mbps},
                       {"computeSeconds", w.compute_s}});
    if (!w.quarantined.empty()) workers.back()["quarantined"] = w.quarantined;
    if (!w.active || w.silent_s > 0) workers.back()["silentSeconds"] = w.silent_s;
    if (w.injected > 0) workers.back()["injectedSamples"] = w.injected;
    if (w.refused_pushes > 0) {
      workers.back()["refusedPushes"] = w.refused_pushes;
      workers.back()["lastRefusal"] = w.last_refusal;
    }
    if (w.compression) {
      workers.back()["compression"] = {{"encoding", w.compression->encoding},
                                       {"topkKeptNorm", w.compression->topk_kept_norm},
                                       {"topkPushes", w.compression->topk_pushes},
                                       {"pushes", w.compression->pushes}};
    }
    if (w.layers) workers.back()["layers"] = {{"first", w.layers->first}, {"end", w.layers->second}};
    if (w.pace) workers.back()["pace"] = *w.pace;
    if (w.stream) {
      workers.back()["stream"] = {{"arrived", w.stream->arrived},
                                  {"dropped", w.stream->dropped},
                                  {"backlog", w.stream->backlog},
                                  {"waitSeconds", w.stream->wait_s}};
      if (!w.stream->read_through.empty()) workers.back()["stream"]["readThrough"] = w.stream->read_through;
      if (w.stream->refused_files > 0) {
        workers.back()["stream"]["refusedFiles"] = w.stream->refused_files;
        workers.back()["stream"]["lastRefused"] = w.stream->last_refused;
      }
    }
  }
  Json j = {{"state", NameOf(p.state)},
            {"iteration", p.iteration},
            {"samples", p.samples},
            {"epoch", p.epoch},
            {"loss", p.loss},
            {"accuracy", Nullable(p.accuracy)},
            {"evaluatedAtIteration", Nullable(p.evaluated_iteration)},
            {"samplesPerSecond", p.samples_per_second},
            {"elapsedSeconds", p.elapsed_s},
            {"evaluationSeconds", p.evaluation_s},
            {"evaluating", p.evaluating},
            {"etaSeconds", Nullable(p.eta_s)},
            {"fraction", p.fraction},
            {"secondsSinceStep", p.since_step_s},
            {"energyJoules", Nullable(p.energy_joules)},
            {"workers", workers},
            {"departedBytesSent", p.departed_bytes_sent},
            {"departedBytesReceived", p.departed_bytes_received},
            {"resumedFromIteration", Nullable(p.resumed_from_iteration)},
            {"resumedWithChanges", p.resumed_with_changes},
            {"warnings", p.warnings},
            {"replays", p.replays ? Json({{"count", p.replays->count},
                                          {"microBatches", p.replays->micro_batches},
                                          {"lastRecoverySeconds", p.replays->last_recovery_s},
                                          {"recoverySeconds", p.replays->recovery_s},
                                          {"restoredStages", p.replays->restored_stages},
                                          {"stepsLost", p.replays->steps_lost},
                                          {"repartitions", p.replays->repartitions},
                                          {"rejoined", p.replays->rejoined},
                                          {"replannedMicroBatches",
                                           ReplannedOrNull(*p.replays, p.replays->replanned_micro_batches)},
                                          {"predictedSamplesPerSecond",
                                           ReplannedOrNull(*p.replays, p.replays->replanned_samples_per_s)},
                                          {"ordersSeconds", ReplannedOrNull(*p.replays, p.replays->replanned_orders_s)},
                                          {"replannedPaces", ReplannedPaces(p.replays->replanned_paces)},
                                          {"inFlightMicroBatches", p.replays->in_flight_micro_batches},
                                          {"hung", p.replays->hung},
                                          {"stragglers", p.replays->stragglers},
                                          {"leftOut", p.replays->left_out},
                                          {"redealt", p.replays->redealt},
                                          {"covered", p.replays->covered},
                                          {"coveredShares", p.replays->covered_shares},
                                          {"rerunShares", p.replays->rerun_shares},
                                          {"replayedSteps", p.replays->replayed_steps}})
                                  : Json(nullptr)},
            {"reachedTarget", p.reached_target},
            {"stopReason", p.stop_reason ? Json(NameOf(*p.stop_reason)) : Json("")},
            {"error", p.error},
            {"modelPath", p.model_path}};
  // An error quotes what it was given (a file's bytes, a path): a byte that is
  // not UTF-8 becomes U+FFFD rather than an exception that aborts the agent.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

StatusOr<JobProgress> DecodeJobProgress(std::string_view json) {
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("progress: not a JSON object");
  JobProgress p;
  try {
    std::string state = j.at("state").get<std::string>();
    bool known = false;
    for (const auto& [s, name] : kStateNames) {
      if (name == state) {
        p.state = s;
        known = true;
      }
    }
    if (!known) return InvalidArgumentError("progress: unknown state \"" + state + "\"");
    p.iteration = j.at("iteration").get<int64_t>();
    p.samples = j.at("samples").get<int64_t>();
    p.epoch = j.at("epoch").get<int>();
    p.loss = j.at("loss").get<double>();
    p.accuracy = Optional<double>(j, "accuracy");
    p.evaluated_iteration = Optional<int64_t>(j, "evaluatedAtIteration");
    p.samples_per_second = j.at("samplesPerSecond").get<double>();
    p.elapsed_s = j.at("elapsedSeconds").get<double>();
    p.evaluation_s = j.value("evaluationSeconds", 0.0);
    p.evaluating = j.value("evaluating", false);
    p.eta_s = Optional<double>(j, "etaSeconds");
    p.fraction = j.at("fraction").get<double>();
    p.since_step_s = j.value("secondsSinceStep", 0.0);
    p.energy_joules = Optional<double>(j, "energyJoules");
    p.departed_bytes_sent = j.value("departedBytesSent", int64_t{0});
    p.departed_bytes_received = j.value("departedBytesReceived", int64_t{0});
    for (const auto& w : j.at("workers")) {
      p.workers.push_back({w.at("rank").get<int>(), w.at("batchSize").get<int>(), w.at("samples").get<int64_t>(),
                           w.at("bandwidthMbps").get<double>(), w.at("stallFraction").get<double>(),
                           w.at("iteration").get<int64_t>(), w.at("rowsSent").get<int64_t>(),
                           w.at("bytesSent").get<int64_t>(), w.value("bytesReceived", int64_t{0}),
                           w.at("active").get<bool>(),
                           w.value("energyJoules", 0.0), w.value("stallSeconds", 0.0),
                           w.value("wallSeconds", 0.0), w.value("heldTeamSeconds", 0.0),
                           w.value("holdingTeam", false), w.value("downlinkMbps", 0.0),
                           w.value("computeSeconds", 0.0), w.value("quarantined", std::string()),
                           w.value("silentSeconds", 0.0)});
      p.workers.back().injected = w.value("injectedSamples", int64_t{0});
      p.workers.back().refused_pushes = w.value("refusedPushes", int64_t{0});
      p.workers.back().last_refusal = w.value("lastRefusal", std::string());
      if (w.contains("pace") && w.at("pace").is_number()) p.workers.back().pace = w.at("pace").get<double>();
      if (w.contains("layers") && w.at("layers").is_object()) {
        p.workers.back().layers = std::pair{w.at("layers").at("first").get<int>(), w.at("layers").at("end").get<int>()};
      }
      if (w.contains("compression") && w.at("compression").is_object()) {
        const Json& c = w.at("compression");
        p.workers.back().compression =
            CompressionProgress{c.at("encoding").get<std::string>(), c.at("topkKeptNorm").get<double>(),
                                c.at("topkPushes").get<int64_t>(), c.at("pushes").get<int64_t>()};
      }
      if (w.contains("stream") && w.at("stream").is_object()) {
        const Json& st = w.at("stream");
        p.workers.back().stream = StreamProgress{st.at("arrived").get<int64_t>(), st.at("dropped").get<int64_t>(),
                                                 st.at("backlog").get<int64_t>(), st.at("waitSeconds").get<double>(),
                                                 st.value("refusedFiles", int64_t{0}), st.value("lastRefused", ""),
                                                 st.value("readThrough", "")};
      }
    }
    p.reached_target = j.at("reachedTarget").get<bool>();
    p.resumed_from_iteration = Optional<int64_t>(j, "resumedFromIteration");
    if (j.contains("warnings")) p.warnings = j.at("warnings").get<std::vector<std::string>>();
    if (j.contains("resumedWithChanges")) {
      p.resumed_with_changes = j.at("resumedWithChanges").get<std::vector<std::string>>();
    }
    if (j.contains("replays") && j.at("replays").is_object()) {
      const Json& r = j.at("replays");
      p.replays = JobProgress::Replays{r.at("count").get<int64_t>(), r.at("microBatches").get<int64_t>(),
                                       r.at("lastRecoverySeconds").get<double>(),
                                       r.at("recoverySeconds").get<double>(),
                                       r.value("restoredStages", int64_t{0}), r.value("stepsLost", int64_t{0}),
                                       r.value("repartitions", int64_t{0}), r.value("rejoined", int64_t{0}),
                                       Optional<int>(r, "replannedMicroBatches").value_or(0),
                                       Optional<double>(r, "predictedSamplesPerSecond").value_or(0.0),
                                       Optional<double>(r, "ordersSeconds").value_or(0.0)};
      p.replays->in_flight_micro_batches = r.value("inFlightMicroBatches", int64_t{0});
      p.replays->hung = r.value("hung", int64_t{0});
      p.replays->stragglers = r.value("stragglers", int64_t{0});
      p.replays->left_out = r.value("leftOut", int64_t{0});
      p.replays->redealt = r.value("redealt", int64_t{0});
      p.replays->covered = r.value("covered", int64_t{0});
      p.replays->covered_shares = r.value("coveredShares", int64_t{0});
      p.replays->rerun_shares = r.value("rerunShares", int64_t{0});
      // A head before the field: its replays were all of whole steps but those covered.
      p.replays->replayed_steps =
          r.value("replayedSteps", std::max<int64_t>(0, p.replays->count - p.replays->covered));
      if (r.contains("replannedPaces") && r.at("replannedPaces").is_array()) {
        for (const Json& e : r.at("replannedPaces")) {
          p.replays->replanned_paces[e.at("rank").get<int>()] = e.at("pace").get<double>();
        }
      }
    }
    const std::string stop = j.at("stopReason").get<std::string>();
    if (!stop.empty()) {
      p.stop_reason = StopReasonNamed(stop);
      if (!p.stop_reason) return InvalidArgumentError("progress: unknown stopReason \"" + stop + "\"");
    }
    p.error = j.value("error", "");
    p.model_path = j.at("modelPath").get<std::string>();
  } catch (const Json::exception& e) {
    return InvalidArgumentError(std::string("progress: ") + e.what());
  }
  return p;
}

}  // namespace edgetrain
