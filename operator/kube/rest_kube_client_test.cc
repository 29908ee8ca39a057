// The REST client against the API stand-in that real kubectl drives
// (tests/kube): every verb, errors as client-go reports them, watches whole
// however the bytes arrive, a quiet watch, a 410, a hung server, TLS.
#include "operator/kube/rest_kube_client.h"

#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "core/deterministic_clock.h"
#include "operator/kube/informer.h"
#include "operator/kube/testing/standin.h"
#include "pki/job_identity.h"

namespace edgetrain::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", {{"k", value}}}};
}

class RestKubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto standin = testing::Standin::Start();
    ASSERT_TRUE(standin.ok()) << standin.status().ToString();
    standin_ = std::move(*standin);
    client_ = Client();
  }
  std::unique_ptr<KubeClient> Client(RestOptions options = {}) {
    auto client = MakeRestKubeClient(standin_->config(), options, clock_);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(*client);
  }
  // Runs a watch on a thread of its own; its events in `events`.
  struct Watching {
    std::vector<WatchEvent> events;
    std::mutex mu;
    std::atomic<bool> stop{false};
    Status ended;
    std::thread thread;
    size_t count() {
      std::lock_guard lock(mu);
      return events.size();
    }
    ~Watching() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  };
  void Watch(Watching& w, WatchOptions options) {
    w.thread = std::thread([this, &w, options] {
      w.ended = client_->Watch(kConfigMaps, "default", options, [&](WatchEvent e) {
        std::lock_guard lock(w.mu);
        w.events.push_back(std::move(e));
      }, w.stop);
    });
    ASSERT_TRUE(standin_->Hook("wait-watches?count=1&resource=configmaps&timeoutSeconds=10", "GET").ok());
  }
  bool WaitFor(const std::function<bool()>& holds) {
    for (auto until = std::chrono::steady_clock::now() + seconds(10); std::chrono::steady_clock::now() < until;) {
      if (holds()) return true;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return false;
  }

  RealClock clock_;
  std::unique_ptr<testing::Standin> standin_;
  std::unique_ptr<KubeClient> client_;
};

