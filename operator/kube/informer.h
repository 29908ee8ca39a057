#pragma once
// A local, indexed copy of one kind of object, kept current the way
// client-go's reflector keeps its cache: list (in pages), then watch from the
// list's resourceVersion with bookmarks and a randomised timeout; a watch that
// ends cleanly is resumed from the last version seen, a 410 (the version is
// too old) or a failed watch means listing again, after a back-off that
// doubles from 800 ms to 30 s and starts over after two healthy minutes. A
// relist tells handlers what changed meanwhile (added, modified, deleted), so
// no change is lost to a gap. Every wait is on the injected clock.

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "operator/kube/kube_client.h"

namespace edgetrain::kube {

// "namespace/name", or "name" for a cluster-scoped object.
std::string KeyOf(const Json& object);

class Store {
 public:
  using IndexFunc = std::function<std::vector<std::string>(const Json& object)>;
  // Registers an index: `fn` gives an object's values. The index is kept as
  // objects are written, so ByIndex costs what it finds, not the store's size
  // (a 5,000-node site has thousands of pods).
  void AddIndex(const std::string& name, IndexFunc fn);
  // Called after every change, under the store's lock and in the order of the
  // changes: the object as it now is, or nullptr when it is gone. For caches
  // derived from the store (placement's view of the cluster); a listener must
  // be quick and must not call back into the store.
  using Listener = std::function<void(const std::string& key, const Json* object)>;
  void AddListener(Listener listener);

  std::optional<Json> Get(const std::string& key) const;
  std::vector<Json> List() const;
  // Visits every object in place, under the store's lock: no copies, for the
  // callers that only read a field or two of each (`fn` must not call back).
  void ForEach(const std::function<void(const Json& object)>& fn) const;
  size_t Size() const;
  std::vector<Json> ByIndex(const std::string& index, const std::string& value) const;

  // What the writer of an object learned from the API, before the watch
  // brings it: applied only over the version the writer read
  // (`read_version`, its metadata.resourceVersion), so that one the watch has
  // brought meanwhile (the write's own event, or a later change) is not put
  // back behind, and one the watch has removed (deleted) is not brought back,
  // to be reconciled forever. Returns whether it was applied.
  bool Refresh(const Json& object, const std::string& read_version);

  // The informer's side.
  void Put(const Json& object);
  void Remove(const std::string& key);
  // Replaces everything; returns what the store held before.
  std::map<std::string, Json> Replace(const std::vector<Json>& objects);

 private:
  // Keeps the indexes and tells the listeners; mu_ held.
  void ChangedLocked(const std::string& key, const Json* before, const Json* now);

  mutable std::mutex mu_;
  std::map<std::string, Json> objects_;             // guarded by mu_
  std::map<std::string, IndexFunc> index_funcs_;    // guarded by mu_
  // index -> value -> keys of the objects with that value; guarded by mu_
  std::map<std::string, std::map<std::string, std::set<std::string>>> indexed_;
  std::vector<Listener> listeners_;                 // guarded by mu_
};

struct InformerOptions {
  Duration min_watch_timeout = std::chrono::minutes(5);
  Duration max_watch_timeout = std::chrono::minutes(10);
  Duration backoff_initial = std::chrono::milliseconds(800);
  Duration backoff_max = std::chrono::seconds(30);
  Duration healthy_after = std::chrono::minutes(2);
  int64_t page_size = 500;
  uint64_t seed = 1;  // the watch timeouts' randomness
  std::string label_selector;  // only the objects it selects; empty: all
};

class Informer {
 public:
  using Handler = std::function<void(WatchEventType type, const Json& object)>;

  Informer(KubeClient& client, ResourceType type, std::string ns, Clock& clock, InformerOptions options = {});

  Store& store() { return store_; }
  // Called for every change once the store has it (on Run's thread).
  void OnChange(Handler handler) { handlers_.push_back(std::move(handler)); }

  // Lists and watches until `stop`.
  void Run(const std::atomic<bool>& stop);
  // Whether the first list has filled the store; waits until `deadline`.
  bool WaitForSync(TimePoint deadline);
  // Why the last list failed; Ok once one has succeeded since.
  Status LastListError() const;
  const ResourceType& type() const { return type_; }

  // For tests and metrics.
  int lists() const { return lists_.load(); }
  int watches() const { return watches_.load(); }

 private:
  // Lists every page; the store then holds them, and handlers hear the changes.
  Status Relist();
  // One watch from resource_version_; true if it asks for a relist (410).
  StatusOr<bool> WatchOnce(const std::atomic<bool>& stop);
  void Notify(WatchEventType type, const Json& object);
  // Sleeps `d`, or less if `stop` comes first.
  void Pause(Duration d, const std::atomic<bool>& stop);

  KubeClient& client_;
  const ResourceType type_;
  const std::string ns_;
  Clock& clock_;
  const InformerOptions options_;
  Store store_;
  std::vector<Handler> handlers_;
  std::mt19937_64 random_;
  std::string resource_version_;  // Run's thread only
  bool brief_ = false;            // Run's thread only: the last watch closed at once, with nothing
  mutable std::mutex mu_;
  ClockCondition synced_changed_;
  bool synced_ = false;                   // guarded by mu_
  Status last_list_error_ = Status::Ok();  // guarded by mu_
  std::atomic<int> lists_{0}, watches_{0};
};

}  // namespace edgetrain::kube
