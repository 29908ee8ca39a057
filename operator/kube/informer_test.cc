#include "operator/kube/informer.h"

#include <deque>
#include <set>

#include <gtest/gtest.h>

#include "core/deterministic_clock.h"

namespace edgetrain::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

Json Pod(const std::string& name, const std::string& version, const std::string& node = "n1") {
  return {{"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", version}}},
          {"spec", {{"nodeName", node}}}};
}
Json List(std::vector<Json> items, const std::string& version) {
  return {{"items", std::move(items)}, {"metadata", {{"resourceVersion", version}}}};
}

// A KubeClient whose lists and watches are scripted, and which records what
// it was asked (and when, on the clock).
class ScriptedClient final : public KubeClient {
 public:
  explicit ScriptedClient(Clock& clock) : clock_(clock) {}
  struct WatchScript {
    std::vector<WatchEvent> events;
    Status end;
  };
  std::deque<StatusOr<Json>> lists;
  std::deque<WatchScript> watches;
  std::vector<TimePoint> listed_at;
  std::vector<ListOptions> listed;
  std::vector<WatchOptions> watched;
  std::vector<TimePoint> watched_at;

  StatusOr<Json> List(const ResourceType&, const std::string&, const ListOptions& options) override {
    listed_at.push_back(clock_.Now());
    listed.push_back(options);
    if (lists.empty()) return UnavailableError("no more lists scripted");
    auto next = lists.front();
    lists.pop_front();
    return next;
  }
  Status Watch(const ResourceType&, const std::string&, const WatchOptions& options,
               const std::function<void(WatchEvent)>& on_event, const std::atomic<bool>& stop) override {
    watched.push_back(options);
    watched_at.push_back(clock_.Now());
    if (watches.empty()) {  // a quiet watch, until told to stop
      while (!stop.load()) clock_.SleepFor(milliseconds(100));
      return CancelledError("stopped");
    }
    WatchScript script = watches.front();
    watches.pop_front();
    for (auto& e : script.events) on_event(e);
    return script.end;
  }
  StatusOr<Json> Get(const ResourceType&, const std::string&, const std::string&) override { return Unimplemented(); }
  StatusOr<Json> Create(const ResourceType&, const std::string&, const Json&) override { return Unimplemented(); }
  StatusOr<Json> Update(const ResourceType&, const std::string&, const Json&) override { return Unimplemented(); }
  StatusOr<Json> UpdateStatus(const ResourceType&, const std::string&, const Json&) override { return Unimplemented(); }
  StatusOr<Json> MergePatch(const ResourceType&, const std::string&, const std::string&, const Json&) override {
    return Unimplemented();
  }
  Status Delete(const ResourceType&, const std::string&, const std::string&) override { return Unimplemented(); }
  Status DeleteUid(const ResourceType&, const std::string&, const std::string&, const std::string&) override {
    return Unimplemented();
  }

 private:
  static Status Unimplemented() { return UnimplementedError("not scripted"); }
  Clock& clock_;
};

struct Seen {
  std::vector<std::string> events;  // "ADDED default/a"
  void Record(WatchEventType t, const Json& o) { events.push_back(std::string(NameOf(t)) + " " + KeyOf(o)); }
};

// Runs the informer until `until` returns true (looked at every simulated 100 ms).
void RunUntil(DeterministicClock& clock, Informer& informer, const std::function<bool()>& until) {
  std::atomic<bool> stop{false};
  clock.Run("test", [&] {
    ClockThread run = clock.StartThread("informer", [&] { informer.Run(stop); });
    while (!until()) clock.SleepFor(milliseconds(100));
    stop = true;
    run.Join();
  });
}

TEST(InformerTest, ListsThenWatchesFromTheListsVersionAndResumesFromTheLastSeen) {
  DeterministicClock clock;
  ScriptedClient client(clock);
  client.lists.push_back(List({Pod("a", "5")}, "10"));
  client.watches.push_back({{{WatchEventType::kAdded, Pod("b", "11")},
                             {WatchEventType::kModified, Pod("a", "12")},
                             {WatchEventType::kBookmark, {{"metadata", {{"resourceVersion", "20"}}}}}},
                            Status::Ok()});  // ends cleanly: resumed, not relisted
  client.watches.push_back({{{WatchEventType::kDeleted, Pod("b", "21")}}, Status::Ok()});
  Informer informer(client, kPods, "default", clock);
  Seen seen;
  informer.OnChange([&](WatchEventType t, const Json& o) { seen.Record(t, o); });
  RunUntil(clock, informer, [&] { return client.watched.size() >= 3; });
  EXPECT_EQ(seen.events, (std::vector<std::string>{"ADDED default/a", "ADDED default/b", "MODIFIED default/a",
                                                   "DELETED default/b"}));
  ASSERT_GE(client.watched.size(), 3u);
  EXPECT_EQ(client.watched[0].resource_version, "10");
  EXPECT_EQ(client.watched[1].resource_version, "20") << "from the bookmark";
  EXPECT_EQ(client.watched[2].resource_version, "21");
  EXPECT_EQ(informer.lists(), 1);
  EXPECT_EQ(informer.store().Get("default/a")->at("metadata")["resourceVersion"], "12");
  EXPECT_FALSE(informer.store().Get("default/b").has_value());
}

