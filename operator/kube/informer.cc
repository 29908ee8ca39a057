#include "operator/kube/informer.h"

#include <algorithm>

#include "core/backoff.h"

namespace edgetrain::kube {

// A watch that closes sooner than this, with nothing in it, is no watch.
constexpr Duration kBriefWatch = std::chrono::seconds(1);

std::string KeyOf(const Json& object) {
  const Json& md = object["metadata"];
  const std::string name = md.value("name", "");
  const std::string ns = md.contains("namespace") && md["namespace"].is_string() ? md["namespace"].get<std::string>() : "";
  return ns.empty() ? name : ns + "/" + name;
}

void Store::AddIndex(const std::string& name, IndexFunc fn) {
  std::lock_guard lock(mu_);
  auto& values = indexed_[name];
  values.clear();
  for (const auto& [key, object] : objects_) {
    for (const std::string& v : fn(object)) values[v].insert(key);
  }
  index_funcs_[name] = std::move(fn);
}

void Store::AddListener(Listener listener) {
  std::lock_guard lock(mu_);
  listeners_.push_back(std::move(listener));
}

void Store::ChangedLocked(const std::string& key, const Json* before, const Json* now) {
  for (const auto& [name, fn] : index_funcs_) {
    auto& values = indexed_[name];
    if (before) {
      for (const std::string& v : fn(*before)) {
        auto it = values.find(v);
        if (it == values.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) values.erase(it);
      }
    }
    if (now) {
      for (const std::string& v : fn(*now)) values[v].insert(key);
    }
  }
  for (const Listener& l : listeners_) l(key, now);
}

std::optional<Json> Store::Get(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  return it == objects_.end() ? std::nullopt : std::optional<Json>(it->second);
}

std::vector<Json> Store::List() const {
  std::lock_guard lock(mu_);
  std::vector<Json> all;
  all.reserve(objects_.size());
  for (const auto& [key, object] : objects_) all.push_back(object);
  return all;
}

void Store::ForEach(const std::function<void(const Json& object)>& fn) const {
  std::lock_guard lock(mu_);
  for (const auto& [key, object] : objects_) fn(object);
}

size_t Store::Size() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

std::vector<Json> Store::ByIndex(const std::string& index, const std::string& value) const {
  std::lock_guard lock(mu_);
  std::vector<Json> found;
  auto values = indexed_.find(index);
  if (values == indexed_.end()) return found;
  auto keys = values->second.find(value);
  if (keys == values->second.end()) return found;
  for (const std::string& key : keys->second) {
    if (auto it = objects_.find(key); it != objects_.end()) found.push_back(it->second);
  }
  return found;
}

bool Store::Refresh(const Json& object, const std::string& read_version) {
  std::lock_guard lock(mu_);
  const std::string key = KeyOf(object);
  auto it = objects_.find(key);
  if (it == objects_.end()) return false;
  // The watch has moved it on since the writer read it: what it holds is the
  // write's own event or a later one (a write on a version the watch had
  // passed would have conflicted), or it is catching up and will be there.
  if (it->second["metadata"].value("resourceVersion", "") != read_version) return false;
  Json before = std::move(it->second);
  it->second = object;
  ChangedLocked(key, &before, &it->second);
  return true;
}

void Store::Put(const Json& object) {
  std::lock_guard lock(mu_);
  const std::string key = KeyOf(object);
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    it = objects_.emplace(key, object).first;
    ChangedLocked(key, nullptr, &it->second);
    return;
  }
  Json before = std::move(it->second);
  it->second = object;
  ChangedLocked(key, &before, &it->second);
}

void Store::Remove(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return;
  Json before = std::move(it->second);
  objects_.erase(it);
  ChangedLocked(key, &before, nullptr);
}

std::map<std::string, Json> Store::Replace(const std::vector<Json>& objects) {
  std::map<std::string, Json> next;
  for (const Json& o : objects) next[KeyOf(o)] = o;
  std::lock_guard lock(mu_);
  std::swap(objects_, next);
  // `next` now holds what was there before.
  for (auto& [name, values] : indexed_) values.clear();
  for (const auto& [key, object] : objects_) {
    for (const auto& [name, fn] : index_funcs_) {
      for (const std::string& v : fn(object)) indexed_[name][v].insert(key);
    }
  }
  if (!listeners_.empty()) {
    for (const auto& [key, before] : next) {
      if (!objects_.count(key)) {
        for (const Listener& l : listeners_) l(key, nullptr);
      }
    }
    for (const auto& [key, object] : objects_) {
      for (const Listener& l : listeners_) l(key, &object);
    }
  }
  return next;
}

Informer::Informer(KubeClient& client, ResourceType type, std::string ns, Clock& clock, InformerOptions options)
    : client_(client), type_(std::move(type)), ns_(std::move(ns)), clock_(clock), options_(options),
      random_(options.seed), synced_changed_(clock) {}

void Informer::Notify(WatchEventType type, const Json& object) {
  for (const auto& h : handlers_) h(type, object);
}

