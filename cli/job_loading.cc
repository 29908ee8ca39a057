#include "cli/job_loading.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "api/bounded_read.h"
#include "api/cluster_profile.h"
#include "api/yaml_json.h"
#include "core/duration_text.h"

namespace edgetrain::cli {

namespace fs = std::filesystem;

namespace {

StatusOr<std::string> ReadTextOfAtMost(const std::string& path, size_t most, const char* kind) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return InvalidArgumentError("cannot read " + path + ": is a directory, not a file");
  // A pipe or a device is read as a file is (a shell's <(...) is a pipe;
  // /dev/null was said to be missing: a user's trial).
  if (!fs::exists(path, ec)) return InvalidArgumentError("cannot read " + path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError("cannot read " + path);
  std::optional<std::string> text = api::ReadAtMost(in, most);
  if (!text) {
    return InvalidArgumentError("cannot read " + path + ": more than " + std::to_string(most >> 20) + " MiB, and no " +
                                kind + " is as large (is it the file meant?)");
  }
  return *std::move(text);
}

}  // namespace

StatusOr<std::string> ReadText(const std::string& path) {
  return ReadTextOfAtMost(path, api::kMostManifestBytes, "manifest or cluster profile");
}

StatusOr<std::string> ReadTraceText(const std::string& path) {
  return ReadTextOfAtMost(path, api::kMostTraceBytes, "trace of a day's readings every 10 ms");
}

std::string JobNameIn(const std::string& path, bool training_jobs_only) {
  StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return "";
  auto documents = api::ParseYamlDocuments(*text, path);
  if (!documents.ok() || documents->size() != 1 || !(*documents)[0].is_object()) return "";
  const nlohmann::json& doc = (*documents)[0];
  if (training_jobs_only && doc.value("kind", nlohmann::json()) != "TrainingJob") return "";
  const nlohmann::json name = doc.value("/metadata/name"_json_pointer, nlohmann::json());
  return name.is_string() ? name.get<std::string>() : "";
}

void PrintLines(std::ostream& err, const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) err << "  " << line << "\n";
}

namespace {

// The files a manifest names, each there on this machine and of the kind its
// field takes (a file, or the images' folder): a wrong one is found now,
// naming its field, not after the data has loaded (a new user's trial:
// "training failed: .../trainn: no such folder", once the run had started;
// and `validate` said the files were there for a model path that was a
// folder, and an images path that was a CSV file). What is in them the
// agents check as they read it.
std::vector<std::string> MisnamedFiles(const api::TrainingJobManifest& job, JobFiles needed) {
  std::vector<std::string> wrong;
  enum class Kind { kFile, kFolder };
  auto check = [&](const std::string& field, const std::string& path, Kind kind, const char* why = "") {
    if (path.empty()) return;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    // One the system cannot look at says why (a folder this user may not
    // enter, a loop of links), not "no such file or folder" (found in review).
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
      wrong.push_back(field + ": " + path + ": " + ec.message());
    } else if (!fs::exists(status)) {
      wrong.push_back(field + ": " + path + ": no such file or folder");
    } else if (kind == Kind::kFile && fs::is_directory(status)) {
      wrong.push_back(field + ": " + path + ": a folder, not a file" + why);
    } else if (kind == Kind::kFolder && !fs::is_directory(status)) {
      wrong.push_back(field + ": " + path + ": a file, not a folder" + why);
    }
  };
  const JobSpec& s = job.spec;
  // The model evaluated is the file given, which holds a module whole: the
  // job's module, which evaluating never reads, was required there (a new
  // user's trial, after moving it).
  if (s.model.kind == ModelKind::kTorchScript && needed == JobFiles::kAll) {
    check("spec.model.torchscript.path", s.model.torchscript_path, Kind::kFile, " (a module saved with torch.jit.save)");
  }
  if (s.data.files) {
    const bool images = s.data.files->format == DataFormat::kImages;
    for (const auto& [split, files] : {std::pair{"train", &s.data.files->train}, {"test", &s.data.files->test}}) {
      // Image folders' test split takes its labels from the training
      // folders' names: those are read even to evaluate.
      if (needed == JobFiles::kTest && !images && std::string_view(split) == "train") continue;
      const std::string at = std::string("spec.data.") + split;
      check(at + ".path", files->path, images ? Kind::kFolder : Kind::kFile,
            images ? " (format images reads a folder of class folders)" : "");
      check(at + ".features", files->features, Kind::kFile);
      check(at + ".labels", files->labels, Kind::kFile);
    }
  }
  return wrong;
}

}  // namespace

