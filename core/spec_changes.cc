#include "core/spec_changes.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/number_text.h"

namespace edgetrain {
namespace {

using Json = nlohmann::json;

// A value as a person reads it in the manifest: text without its quotes,
// unless the other side is not text ("0.1" -> 0.1 would read as no change).
std::string Shown(const Json* value, const Json* other) {
  if (!value) return "(none)";
  const bool quoted = other && other->type() != value->type();
  return value->is_string() && !quoted ? value->get<std::string>() : value->dump();
}

// An object added or taken away is said field by field, as a changed one is.
void Compare(const Json* before, const Json* after, const std::string& path, std::vector<std::string>& out) {
  const bool objects = (!before || before->is_object()) && (!after || after->is_object());
  if (objects && (before || after)) {
    static const Json kNone = Json::object();
    const Json& b = before ? *before : kNone;
    const Json& a = after ? *after : kNone;
    for (const auto& [key, value] : a.items()) {
      const auto was = b.find(key);
      Compare(was == b.end() ? nullptr : &*was, &value, path + "." + key, out);
    }
    for (const auto& [key, value] : b.items()) {
      if (!a.contains(key)) Compare(&value, nullptr, path + "." + key, out);
    }
    return;
  }
  if (before && after && *before == *after) return;
  out.push_back(path + ": " + Shown(before, after) + " -> " + Shown(after, before));
}

// Every change between two JSON documents, under `root`, sorted by path.
std::vector<std::string> Changes(std::string_view before, std::string_view after, const std::string& root) {
  if (before.empty() || after.empty()) return {};
  const Json b = Json::parse(before, nullptr, /*allow_exceptions=*/false);
  const Json a = Json::parse(after, nullptr, /*allow_exceptions=*/false);
  if (b.is_discarded() || a.is_discarded()) return {};
  std::vector<std::string> out;
  Compare(&b, &a, root, out);
  std::sort(out.begin(), out.end());
  return out;
}

// A trace by its file's name, as the profile names it (the folder it was
// read from is this machine's, not the device's), with where it starts.
std::string TraceFrom(const std::string& path, double offset_s) {
  const std::string from = offset_s != 0 ? " from " + PlainNumber(offset_s) + " s" : "";
  return std::filesystem::path(path).filename().string() + from;
}

}  // namespace

std::vector<std::string> SpecChanges(std::string_view before, std::string_view after) {
  return Changes(before, after, "spec");
}

std::string DevicesRecord(const std::vector<WorkerSlot>& devices) {
  Json record = Json::object();
  for (const WorkerSlot& slot : devices) {
    Json device = {{"node", slot.node}, {"slowdown", PlainNumber(slot.slowdown)}};
    device["link"] = slot.link
                         ? TraceFrom(slot.link->trace_path, slot.link->offset_s) + " x" + PlainNumber(slot.link->scale)
                         : "unshaped";
    if (!slot.slowdown_changes.empty()) {
      std::string changes;
      for (const SlowdownChange& c : slot.slowdown_changes) {
        changes += (changes.empty() ? "" : ", ") + PlainNumber(c.slowdown) + " from " + PlainNumber(c.at_s) + " s";
      }
      device["computeChanges"] = changes;
    }
    device["power"] = PlainNumber(slot.power.compute_watts) + "/" + PlainNumber(slot.power.communicate_watts) + "/" +
                      PlainNumber(slot.power.idle_watts) + " W";
    if (slot.stream) {
      device["stream"] = slot.stream->trace_path.empty() ? PlainNumber(slot.stream->per_second) + " samples/s"
                                                         : TraceFrom(slot.stream->trace_path, slot.stream->offset_s);
    }
    record["rank " + std::to_string(slot.rank)] = device;
  }
  return record.dump();
}

std::vector<std::string> DeviceChanges(std::string_view before, std::string_view after) {
  return Changes(before, after, "devices");
}

}  // namespace edgetrain
