#pragma once
// An API server in memory, for controller tests: objects by kind, namespace and
// name; resourceVersions that make a stale update conflict; every write
// counted, so a test can say "the second reconcile wrote nothing". No watches:
// tests hand the controller's caches what they want it to see.

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "operator/kube/kube_client.h"

namespace edgetrain::kube::testing {

class FakeKubeClient final : public KubeClient {
 public:
  StatusOr<Json> Get(const ResourceType& type, const std::string& ns, const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++reads_[type.kind];
    if (auto refused = refused_gets_.find(type.kind); refused != refused_gets_.end() && !refused->second.ok()) {
      return refused->second;
    }
    auto it = objects_.find(Key(type, ns, name));
    if (it == objects_.end()) return NotFoundError(type.plural + " \"" + name + "\" not found");
    return it->second;
  }
  StatusOr<Json> List(const ResourceType& type, const std::string& ns, const ListOptions& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto refused = refused_lists_.find(type.kind); refused != refused_lists_.end() && !refused->second.ok()) {
      return refused->second;
    }
    // Of field selectors, the one a client uses to list a single object.
    const std::string kName = "metadata.name=";
    const std::string name =
        options.field_selector.rfind(kName, 0) == 0 ? options.field_selector.substr(kName.size()) : "";
    Json items = Json::array();
    for (const auto& [key, object] : objects_) {
      if (key.rfind(type.plural + "/" + (type.namespaced ? ns : "") + "/", 0) != 0) continue;
      if (name.empty() || object["metadata"].value("name", "") == name) items.push_back(object);
    }
    return Json{{"items", items}, {"metadata", {{"resourceVersion", std::to_string(version_)}}}};
  }
  // Every create of `kind` from now on is refused with `why`, as an
  // admission check or RBAC refuses it; an OK status lifts it.
  void RefuseCreates(const std::string& kind, Status why) {
    std::lock_guard<std::mutex> lock(mu_);
    refused_[kind] = std::move(why);
    allowed_.erase(kind);
  }
  // Every get of `kind` fails so, until given Ok.
  void RefuseGets(const std::string& kind, Status why) {
    std::lock_guard<std::mutex> lock(mu_);
    refused_gets_[kind] = std::move(why);
  }
  // Every list of `kind` fails so, until given Ok.
  void RefuseLists(const std::string& kind, Status why) {
    std::lock_guard<std::mutex> lock(mu_);
    refused_lists_[kind] = std::move(why);
  }
  // Every status write of `kind` fails so (a 5xx, a reset connection), until given Ok.
  void RefuseStatusWrites(const std::string& kind, Status why) {
    std::lock_guard<std::mutex> lock(mu_);
    refused_status_[kind] = std::move(why);
  }
  // As RefuseCreates once `allowed` more of `kind` are made: a quota that fills part-way.
  void RefuseCreatesAfter(const std::string& kind, int allowed, Status why) {
    std::lock_guard<std::mutex> lock(mu_);
    refused_[kind] = std::move(why);
    allowed_[kind] = allowed;
  }
  StatusOr<Json> Create(const ResourceType& type, const std::string& ns, const Json& object) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++writes_["create " + type.kind];
    if (auto refused = refused_.find(type.kind); refused != refused_.end() && !refused->second.ok()) {
      if (auto allowed = allowed_.find(type.kind); allowed != allowed_.end() && allowed->second > 0) {
        --allowed->second;
      } else {
        return refused->second;
      }
    }
    const std::string key = Key(type, ns, object.at("metadata").at("name"));
    if (objects_.count(key)) return Status(StatusCode::kAlreadyExists, key + " already exists");
    Json stored = object;
    stored["metadata"]["namespace"] = type.namespaced ? ns : "";
    stored["metadata"]["uid"] = "uid-" + std::to_string(++version_);
    stored["metadata"]["resourceVersion"] = std::to_string(version_);
    if (!stored["metadata"].contains("generation")) stored["metadata"]["generation"] = 1;
    objects_[key] = stored;
    return stored;
  }
  StatusOr<Json> Update(const ResourceType& type, const std::string& ns, const Json& object) override {
    return Put(type, ns, object, "update " + type.kind, /*status_only=*/false);
  }
  StatusOr<Json> UpdateStatus(const ResourceType& type, const std::string& ns, const Json& object) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto refused = refused_status_.find(type.kind); refused != refused_status_.end() && !refused->second.ok()) {
        ++writes_["status " + type.kind];
        return refused->second;
      }
    }
    return Put(type, ns, object, "status " + type.kind, /*status_only=*/true);
  }
  StatusOr<Json> MergePatch(const ResourceType& type, const std::string& ns, const std::string& name,
                            const Json& patch) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++writes_["patch " + type.kind];
    auto it = objects_.find(Key(type, ns, name));
    if (it == objects_.end()) return NotFoundError(name);
    it->second.merge_patch(patch);
    it->second["metadata"]["resourceVersion"] = std::to_string(++version_);
    return it->second;
  }
  Status Delete(const ResourceType& type, const std::string& ns, const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++writes_["delete " + type.kind];
    return objects_.erase(Key(type, ns, name)) ? Status::Ok() : NotFoundError(name);
  }
  Status DeleteUid(const ResourceType& type, const std::string& ns, const std::string& name,
                   const std::string& uid) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++writes_["delete " + type.kind];
    auto it = objects_.find(Key(type, ns, name));
    if (it == objects_.end()) return NotFoundError(name);
    if (it->second.value("/metadata/uid"_json_pointer, std::string()) != uid) {
      return AbortedError("Precondition failed: UID in precondition: " + uid);
    }
    objects_.erase(it);
    return Status::Ok();
  }
  Status Watch(const ResourceType&, const std::string&, const WatchOptions&, const std::function<void(WatchEvent)>&,
               const std::atomic<bool>&) override {
    return UnimplementedError("the fake API has no watches");
  }

  // Writes by "verb Kind" ("create Pod", "status TrainingJob"), since the last Reset.
  int Writes(const std::string& what) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = writes_.find(what);
    return it == writes_.end() ? 0 : it->second;
  }
  // GETs of a kind, since the last ResetWrites.
  int Reads(const std::string& kind) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reads_.find(kind);
    return it == reads_.end() ? 0 : it->second;
  }
  int AllWrites() const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& [what, count] : writes_) n += what.rfind("create Event", 0) == 0 ? 0 : count;
    return n;
  }
  void ResetWrites() {
    std::lock_guard<std::mutex> lock(mu_);
    writes_.clear();
    reads_.clear();
  }
  // Every object of a kind, for assertions.
  std::vector<Json> All(const ResourceType& type) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Json> out;
    for (const auto& [key, object] : objects_) {
      if (key.rfind(type.plural + "/", 0) == 0) out.push_back(object);
    }
    return out;
  }

 private:
  static std::string Key(const ResourceType& type, const std::string& ns, const std::string& name) {
    return type.plural + "/" + (type.namespaced ? ns : "") + "/" + name;
  }
  StatusOr<Json> Put(const ResourceType& type, const std::string& ns, const Json& object, const std::string& what,
                     bool status_only) {
    std::lock_guard<std::mutex> lock(mu_);
    ++writes_[what];
    auto it = objects_.find(Key(type, ns, object.at("metadata").at("name")));
    if (it == objects_.end()) return NotFoundError(what);
    if (object["metadata"].value("resourceVersion", "") != it->second["metadata"].value("resourceVersion", "")) {
      return AbortedError("the object has been modified; please apply your changes to the latest version");
    }
    if (status_only) {
      it->second["status"] = object.value("status", Json::object());
    } else {
      Json status = it->second.value("status", Json());
      it->second = object;
      if (!status.is_null()) it->second["status"] = status;
    }
    it->second["metadata"]["resourceVersion"] = std::to_string(++version_);
    return it->second;
  }

  mutable std::mutex mu_;
  std::map<std::string, Json> objects_;
  std::map<std::string, int> reads_;
  std::map<std::string, int> writes_;
  std::map<std::string, Status> refused_;  // by kind: what a create is refused with
  std::map<std::string, int> allowed_;     // by kind: creates still made before refused_ holds
  std::map<std::string, Status> refused_lists_;  // by kind: what a list fails with
  std::map<std::string, Status> refused_gets_;   // by kind: what a get fails with
  std::map<std::string, Status> refused_status_; // by kind: what a status write fails with
  int64_t version_ = 0;
};

}  // namespace edgetrain::kube::testing