Status Informer::Relist() {
  ++lists_;
  std::vector<Json> items;
  ListOptions page;
  page.limit = options_.page_size;
  page.label_selector = options_.label_selector;
  std::string version;
  for (;;) {
    StatusOr<Json> listed = client_.List(type_, ns_, page);
    // A continue token the server no longer keeps (410: its pages are older
    // than its compaction) starts the list again whole, in one answer, as
    // client-go's pager does: paged again, a list slower than the
    // compaction would expire for ever, each try after a back-off.
    if (listed.status().code() == StatusCode::kOutOfRange && !page.continue_.empty() && page.limit > 0) {
      items.clear();
      page.continue_.clear();
      page.limit = 0;
      continue;
    }
    EDGETRAIN_ASSIGN_OR_RETURN(Json list, std::move(listed));
    for (Json& item : list["items"]) {
      // A list's items carry no kind; handlers and the store see whole objects.
      item["kind"] = type_.kind;
      item["apiVersion"] = type_.ApiVersion();
      items.push_back(std::move(item));
    }
    version = list["metadata"].value("resourceVersion", "");
    page.continue_ = list["metadata"].value("continue", "");
    if (page.continue_.empty()) break;
  }
  std::map<std::string, Json> before = store_.Replace(items);
  for (const Json& item : items) {
    auto old = before.find(KeyOf(item));
    if (old == before.end()) {
      Notify(WatchEventType::kAdded, item);
    } else {
      if (old->second["metadata"].value("resourceVersion", "") != item["metadata"].value("resourceVersion", "")) {
        Notify(WatchEventType::kModified, item);
      }
      before.erase(old);
    }
  }
  // Gone while we were not watching.
  for (const auto& [key, object] : before) Notify(WatchEventType::kDeleted, object);
  resource_version_ = version;
  {
    std::lock_guard lock(mu_);
    synced_ = true;
    synced_changed_.NotifyAll();
  }
  return Status::Ok();
}

StatusOr<bool> Informer::WatchOnce(const std::atomic<bool>& stop) {
  ++watches_;
  WatchOptions watch;
  watch.label_selector = options_.label_selector;
  watch.resource_version = resource_version_;
  const int64_t min_s = std::chrono::duration_cast<std::chrono::seconds>(options_.min_watch_timeout).count();
  const int64_t max_s = std::chrono::duration_cast<std::chrono::seconds>(options_.max_watch_timeout).count();
  watch.timeout_seconds = std::uniform_int_distribution<int64_t>(min_s, std::max(min_s, max_s))(random_);
  bool too_old = false;
  std::string error;  // an ERROR event's, other than 410's
  int events = 0;
  const TimePoint began = clock_.Now();
  Status ended = client_.Watch(type_, ns_, watch, [&](WatchEvent e) {
    if (too_old || !error.empty()) return;
    ++events;
    if (e.type == WatchEventType::kError) {
      // 410 Expired: the history we asked for is gone. Anything else ends
      // this watch as a failure: watched again at once from the same
      // version, an error the server gives every time (a conversion webhook
      // down) had the informer ask without pause, its cache frozen, and no
      // error counted (found in review).
      too_old = e.object.value("code", 0) == 410;
      if (!too_old) error = e.object.value("message", std::string("an ERROR event"));
      return;
    }
    resource_version_ = e.object["metadata"].value("resourceVersion", resource_version_);
    if (e.type == WatchEventType::kBookmark) return;
    if (e.type == WatchEventType::kDeleted) {
      store_.Remove(KeyOf(e.object));
    } else {
      store_.Put(e.object);
    }
    Notify(e.type, e.object);
  }, stop);
  if (ended.code() == StatusCode::kOutOfRange) return true;
  if (!ended.ok()) return ended;
  if (!error.empty()) return UnavailableError("the watch of " + std::string(type_.plural) + " ended: " + error);
  // Closed at once with nothing in it: watched again after the back-off, as
  // client-go does, not at once and again and again.
  brief_ = events == 0 && clock_.Now() - began < kBriefWatch;
  return too_old;
}

void Informer::Pause(Duration d, const std::atomic<bool>& stop) {
  const TimePoint until = clock_.Now() + d;
  while (!stop.load() && clock_.Now() < until) {
    clock_.SleepFor(std::min<Duration>(until - clock_.Now(), std::chrono::milliseconds(100)));
  }
}

void Informer::Run(const std::atomic<bool>& stop) {
  Backoff backoff(options_.backoff_initial, options_.backoff_max, options_.healthy_after);
  bool need_list = true;
  while (!stop.load()) {
    if (need_list) {
      Status listed = Relist();
      {
        std::lock_guard lock(mu_);
        last_list_error_ = listed;
      }
      if (!listed.ok()) {
        Pause(backoff.Failed(clock_.Now()), stop);
        continue;
      }
      need_list = false;
    }
    StatusOr<bool> relist = WatchOnce(stop);
    if (stop.load()) return;
    if (!relist.ok()) {
      // The watch failed (the server went away, a proxy cut it): list again
      // once it may be back, in case changes were missed.
      need_list = true;
      Pause(backoff.Failed(clock_.Now()), stop);
    } else {
      need_list = *relist;
      if (brief_) Pause(backoff.Failed(clock_.Now()), stop);
    }
  }
}

Status Informer::LastListError() const {
  std::lock_guard lock(mu_);
  return last_list_error_;
}

bool Informer::WaitForSync(TimePoint deadline) {
  std::unique_lock lock(mu_);
  return synced_changed_.WaitUntil(lock, deadline, [&] { return synced_; });
}

}  // namespace edgetrain::kube
