// cpprestsdk behind KubeClient. Its U() macro clashes with other headers, hence
// _TURN_OFF_PLATFORM_STRING (set for this target in CMake); on Linux its
// strings are std::string.
#include "operator/kube/rest_kube_client.h"

#include <cpprest/http_client.h>
#include <cpprest/uri_builder.h>

#include <boost/asio/ssl.hpp>
#include <openssl/ssl.h>

#include <algorithm>
#include <mutex>
#include <optional>

#include "operator/kube/rate_limiter.h"

namespace edgetrain::kube {
namespace {

namespace http = web::http;
using http::client::http_client;
using http::client::http_client_config;

// The longest a watch may be silent before the connection is taken for dead:
// past the server's own timeout, so that a quiet watch ends cleanly first
// (sooner where it asked for bookmarks: RestOptions::bookmarked_watch_silence).
constexpr Duration kWatchSlack = std::chrono::seconds(30);
// How often a token read from a file is read again.
constexpr Duration kTokenReread = std::chrono::minutes(1);
// How often a blocked watch read looks at the caller's stop flag.
constexpr Duration kStopCheck = std::chrono::milliseconds(50);
// What API Priority and Fairness adds to every response it classified.
constexpr char kFlowSchemaHeader[] = "X-Kubernetes-PF-FlowSchema-UID";
// The longest Retry-After honoured; past it the request fails as Unavailable
// and the caller's own back-off takes over.
constexpr int kMaxRetryAfterSeconds = 60;

// Seconds from a Retry-After header: the delta form, which the API server
// sends; 1 when absent or a date.
int RetryAfterSeconds(const web::http::http_headers& headers) {
  auto it = headers.find("Retry-After");
  if (it == headers.end()) return 1;
  try {
    return std::clamp(std::stoi(it->second), 0, kMaxRetryAfterSeconds);
  } catch (const std::exception&) {
    return 1;
  }
}

http_client_config ClientConfig(const KubeConfig& kc, Duration timeout) {
  http_client_config config;
  config.set_validate_certificates(true);
  // Whole milliseconds: in seconds a timeout under one would be none at all.
  config.set_timeout(std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  const std::string ca = kc.ca_pem, cert = kc.client_cert_pem, key = kc.client_key_pem;
  config.set_ssl_context_callback([ca, cert, key](boost::asio::ssl::context& ctx) {
    if (!ca.empty()) {
      // The cluster's authority alone, as client-go trusts a kubeconfig's:
      // cpprestsdk has loaded the system's roots into the context already, and
      // beside them any server a public authority vouched for under the API
      // server's name was taken for it.
      ::SSL_CTX_set_cert_store(ctx.native_handle(), ::X509_STORE_new());
      ctx.add_certificate_authority(boost::asio::buffer(ca.data(), ca.size()));
    }
    if (!cert.empty()) {
      ctx.use_certificate_chain(boost::asio::buffer(cert.data(), cert.size()));
      ctx.use_private_key(boost::asio::buffer(key.data(), key.size()), boost::asio::ssl::context::pem);
    }
  });
  return config;
}

class RestKubeClient final : public KubeClient {
 public:
  RestKubeClient(const KubeConfig& config, const RestOptions& options, Clock& clock)
      : config_(config), clock_(clock), limiter_(options.qps, options.burst, clock),
        lift_under_flow_control_(options.lift_under_flow_control), on_limit_(options.on_limit),
        max_throttled_retries_(options.max_throttled_retries),
        bookmarked_watch_silence_(options.bookmarked_watch_silence),
        client_(config.server, ClientConfig(config, options.request_timeout)) {
    if (on_limit_) on_limit_(options.qps);
  }

  StatusOr<Json> Get(const ResourceType& type, const std::string& ns, const std::string& name) override {
    return Call(http::methods::GET, type.ObjectPath(ns, name), {}, nullptr);
  }

  StatusOr<Json> List(const ResourceType& type, const std::string& ns, const ListOptions& options) override {
    std::vector<std::pair<std::string, std::string>> query;
    if (!options.label_selector.empty()) query.emplace_back("labelSelector", options.label_selector);
    if (!options.field_selector.empty()) query.emplace_back("fieldSelector", options.field_selector);
    if (options.limit > 0) query.emplace_back("limit", std::to_string(options.limit));
    if (!options.continue_.empty()) query.emplace_back("continue", options.continue_);
    return Call(http::methods::GET, type.CollectionPath(ns), query, nullptr);
  }

  StatusOr<Json> Create(const ResourceType& type, const std::string& ns, const Json& object) override {
    return Call(http::methods::POST, type.CollectionPath(ns), {}, &object, "application/json", /*creating=*/true);
  }

  StatusOr<Json> Update(const ResourceType& type, const std::string& ns, const Json& object) override {
    return Call(http::methods::PUT, type.ObjectPath(ns, Name(object)), {}, &object);
  }

  StatusOr<Json> UpdateStatus(const ResourceType& type, const std::string& ns, const Json& object) override {
    return Call(http::methods::PUT, type.ObjectPath(ns, Name(object), "status"), {}, &object);
  }

  StatusOr<Json> MergePatch(const ResourceType& type, const std::string& ns, const std::string& name,
                            const Json& patch) override {
    return Call(http::methods::PATCH, type.ObjectPath(ns, name), {}, &patch, "application/merge-patch+json");
  }

  Status Delete(const ResourceType& type, const std::string& ns, const std::string& name) override {
    const Json options = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"propagationPolicy", "Background"}};
    return Call(http::methods::DEL, type.ObjectPath(ns, name), {}, &options).status();
  }

