#pragma once
// Nodes, pods and TrainingJobs as the API shows them, built in sentences for
// the controller's table tests: ANode("robot-1").Scoring(0.5).WithLink(30),
// APodOf("team").Worker(0).On("robot-1").Running().

#include <string>

#include <nlohmann/json.hpp>

#include "operator/controller/job_labels.h"

namespace edgetrain::operator_::testing {

using Json = nlohmann::json;

class ANode {
 public:
  explicit ANode(const std::string& name) {
    json_ = {{"apiVersion", "v1"},
             {"kind", "Node"},
             {"metadata",
              {{"name", name},
               {"labels", {{"kubernetes.io/hostname", name}, {"kubernetes.io/arch", "amd64"}}},
               {"annotations", Json::object()}}},
             {"spec", Json::object()},
             {"status",
              {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}},
               {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  }
  ANode& Scoring(double score) { return Annotate("edgetrain.dev/compute-score", score); }
  ANode& WithLink(double mbps) { return Annotate("edgetrain.dev/link-mbps", mbps); }
  ANode& EmulatedSlowerBy(double slowdown) { return Annotate("edgetrain.dev/emulated-slowdown", slowdown); }
  ANode& Streaming(double per_second) { return Annotate("edgetrain.dev/emulated-stream-rate", per_second); }
  ANode& Annotate(const std::string& key, double value) {
    json_["metadata"]["annotations"][key] = Json(value).dump();
    return *this;
  }
  ANode& Labelled(const std::string& key, const std::string& value) {
    json_["metadata"]["labels"][key] = value;
    return *this;
  }
  ANode& NotReady() {
    json_["status"]["conditions"][0]["status"] = "Unknown";
    return *this;
  }
  ANode& Cordoned() {
    json_["spec"]["unschedulable"] = true;
    return *this;
  }
  ANode& Tainted(const std::string& key, const std::string& value, const std::string& effect) {
    json_["spec"]["taints"].push_back({{"key", key}, {"value", value}, {"effect", effect}});
    return *this;
  }
  ANode& WithAllocatable(const std::string& cpu, const std::string& memory, const std::string& pods = "110") {
    json_["status"]["allocatable"] = {{"cpu", cpu}, {"memory", memory}, {"pods", pods}};
    return *this;
  }
  operator Json() const { return json_; }

 private:
  Json json_;
};

class APod {
 public:
  explicit APod(const std::string& name) {
    json_ = {{"apiVersion", "v1"},
             {"kind", "Pod"},
             {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", Json::object()}}},
             {"spec", {{"containers", {{{"name", "agent"}, {"resources", {{"requests", Json::object()}}}}}}}},
             {"status", {{"phase", "Pending"}}}};
  }
  APod& OfJob(const std::string& job, int generation = 1) {
    json_["metadata"]["labels"][kJobLabel] = job;
    json_["metadata"]["labels"][kGenerationLabel] = std::to_string(generation);
    return *this;
  }
  APod& Coordinator() {
    json_["metadata"]["labels"][kRoleLabel] = "coordinator";
    return *this;
  }
  APod& Worker(int rank) {
    json_["metadata"]["labels"][kRoleLabel] = "worker";
    json_["metadata"]["labels"][kRankLabel] = std::to_string(rank);
    return *this;
  }
  APod& On(const std::string& node) {
    json_["spec"]["nodeName"] = node;
    return *this;
  }
  APod& Requesting(const std::string& cpu, const std::string& memory) {
    json_["spec"]["containers"][0]["resources"]["requests"] = {{"cpu", cpu}, {"memory", memory}};
    return *this;
  }
  APod& Running(const std::string& ip = "10.0.0.9") {
    json_["status"] = {{"phase", "Running"},
                       {"podIP", ip},
                       {"containerStatuses", {{{"name", "agent"}, {"restartCount", 0}, {"ready", true},
                                               {"state", {{"running", Json::object()}}}}}}};
    return *this;
  }
  // Running, its readiness probe not passed yet.
  APod& NotReady() {
    json_["status"]["containerStatuses"][0]["ready"] = false;
    return *this;
  }
  // Ended with `exit_code` and the agent's result as its termination message.
  APod& Ended(int exit_code, const Json& result = nullptr) {
    Json terminated = {{"exitCode", exit_code}, {"reason", exit_code == 0 ? "Completed" : "Error"}};
    if (!result.is_null()) terminated["message"] = result.dump();
    json_["status"] = {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                       {"containerStatuses", {{{"name", "agent"}, {"restartCount", 0}, {"state", {{"terminated", terminated}}}}}}};
    return *this;
  }
  // Running again after `restarts` crashes, the last with `exit_code` (and
  // the agent's result as its termination message).
  APod& Restarted(int restarts, int exit_code, const Json& result = nullptr) {
    Running();
    json_["status"]["containerStatuses"][0]["restartCount"] = restarts;
    Json terminated = {{"exitCode", exit_code}, {"reason", "Error"}};
    if (!result.is_null()) terminated["message"] = result.dump();
    json_["status"]["containerStatuses"][0]["lastState"] = {{"terminated", terminated}};
    return *this;
  }
  // Crashed `restarts` times, the last with `exit_code`, and waiting to be
  // started again (CrashLoopBackOff).
  APod& CrashLooping(int restarts, int exit_code, const Json& result = nullptr) {
    Restarted(restarts, exit_code, result);
    json_["status"]["containerStatuses"][0]["state"] = {
        {"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 10s restarting failed container"}}}};
    return *this;
  }
  APod& BeingDeleted() {
    json_["metadata"]["deletionTimestamp"] = "2026-11-22T10:00:00Z";
    return *this;
  }
  operator Json() const { return json_; }

 private:
  Json json_;
};

}  // namespace edgetrain::operator_::testing
