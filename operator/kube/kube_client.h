#pragma once
// The operator's view of the Kubernetes API: objects as JSON (the wire form,
// like client-go's unstructured), verbs as the API server has them, errors as
// Status. The REST implementation (rest_kube_client.h) is the only place that
// speaks HTTP; tests of controllers fake this interface.
//
// HTTP statuses map to codes as client-go's errors do: 404 NotFound;
// 409 AlreadyExists on create, Aborted (a conflict: re-read and retry) on
// update; 410 OutOfRange (the resourceVersion is too old: relist); 400 and 422
// InvalidArgument; 401 and 403 FailedPrecondition; 429, 5xx and connection
// failures Unavailable (retry with back-off).

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/status.h"
#include "operator/kube/resource.h"

namespace edgetrain::kube {

using Json = nlohmann::json;

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;     // 0: everything at once
  std::string continue_;  // from the previous page's metadata.continue
};

struct WatchOptions {
  std::string resource_version;  // changes after this one; empty: every object first, as ADDED
  std::string label_selector;
  std::string field_selector;
  int64_t timeout_seconds = 300;  // the server ends the watch then, cleanly
  bool bookmarks = true;          // BOOKMARK events carry the latest resourceVersion
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
const char* NameOf(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  Json object;  // the object; for kError, a Status (code 410: the version is too old)
};

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  virtual StatusOr<Json> Get(const ResourceType& type, const std::string& ns, const std::string& name) = 0;
  virtual StatusOr<Json> List(const ResourceType& type, const std::string& ns, const ListOptions& options) = 0;
  virtual StatusOr<Json> Create(const ResourceType& type, const std::string& ns, const Json& object) = 0;
  // PUT: `object` carries the resourceVersion it was read at; Aborted if it changed since.
  virtual StatusOr<Json> Update(const ResourceType& type, const std::string& ns, const Json& object) = 0;
  // PUT of the status subresource: only .status changes.
  virtual StatusOr<Json> UpdateStatus(const ResourceType& type, const std::string& ns, const Json& object) = 0;
  // A JSON merge patch (RFC 7386).
  virtual StatusOr<Json> MergePatch(const ResourceType& type, const std::string& ns, const std::string& name,
                                    const Json& patch) = 0;
  // With background propagation: owned objects go after (garbage collection).
  virtual Status Delete(const ResourceType& type, const std::string& ns, const std::string& name) = 0;
  // The same, of the object of that uid alone (DeleteOptions' preconditions):
  // Aborted where the name is now another object's, applied since.
  virtual Status DeleteUid(const ResourceType& type, const std::string& ns, const std::string& name,
                           const std::string& uid) = 0;

  // Streams events to `on_event` until the server ends the watch (OK), it
  // fails (the error), or `stop` is set (Cancelled). A watch that stays quiet
  // is not an error.
  virtual Status Watch(const ResourceType& type, const std::string& ns, const WatchOptions& options,
                       const std::function<void(WatchEvent)>& on_event, const std::atomic<bool>& stop) = 0;
};

// A watch stream's bytes as they arrive, in chunks that need not end where
// events do: one JSON event per line.
class WatchDecoder {
 public:
  // Decodes every event completed by `bytes`.
  Status Feed(std::string_view bytes, const std::function<void(WatchEvent)>& on_event);

 private:
  std::string partial_;
};

// The Status a failed request carries, as a Status of ours.
Status FromHttp(int http_status, const Json& body, bool creating);

}  // namespace edgetrain::kube