  Status DeleteUid(const ResourceType& type, const std::string& ns, const std::string& name,
                   const std::string& uid) override {
    const Json options = {{"kind", "DeleteOptions"},
                          {"apiVersion", "v1"},
                          {"propagationPolicy", "Background"},
                          {"preconditions", {{"uid", uid}}}};
    return Call(http::methods::DEL, type.ObjectPath(ns, name), {}, &options).status();
  }

  Status Watch(const ResourceType& type, const std::string& ns, const WatchOptions& options,
               const std::function<void(WatchEvent)>& on_event, const std::atomic<bool>& stop) override {
    std::vector<std::pair<std::string, std::string>> query = {
        {"watch", "true"}, {"timeoutSeconds", std::to_string(options.timeout_seconds)}};
    if (!options.resource_version.empty()) query.emplace_back("resourceVersion", options.resource_version);
    if (options.bookmarks) query.emplace_back("allowWatchBookmarks", "true");
    if (!options.label_selector.empty()) query.emplace_back("labelSelector", options.label_selector);
    if (!options.field_selector.empty()) query.emplace_back("fieldSelector", options.field_selector);
    const Duration ends = std::chrono::seconds(options.timeout_seconds) + kWatchSlack;
    http_client watcher(config_.server,
                        ClientConfig(config_, options.bookmarks ? std::min(ends, bookmarked_watch_silence_) : ends));
    pplx::cancellation_token_source cancel;
    // A read blocked on a quiet watch ends when the caller stops us.
    std::atomic<bool> done{false};
    ClockThread stopper = clock_.StartThread("watch stopper", [&] {
      while (!done.load()) {
        if (stop.load()) {
          cancel.cancel();
          return;
        }
        clock_.SleepFor(kStopCheck);
      }
    });
    struct Join {
      std::atomic<bool>& done;
      ClockThread& t;
      ~Join() {
        done = true;
        t.Join();
      }
    } join{done, stopper};
    limiter_.Acquire();
    try {
      http::http_response response = watcher.request(Request(http::methods::GET, type.CollectionPath(ns), query,
                                                             nullptr, "application/json"),
                                                     cancel.get_token())
                                         .get();
      NoteFlowControl(response);
      if (response.status_code() != http::status_codes::OK) {
        const std::string body = response.extract_utf8string(true).get();
        return FromHttp(response.status_code(), Json::parse(body, nullptr, false), false);
      }
      auto stream = response.body().streambuf();
      WatchDecoder decoder;
      std::vector<char> buffer(64 * 1024);
      for (;;) {
        // getn waits for as many bytes as asked: ask for what is there, or one.
        const size_t want = std::clamp<size_t>(stream.in_avail(), 1, buffer.size());
        const size_t got = stream.getn(reinterpret_cast<uint8_t*>(buffer.data()), want).get();
        if (got == 0) return Status::Ok();  // the server ended the watch
        EDGETRAIN_RETURN_IF_ERROR(decoder.Feed(std::string_view(buffer.data(), got), on_event));
      }
    } catch (const pplx::task_canceled&) {
      return CancelledError("the watch was stopped");
    } catch (const std::exception& e) {
      if (stop.load()) return CancelledError("the watch was stopped");
      return UnavailableError(std::string("watch of ") + type.plural + ": " + e.what());
    }
  }

