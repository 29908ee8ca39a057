#include "api/trainingjob.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "api/crd.h"
#include "api/cross_field_rules.h"
#include "api/structural_schema.h"
#include "api/yaml_json.h"
#include "core/edit_distance.h"
#include "core/model_shape.h"
#include "core/node_view.h"
#include "core/object_names.h"
#include "core/parallelism_choice.h"
#include "core/quantity.h"
#include "core/quoted_text.h"
#include "core/utf8.h"

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

// metadata is validated by the API server itself, not by the CRD's schema.
void CheckMetadata(const Json& metadata, std::vector<FieldError>& errors) {
  if (!metadata.is_object()) {
    errors.push_back({"metadata", "required field is missing (it needs at least a name)"});
    return;
  }
  if (metadata.contains("name") && !metadata["name"].is_null() && !metadata["name"].is_string()) {
    // `name: 123` or `name: no`, typed by YAML: there, not missing, as it was said to be (a user's trial).
    const Json& name = metadata["name"];
    errors.push_back({"metadata.name", name.is_primitive()
                                           ? "must be a string (got " + name.dump() + ": YAML reads an unquoted "
                                             "number, or yes, no, on or off, as one; quote the name)"
                                           : std::string("must be a string (got ") +
                                                 (name.is_object() ? "an object" : "a list") + ")"});
    return;
  }
  if (!metadata.contains("name") || !metadata["name"].is_string()) {
    errors.push_back({"metadata.name", metadata.contains("generateName")
                                           ? "required field is missing (generateName is not supported by edgetrain run)"
                                           : "required field is missing"});
    return;
  }
  // The API server refuses a field ObjectMeta has not (kubectl's strict
  // field validation), and a typo of one (`nmespace`) meant the job ran
  // elsewhere than written (a user's trial).
  static const std::vector<std::string> kObjectMeta = {
      "name", "generateName", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation",
      "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers", "ownerReferences",
      "managedFields", "selfLink"};
  for (const auto& [key, value] : metadata.items()) {
    if (std::find(kObjectMeta.begin(), kObjectMeta.end(), key) != kObjectMeta.end()) continue;
    const std::string nearest = Nearest(key, kObjectMeta);
    const std::string hint = nearest.empty() ? "" : " (did you mean \"" + nearest + "\"?)";
    errors.push_back({"metadata." + key, "unknown field" + hint});
  }
  // Pods and Services are named after the job: a DNS-1123 label leaves room for
  // "-worker-NNNN" within the 63 characters of a label.
  std::string name = metadata["name"].get<std::string>();
  if (name.size() > 52 || !IsDnsLabel(name)) {
    errors.push_back({"metadata.name", "must be lower-case letters, digits and '-', start and end with a "
                                       "letter or digit, at most 52 characters (got " + QuotedExcerpt(name) + ")"});
  }
}

// The pod template's requests and limits as the Pod API judges them, which the
// schema's pattern cannot: an amount past what placement counts in (9.2e15
// units), and a request above its limit. Either would have every pod refused
// after the job was placed.
void CheckResources(const Json& spec, std::vector<FieldError>& errors) {
  const Json resources = spec.value("/template/resources"_json_pointer, Json::object());
  std::map<std::string, std::pair<int64_t, std::string>> limits;  // name -> amount, as written
  for (const char* kind : {"limits", "requests"}) {
    const auto of_kind = resources.find(kind);
    if (of_kind == resources.end() || !of_kind->is_object()) continue;
    for (auto it = of_kind->begin(); it != of_kind->end(); ++it) {
      const std::string& name = it.key();
      const Json& value = it.value();
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      const std::string path = std::string("spec.template.resources.") + kind + "." + name;
      StatusOr<int64_t> amount = ParseQuantityMillis(text);
      // A name the Pod API does not take: unqualified names are its own. A
      // typo (cpux) was placed and its pods made, which a cluster's API
      // server refuses, the gang never starting (a new user's trial).
      static const std::vector<std::string> kPodResources = {"cpu", "memory", "ephemeral-storage"};
      if (!IsExtendedResource(name) && name.rfind("hugepages-", 0) != 0 &&
          std::find(kPodResources.begin(), kPodResources.end(), name) == kPodResources.end()) {
        const std::string nearest = Nearest(name, kPodResources);
        errors.push_back({path, "not a resource a pod asks for: cpu, memory, ephemeral-storage, hugepages-<size>, or "
                                "an extended resource by its qualified name, such as nvidia.com/gpu" +
                                    (nearest.empty() ? std::string() : " (did you mean \"" + nearest + "\"?)")});
        continue;
      }
      if (!amount.ok()) {
        errors.push_back({path, amount.status().message()});
      } else if (IsExtendedResource(name) && *amount % 1000 != 0) {
        errors.push_back({path, "must be a whole number: " + name + " is counted in whole units (got " + text + ")"});
      } else if (kind == std::string_view("limits")) {
        limits[name] = {*amount, text};
      } else if (auto limit = limits.find(name); IsExtendedResource(name) && limit == limits.end()) {
        // The Pod API overcommits no extended resource: it takes a GPU as a
        // limit (the request then defaults to it), or as both, equal.
        errors.push_back({path, "needs limits." + name + " too, equal to it: a GPU or other extended resource is "
                                "given as a limit (got a request of " + text + " alone)"});
      } else if (limit != limits.end() && IsExtendedResource(name) && *amount != limit->second.first) {
        errors.push_back({path, "must equal its limit, " + limit->second.second + " (got " + text + ")"});
      } else if (limit != limits.end() && *amount > limit->second.first) {
        errors.push_back({path, "must be no more than its limit, " + limit->second.second + " (got " + text + ")"});
      }
    }
  }
}

