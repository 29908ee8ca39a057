#include "api/capabilities.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>

#include "api/crd.h"
#include "api/structural_schema.h"
#include "api/trainingjob.h"

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// The manifest as written, at `path` ("spec.output.volume"): null when it
// did not write it.
const Json& Written(const Json& raw, const std::string& path) {
  static const Json absent;
  const Json* at = &raw;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const std::string key = path.substr(start, dot - start);
    if (!at->is_object() || !at->contains(key)) return absent;
    at = &(*at)[key];
    start = dot + 1;
  }
  return *at;
}

// Written, and not merely the CRD's default: a cluster's API server fills the
// defaults in before the operator reads a job, and every pipeline job got
// notes for a spec.sync and a partition its manifest never named (a new
// user's trial). An object written as its defaults is taken as not written.
// What the CRD fills an object at `path` written as {} with; null where the
// schema has no object there.
Json DefaultsAt(const std::string& path) {
  static const StatusOr<Json> schema = TrainingJobSchema();
  if (!schema.ok()) return nullptr;
  const Json* at = &*schema;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const std::string key = path.substr(start, dot - start);
    if (!at->contains("properties") || !(*at)["properties"].contains(key)) return nullptr;
    at = &(*at)["properties"][key];
    start = dot + 1;
  }
  Json defaults = Json::object();
  (void)ValidateAndDefault(*at, defaults, path);
  return defaults;
}

bool WrittenBeyondDefault(const Json& raw, const std::string& path) {
  const Json& written = Written(raw, path);
  if (written.is_null()) return false;
  if (!written.is_object()) return true;
  // Worked out once a path: the operator checks every job at every reconcile.
  static std::mutex mu;
  static std::map<std::string, Json> defaults;
  std::lock_guard lock(mu);
  auto it = defaults.find(path);
  if (it == defaults.end()) it = defaults.emplace(path, DefaultsAt(path)).first;
  return it->second.is_null() || written != it->second;
}

// The relative paths of a data set from files, and of a stream's folder: in
// a cluster, each is in spec.data.volume. A stream's folder was left out, and
// a team without the volume watched a folder no pod had, training on nothing
// for its whole budget (found in review).
std::vector<std::string> RelativeDataPaths(const JobSpec& spec) {
  std::vector<std::string> relative;
  if (spec.data.stream && spec.data.stream->directory && fs::path(*spec.data.stream->directory).is_relative()) {
    relative.push_back(*spec.data.stream->directory);
  }
  if (!spec.data.files) return relative;
  for (const DataFiles* split : {&spec.data.files->train, &spec.data.files->test}) {
    for (const std::string* path : {&split->path, &split->features, &split->labels}) {
      if (!path->empty() && fs::path(*path).is_relative()) relative.push_back(*path);
    }
  }
  return relative;
}