 private:
  static std::string Name(const Json& object) { return object["metadata"]["name"].get<std::string>(); }

  // The token as its file now holds it, read again each kTokenReread, as
  // client-go does: the kubelet rotates a pod's bound token before it
  // expires. What was read last stands while the file cannot be read.
  std::string Token() const {
    if (config_.token_file.empty()) return config_.token;
    std::lock_guard lock(token_mu_);
    const TimePoint now = clock_.Now();
    if (!token_read_ || now - *token_read_ >= kTokenReread) {
      if (StatusOr<std::string> read = ReadTokenFile(config_.token_file); read.ok() && !read->empty()) token_ = *read;
      token_read_ = now;
    }
    return token_;
  }

  http::http_request Request(const http::method& method, const std::string& path,
                             const std::vector<std::pair<std::string, std::string>>& query, const Json* body,
                             const std::string& content_type) const {
    web::uri_builder uri(path);
    for (const auto& [key, value] : query) uri.append_query(key, value);
    http::http_request request(method);
    request.set_request_uri(uri.to_uri());
    request.headers().add("Accept", "application/json");
    if (const std::string token = Token(); !token.empty()) request.headers().add("Authorization", "Bearer " + token);
    if (body) request.set_body(body->dump(), content_type);
    return request;
  }

  StatusOr<Json> Call(const http::method& method, const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& query, const Json* body,
                      const std::string& content_type = "application/json", bool creating = false) {
    for (int retries = 0;; ++retries) {
      limiter_.Acquire();
      try {
        http::http_response response = client_.request(Request(method, path, query, body, content_type)).get();
        NoteFlowControl(response);
        const std::string text = response.extract_utf8string(true).get();
        Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
        const int status = response.status_code();
        if (status >= 200 && status < 300) {
          if (json.is_discarded()) return UnavailableError(method + " " + path + ": the answer is not JSON");
          return json;
        }
        // A 429 was not carried out, whatever the verb: asking again is safe.
        if (status == http::status_codes::TooManyRequests && retries < max_throttled_retries_) {
          clock_.SleepFor(std::chrono::seconds(RetryAfterSeconds(response.headers())));
          continue;
        }
        return FromHttp(status, json.is_discarded() ? Json() : json, creating);
      } catch (const std::exception& e) {
        return UnavailableError(method + " " + path + ": " + e.what());
      }
    }
  }

  void NoteFlowControl(const http::http_response& response) {
    if (!lift_under_flow_control_ || limiter_.lifted() || !response.headers().has(kFlowSchemaHeader)) return;
    if (limiter_.Lift() && on_limit_) on_limit_(0);
  }

  const KubeConfig config_;
  Clock& clock_;
  mutable std::mutex token_mu_;
  mutable std::string token_ = config_.token;        // guarded by token_mu_
  mutable std::optional<TimePoint> token_read_;      // guarded by token_mu_: when its file was last read
  RateLimiter limiter_;
  const bool lift_under_flow_control_;
  const std::function<void(double)> on_limit_;
  const int max_throttled_retries_;
  const Duration bookmarked_watch_silence_;
  http_client client_;
};

}  // namespace

StatusOr<std::unique_ptr<KubeClient>> MakeRestKubeClient(const KubeConfig& config, const RestOptions& options,
                                                         Clock& clock) {
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return InvalidArgumentError(config.source + ": server \"" + config.server + "\" is not an http(s) URL");
  }
  try {
    return std::unique_ptr<KubeClient>(std::make_unique<RestKubeClient>(config, options, clock));
  } catch (const std::exception& e) {
    return InvalidArgumentError(config.source + ": " + e.what());
  }
}

}  // namespace edgetrain::kube