// A layout by hand in spec.parallelism.stages, judged as far as it can be
// before the spec is decoded (a mistyped one otherwise waited for the
// planner): its form, and its ranks against the job's workers; and, for mode
// pipeline, that every stage has one device (a group was trained as a hybrid
// while the run said pipeline: a new user's trial). --stages, for
// comparisons, may still give a pipeline job another shape. Its layers are
// judged once the spec is decoded, against a built-in model's
// (ParseTrainingJob), or once a user's module's are measured.
void CheckStageLayout(const Json& spec, std::vector<FieldError>& errors) {
  const std::string stages = spec.value("/parallelism/stages"_json_pointer, std::string(kPlannedStages));
  const bool pipeline = spec.value("/parallelism/mode"_json_pointer, std::string()) == "pipeline";
  if (pipeline && stages == "data-parallel") {
    errors.push_back({"spec.parallelism.stages", "data-parallel is one stage on every device, which mode pipeline "
                                                 "does not train (one device a stage); mode auto compares them"});
    return;
  }
  if (NamesAPlan(stages)) return;
  const int workers = spec.value("/parallelism/workers"_json_pointer, 1);
  StatusOr<std::vector<PipelineStage>> parsed = ParseStageLayout(stages, std::nullopt, workers);
  if (!parsed.ok()) {
    errors.push_back({"spec.parallelism.stages", parsed.status().message()});
    return;
  }
  for (size_t s = 0; pipeline && s < parsed->size(); ++s) {
    if ((*parsed)[s].devices.size() > 1) {
      errors.push_back({"spec.parallelism.stages", "stage " + std::to_string(s + 1) + " has " +
                                                       std::to_string((*parsed)[s].devices.size()) +
                                                       " devices, and mode pipeline gives each stage one; mode "
                                                       "hybrid lets a group of devices share a stage"});
      return;
    }
  }
}

}  // namespace

