#include "core/partition.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace edgetrain {
namespace {

using Parts = std::vector<std::vector<int64_t>>;

// Each class's samples shared out by a Dirichlet(alpha) draw over the workers.
void DealByDirichlet(std::vector<std::vector<int64_t>>& by_class, double alpha, std::mt19937_64& rng, Parts& parts) {
  const int workers = static_cast<int>(parts.size());
  std::gamma_distribution<double> gamma(alpha, 1.0);
  for (auto& members : by_class) {
    std::shuffle(members.begin(), members.end(), rng);
    // Dirichlet(alpha) shares as normalised Gamma(alpha, 1) draws.
    std::vector<double> share(static_cast<size_t>(workers));
    double total = 0;
    for (double& s : share) total += (s = gamma(rng));
    // At an alpha of 1e-5 every draw underflows to 0, and the class was
    // shared evenly: the most skewed split asked for came out IID (found in
    // review). Dirichlet's limit as alpha goes to 0 is the whole class on
    // one worker, drawn uniformly.
    if (total <= 0) {
      share.assign(share.size(), 0.0);
      share[std::uniform_int_distribution<size_t>(0, share.size() - 1)(rng)] = total = 1;
    }
    size_t given = 0;
    double cumulative = 0;
    for (int w = 0; w < workers; ++w) {
      cumulative += share[w] / total;
      size_t until = w + 1 == workers ? members.size()
                                      : std::min(members.size(), static_cast<size_t>(cumulative * static_cast<double>(members.size()) + 0.5));
      for (; given < until; ++given) parts[w].push_back(members[given]);
    }
  }
}

// Each worker sees k labels, dealt in turn from the classes in a seeded order;
// each label's samples go round the workers that see it.
void DealByLabels(std::vector<std::vector<int64_t>>& by_class, int labels_per_worker, std::mt19937_64& rng,
                  Parts& parts) {
  const size_t classes = by_class.size();
  std::vector<size_t> order(classes);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t k = std::min(static_cast<size_t>(labels_per_worker), classes);
  std::vector<std::vector<size_t>> seen_by(classes);
  for (size_t w = 0; w < parts.size(); ++w) {
    for (size_t j = 0; j < k; ++j) seen_by[order[(w * k + j) % classes]].push_back(w);
  }
  for (size_t c = 0; c < classes; ++c) {
    auto& members = by_class[c];
    std::shuffle(members.begin(), members.end(), rng);
    const auto& holders = seen_by[c];
    if (holders.empty()) continue;
    for (size_t i = 0; i < members.size(); ++i) parts[holders[i % holders.size()]].push_back(members[i]);
  }
}

}  // namespace

std::vector<std::vector<int64_t>> PartitionSamples(std::span<const int64_t> labels, int classes, int workers,
                                                   const PartitionSpec& spec, uint64_t seed) {
  Parts parts(static_cast<size_t>(workers));
  std::mt19937_64 rng(seed);
  if (spec.kind == PartitionKind::kIid || workers == 1) {
    std::vector<int64_t> order(labels.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); ++i) parts[i % static_cast<size_t>(workers)].push_back(order[i]);
    return parts;
  }
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(classes));
  for (size_t i = 0; i < labels.size(); ++i) by_class[static_cast<size_t>(labels[i])].push_back(static_cast<int64_t>(i));
  if (spec.kind == PartitionKind::kLabels) {
    DealByLabels(by_class, spec.labels_per_worker.value_or(1), rng, parts);
  } else {
    DealByDirichlet(by_class, spec.alpha.value_or(1.0), rng, parts);
  }
  // A worker left empty by the draw takes one sample from the largest part.
  for (auto& part : parts) {
    if (!part.empty()) continue;
    auto largest = std::max_element(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    if (largest->size() < 2) break;  // fewer samples than workers
    part.push_back(largest->back());
    largest->pop_back();
  }
  for (auto& part : parts) std::shuffle(part.begin(), part.end(), rng);
  return parts;
}