// A ConfigMap's keys are [-._a-zA-Z0-9]+, not "." or "..": a file name, never a folder's.
bool IsConfigMapKey(const std::string& key) {
  return !key.empty() && key != "." && key != ".." && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// Whether a relative path climbs out of the folder it is read from.
bool LeavesItsFolder(const std::string& path) {
  const fs::path normal = fs::path(path).lexically_normal();
  return normal.is_relative() && !normal.empty() && *normal.begin() == "..";
}

// Whether `path` is where a job's own files are mounted, or inside it.
// Whether `path` is `folder` or inside it.
bool Within(const std::string& path, const std::string& folder) {
  return path == folder || path.rfind(folder + "/", 0) == 0;
}

bool UnderFileMounts(const std::string& path) {
  return Within(path, kDataMountPath) || Within(path, kModelMountPath);
}

// Whether `path`, written as it is, names one folder: absolute, with no '.'
// or '..' step and no empty one. In the coordinator's pod it is a mount
// point: a relative one, or one that climbs, is no place the job chose.
bool IsPlainAbsolute(std::string path) {
  if (path.size() > 1 && path.back() == '/') path.pop_back();  // "/models/" is a folder's name too
  if (path.empty() || path[0] != '/') return false;
  for (const fs::path& step : fs::path(path).relative_path()) {
    if (step == "." || step == ".." || step.empty()) return false;
  }
  return path.find("//") == std::string::npos;
}

// Whether a volume mounted at `path` would hide what the agent's container
// needs: the root, the image's system folders, or the kernel's, and with
// them the agent's own mounts (its plan in /etc/edgetrain, its credentials
// under /var/run/secrets). A coordinator whose output was / or /etc failed
// to start again and again while the job showed Running (a security review).
bool OverSystemFolders(const std::string& path) {
  if (fs::path(path).lexically_normal() == "/") return true;
  // A folder that holds one of the agent's own mounts: /var, over the
  // credentials under /var/run, crash-looped the coordinator (a security review).
  for (const char* mount : {kDataMountPath, kModelMountPath, kPlanMountPath, kTlsMountPath}) {
    if (mount != path && Within(mount, path)) return true;  // a folder above it; /data itself is refused above
  }
  for (const char* folder : {"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/run", "/sbin",
                             "/sys", "/usr", "/var/run"}) {
    if (Within(path, folder)) return true;
  }
  return false;
}

// kRefuse: this version cannot do it yet (NotSupported). kInvalid: wrong
// where the job runs though valid for the API (a relative path with no
// volume to read it from in a cluster: InvalidSpec, the user's to mend; a
// user's trial read NotSupported as a limit of edgetrain's). kNote: said.
enum class Effect { kRefuse, kInvalid, kNote };

struct Capability {
  const char* field;
  Effect effect;
  std::vector<Runner> where;  // where the rule applies
  // Whether the job asks for it; `raw` is the manifest as written.
  std::function<bool(const JobSpec& spec, const Json& raw)> asks;
  std::string reason;
};

const std::vector<Runner> kEverywhere = {Runner::kLocal, Runner::kKubernetes, Runner::kPlanning};
const std::vector<Runner> kKubernetesOnly = {Runner::kKubernetes};
const std::vector<Runner> kLocalOnly = {Runner::kLocal};

auto WroteField(const char* path) {
  return [path](const JobSpec&, const Json& raw) { return !Written(raw, path).is_null(); };
}

const std::vector<Capability>& Capabilities() {
  static const std::vector<Capability> table = {
      // A user's own model and data. In a cluster the files a manifest names
      // relatively are in spec.data.volume, or a small model in a ConfigMap
      // (ResolveClusterPaths); the operator has an agent load the module to
      // learn its size before it places the team (docs/operator.md), and
      // edgetrain plan has one do so on its machine (cli/plan_command.cc).
      {"spec.data.volume", Effect::kInvalid, {Runner::kKubernetes},
       [](const JobSpec& s, const Json& raw) {
         return Written(raw, "spec.data.volume").is_null() && !RelativeDataPaths(s).empty();
       },
       "is needed to read spec.data's relative paths from in a cluster (or give absolute paths of files in the "
       "agent's image)"},
      {"spec.model.torchscript.path", Effect::kInvalid, {Runner::kKubernetes},
       [](const JobSpec& s, const Json& raw) {
         return s.model.kind == ModelKind::kTorchScript && fs::path(s.model.torchscript_path).is_relative() &&
                Written(raw, "spec.model.torchscript.configMap").is_null() &&
                Written(raw, "spec.data.volume").is_null();
       },
       "is relative: in a cluster it is read from spec.data.volume or spec.model.torchscript.configMap, and "
       "neither is given"},
      {"spec.model.torchscript.path", Effect::kInvalid, {Runner::kKubernetes},
       [](const JobSpec& s, const Json& raw) {
         return !Written(raw, "spec.model.torchscript.configMap").is_null() &&
                !IsConfigMapKey(s.model.torchscript_path);
       },
       "is the module's key in spec.model.torchscript.configMap: letters, digits, '-', '_' and '.' only"},
      {"spec.data", Effect::kInvalid, {Runner::kKubernetes},
       [](const JobSpec& s, const Json&) {
         const std::vector<std::string> paths = RelativeDataPaths(s);
         return std::any_of(paths.begin(), paths.end(), LeavesItsFolder);
       },
       "a relative path of train, test or the stream's folder leaves spec.data.volume (..)"},
      {"spec.model.torchscript.path", Effect::kInvalid, {Runner::kKubernetes},
       [](const JobSpec& s, const Json&) {
         return s.model.kind == ModelKind::kTorchScript && LeavesItsFolder(s.model.torchscript_path);
       },
       "leaves the volume it is read from (..)"},
      // A ConfigMap is flat: its keys are file names, and it holds no folders.
      {"spec.data.volume.configMap", Effect::kInvalid, {Runner::kKubernetes},
       [](const JobSpec& s, const Json& raw) {
         if (Written(raw, "spec.data.volume.configMap").is_null()) return false;
         std::vector<std::string> paths = RelativeDataPaths(s);
         if (s.model.kind == ModelKind::kTorchScript && Written(raw, "spec.model.torchscript.configMap").is_null() &&
             fs::path(s.model.torchscript_path).is_relative()) {
           paths.push_back(s.model.torchscript_path);
         }
         return (s.data.files && s.data.files->format == DataFormat::kImages) ||
                (s.data.stream && s.data.stream->directory) ||
                !std::all_of(paths.begin(), paths.end(), IsConfigMapKey);
       },
       "holds files by their key, not folders: relative paths read from it are file names (letters, digits, '-', "
       "'_' and '.'), and images data, a folder of folders, and a stream's folder need a persistentVolumeClaim"},
      {"spec.output.path", Effect::kInvalid, {Runner::kKubernetes, Runner::kPlanning},
       [](const JobSpec& s, const Json&) { return s.output.path && UnderFileMounts(*s.output.path); },
       "is where the job's own files are mounted in a cluster (/data, /model): write the output elsewhere"},
      {"spec.output.path", Effect::kInvalid, {Runner::kKubernetes, Runner::kPlanning},
       [](const JobSpec& s, const Json&) { return s.output.path && !IsPlainAbsolute(*s.output.path); },
       "is where the output volume is mounted in the coordinator's pod in a cluster: an absolute path with no '.' "
       "or '..' step (/models/NAME, say)"},
      {"spec.output.path", Effect::kInvalid, {Runner::kKubernetes, Runner::kPlanning},
       [](const JobSpec& s, const Json&) {
         return s.output.path && IsPlainAbsolute(*s.output.path) && OverSystemFolders(*s.output.path);
       },
       "would be mounted over the agent image's own folders (/, /bin, /dev, /etc, /lib, /proc, /run, /sbin, /sys, "
       "/usr, /var/run) or over a folder that holds its own mounts (/var: its credentials are mounted under "
       "/var/run): write the output in a folder of its own, such as /models/NAME"},
      {"spec.data.volume", Effect::kNote, {Runner::kLocal},
       [](const JobSpec&, const Json& raw) { return !Written(raw, "spec.data.volume").is_null(); },
       "has no effect under edgetrain run: relative paths are read beside the manifest"},
      {"spec.model.torchscript.configMap", Effect::kNote, {Runner::kLocal},
       [](const JobSpec&, const Json& raw) { return !Written(raw, "spec.model.torchscript.configMap").is_null(); },
       "has no effect under edgetrain run: the module is read from path, beside the manifest"},
      // A TorchScript model is cut into stages between the children of its
      // nn.Sequential; any other module is timed whole, as one layer, which
      // auto runs whole and a pipeline or hybrid refuses, with the reason, once
      // the agent has measured it (CheckSplitAllowed, core/pipeline_problem.h).
      // A stream's batches are taken by the data-parallel worker (agent/dp/worker.cc);
      // a job of one and a pipeline's first stage read their data set.
      {"spec.data.stream", Effect::kRefuse, kEverywhere,
       [](const JobSpec& s, const Json&) {
         return s.data.stream.has_value() &&
                (s.parallelism.workers == 1 || s.parallelism.mode != ParallelismMode::kDataParallel);
       },
       "streaming data trains data-parallel teams of 2 or more workers; a job of one and a pipeline read their data "
       "set"},
      {"spec.data.computeWeighted", Effect::kRefuse, kEverywhere,
       [](const JobSpec& s, const Json&) {
         return s.data.compute_weighted &&
                (s.parallelism.workers == 1 || s.parallelism.mode != ParallelismMode::kDataParallel);
       },
       "weighs the batches of data-parallel teams of 2 or more workers"},
      {"spec.data.injection", Effect::kRefuse, kEverywhere,
       [](const JobSpec& s, const Json&) {
         return s.data.injection.has_value() &&
                (s.parallelism.workers == 1 || s.parallelism.mode != ParallelismMode::kDataParallel);
       },
       "injects samples into the batches of data-parallel teams of 2 or more workers"},
      // What a worker lacks is judged from its partition of the data set,
      // which a directory's stream does not draw from.
      {"spec.data.injection", Effect::kRefuse, kEverywhere,
       [](const JobSpec& s, const Json&) { return s.data.injection && s.data.stream && s.data.stream->directory; },
       "is not supported yet with a stream from a directory (what a worker lacks is judged from its partition of "
       "the data set)"},
      // Trained and tested on the same samples: the accuracy is recall, not
      // what the model does on samples it has not seen (a new user's trial:
      // 0.68, unsaid).
      {"spec.data.test", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json&) {
         if (!s.data.files) return false;
         const DataFiles& train = s.data.files->train;
         const DataFiles& test = s.data.files->test;
         return train.path == test.path && train.features == test.features && train.labels == test.labels;
       },
       "names the same files as spec.data.train: its accuracy then measures how the model recalls the samples it "
       "trained on, not how it does on samples it has not seen (hold some out for the test files)"},
      // Meaningful on a cluster only.
      {"spec.placement", Effect::kNote, kLocalOnly, WroteField("spec.placement"),
       "applies on Kubernetes only; edgetrain run ignores it"},
      {"spec.template", Effect::kNote, kLocalOnly, WroteField("spec.template"),
       "applies on Kubernetes only; edgetrain run ignores it"},
      {"spec.cleanPodPolicy", Effect::kNote, kLocalOnly, WroteField("spec.cleanPodPolicy"),
       "applies on Kubernetes only; edgetrain run ignores it"},
      {"spec.ttlSecondsAfterFinished", Effect::kNote, kLocalOnly, WroteField("spec.ttlSecondsAfterFinished"),
       "applies on Kubernetes only; edgetrain run ignores it"},
      {"spec.output.volume", Effect::kNote, kLocalOnly, WroteField("spec.output.volume"),
       "applies on Kubernetes only; edgetrain run writes to spec.output.path on this machine"},
      // A pipeline's stages send the head their replicas under edgetrain run as anywhere.
      {"spec.faultTolerance.replicateEvery", Effect::kNote, kLocalOnly,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode == ParallelismMode::kDataParallel &&
                !Written(raw, "spec.faultTolerance.replicateEvery").is_null();
       },
       "applies to pipelines only: a data-parallel team's coordinator holds the whole model"},
      {"spec.faultTolerance.replicaMoments", Effect::kNote, kLocalOnly,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode == ParallelismMode::kDataParallel &&
                !Written(raw, "spec.faultTolerance.replicaMoments").is_null();
       },
       "applies to pipelines only, as replicateEvery"},
      {"spec.faultTolerance.replicateCentralEvery", Effect::kNote, kLocalOnly,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode == ParallelismMode::kDataParallel &&
                !Written(raw, "spec.faultTolerance.replicateCentralEvery").is_null();
       },
       "applies to pipelines only, as replicateEvery"},
      // nodeLossGrace bounds how long a data-parallel worker waits for a lost coordinator; this waits for pipelines.
      // edgetrain run replays a pipeline's step without a device lost from a stage of several.
      {"spec.faultTolerance.replay", Effect::kNote, kLocalOnly,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode == ParallelismMode::kDataParallel &&
                !Written(raw, "spec.faultTolerance.replay").is_null();
       },
       "applies to pipelines only; a data-parallel team trains on without a lost worker"},
      {"spec.faultTolerance.gradientEachMicroBatch", Effect::kNote, kLocalOnly,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode == ParallelismMode::kDataParallel &&
                !Written(raw, "spec.faultTolerance.gradientEachMicroBatch").is_null();
       },
       "applies to pipelines only, to a stage of several devices"},
      // A pipeline's head counts its losses under edgetrain run too: the note
      // told a pipeline job that edgetrain run ignores it (a new user's trial).
      {"spec.faultTolerance.maxRecoveries", Effect::kNote, kLocalOnly,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode == ParallelismMode::kDataParallel &&
                WrittenBeyondDefault(raw, "spec.faultTolerance.maxRecoveries");
       },
       "applies to pipelines and Kubernetes; edgetrain run ignores it for a data-parallel team"},
      // A pipeline's stages (and auto's data parallelism, one stage on every
      // device) step together on uncompressed gradients summed at the head,
      // on batches of the whole data set: the data-parallel engine's
      // synchronisation and partitions are not theirs.
      {"spec.sync", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode != ParallelismMode::kDataParallel && s.parallelism.workers > 1 &&
                WrittenBeyondDefault(raw, "spec.sync");
       },
       "applies to data-parallel teams only: a pipeline's devices step together on uncompressed gradients "
       "(docs/pipeline.md)"},
      {"spec.data.partition", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.mode != ParallelismMode::kDataParallel && s.parallelism.workers > 1 &&
                WrittenBeyondDefault(raw, "spec.data.partition");
       },
       "applies to data-parallel teams only: a pipeline deals each batch of the whole data set among its devices"},
      // A folder's stream draws from no data set: its epochs count what the
      // team trained over `dataset`'s training set, which a new user's
      // validate passed without a word (docs/streams.md says to give it a
      // wallClock or a targetAccuracy).
      {"spec.budget.epochs", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json&) { return s.budget.epochs && s.data.stream && s.data.stream->directory; },
       "counts the samples a stream from a folder trained on over spec.data.dataset's training set, which the folder "
       "does not draw from: a wallClock or targetAccuracy budget says what is meant (docs/streams.md)"},
      // Without effect on a job of one worker, anywhere.
      {"spec.sync", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json& raw) { return s.parallelism.workers == 1 && WrittenBeyondDefault(raw, "spec.sync"); },
       "has no effect on a job of one worker"},
      {"spec.data.partition", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json& raw) {
         return s.parallelism.workers == 1 && WrittenBeyondDefault(raw, "spec.data.partition");
       },
       "has no effect on a job of one worker: it trains on all the data"},
      // A user's hybrid of one worker was taken, and said to be "as asked" (a
      // new user's trial); DecodeJobSpec makes an auto or hybrid of one
      // worker a job of one, everywhere, and it is said.
      {"spec.parallelism.mode", Effect::kNote, kEverywhere,
       [](const JobSpec& s, const Json& raw) {
         const Json& mode = Written(raw, "spec.parallelism.mode");
         return s.parallelism.workers == 1 && (mode == "auto" || mode == "hybrid");
       },
       "has nothing to split over one worker, nor batches to share: it trains as a job of one, its one device "
       "holding every layer"},
  };
  return table;
}

}  // namespace

SupportCheck CheckSupport(const TrainingJobManifest& job, Runner runner) {
  SupportCheck check;
  for (const Capability& c : Capabilities()) {
    if (std::find(c.where.begin(), c.where.end(), runner) == c.where.end() || !c.asks(job.spec, job.raw)) continue;
    switch (c.effect) {
      case Effect::kNote: check.notes.push_back(std::string(c.field) + " " + c.reason); break;
      case Effect::kInvalid: check.invalid.push_back({c.field, c.reason}); break;
      case Effect::kRefuse: check.unsupported.push_back({c.field, c.reason}); break;
    }
  }
  return check;
}

}  // namespace edgetrain::api