int LoadJob(const std::string& path, std::ostream& err, api::TrainingJobManifest& job, api::SupportCheck& support,
            api::Runner runner, JobFiles needed) {
  auto text = ReadText(path);
  if (!text.ok()) {
    err << "error: " << text.status().message() << "\n";
    return ExitCodeFor(text.status());
  }
  auto parsed = api::ParseTrainingJob(*text, path);
  if (!parsed.ok()) {
    err << "error: " << path << " is not a valid TrainingJob:\n";
    PrintLines(err, parsed.status().message());
    return ExitCodeFor(parsed.status());
  }
  job = std::move(*parsed);
  // On this machine a relative file path is the manifest's folder's; in a
  // cluster the operator refuses what it cannot reach.
  if (runner != api::Runner::kKubernetes) {
    if (Status resolved = api::ResolveFilePaths(job, fs::absolute(path).parent_path().string()); !resolved.ok()) {
      err << "error: " << path << ": " << resolved.message() << "\n";
      return ExitCodeFor(resolved);
    }
    if (const std::vector<std::string> wrong = MisnamedFiles(job, needed); !wrong.empty()) {
      // Not only missing: a folder named as a file read "does not have" above
      // the line that said what it was (a new user's trial).
      err << "error: " << path << " names paths that are not here as it names them (missing, or a folder where a "
          << "file is meant, or a file where a folder is; relative paths are read beside the manifest):\n";
      for (const std::string& w : wrong) err << "  " << w << "\n";
      return kExitInvalid;
    }
  }
  support = api::CheckSupport(job, runner);
  if (!support.invalid.empty()) {
    err << "error: " << path << " is not valid where it runs:\n";
    for (const auto& e : support.invalid) err << "  " << e.ToString() << "\n";
    return kExitInvalid;
  }
  if (!support.unsupported.empty()) {
    err << "error: " << path << " asks for what "
        << (runner == api::Runner::kLocal      ? "edgetrain run"
            : runner == api::Runner::kPlanning ? "edgetrain plan"
                                               : "the operator")
        << " cannot do yet:\n";
    for (const auto& e : support.unsupported) err << "  " << e.ToString() << "\n";
    return kExitInvalid;
  }
  return kExitOk;
}

std::optional<ClusterProfile> LoadProfile(const std::string& path, std::ostream& err) {
  auto text = ReadText(path);
  auto parsed = text.ok() ? api::ParseClusterProfile(*text, path) : StatusOr<ClusterProfile>(text.status());
  if (!parsed.ok()) {
    err << "error: --nodes:\n";
    PrintLines(err, parsed.status().message());
    return std::nullopt;
  }
  return std::move(*parsed);
}

std::string DescribeJob(const api::TrainingJobManifest& job) {
  const JobSpec& s = job.spec;
  std::string budget;
  if (s.budget.wall_clock) budget += FormatDuration(*s.budget.wall_clock) + " of wall clock";
  if (s.budget.epochs) {
    budget += (budget.empty() ? "" : ", ") + std::to_string(*s.budget.epochs) + (*s.budget.epochs == 1 ? " epoch" : " epochs");
  }
  if (s.budget.energy_joules > 0) {
    std::ostringstream e;
    e << s.budget.energy_joules << " J of modelled energy";
    budget += (budget.empty() ? "" : ", ") + e.str();
  }
  if (s.budget.target_accuracy) {
    std::ostringstream t;
    t << "target accuracy " << *s.budget.target_accuracy;
    budget += (budget.empty() ? "" : ", ") + t.str();
  }
  // A team says how it synchronises; a pipeline, hybrid or auto job its mode.
  std::string how = s.parallelism.mode != ParallelismMode::kDataParallel ? " (" + std::string(NameOf(s.parallelism.mode)) + ")"
                    : s.parallelism.workers == 1                       ? ""
                                                                        : " (" + std::string(NameOf(s.sync.policy)) + ")";
  return job.name + ": " + std::string(NameOf(s.model.kind)) + " on " + DescribeData(s.data) + ", " +
         std::to_string(s.parallelism.workers) + " worker(s)" + how + ", until " + budget;
}

}  // namespace edgetrain::cli