TEST_F(RestKubeClientTest, EveryVerbAndItsErrors) {
  auto created = client_->Create(kConfigMaps, "default", ConfigMap("plan", "1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE((*created)["metadata"]["resourceVersion"].get<std::string>().empty());
  EXPECT_EQ(client_->Create(kConfigMaps, "default", ConfigMap("plan", "1")).status().code(), StatusCode::kAlreadyExists);

  auto got = client_->Get(kConfigMaps, "default", "plan");
  ASSERT_TRUE(got.ok());
  Json changed = *got;
  changed["data"]["k"] = "2";
  ASSERT_TRUE(client_->Update(kConfigMaps, "default", changed).ok());
  changed["data"]["k"] = "3";  // still at the version read before the update
  EXPECT_EQ(client_->Update(kConfigMaps, "default", changed).status().code(), StatusCode::kAborted) << "a conflict";

  auto patched = client_->MergePatch(kConfigMaps, "default", "plan", {{"data", {{"extra", "x"}}}});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ((*patched)["data"]["k"], "2");
  EXPECT_EQ((*patched)["data"]["extra"], "x");

  ASSERT_TRUE(client_->Delete(kConfigMaps, "default", "plan").ok());
  auto gone = client_->Get(kConfigMaps, "default", "plan");
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_NE(gone.status().message().find("\"plan\" not found"), std::string::npos) << gone.status().message();
  EXPECT_EQ(client_->Create(kConfigMaps, "default", {{"metadata", {{"name", "Not A Name"}}}}).status().code(),
            StatusCode::kInvalidArgument);

  // Of one uid alone: another object of the name is left.
  auto again = client_->Create(kConfigMaps, "default", ConfigMap("plan", "4"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(client_->DeleteUid(kConfigMaps, "default", "plan", (*created)["metadata"]["uid"]).code(),
            StatusCode::kAborted);
  EXPECT_TRUE(client_->Get(kConfigMaps, "default", "plan").ok());
  EXPECT_TRUE(client_->DeleteUid(kConfigMaps, "default", "plan", (*again)["metadata"]["uid"]).ok());
  EXPECT_EQ(client_->Get(kConfigMaps, "default", "plan").status().code(), StatusCode::kNotFound);
}

TEST_F(RestKubeClientTest, ListsPageByPage) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client_->Create(kConfigMaps, "default", ConfigMap("m" + std::to_string(i), "v")).ok());
  std::vector<std::string> names;
  ListOptions page;
  page.limit = 2;
  for (int pages = 0; pages < 10; ++pages) {
    auto list = client_->List(kConfigMaps, "default", page);
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    for (const auto& item : (*list)["items"]) names.push_back(item["metadata"]["name"]);
    page.continue_ = (*list)["metadata"].value("continue", "");
    if (page.continue_.empty()) break;
  }
  EXPECT_EQ(names.size(), 5u);
}

TEST_F(RestKubeClientTest, AWatchDeliversWholeEventsHoweverTheBytesArrive) {
  auto list = client_->List(kConfigMaps, "default", {});
  ASSERT_TRUE(list.ok());
  ASSERT_TRUE(standin_->Hook("watch-chunk-bytes?bytes=7").ok());  // every event cut into 7-byte chunks
  Watching w;
  WatchOptions options;
  options.resource_version = (*list)["metadata"]["resourceVersion"];
  Watch(w, options);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client_->Create(kConfigMaps, "default", ConfigMap("c" + std::to_string(i), "v")).ok());
  ASSERT_TRUE(client_->Delete(kConfigMaps, "default", "c1").ok());
  ASSERT_TRUE(WaitFor([&] { return w.count() >= 4; }));
  std::lock_guard lock(w.mu);
  EXPECT_EQ(w.events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(w.events[0].object["metadata"]["name"], "c0");
  EXPECT_EQ(w.events[3].type, WatchEventType::kDeleted);
  EXPECT_EQ(w.events[3].object["metadata"]["name"], "c1");
}

TEST_F(RestKubeClientTest, AQuietWatchEndsCleanlyAtItsTimeoutWithBookmarks) {
  ASSERT_TRUE(standin_->Hook("bookmark-interval?seconds=0.2").ok());
  Watching w;
  WatchOptions options;
  options.resource_version = "0";
  options.timeout_seconds = 1;
  Watch(w, options);
  w.thread.join();
  EXPECT_TRUE(w.ended.ok()) << w.ended.ToString();
  std::lock_guard lock(w.mu);
  ASSERT_FALSE(w.events.empty());
  EXPECT_EQ(w.events.back().type, WatchEventType::kBookmark) << "nothing happened, and it said so";
}

TEST_F(RestKubeClientTest, AWatchFromACompactedVersionGetsA410AndAStoppedOneEndsAtOnce) {
  auto first = client_->Create(kConfigMaps, "default", ConfigMap("old", "v"));
  ASSERT_TRUE(first.ok());
  const std::string old_version = (*first)["metadata"]["resourceVersion"];
  ASSERT_TRUE(client_->Create(kConfigMaps, "default", ConfigMap("new", "v")).ok());
  ASSERT_TRUE(standin_->Hook("compact").ok());
  std::vector<WatchEvent> events;
  std::atomic<bool> stop{false};
  WatchOptions options;
  options.resource_version = old_version;
  Status ended = client_->Watch(kConfigMaps, "default", options, [&](WatchEvent e) { events.push_back(e); }, stop);
  EXPECT_TRUE(ended.ok());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::kError);
  EXPECT_EQ(events[0].object["code"], 410);

  Watching w;
  options.resource_version = "";
  Watch(w, options);
  const auto t0 = std::chrono::steady_clock::now();
  w.stop = true;
  w.thread.join();
  EXPECT_EQ(w.ended.code(), StatusCode::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(2));
}

// A watch that asked for bookmarks and hears nothing, not even a bookmark, is
// taken for a dead connection after its silence: one left half-open by a
// link that flapped had gone unnoticed for the watch's whole 5-10 minutes.
TEST_F(RestKubeClientTest, ABookmarkedWatchThatHearsNothingIsTakenForDead) {
  RestOptions options;
  options.bookmarked_watch_silence = seconds(1);
  client_ = Client(options);
  Watching w;
  WatchOptions watch;
  watch.timeout_seconds = 60;
  Watch(w, watch);
  ASSERT_TRUE(standin_->Hook("pause").ok());  // nothing more comes
  const auto t0 = std::chrono::steady_clock::now();
  w.thread.join();
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(standin_->Hook("resume").ok());
  EXPECT_EQ(w.ended.code(), StatusCode::kUnavailable) << w.ended.ToString();
  EXPECT_LT(took, seconds(10)) << "not the watch's 60 s and its slack";
}

TEST_F(RestKubeClientTest, AHungServerTimesOutAsUnavailableAndIsUsableOnceBack) {
  RestOptions options;
  options.request_timeout = seconds(1);
  auto client = Client(options);
  ASSERT_TRUE(standin_->Hook("pause").ok());
  auto hung = client->Get(kConfigMaps, "default", "x");
  EXPECT_EQ(hung.status().code(), StatusCode::kUnavailable) << hung.status().ToString();
  ASSERT_TRUE(standin_->Hook("resume").ok());
  EXPECT_EQ(client->Get(kConfigMaps, "default", "x").status().code(), StatusCode::kNotFound);
}

// The client-side limit against a server that does API Priority and Fairness
// and one that does not, and APF's 429s, timed on the simulated clock: the
// limiter and Retry-After wait on it, the requests themselves are real.
class RestKubeClientLimitTest : public RestKubeClientTest {
 protected:
  // Seconds of simulated time `requests` GETs took, and the limits reported.
  double TimeGets(RestOptions options, int requests, std::vector<double>& limits, Status* last = nullptr) {
    DeterministicClock clock;
    options.on_limit = [&](double qps) { limits.push_back(qps); };
    double took = 0;
    clock.Run("test", [&] {
      auto client = MakeRestKubeClient(standin_->config(), options, clock);
      ASSERT_TRUE(client.ok());
      const TimePoint t0 = clock.Now();
      for (int i = 0; i < requests; ++i) {
        Status got = (*client)->Get(kConfigMaps, "default", "x").status();
        if (last) *last = got;
      }
      took = ToSeconds(clock.Now() - t0);
    });
    return took;
  }
  static RestOptions OnePerSecond() {
    RestOptions options;
    options.qps = 1;
    options.burst = 1;
    return options;
  }
};

TEST_F(RestKubeClientLimitTest, IsLiftedAtTheFirstAnswerFromAServerThatDoesPriorityAndFairness) {
  std::vector<double> limits;
  EXPECT_EQ(TimeGets(OnePerSecond(), 5, limits), 0.0) << "the first took the burst's token, the rest none";
  EXPECT_EQ(limits, (std::vector<double>{1, 0}));
}

TEST_F(RestKubeClientLimitTest, HoldsAgainstAServerWithoutItOrWhenGiven) {
  ASSERT_TRUE(standin_->Hook("flow-control?enabled=false").ok());
  std::vector<double> limits;
  EXPECT_EQ(TimeGets(OnePerSecond(), 5, limits), 4.0);
  EXPECT_EQ(limits, (std::vector<double>{1}));

  ASSERT_TRUE(standin_->Hook("flow-control?enabled=true").ok());
  RestOptions given = OnePerSecond();
  given.lift_under_flow_control = false;  // --qps given
  limits.clear();
  EXPECT_EQ(TimeGets(given, 5, limits), 4.0);
  EXPECT_EQ(limits, (std::vector<double>{1}));
}

TEST_F(RestKubeClientLimitTest, ATooManyRequestsIsAskedAgainAfterItsRetryAfter) {
  std::vector<double> limits;
  Status last;
  ASSERT_TRUE(standin_->Hook("throttle?count=2&retryAfterSeconds=3").ok());
  EXPECT_EQ(TimeGets({}, 1, limits, &last), 6.0);
  EXPECT_EQ(last.code(), StatusCode::kNotFound) << "answered on the third try: " << last.ToString();

  ASSERT_TRUE(standin_->Hook("throttle?count=100&retryAfterSeconds=1").ok());
  EXPECT_EQ(TimeGets({}, 1, limits, &last), RestOptions{}.max_throttled_retries);
  EXPECT_EQ(last.code(), StatusCode::kUnavailable) << "given up: " << last.ToString();

  RestOptions lease;  // as the Lease's client: no second try
  lease.max_throttled_retries = 0;
  EXPECT_EQ(TimeGets(lease, 1, limits, &last), 0.0);
  EXPECT_EQ(last.code(), StatusCode::kUnavailable) << last.ToString();
  ASSERT_TRUE(standin_->Hook("throttle?count=0").ok());
}

TEST(RestKubeClientTlsTest, VerifiesTheServerAndProvesWhoItIs) {
  auto standin = testing::Standin::Start({"--tls"});
  ASSERT_TRUE(standin.ok()) << standin.status().ToString();
  RealClock clock;
  KubeConfig config = (*standin)->config();
  ASSERT_EQ(config.server.rfind("https://", 0), 0u);
  auto client = MakeRestKubeClient(config, {}, clock);
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->Get(kConfigMaps, "default", "x").status().code(), StatusCode::kNotFound) << "in, over TLS";

  KubeConfig wrong_token = config;
  wrong_token.token = "not-the-token";
  EXPECT_EQ((*MakeRestKubeClient(wrong_token, {}, clock))->Get(kConfigMaps, "default", "x").status().code(),
            StatusCode::kFailedPrecondition);
  // A token read from a file is read again as the kubelet rotates it: read
  // once, a pod's bound token was sent stale after it was replaced.
  {
    const std::string file = ::testing::TempDir() + "/rest-kube-client-token";
    std::ofstream(file) << "not-the-token\n";
    KubeConfig rotated = config;
    rotated.token = "not-the-token";
    rotated.token_file = file;
    SimulatedClock simulated;
    auto rotating = MakeRestKubeClient(rotated, {}, simulated);
    ASSERT_TRUE(rotating.ok());
    EXPECT_EQ((*rotating)->Get(kConfigMaps, "default", "x").status().code(), StatusCode::kFailedPrecondition);
    std::ofstream(file) << config.token << "\n";  // rotated
    simulated.Advance(std::chrono::seconds(30));
    EXPECT_EQ((*rotating)->Get(kConfigMaps, "default", "x").status().code(), StatusCode::kFailedPrecondition)
        << "read again each minute, not at every request";
    simulated.Advance(std::chrono::seconds(31));
    EXPECT_EQ((*rotating)->Get(kConfigMaps, "default", "x").status().code(), StatusCode::kNotFound)
        << "the rotated token, read again";
  }
  KubeConfig wrong_ca = config;
  wrong_ca.ca_pem.clear();  // the system's roots do not know the stand-in's CA
  auto refused = (*MakeRestKubeClient(wrong_ca, {}, clock))->Get(kConfigMaps, "default", "x");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
}

