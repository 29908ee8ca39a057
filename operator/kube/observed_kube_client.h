#pragma once
// A KubeClient that tells an observer of every request made, by verb, and of
// every request that failed, by verb and code, and otherwise passes everything
// through: the operator's API request and error metrics, without the REST
// client or the controllers knowing of metrics.

#include <functional>
#include <string>

#include "operator/kube/kube_client.h"

namespace edgetrain::kube {

class ObservedKubeClient final : public KubeClient {
 public:
  using Observer = std::function<void(const std::string& verb, StatusCode code)>;
  using RequestObserver = std::function<void(const std::string& verb)>;
  ObservedKubeClient(KubeClient& inner, Observer on_error, RequestObserver on_request = nullptr)
      : inner_(inner), on_error_(std::move(on_error)), on_request_(std::move(on_request)) {}

  StatusOr<Json> Get(const ResourceType& type, const std::string& ns, const std::string& name) override {
    Count("get");
    StatusOr<Json> result = inner_.Get(type, ns, name);
    // Asking whether something exists is answered by a 404 as by a 200: the
    // Lease looked up before a first install's campaign, a plan asked after
    // its cache lost it. Counted, every install's panel of errors had one.
    if (!result.ok() && result.status().code() != StatusCode::kNotFound) on_error_("get", result.status().code());
    return result;
  }
  StatusOr<Json> List(const ResourceType& type, const std::string& ns, const ListOptions& options) override {
    return Seen("list", inner_.List(type, ns, options));
  }
  StatusOr<Json> Create(const ResourceType& type, const std::string& ns, const Json& object) override {
    return Seen("create", inner_.Create(type, ns, object));
  }
  StatusOr<Json> Update(const ResourceType& type, const std::string& ns, const Json& object) override {
    return Seen("update", inner_.Update(type, ns, object));
  }
  StatusOr<Json> UpdateStatus(const ResourceType& type, const std::string& ns, const Json& object) override {
    return Seen("update", inner_.UpdateStatus(type, ns, object));
  }
  StatusOr<Json> MergePatch(const ResourceType& type, const std::string& ns, const std::string& name,
                            const Json& patch) override {
    return Seen("patch", inner_.MergePatch(type, ns, name, patch));
  }
  Status Delete(const ResourceType& type, const std::string& ns, const std::string& name) override {
    Count("delete");
    Status s = inner_.Delete(type, ns, name);
    // Deleting what is already gone is the goal reached, not an error.
    if (!s.ok() && s.code() != StatusCode::kNotFound) on_error_("delete", s.code());
    return s;
  }
  Status DeleteUid(const ResourceType& type, const std::string& ns, const std::string& name,
                   const std::string& uid) override {
    Count("delete");
    Status s = inner_.DeleteUid(type, ns, name, uid);
    // Gone, or another's now: the goal reached either way, not an error.
    if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kAborted) on_error_("delete", s.code());
    return s;
  }
  Status Watch(const ResourceType& type, const std::string& ns, const WatchOptions& options,
               const std::function<void(WatchEvent)>& on_event, const std::atomic<bool>& stop) override {
    Count("watch");
    Status s = inner_.Watch(type, ns, options, on_event, stop);
    if (!s.ok() && s.code() != StatusCode::kCancelled) on_error_("watch", s.code());
    return s;
  }

 private:
  StatusOr<Json> Seen(const char* verb, StatusOr<Json> result) {
    Count(verb);
    if (!result.ok()) on_error_(verb, result.status().code());
    return result;
  }
  void Count(const char* verb) {
    if (on_request_) on_request_(verb);
  }
  KubeClient& inner_;
  Observer on_error_;
  RequestObserver on_request_;
};

}  // namespace edgetrain::kube