StatusOr<TrainingJobManifest> ParseTrainingJob(std::string_view yaml, const std::string& source) {
  std::vector<FieldLines> lines;
  EDGETRAIN_ASSIGN_OR_RETURN(auto documents, ParseYamlDocuments(yaml, source, &lines));
  DropEmptyDocuments(documents, lines);
  if (documents.empty()) {
    return InvalidArgumentError(source + ": the manifest is empty; expected a TrainingJob with apiVersion: " +
                                std::string(kApiVersion) + ", kind: TrainingJob, metadata.name and spec");
  }
  if (documents.size() > 1) {
    return InvalidArgumentError(source + ": expected one TrainingJob, found " + std::to_string(documents.size()) +
                                " documents");
  }
  Json& doc = documents[0];
  const FieldLines* written = &lines[0];  // where its fields were written
  if (!doc.is_object()) {
    // In YAML's words: a sequence is a list to the reader.
    return InvalidArgumentError(source + ": expected a mapping (a TrainingJob), not a " +
                                (doc.is_array() ? std::string("list") : std::string(doc.type_name())));
  }

  std::vector<FieldError> errors;
  if (doc.value("apiVersion", Json()) != kApiVersion) {
    errors.push_back({"apiVersion", "must be \"" + std::string(kApiVersion) + "\" (got " +
                                        (doc.contains("apiVersion") ? doc["apiVersion"].dump() : "nothing") + ")"});
  }
  if (doc.value("kind", Json()) != kKind) {
    // A cluster profile given as the job: say where it goes (a new user's trial).
    const bool profile = doc.value("kind", Json()) == "ClusterProfile";
    errors.push_back({"kind", "must be \"TrainingJob\" (got " + (doc.contains("kind") ? doc["kind"].dump() : "nothing") +
                                  ")" + (profile ? "; a ClusterProfile is given with --nodes, after the job" : "")});
  }
  CheckMetadata(doc.value("metadata", Json()), errors);
  if (!errors.empty()) return ToStatus(errors, written, source);

  EDGETRAIN_ASSIGN_OR_RETURN(Json schema, TrainingJobSchema());
  TrainingJobManifest manifest;
  manifest.raw = doc;
  manifest.object = doc;
  errors = ValidateAndDefault(schema, manifest.object, "");
  // Cross-field rules assume a well-typed object, as CEL does.
  if (errors.empty()) errors = CheckCrossFieldRules(manifest.object);
  if (errors.empty()) CheckResources(manifest.object["spec"], errors);
  if (errors.empty()) CheckStageLayout(manifest.object["spec"], errors);
  if (!errors.empty()) return ToStatus(errors, written, source);

  manifest.name = doc["metadata"]["name"].get<std::string>();
  manifest.namespace_ = doc["metadata"].value("namespace", "");
  EDGETRAIN_ASSIGN_OR_RETURN(manifest.spec, DecodeJobSpec(manifest.SpecJson()));
  // Each misfit with its line, all at once, as the schema's errors are.
  for (ModelMisfit& m : ModelMisfits(manifest.spec.model, InfoOf(manifest.spec.data))) {
    errors.push_back({std::move(m.field), std::move(m.message)});
  }
  // A layout by hand against a built-in model's layers, which the spec
  // tells: a layer past the model's, or one left out, had been valid until
  // the run had measured them (a user's trial).
  const std::string& stages = manifest.spec.parallelism.stages;
  if (const std::optional<int> layers = BuiltInLayerCount(manifest.spec.model); layers && !NamesAPlan(stages)) {
    Status judged = ParseStageLayout(stages, layers, manifest.spec.parallelism.workers).status();
    if (!judged.ok()) errors.push_back({"spec.parallelism.stages", judged.message()});
  }
  if (!errors.empty()) return ToStatus(errors, written, source);
  return manifest;
}

namespace {

Status ResolveUnder(TrainingJobManifest& job, const std::string& model_folder, const std::string& data_folder) {
  namespace fs = std::filesystem;
  Json& spec = job.object["spec"];
  std::vector<FieldError> errors;
  auto resolve = [&](const Json::json_pointer& at, const std::string& folder) {
    if (!spec.contains(at) || !spec[at].is_string()) return;
    const fs::path path = spec[at].get<std::string>();
    if (path.is_relative()) spec[at] = (fs::path(folder) / path).lexically_normal().string();
    // The manifest's text is UTF-8 (ParseTrainingJob checks it); the folder
    // it was joined to may not be, and the agents are handed it in JSON.
    std::string field = "spec" + at.to_string();
    std::replace(field.begin(), field.end(), '/', '.');
    if (Status utf8 = CheckUtf8Path(spec[at].get<std::string>(), field); !utf8.ok()) errors.push_back({"", utf8.message()});
  };
  resolve("/model/torchscript/path"_json_pointer, model_folder);
  resolve("/data/stream/directory"_json_pointer, data_folder);
  for (const char* split : {"train", "test"}) {
    for (const char* file : {"path", "features", "labels"}) {
      resolve(Json::json_pointer(std::string("/data/") + split + "/" + file), data_folder);
    }
  }
  if (!errors.empty()) return ToStatus(errors);
  // The spec is what the object says: decoded again, not edited beside it.
  EDGETRAIN_ASSIGN_OR_RETURN(job.spec, DecodeJobSpec(job.SpecJson()));
  return Status::Ok();
}

}  // namespace

Status ResolveFilePaths(TrainingJobManifest& job, const std::string& folder) {
  return ResolveUnder(job, folder, folder);
}

Status ResolveClusterPaths(TrainingJobManifest& job) {
  const bool in_config_map = job.object["spec"].contains("/model/torchscript/configMap"_json_pointer);
  return ResolveUnder(job, in_config_map ? kModelMountPath : kDataMountPath, kDataMountPath);
}

}  // namespace edgetrain::api