TEST(InformerTest, A410RelistsAndTellsWhatChangedMeanwhile) {
  DeterministicClock clock;
  ScriptedClient client(clock);
  client.lists.push_back(List({Pod("a", "5"), Pod("b", "6"), Pod("c", "7")}, "10"));
  client.watches.push_back({{{WatchEventType::kError, {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}}}},
                            Status::Ok()});
  // Meanwhile: a changed, b gone, d new, c untouched.
  client.lists.push_back(List({Pod("a", "15"), Pod("c", "7"), Pod("d", "16")}, "20"));
  Informer informer(client, kPods, "default", clock);
  Seen seen;
  informer.OnChange([&](WatchEventType t, const Json& o) { seen.Record(t, o); });
  RunUntil(clock, informer, [&] { return informer.lists() >= 2 && client.watched.size() >= 2; });
  EXPECT_EQ(std::vector<std::string>(seen.events.begin() + 3, seen.events.end()),
            (std::vector<std::string>{"MODIFIED default/a", "ADDED default/d", "DELETED default/b"}));
  EXPECT_EQ(client.watched[1].resource_version, "20");
  EXPECT_EQ(informer.store().List().size(), 3u);
}

// A page's continue token expired (410) mid-list: the list starts again,
// whole and at once, rather than paged again after a back-off.
TEST(InformerTest, AnExpiredContinueTokenListsAgainWholeAtOnce) {
  DeterministicClock clock;
  ScriptedClient client(clock);
  Json first = List({Pod("a", "5")}, "10");
  first["metadata"]["continue"] = "page-2";
  client.lists.push_back(first);
  client.lists.push_back(Status(StatusCode::kOutOfRange, "the provided continue parameter is too old"));
  client.lists.push_back(List({Pod("a", "5"), Pod("b", "6")}, "12"));
  Informer informer(client, kPods, "default", clock);
  RunUntil(clock, informer, [&] { return informer.lists() >= 1 && !client.watched.empty(); });
  ASSERT_EQ(client.listed.size(), 3u);
  EXPECT_EQ(client.listed[0].limit, 500);
  EXPECT_EQ(client.listed[1].continue_, "page-2");
  EXPECT_EQ(client.listed[2].limit, 0) << "whole";
  EXPECT_EQ(client.listed[2].continue_, "");
  EXPECT_EQ(client.listed_at[2], client.listed_at[1]) << "at once, no back-off";
  EXPECT_EQ(informer.store().List().size(), 2u) << "a's first page not counted twice";
  EXPECT_EQ(client.watched[0].resource_version, "12");
}

TEST(InformerTest, FailuresBackOffFromPoint8SecondsDoubling) {
  DeterministicClock clock;
  ScriptedClient client(clock);
  for (int i = 0; i < 4; ++i) client.lists.push_back(UnavailableError("the API server is away"));
  client.lists.push_back(List({}, "1"));
  Informer informer(client, kPods, "default", clock);
  RunUntil(clock, informer, [&] { return informer.WaitForSync(clock.Now()); });
  ASSERT_EQ(client.listed_at.size(), 5u);
  std::vector<Duration> gaps;
  for (size_t i = 1; i < client.listed_at.size(); ++i) gaps.push_back(client.listed_at[i] - client.listed_at[i - 1]);
  EXPECT_EQ(gaps, (std::vector<Duration>{milliseconds(800), milliseconds(1600), milliseconds(3200),
                                         milliseconds(6400)}));
}