// The kubeconfig's authority alone is trusted where it names one, as
// client-go trusts it: a server a system root vouches for is not the
// cluster's API server for that.
TEST(RestKubeClientTlsTest, TrustsTheKubeconfigsAuthorityAloneNotTheSystemsRootsBesideIt) {
  auto standin = testing::Standin::Start({"--tls"});
  ASSERT_TRUE(standin.ok()) << standin.status().ToString();
  RealClock clock;
  const KubeConfig config = (*standin)->config();
  // The stand-in's authority made the system's one root (OpenSSL reads
  // SSL_CERT_FILE each time a context loads the system's roots).
  const std::string roots = ::testing::TempDir() + "/rest-kube-client-system-roots.pem";
  std::ofstream(roots) << config.ca_pem;
  ASSERT_EQ(::setenv("SSL_CERT_FILE", roots.c_str(), 1), 0);
  KubeConfig no_ca = config;
  no_ca.ca_pem.clear();
  EXPECT_EQ((*MakeRestKubeClient(no_ca, {}, clock))->Get(kConfigMaps, "default", "x").status().code(),
            StatusCode::kNotFound)
      << "with no authority named, the system's roots are trusted, and the stand-in's is one";
  const auto now = std::chrono::system_clock::now();
  auto elsewhere = pki::MakeJobAuthority("elsewhere", now - std::chrono::hours(1), now + std::chrono::hours(1));
  ASSERT_TRUE(elsewhere.ok());
  KubeConfig other_ca = config;
  other_ca.ca_pem = elsewhere->ca.cert_pem;
  const auto refused = (*MakeRestKubeClient(other_ca, {}, clock))->Get(kConfigMaps, "default", "x");
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable)
      << "another authority named, the system's roots are not trusted beside it: " << refused.status().ToString();
}

}  // namespace
}  // namespace edgetrain::kube

