#include "operator/kube/kube_client.h"

namespace edgetrain::kube {

const char* NameOf(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded: return "ADDED";
    case WatchEventType::kModified: return "MODIFIED";
    case WatchEventType::kDeleted: return "DELETED";
    case WatchEventType::kBookmark: return "BOOKMARK";
    case WatchEventType::kError: return "ERROR";
  }
  return "?";
}

Status WatchDecoder::Feed(std::string_view bytes, const std::function<void(WatchEvent)>& on_event) {
  partial_.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string_view line(partial_.data() + start, nl - start);
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
    Json event = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (event.is_discarded() || !event.is_object() || !event.contains("type") || !event["type"].is_string()) {
      partial_.erase(0, nl + 1);
      return InvalidArgumentError("watch: not an event: " + std::string(line.substr(0, 200)));
    }
    const std::string type = event["type"].get<std::string>();
    WatchEvent e;
    if (type == "ADDED") e.type = WatchEventType::kAdded;
    else if (type == "MODIFIED") e.type = WatchEventType::kModified;
    else if (type == "DELETED") e.type = WatchEventType::kDeleted;
    else if (type == "BOOKMARK") e.type = WatchEventType::kBookmark;
    else if (type == "ERROR") e.type = WatchEventType::kError;
    else {
      partial_.erase(0, nl + 1);  // as for any malformed event: the next one is read afresh
      return InvalidArgumentError("watch: unknown event type \"" + type + "\"");
    }
    e.object = std::move(event["object"]);
    on_event(std::move(e));
  }
  partial_.erase(0, start);
  return Status::Ok();
}

Status FromHttp(int http_status, const Json& body, bool creating) {
  const std::string reason = body.is_object() ? body.value("reason", "") : "";
  std::string message = body.is_object() ? body.value("message", "") : "";
  if (message.empty()) message = "HTTP " + std::to_string(http_status) + (reason.empty() ? "" : " " + reason);
  switch (http_status) {
    case 404: return NotFoundError(message);
    case 409:
      return creating || reason == "AlreadyExists" ? Status(StatusCode::kAlreadyExists, message) : AbortedError(message);
    case 410: return Status(StatusCode::kOutOfRange, message);
    case 400:
    case 422: return InvalidArgumentError(message);
    case 401:
    case 403: return FailedPreconditionError(message);
    default: return UnavailableError(message);
  }
}

}  // namespace edgetrain::kube
