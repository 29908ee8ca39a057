#include "cli/partition_command.h"

#include <algorithm>
#include <iomanip>

#include <nlohmann/json.hpp>

#include "agent/data/dataset.h"
#include "agent/data/sample_directory.h"
#include "api/result_json.h"
#include "cli/job_loading.h"
#include "cli/local_runner.h"
#include "core/exit_codes.h"
#include "core/injection.h"
#include "core/partition.h"

namespace edgetrain::cli {
namespace {

// Beyond this many labels a row of counts is too wide to read: each worker's
// largest labels are listed instead.
constexpr int kLabelsAsColumns = 20;
constexpr int kLargestListed = 8;

std::string DescribePartition(const PartitionSpec& p) {
  std::string text(NameOf(p.kind));
  if (p.kind == PartitionKind::kDirichlet) text += ", alpha " + nlohmann::json(p.alpha.value_or(1.0)).dump();
  if (p.kind == PartitionKind::kLabels) text += ", " + std::to_string(p.labels_per_worker.value_or(1)) + " per worker";
  return text;
}

void PrintTable(const std::vector<std::vector<int64_t>>& histograms, std::span<const size_t> sizes, std::ostream& out) {
  const size_t classes = histograms.empty() ? 0 : histograms[0].size();
  if (classes <= kLabelsAsColumns) {
    out << "worker  samples  labels 0-" << classes - 1 << "\n";
    for (size_t w = 0; w < histograms.size(); ++w) {
      out << std::setw(6) << w << std::setw(9) << sizes[w] << " ";
      for (int64_t n : histograms[w]) out << std::setw(6) << n;
      out << "\n";
    }
    return;
  }
  out << "worker  samples  labels seen  largest (label: samples)\n";
  for (size_t w = 0; w < histograms.size(); ++w) {
    const auto& h = histograms[w];
    std::vector<size_t> order(classes);
    for (size_t c = 0; c < classes; ++c) order[c] = c;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return h[a] > h[b]; });
    out << std::setw(6) << w << std::setw(9) << sizes[w] << std::setw(13)
        << std::count_if(h.begin(), h.end(), [](int64_t n) { return n > 0; }) << " ";
    for (size_t i = 0; i < std::min<size_t>(kLargestListed, classes) && h[order[i]] > 0; ++i) {
      out << " " << order[i] << ": " << h[order[i]];
    }
    out << "\n";
  }
}

// Every index of a set of `n` samples: the whole set as a part.
std::vector<int64_t> AllSamples(size_t n) {
  std::vector<int64_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = static_cast<int64_t>(i);
  return all;
}

}  // namespace