namespace edgetrain::kube {
namespace {

// An informer on the real protocol: it follows changes, and when the server
// ends its watch (as a restarted API server or a proxy does) it watches again
// from where it was and still agrees with the server. (A 410 on that watch
// means listing again: InformerTest.A410RelistsAndTellsWhatChangedMeanwhile.)
TEST_F(RestKubeClientTest, AnInformerFollowsTheServerThroughDroppedWatches) {
  InformerOptions options;
  options.backoff_initial = milliseconds(50);
  Informer informer(*client_, kConfigMaps, "default", clock_, options);
  std::atomic<int> changes{0};
  informer.OnChange([&](WatchEventType, const Json&) { ++changes; });
  std::atomic<bool> stop{false};
  std::thread run([&] { informer.Run(stop); });
  ASSERT_TRUE(informer.WaitForSync(clock_.Now() + seconds(10)));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client_->Create(kConfigMaps, "default", ConfigMap("i" + std::to_string(i), "v")).ok());
  ASSERT_TRUE(WaitFor([&] { return informer.store().List().size() == 3; }));

  ASSERT_TRUE(client_->Delete(kConfigMaps, "default", "i0").ok());
  ASSERT_TRUE(WaitFor([&] { return !informer.store().Get("default/i0").has_value(); }));
  ASSERT_TRUE(standin_->Hook("drop-watches").ok());
  ASSERT_TRUE(WaitFor([&] { return informer.watches() >= 2; }));
  ASSERT_TRUE(standin_->Hook("wait-watches?count=1&resource=configmaps&timeoutSeconds=10", "GET").ok());
  ASSERT_TRUE(client_->Create(kConfigMaps, "default", ConfigMap("i3", "v")).ok());
  ASSERT_TRUE(WaitFor([&] { return informer.store().Get("default/i3").has_value(); }));
  auto list = client_->List(kConfigMaps, "default", {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(informer.store().List().size(), (*list)["items"].size());
  stop = true;
  run.join();
  EXPECT_EQ(informer.lists(), 1) << "a dropped watch is resumed, not relisted";
  EXPECT_EQ(changes.load(), 3 + 1 + 1);
}

}  // namespace
}  // namespace edgetrain::kube