std::vector<int64_t> LabelHistogram(std::span<const int64_t> part, std::span<const int64_t> labels, int classes) {
  std::vector<int64_t> counts(static_cast<size_t>(classes), 0);
  for (int64_t i : part) ++counts[static_cast<size_t>(labels[static_cast<size_t>(i)])];
  return counts;
}

std::string TeamShortOfSamples(int64_t samples, int workers) {
  if (workers <= 1 || samples >= workers) return "";
  return "the training set holds " + std::to_string(samples) + " sample(s), fewer than the job's " +
         std::to_string(workers) + " workers";
}

std::string LabelsWithoutSamplesWarning(std::span<const int64_t> labels, int classes) {
  if (classes <= 0 || labels.empty()) return "";
  std::vector<bool> seen(static_cast<size_t>(classes), false);
  for (int64_t l : labels) {
    if (l >= 0 && l < classes) seen[static_cast<size_t>(l)] = true;
  }
  std::vector<int> missing;
  for (int l = 0; l < classes; ++l) {
    if (!seen[static_cast<size_t>(l)]) missing.push_back(l);
  }
  if (missing.empty()) return "";
  std::string named;
  const size_t shown = std::min<size_t>(missing.size(), 5);
  for (size_t i = 0; i < shown; ++i) {
    named += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + std::to_string(missing[i]);
  }
  if (missing.size() > shown) named += " and " + std::to_string(missing.size() - shown) + " more";
  return "the training set holds no sample of label" + std::string(missing.size() == 1 ? " " : "s ") + named +
         " of its " + std::to_string(classes) + " classes (spec.data.classes): the model never learns " +
         (missing.size() == 1 ? "it" : "them");
}

std::string SmallPartsWarning(const std::vector<std::vector<int64_t>>& parts, const PartitionSpec& spec,
                              int batch_size) {
  if (spec.kind == PartitionKind::kIid || batch_size <= 1) return "";
  std::vector<size_t> small;
  for (size_t w = 0; w < parts.size(); ++w) {
    if (parts[w].size() < static_cast<size_t>(batch_size)) small.push_back(w);
  }
  if (small.empty()) return "";
  std::string named;
  const size_t shown = std::min<size_t>(small.size(), 4);
  for (size_t i = 0; i < shown; ++i) {
    const size_t held = parts[small[i]].size();
    named += std::string(i == 0 ? "" : i + 1 == small.size() ? " and " : ", ") + "worker " + std::to_string(small[i]) +
             " " + std::to_string(held) + (held == 1 ? " sample" : " samples");
  }
  if (small.size() > shown) named += " and " + std::to_string(small.size() - shown) + " more workers";
  const std::string evener = spec.kind == PartitionKind::kDirichlet ? "a larger alpha" : "more labelsPerWorker";
  return "spec.data.partition gives " + named + ", fewer than a batch of " + std::to_string(batch_size) +
         ": each of their batches takes those samples again and again (edgetrain partition JOB.yaml shows every "
         "part; " + evener + " or fewer workers evens them)";
}

std::string UnseenLabelsWarning(const DataSpec& data, int classes, int workers) {
  const PartitionSpec& p = data.partition;
  // A stream from a folder is dealt by its source, not partitioned.
  if (p.kind != PartitionKind::kLabels || data.injection || (data.stream && data.stream->directory)) return "";
  const int k = p.labels_per_worker.value_or(1);
  const int64_t dealt = int64_t{k} * workers;
  if (classes <= 0 || dealt >= classes) return "";
  // Of data from files, a label dealt may hold no sample: the labels dealt
  // are then more than those trained on (a user's 12 classes, 9 dealt and
  // 7 trained on, read "9 ... are trained on").
  const bool files = data.files.has_value();
  return "spec.data.partition gives each of " + std::to_string(workers) + (workers == 1 ? " worker " : " workers ") +
         std::to_string(k) + (k == 1 ? " label" : " labels") + ": " + (files ? "at most " : "") +
         std::to_string(dealt) + " of the " + std::to_string(classes) + " labels are trained on, and the other " +
         std::to_string(classes - dealt) + (files ? " or more" : "") +
         " never (edgetrain partition JOB.yaml names them; spec.data.injection brings their samples in)";
}

}  // namespace edgetrain