int PrintPartition(const std::string& manifest_path, bool json, std::ostream& out, std::ostream& err) {
  api::TrainingJobManifest job;
  api::SupportCheck support;
  if (int code = LoadJob(manifest_path, err, job, support); code != kExitOk) return code;
  // What run says of a stream's folders (a file that loses rows to the
  // buffer was counted whole here, unsaid: a new user's trial).
  if (int code = CheckStreamFolders(job, err); code != kExitOk) return code;
  auto data = agent::LoadData(job.spec.data, agent::DefaultDataSearchPath());
  if (!data.ok()) {
    err << "error: " << data.status().message() << "\n";
    return ExitCodeFor(data.status());  // a file it names is at fault: 2, as edgetrain run says of it
  }
  // A stream from a folder is dealt by its source, not partitioned: worker
  // RANK trains on what arrives in DIR/worker-RANK/ (docs/streams.md), so
  // what each worker's folder holds now is what is shown.
  const auto& stream = job.spec.data.stream;
  const bool folders = stream && stream->directory;
  std::vector<int64_t> labels = data->train.labels;
  const int classes = data->train.info.classes;
  std::vector<std::vector<int64_t>> parts;
  std::vector<std::string> refused, cut_short, still_written;
  if (folders) {
    labels.clear();
    for (int rank = 0; rank < job.spec.parallelism.workers; ++rank) {
      agent::SampleDirectory folder(*stream->directory + "/worker-" + std::to_string(rank), data->train.info,
                                    agent::FeatureRangeOf(job.spec.data));
      const agent::SampleDirectory::Scan scan = folder.Look();
      // A folder that cannot be listed holds nothing a worker could read:
      // not shown as empty (found in review).
      if (!scan.unreadable.empty()) {
        err << "error: worker " << rank << "'s stream folder cannot be read: " << scan.unreadable << "\n";
        return kExitInvalid;
      }
      refused.insert(refused.end(), scan.refused.begin(), scan.refused.end());
      cut_short.insert(cut_short.end(), scan.cut_short.begin(), scan.cut_short.end());
      if (!scan.still_written.empty()) still_written.push_back(scan.still_written);
      parts.emplace_back();
      for (int64_t label : folder.held().labels) {
        parts.back().push_back(static_cast<int64_t>(labels.size()));
        labels.push_back(label);
      }
    }
  } else {
    parts = PartitionSamples(labels, classes, job.spec.parallelism.workers, job.spec.data.partition, job.spec.seed);
  }
  std::vector<std::vector<int64_t>> histograms;
  std::vector<size_t> sizes;
  std::vector<int64_t> seen(static_cast<size_t>(classes), 0);
  for (const auto& part : parts) {
    histograms.push_back(LabelHistogram(part, labels, classes));
    sizes.push_back(part.size());
    for (int c = 0; c < classes; ++c) seen[c] += histograms.back()[c] > 0 ? 1 : 0;
  }
  // Labels no part holds, and of those, labels the data holds no sample of:
  // neither dealt nor injected, said apart (injection was promised for labels
  // with nothing to inject: a new user's trial).
  std::vector<int> unseen, absent;
  const std::vector<int64_t> all = folders ? std::vector<int64_t>(static_cast<size_t>(classes), 1)
                                           : LabelHistogram(AllSamples(labels.size()), labels, classes);
  for (int c = 0; c < classes; ++c) {
    if (all[c] == 0) {
      absent.push_back(c);
    } else if (seen[c] == 0) {
      unseen.push_back(c);
    }
  }

  // The labels the coordinator injects into each worker's batches, chosen as
  // it chooses them (a new user saw the same table with injection as without).
  std::vector<std::vector<int>> injected;
  if (job.spec.data.injection && !folders) {
    const InjectionPool pool(labels, classes, parts, *job.spec.data.injection, job.spec.seed);
    for (int w = 0; w < pool.workers(); ++w) injected.push_back(pool.labels(w));
  }

  // A pipeline deals each batch of the whole data set among its devices: the
  // parts are a data-parallel team's, which an auto job may yet be. Said as
  // validate says it (the table alone read as the job's split: a user's trial).
  std::string note;
  if (job.spec.parallelism.mode != ParallelismMode::kDataParallel) {
    note = "spec.data.partition applies to data-parallel teams only: this job is " +
           std::string(NameOf(job.spec.parallelism.mode)) +
           " (spec.parallelism.mode), and a pipeline deals each batch of the whole data set among its devices; "
           "the parts below are what a data-parallel team of its workers would train on";
  }

  // What the run refuses, said here too: the table showed a worker of 0
  // samples and the command exited 0 (a new user's trial); --json too, whose
  // readers had no word of it.
  // The same test as the run's (core/partition.h), of a job that may run as
  // a team: a pipeline or hybrid never does, an auto job where it keeps data
  // parallelism (a hybrid had been warned of, which run never refuses).
  const ParallelismMode mode = job.spec.parallelism.mode;
  const std::string short_of = TeamShortOfSamples(static_cast<int64_t>(labels.size()), job.spec.parallelism.workers);
  std::string warning;
  if (!folders && (mode == ParallelismMode::kDataParallel || mode == ParallelismMode::kAuto) && !short_of.empty()) {
    warning = short_of + ": edgetrain run refuses a team of more workers than samples" +
              (mode == ParallelismMode::kAuto ? " (where auto keeps data parallelism)" : "");
  }

  if (json) {
    nlohmann::json doc = {{"job", job.name},
                          {"dataset", DescribeData(job.spec.data)},
                          {"partition", folders ? "the stream's folders" : DescribePartition(job.spec.data.partition)},
                          {"labels", histograms},
                          {"unseenLabels", unseen},
                          {"labelsWithoutSamples", absent},
                          {"parts", parts}};
    if (folders) {
      doc["directory"] = *stream->directory;
      doc["refusedFiles"] = refused;
      doc["linesLeftOut"] = cut_short;
      doc["stillBeingWritten"] = still_written;
    }
    if (!injected.empty()) doc["injectedLabels"] = injected;
    if (!note.empty()) doc["note"] = note;
    if (!warning.empty()) doc["warning"] = warning;
    // Replaced, not thrown: a file's name need not be UTF-8 (found in review).
    out << api::ResultJson(doc) << "\n";
    return kExitOk;
  }
  if (folders) {
    out << job.name << ": " << labels.size() << " samples (" << classes << " labels) in the CSV files of "
        << *stream->directory << "/worker-RANK/ now, among " << parts.size()
        << (parts.size() == 1 ? " worker" : " workers") << ": a stream from a folder is dealt by its source, so spec.data.partition does not apply\n";
  } else {
    out << job.name << ": " << labels.size() << " training samples of " << DescribeData(job.spec.data) << " ("
        << classes << " labels) among " << parts.size() << (parts.size() == 1 ? " worker" : " workers")
        << ", partition "
        << DescribePartition(job.spec.data.partition) << ", seed " << job.spec.seed << "\n";
  }
  if (!note.empty()) out << "note: " << note << "\n";
  PrintTable(histograms, sizes, out);
  for (const std::string& why : refused) out << "left out: " << why << "\n";
  for (const std::string& why : cut_short) out << "a line left out, the rows before it read: " << why << "\n";
  for (const std::string& file : still_written) {
    out << "not counted yet: " << file << ", still being written, and the files after it in its folder (a worker "
        << "reads them once it settles)\n";
  }
  if (!injected.empty()) {
    const InjectionSpec& spec = *job.spec.data.injection;
    out << "injected into each batch (spec.data.injection: labelShare " << spec.label_share << ", batchShare "
        << spec.batch_share << " of a batch on top), samples of the labels each worker's part lacks:\n";
    for (size_t w = 0; w < injected.size(); ++w) {
      out << "  worker " << w << ":";
      if (injected[w].empty()) out << " none (its part lacks no label)";
      for (size_t i = 0; i < injected[w].size(); ++i) out << (i ? ", " : " ") << injected[w][i];
      out << "\n";
    }
  }
  if (!absent.empty()) {
    out << "the training set holds no sample of " << (absent.size() == 1 ? "label" : "labels");
    for (size_t i = 0; i < absent.size(); ++i) out << (i ? ", " : " ") << absent[i];
    out << ": the model never learns " << (absent.size() == 1 ? "it" : "them") << "\n";
  }
  if (!warning.empty()) out << "warning: " << warning << "\n";
  if (!unseen.empty()) {
    out << "no worker sees " << (unseen.size() == 1 ? "label" : "labels");
    for (size_t i = 0; i < unseen.size(); ++i) out << (i ? ", " : " ") << unseen[i];
    // A pipeline trains on every label whatever the parts: said of the team
    // the parts are for (it read "the job never trains on them" beside the
    // note that the pipeline deals the whole set: found in review).
    const bool team = job.spec.parallelism.mode == ParallelismMode::kDataParallel;
    out << (job.spec.data.injection ? ": the coordinator injects their samples into the workers' batches\n"
            : folders               ? ": none has arrived yet\n"
            : team                  ? ": the job never trains on them\n"
                                    : ": a data-parallel team of its workers would never train on them\n");
  }
  return kExitOk;
}

}  // namespace edgetrain::cli
