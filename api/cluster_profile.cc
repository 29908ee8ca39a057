#include "api/cluster_profile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "api/bounded_read.h"
#include "api/embedded_text.h"
#include "api/structural_schema.h"
#include "api/yaml_json.h"
#include "api/yaml_scalars.h"
#include "core/bandwidth_trace.h"
#include "core/stream_rate.h"
#include "core/duration_text.h"
#include "core/number_text.h"
#include "core/quantity.h"
#include "core/utf8.h"

namespace edgetrain::api {
namespace {

namespace fs = std::filesystem;

// The least a link's trace may peak at: 10 kbit/s.
constexpr double kLeastPeakMbps = 0.01;
using Json = nlohmann::json;

StatusOr<Json> ProfileSchema() {
  static const StatusOr<Json> schema = []() -> StatusOr<Json> {
    EDGETRAIN_ASSIGN_OR_RETURN(auto docs, ParseYamlDocuments(kClusterProfileSchemaText, "cluster-profile.schema.yaml"));
    return docs.at(0);
  }();
  return schema;
}

// A trace a profile names, read now: a missing one is the profile's error,
// not a worker's surprise half-way through a run. `where` is the field.
struct TraceFile {
  std::string path;  // absolute
  std::string text;
};
StatusOr<TraceFile> ReadTrace(const fs::path& base, const std::string& named, const std::string& where) {
  fs::path trace = named;
  if (trace.is_relative()) trace = base / trace;
  // The overload that says why rather than throws: a name too long, or a
  // folder on the way that cannot be looked into, had ended the command
  // (std::terminate) unsaid (found in review).
  std::error_code canonical_ec;
  const fs::path canonical = fs::weakly_canonical(trace, canonical_ec);
  if (canonical_ec) return InvalidArgumentError(where + ": " + trace.string() + ": " + canonical_ec.message());
  TraceFile file{canonical.string(), ""};
  // Its path goes to a worker in the run's plan, which is JSON.
  EDGETRAIN_RETURN_IF_ERROR(CheckUtf8Path(file.path, where));
  // A folder opens, and read nothing: it was called an empty trace (a user's trial).
  if (std::error_code ec; fs::is_directory(file.path, ec)) {
    return InvalidArgumentError(where + ": " + file.path + " is a folder, not a trace file");
  }
  std::ifstream in(file.path);
  if (!in) {
    // Why, as the system says it: missing, or not readable (a user's trial).
    // A relative path named where it was looked for: a profile moved to
    // another folder read its traces from beside it (another).
    const std::string why = std::strerror(errno);
    return NotFoundError(where + ": cannot read " + file.path + " (" + why + ")" +
                         (fs::path(named).is_relative() ? "; \"" + named + "\" is read from the profile's folder, " +
                                                              base.string()
                                                        : std::string()));
  }
  std::optional<std::string> text = ReadAtMost(in, kMostTraceBytes);
  if (!text) {
    return InvalidArgumentError(where + ": " + file.path + " holds more than " +
                                std::to_string(kMostTraceBytes >> 20) + " MiB, more than a day of readings every 10 ms "
                                "(is it the trace meant?)");
  }
  file.text = *std::move(text);
  return file;
}

// A node's compute changes, read in order: the first fault ends them (those
// after it are judged against it).
Status ReadSlowdownChanges(const Json& n, const std::string& where, NodeProfile& node) {
  const Json changes = n["compute"].value("changes", Json::array());
  for (size_t c = 0; c < changes.size(); ++c) {
    const std::string at_field = where + ".compute.changes[" + std::to_string(c) + "].at";
    auto at = ParseDuration(changes[c]["at"].get<std::string>());
    if (!at.ok()) return at.status().WithContext(at_field);
    // The planner, placement and the node emulator read compute.slowdown:
    // a change at the start would have them plan for a device it is not.
    if (*at <= Duration::zero()) {
      return InvalidArgumentError(at_field + ": a change at " + changes[c]["at"].get<std::string>() +
                                  " is the node's slowdown from the start: give it as compute.slowdown");
    }
    if (!node.slowdown_changes.empty() && ToSeconds(*at) <= node.slowdown_changes.back().at_s) {
      return InvalidArgumentError(at_field + ": " + changes[c]["at"].get<std::string>() +
                                  " is not after the change before it; list the changes in the order of their times");
    }
    // A change to the slowdown the node already has is no change: most
    // likely a slip in the profile, and the run would show none.
    const double slowdown = changes[c]["slowdown"].get<double>();
    const double was = node.slowdown_changes.empty() ? node.slowdown : node.slowdown_changes.back().slowdown;
    if (slowdown == was) {
      return InvalidArgumentError(where + ".compute.changes[" + std::to_string(c) + "].slowdown: " +
                                  changes[c]["slowdown"].dump() + " is the slowdown the node already has then: " +
                                  "a change must change it");
    }
    node.slowdown_changes.push_back({ToSeconds(*at), slowdown});
  }
  return Status::Ok();
}

// A node's link: its trace read, scaled and shifted as the agents will.
Status ReadLink(const Json& l, const fs::path& base, const std::string& where, NodeProfile& node) {
  auto offset = ParseDuration(l["offset"].get<std::string>());
  if (!offset.ok()) return offset.status().WithContext(where + ".link.offset");
  EDGETRAIN_ASSIGN_OR_RETURN(TraceFile trace, ReadTrace(base, l["trace"].get<std::string>(), where + ".link.trace"));
  node.link = LinkSpec{trace.path, ToSeconds(*offset), l["scale"].get<double>()};
  auto parsed = BandwidthTrace::Parse(trace.text, trace.path);
  if (!parsed.ok()) return parsed.status().WithContext(where + ".link.trace");
  const BandwidthTrace scaled_trace = parsed->Scaled(node.link->scale);
  // As a stream's all-zero rate is refused: a team with such a link
  // trained nothing for its whole budget and exited 0 (a new user's trial).
  if (!(scaled_trace.PeakMbps() > 0)) {
    return InvalidArgumentError(where + ".link.trace: " + trace.path +
                                " is 0 Mbit/s throughout, so the node's link would never carry a byte; "
                                "a link that is out for a while has 0 in some of its rows");
  }
  // A trace of 1e-9 Mbit/s was taken, and plans predicted 2.4e12 ms a
  // step (a user's trial): likely kbit/s or bit/s written as Mbit/s.
  // The trace's own peak is said beside the scale, not the product: "peaks
  // at 0.001 Mbit/s times link.scale 0.0001" was of a trace peaking at 10.
  char peak[32], scale[32], product[32];
  std::snprintf(peak, sizeof peak, "%.3g", parsed->PeakMbps());
  std::snprintf(scale, sizeof scale, "%g", node.link->scale);
  std::snprintf(product, sizeof product, "%.3g", scaled_trace.PeakMbps());
  const bool scaled = node.link->scale != 1;
  const std::string peaks =
      trace.path + " peaks at " + peak + " Mbit/s" +
      (scaled ? " times link.scale " + std::string(scale) + ", " + product + " Mbit/s" : std::string());
  if (scaled_trace.PeakMbps() < kLeastPeakMbps) {
    return InvalidArgumentError(where + ".link.trace: " + peaks +
                                ": no link is that slow but in an outage, which is a row of 0; its rates are in "
                                "Mbit/s (10 kbit/s is 0.01)" +
                                (scaled ? ", and link.scale multiplies them" : ""));
  }
  // As a trace's row is: a scale of 1e300 passed, printed a link of 301
  // digits in plans and failed --links netns' tc with exit 1 (a user's trial).
  if (scaled_trace.PeakMbps() > BandwidthTrace::kMostMbps) {
    return InvalidArgumentError(where + ".link.scale: " + peaks + ", above the 1000000 Mbit/s a link may be");
  }
  node.link->mean_mbps = scaled_trace.MeanMbps();
  // It carries somewhere in a period (its peak is above 0): walked segment
  // by segment from the run's start, the first that carries ends this.
  const BandwidthTrace seen = scaled_trace.Shifted(node.link->offset_s);
  for (double t = 0; seen.MbpsAt(t) <= 0;) {
    t = seen.SegmentAt(t).until;
    node.link->silent_until_s = t;
  }
  return Status::Ok();
}

// A node's own stream of samples.
Status ReadStream(const Json& s, const fs::path& base, const std::string& where, NodeProfile& node) {
  if (s.contains("ratePerSecond") == s.contains("rateTrace")) {
    return InvalidArgumentError(where + ".stream: give either ratePerSecond or rateTrace");
  }
  if (s.contains("rateTrace")) {
    EDGETRAIN_ASSIGN_OR_RETURN(TraceFile trace,
                               ReadTrace(base, s["rateTrace"].get<std::string>(), where + ".stream.rateTrace"));
    node.stream = StreamSource{0, trace.path, 0};
    auto parsed = StreamRate::Parse(trace.text, trace.path);
    if (!parsed.ok()) return parsed.status().WithContext(where + ".stream.rateTrace");
  } else {
    node.stream = StreamSource{s["ratePerSecond"].get<double>(), "", 0};
  }
  return Status::Ok();
}

// A node's quantities, int-or-string as a Node's (QuantityText: a plain
// number of memory is bytes, a user's 4294967296 was refused as not a
// string), read here as placement and the node emulator read them, so that
// validate and run refuse what plan would (a new user's "cpu: two" passed
// both).
Status CheckCpu(const std::string& text, const std::string& where) {
  StatusOr<int64_t> cpu = ParseQuantityMillis(text);
  if (cpu.ok() && *cpu > 0) return Status::Ok();
  return InvalidArgumentError(where + ".cpu: " + (cpu.ok() ? "\"" + text + "\" is no CPU" : cpu.status().message()) +
                              "; a Kubernetes quantity of CPU above 0, such as 4 or 1500m");
}
Status CheckMemory(const std::string& text, const std::string& where) {
  StatusOr<int64_t> memory = ParseQuantityUnits(text);
  if (memory.ok() && *memory > 0) return Status::Ok();
  return InvalidArgumentError(where + ".memory: " +
                              (memory.ok() ? "\"" + text + "\" is no memory" : memory.status().message()) +
                              "; a Kubernetes quantity of bytes above 0, such as 8Gi or 512Mi");
}

// A device draws its idle watts whatever else it does: idle above computing
// or communicating is no device's. Most often a power given in part, the
// rest the 15 W device's defaults: a new user's computeWatts 3 was charged
// 5 W idle, 7 W communicating, unsaid.
Status CheckPower(const PowerProfile& power, const std::string& where) {
  for (const auto& [field, watts] : {std::pair{"computeWatts", power.compute_watts},
                                     std::pair{"communicateWatts", power.communicate_watts}}) {
    if (power.idle_watts <= watts) continue;
    return InvalidArgumentError(where + ".power: idleWatts " + PlainNumber(power.idle_watts) + " is above " + field +
                                " " + PlainNumber(watts) + ": a device draws at least its idle power in every "
                                "state; give all three, in watts (one left out takes a 15 W device's: compute 15, "
                                "communicate 7, idle 5)");
  }
  return Status::Ok();
}

// Of a node the schema faulted, the faults of its fields the schema did not:
// its quantities and its slowdown's changes, which were said only once the
// schema's faults were mended (a new user's trial). Its link and stream,
// whose files are read, wait for a node the schema passes.
std::string FaultsBesideTheSchemas(const Json& n, const std::string& where,
                                   const std::function<bool(const std::string&)>& faulted) {
  std::string faults;
  auto note = [&](const Status& s) {
    if (!s.ok()) faults += (faults.empty() ? "" : "\n") + s.message();
  };
  if (n.contains("cpu") && !faulted("cpu")) note(CheckCpu(QuantityText(n["cpu"]), where));
  if (n.contains("memory") && !faulted("memory") && !QuantityText(n["memory"]).empty()) {
    note(CheckMemory(QuantityText(n["memory"]), where));
  }
  if (n.contains("compute") && !faulted("compute")) {
    NodeProfile scratch;
    const Json& compute = n["compute"];
    scratch.slowdown = compute.contains("slowdown") && compute["slowdown"].is_number()
                           ? compute["slowdown"].get<double>() : 1;
    note(ReadSlowdownChanges(n, where, scratch));
  }
  return faults;
}

// One node of a profile, past the schema: its durations, quantities and
// trace files read as placement, the planner and the node emulator read them.
// `where`: the file, its line and the node's field ("n.yaml:12: spec.nodes[2]").
// Every fault of the node, one a line: its cpu and a missing trace were said
// one at a time (a user's trial).
StatusOr<NodeProfile> ReadNode(const Json& n, const fs::path& base, const std::string& where) {
  NodeProfile node;
  std::string faults;
  StatusCode code = StatusCode::kOk;  // the first fault's
  auto note = [&](const Status& s) {
    if (s.ok()) return;
    if (faults.empty()) code = s.code();
    faults += (faults.empty() ? "" : "\n") + s.message();
  };
  node.name = n["name"].get<std::string>();
  node.slowdown = n["compute"]["slowdown"].get<double>();
  note(ReadSlowdownChanges(n, where, node));
  node.memory = QuantityText(n["memory"]);
  node.arch = n.value("arch", "");
  node.transient = n["transient"].get<bool>();
  node.power = {n["power"]["computeWatts"].get<double>(), n["power"]["communicateWatts"].get<double>(),
                n["power"]["idleWatts"].get<double>()};
  note(CheckPower(node.power, where));
  node.cpu = QuantityText(n["cpu"]);
  note(CheckCpu(node.cpu, where));
  if (!node.memory.empty()) note(CheckMemory(node.memory, where));  // none: not limited
  node.pods = n["pods"].get<int64_t>();
  if (n.contains("labels")) node.labels = n["labels"].get<std::map<std::string, std::string>>();
  for (const Json& t : n.value("taints", Json::array())) {
    node.taints.push_back({t["key"].get<std::string>(), t.value("value", ""), t["effect"].get<std::string>()});
  }
  if (n.contains("link")) note(ReadLink(n["link"], base, where, node));
  if (n.contains("stream")) note(ReadStream(n["stream"], base, where, node));
  if (!faults.empty()) return Status(code, faults);
  return node;
}

}  // namespace

StatusOr<ClusterProfile> ParseClusterProfile(std::string_view yaml, const std::string& path) {
  std::vector<FieldLines> lines;
  EDGETRAIN_ASSIGN_OR_RETURN(auto docs, ParseYamlDocuments(yaml, path, &lines));
  DropEmptyDocuments(docs, lines);
  if (docs.size() != 1) {
    return InvalidArgumentError(path + ": expected one ClusterProfile, found " + std::to_string(docs.size()) + " documents");
  }
  Json doc = docs[0];
  const FieldLines* written = &lines[0];  // where its fields were written
  // Another kind of document (a TrainingJob given as --nodes, say): its
  // every field would be unknown here, which says less than its kind.
  if (doc.is_object() && doc.contains("kind") && doc["kind"].is_string() && doc["kind"] != "ClusterProfile") {
    return InvalidArgumentError(path + " is a " + doc["kind"].get<std::string>() +
                                ", not a ClusterProfile (docs/cluster-profiles.md)");
  }
  EDGETRAIN_ASSIGN_OR_RETURN(Json schema, ProfileSchema());
  // A rate written in the link itself (`link: {mbps: 2}`) reads only as an
  // unknown field and a missing trace (a user's trial): how to give one is said.
  // (Looked at before the schema has said what the document is: any shape.)
  bool rate_in_link = false;
  const Json* spec = doc.is_object() && doc.contains("spec") ? &doc["spec"] : nullptr;
  const Json* nodes = spec && spec->is_object() && spec->contains("nodes") ? &(*spec)["nodes"] : nullptr;
  for (const Json& n : nodes && nodes->is_array() ? *nodes : Json::array()) {
    const Json* link = n.is_object() && n.contains("link") ? &n["link"] : nullptr;
    for (const char* key : {"mbps", "rate", "rateMbps", "bandwidth", "bandwidthMbps", "speed"}) {
      rate_in_link = rate_in_link || (link && link->is_object() && link->contains(key));
    }
  }
  std::vector<FieldError> errors = ValidateAndDefault(schema, doc, "");
  // A node the schema faulted is not read further; the others are, so that
  // every fault is said at once (a node's cpu of 0 and a missing trace file
  // were said only once the schema's faults elsewhere were mended: a user's
  // trial). A fault outside the nodes leaves them unread.
  auto faulted = [&](const std::string& item) {
    return std::any_of(errors.begin(), errors.end(), [&](const FieldError& e) {
      return e.path == item || e.path.starts_with(item + ".");
    });
  };
  // (The document may be of any shape here: the schema's faults are not
  // yet returned. A fuzzer's "xa.:n n" was no object.)
  const bool nodes_readable =
      doc.is_object() && doc.contains("spec") && doc["spec"].is_object() && doc["spec"].contains("nodes") &&
      doc["spec"]["nodes"].is_array() && std::all_of(errors.begin(), errors.end(), [](const FieldError& e) {
        return e.path.starts_with("spec.nodes[");
      });

  ClusterProfile profile;
  const fs::path base = fs::absolute(fs::path(path)).parent_path();
  // Every node's faults, as the schema's are all said at once: a profile
  // with two missing traces told of one, and then of the other (a new
  // user's trial).
  Status refused = Status::Ok();
  std::string refusals;
  for (size_t i = 0; nodes_readable && i < doc["spec"]["nodes"].size(); ++i) {
    const std::string item = "spec.nodes[" + std::to_string(i) + "]";
    // With its line, as the schema's errors say theirs.
    const std::string line = LinePrefix(written, path, item);
    const std::string where = (line.empty() ? path + ": " : line) + item;
    if (faulted(item)) {
      const std::string beside = FaultsBesideTheSchemas(
          doc["spec"]["nodes"][i], where, [&](const std::string& field) { return faulted(item + "." + field); });
      if (!beside.empty()) refusals += (refusals.empty() ? "" : "\n") + beside;
      continue;
    }
    StatusOr<NodeProfile> node = ReadNode(doc["spec"]["nodes"][i], base, where);
    if (node.ok()) {
      profile.nodes.push_back(std::move(*node));
      continue;
    }
    if (refused.ok()) refused = node.status();
    refusals += (refusals.empty() ? "" : "\n") + node.status().message();
  }
  if (!errors.empty()) {
    Status invalid = ToStatus(errors, written, path).WithContext(path + " is not a valid ClusterProfile");
    std::string message = invalid.message() + (refusals.empty() ? "" : "\n" + refusals);
    if (rate_in_link) {
      message += "; a link's rate comes from a trace file (link.trace), a steady one from a file of two lines, "
                 "\"seconds,mbps\" and \"0,2\" for 2 Mbit/s (docs/cluster-profiles.md)";
    }
    return Status(invalid.code(), message);
  }
  if (!refused.ok()) return Status(refused.code(), refusals);
  profile.name = doc["metadata"]["name"].get<std::string>();
  return profile;
}

}  // namespace edgetrain::api