// An ERROR event other than 410 ends the watch as a failure: listed again
// after the back-off. Watched again at once from the same version, an error
// the server gives every time had the informer ask without pause (found in
// review). So is a watch that closes at once with nothing: watched again
// after the back-off.
TEST(InformerTest, AWatchThatEndsInAnErrorOrAtOnceIsTriedAgainAfterTheBackOff) {
  DeterministicClock clock;
  ScriptedClient client(clock);
  client.lists.push_back(List({Pod("a", "5")}, "10"));
  client.lists.push_back(List({Pod("a", "5")}, "11"));
  const Json broken = {{"kind", "Status"}, {"code", 500}, {"message", "conversion webhook unavailable"}};
  client.watches.push_back({{{WatchEventType::kError, broken}}, Status::Ok()});
  client.watches.push_back({{}, Status::Ok()});  // closed at once, empty
  Informer informer(client, kPods, "default", clock);
  RunUntil(clock, informer, [&] { return client.watched.size() >= 3; });
  ASSERT_EQ(client.listed_at.size(), 2u) << "listed again after the ERROR event";
  EXPECT_EQ(client.listed_at[1] - client.listed_at[0], milliseconds(800)) << "after the back-off";
  EXPECT_EQ(client.watched[1].resource_version, "11");
  EXPECT_EQ(client.watched[2].resource_version, "11") << "an empty watch resumes where it was";
  EXPECT_GE(client.watched_at[2] - client.watched_at[1], milliseconds(800)) << "after the back-off";
}

// Why it has not listed yet is there to say (the operator's log and /readyz:
// a CRD not applied), until a list succeeds.
TEST(InformerTest, AFailedListIsThereToSayUntilOneSucceeds) {
  DeterministicClock clock;
  ScriptedClient client(clock);
  client.lists.push_back(NotFoundError("the server could not find the requested resource"));
  client.lists.push_back(List({}, "1"));
  Informer informer(client, kPods, "default", clock);
  EXPECT_TRUE(informer.LastListError().ok()) << "nothing tried yet";
  Status seen = Status::Ok();
  RunUntil(clock, informer, [&] {
    if (!informer.LastListError().ok()) seen = informer.LastListError();
    return informer.WaitForSync(clock.Now());
  });
  EXPECT_EQ(seen.code(), StatusCode::kNotFound);
  EXPECT_TRUE(informer.LastListError().ok());
}

TEST(InformerTest, WatchTimeoutsAreSpreadBetweenFiveAndTenMinutes) {
  DeterministicClock clock;
  ScriptedClient client(clock);
  client.lists.push_back(List({}, "1"));
  for (int i = 0; i < 20; ++i) client.watches.push_back({{}, Status::Ok()});
  Informer informer(client, kPods, "", clock);
  RunUntil(clock, informer, [&] { return client.watched.size() >= 20; });
  std::set<int64_t> timeouts;
  for (const auto& w : client.watched) {
    EXPECT_GE(w.timeout_seconds, 300);
    EXPECT_LE(w.timeout_seconds, 600);
    EXPECT_TRUE(w.bookmarks);
    timeouts.insert(w.timeout_seconds);
  }
  EXPECT_GT(timeouts.size(), 10u) << "so that many watches do not end at once";
}

TEST(InformerTest, AnIndexFindsObjectsByWhatTheyHold) {
  Store store;
  store.AddIndex("node", [](const Json& o) { return std::vector<std::string>{o["spec"].value("nodeName", "")}; });
  store.Put(Pod("a", "1", "gw"));
  store.Put(Pod("b", "1", "robot-1"));
  store.Put(Pod("c", "1", "gw"));
  EXPECT_EQ(store.ByIndex("node", "gw").size(), 2u);
  EXPECT_EQ(store.ByIndex("node", "robot-1").size(), 1u);
  EXPECT_TRUE(store.ByIndex("node", "nowhere").empty());
}

TEST(InformerTest, AWritersRefreshDoesNotBringBackWhatTheWatchRemoved) {
  Store store;
  store.Put(Pod("a", "1", "gw"));
  EXPECT_TRUE(store.Refresh(Pod("a", "2", "gw"), "1")) << "an update the watch has not brought yet";
  EXPECT_EQ((*store.Get("default/a"))["metadata"]["resourceVersion"], "2");
  store.Remove("default/a");  // deleted, and the watch said so before the writer's answer came
  EXPECT_FALSE(store.Refresh(Pod("a", "3", "gw"), "2"));
  EXPECT_FALSE(store.Get("default/a").has_value()) << "a deleted job reconciled forever";
}

// A write's answer can come back after the watch has brought the write and a
// later change: put over them, it would hold the store behind for good once
// nothing changes the object again (every write of it then conflicts).
TEST(InformerTest, AWritersRefreshDoesNotPutBackWhatTheWatchMovedOn) {
  Store store;
  store.Put(Pod("a", "1", "gw"));
  store.Put(Pod("a", "2", "gw"));  // the write's own event
  store.Put(Pod("a", "3", "robot-1"));  // and someone's change after it
  EXPECT_FALSE(store.Refresh(Pod("a", "2", "gw"), "1")) << "the answer to a write read at version 1";
  EXPECT_EQ((*store.Get("default/a"))["metadata"]["resourceVersion"], "3");
}

}  // namespace
}  // namespace edgetrain::kube
