#include "core/partition.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

std::vector<int64_t> Labels(int per_class, int classes) {
  std::vector<int64_t> labels;
  for (int i = 0; i < per_class * classes; ++i) labels.push_back(i % classes);
  return labels;
}

void ExpectDisjointCover(const std::vector<std::vector<int64_t>>& parts, size_t n) {
  std::set<int64_t> seen;
  size_t total = 0;
  for (const auto& p : parts) {
    total += p.size();
    seen.insert(p.begin(), p.end());
  }
  EXPECT_EQ(total, n);
  EXPECT_EQ(seen.size(), n);
}

TEST(PartitionTest, IidDealsEvenlyAndDeterministically) {
  auto labels = Labels(100, 10);
  auto parts = PartitionSamples(labels, 10, 3, {PartitionKind::kIid, std::nullopt}, 7);
  ExpectDisjointCover(parts, 1000);
  EXPECT_EQ(parts[0].size(), 334u);
  EXPECT_EQ(parts[2].size(), 333u);
  EXPECT_EQ(parts, PartitionSamples(labels, 10, 3, {PartitionKind::kIid, std::nullopt}, 7));
  EXPECT_NE(parts, PartitionSamples(labels, 10, 3, {PartitionKind::kIid, std::nullopt}, 8));
}

// How far a part's label mix is from uniform: total variation distance.
double Skew(const std::vector<int64_t>& part, const std::vector<int64_t>& labels, int classes) {
  std::vector<double> share(classes, 0);
  for (int64_t i : part) share[labels[i]] += 1.0 / static_cast<double>(part.size());
  double tv = 0;
  for (double s : share) tv += std::fabs(s - 1.0 / classes) / 2;
  return tv;
}

TEST(PartitionTest, DirichletSkewsLabelMixesMoreAsAlphaShrinks) {
  auto labels = Labels(500, 10);
  auto skewed = PartitionSamples(labels, 10, 4, {PartitionKind::kDirichlet, 0.1}, 1);
  auto mild = PartitionSamples(labels, 10, 4, {PartitionKind::kDirichlet, 100.0}, 1);
  ExpectDisjointCover(skewed, 5000);
  ExpectDisjointCover(mild, 5000);
  double skew_small = 0, skew_large = 0;
  for (int w = 0; w < 4; ++w) {
    skew_small += Skew(skewed[w], labels, 10) / 4;
    skew_large += Skew(mild[w], labels, 10) / 4;
    EXPECT_FALSE(skewed[w].empty());
  }
  EXPECT_GT(skew_small, 0.4);
  EXPECT_LT(skew_large, 0.1);
}

// At an alpha whose Gamma draws all underflow to 0, a class goes whole to one
// worker, as Dirichlet's limit does; it was shared evenly, as IID.
TEST(PartitionTest, DirichletAtAnAlphaThatUnderflowsGivesEachClassToOneWorker) {
  auto labels = Labels(50, 10);
  for (double alpha : {1e-5, 1e-300}) {
    auto parts = PartitionSamples(labels, 10, 3, {PartitionKind::kDirichlet, alpha}, 1);
    ExpectDisjointCover(parts, 500);
    for (int label = 0; label < 10; ++label) {
      int holders = 0;
      for (const auto& part : parts) {
        holders += std::any_of(part.begin(), part.end(), [&](int64_t i) { return labels[i] == label; });
      }
      // A worker the draw left empty took one sample from the largest part.
      EXPECT_LE(holders, 2) << "alpha " << alpha << ", label " << label;
    }
    double skew = 0;
    for (const auto& part : parts) skew += Skew(part, labels, 10) / 3;
    EXPECT_GT(skew, 0.5) << "alpha " << alpha;
  }
}

TEST(PartitionTest, EveryWorkerGetsSomethingEvenFromATinySet) {
  auto labels = Labels(1, 3);
  auto parts = PartitionSamples(labels, 3, 3, {PartitionKind::kDirichlet, 0.01}, 3);
  ExpectDisjointCover(parts, 3);
  for (const auto& p : parts) EXPECT_EQ(p.size(), 1u);
}

TEST(PartitionTest, LabelsGivesEachWorkerItsKLabelsSharedEvenlyByThoseThatSeeThem) {
  auto labels = Labels(60, 10);
  PartitionSpec spec{PartitionKind::kLabels, std::nullopt, 2};
  auto parts = PartitionSamples(labels, 10, 5, spec, 4);
  ExpectDisjointCover(parts, 600);  // 5 workers x 2 labels: every label, once
  for (const auto& part : parts) {
    std::vector<int64_t> h = LabelHistogram(part, labels, 10);
    EXPECT_EQ(std::count(h.begin(), h.end(), 60), 2);
    EXPECT_EQ(std::count(h.begin(), h.end(), 0), 8);
  }
  EXPECT_EQ(parts, PartitionSamples(labels, 10, 5, spec, 4));
  EXPECT_NE(parts, PartitionSamples(labels, 10, 5, spec, 5));

  // 4 workers x 3 labels deal 12 over 10 labels: two are seen by two workers,
  // and each of those gives both half its samples.
  auto overlapping = PartitionSamples(labels, 10, 4, {PartitionKind::kLabels, std::nullopt, 3}, 4);
  ExpectDisjointCover(overlapping, 600);
  std::vector<int64_t> seen(10, 0);
  for (const auto& part : overlapping) {
    std::vector<int64_t> h = LabelHistogram(part, labels, 10);
    EXPECT_EQ(std::count_if(h.begin(), h.end(), [](int64_t n) { return n > 0; }), 3);
    for (int c = 0; c < 10; ++c) {
      if (h[c] == 0) continue;
      ++seen[c];
      EXPECT_TRUE(h[c] == 60 || h[c] == 30) << h[c];
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 2), 2);
}

TEST(PartitionTest, LabelsLeavesOutTheLabelsNoWorkerSeesAndTakesEveryLabelAtKAboveTheClasses) {
  auto labels = Labels(20, 10);
  auto one_each = PartitionSamples(labels, 10, 3, {PartitionKind::kLabels, std::nullopt, 1}, 9);
  size_t total = 0;
  for (const auto& part : one_each) {
    std::vector<int64_t> h = LabelHistogram(part, labels, 10);
    EXPECT_EQ(std::count(h.begin(), h.end(), 20), 1);
    total += part.size();
  }
  EXPECT_EQ(total, 60u);  // 3 of the 10 labels are trained on

  auto every = PartitionSamples(labels, 10, 2, {PartitionKind::kLabels, std::nullopt, 50}, 9);
  ExpectDisjointCover(every, 200);
  for (const auto& part : every) EXPECT_EQ(LabelHistogram(part, labels, 10), std::vector<int64_t>(10, 10));
}

// Fewer labels dealt in all than there are classes is said before the job
// runs, unless injection brings the others in or a folder deals the samples.
TEST(PartitionTest, LabelsNoWorkerSeesAreWarnedOfUnlessInjected) {
  DataSpec data;
  data.partition = {PartitionKind::kLabels, std::nullopt, 4};
  EXPECT_EQ(UnseenLabelsWarning(data, 10, 2),
            "spec.data.partition gives each of 2 workers 4 labels: 8 of the 10 labels are trained on, and the other 2 "
            "never (edgetrain partition JOB.yaml names them; spec.data.injection brings their samples in)");
  EXPECT_EQ(UnseenLabelsWarning(data, 10, 3), "") << "12 dealt: every label is seen";
  data.injection = InjectionSpec{};
  EXPECT_EQ(UnseenLabelsWarning(data, 10, 2), "");
  data.injection.reset();
  data.partition = {PartitionKind::kDirichlet, 0.1, std::nullopt};
  EXPECT_EQ(UnseenLabelsWarning(data, 10, 2), "") << "only the labels partition deals labels";
  // Of data from files, a label dealt may hold no sample: 9 dealt of 12 read
  // "9 ... are trained on" where 7 were (a new user's trial).
  data.partition = {PartitionKind::kLabels, std::nullopt, 3};
  data.files = DataSource{};
  EXPECT_EQ(UnseenLabelsWarning(data, 12, 3),
            "spec.data.partition gives each of 3 workers 3 labels: at most 9 of the 12 labels are trained on, and "
            "the other 3 or more never (edgetrain partition JOB.yaml names them; spec.data.injection brings their "
            "samples in)");
}

// A skewed partition's parts smaller than a batch are said, naming the
// workers (a Dirichlet 0.01 gave one worker 1 sample unsaid: a new user's
// trial); an even split's are said before the run, from the set's size.
TEST(PartitionTest, SkewedPartsSmallerThanABatchAreWarnedOf) {
  const std::vector<int64_t> labels = Labels(200, 10);
  const PartitionSpec skewed{PartitionKind::kDirichlet, 0.01, std::nullopt};
  const auto parts = PartitionSamples(labels, 10, 6, skewed, 1);
  std::vector<size_t> small;
  for (size_t w = 0; w < parts.size(); ++w) {
    if (parts[w].size() < 32) small.push_back(w);
  }
  ASSERT_FALSE(small.empty()) << "the draw leaves some worker few samples";
  const std::string warning = SmallPartsWarning(parts, skewed, 32);
  const std::string first = "worker " + std::to_string(small[0]) + " " + std::to_string(parts[small[0]].size());
  EXPECT_EQ(warning.rfind("spec.data.partition gives " + first, 0), 0u) << warning;
  EXPECT_NE(warning.find(", fewer than a batch of 32: each of their batches takes those samples again and again"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("a larger alpha"), std::string::npos) << warning;
  EXPECT_EQ(SmallPartsWarning(parts, skewed, 1), "") << "no part is smaller than a batch of one";
  const PartitionSpec iid{PartitionKind::kIid, std::nullopt, std::nullopt};
  EXPECT_EQ(SmallPartsWarning(PartitionSamples(labels, 10, 20, iid, 1), iid, 32), "") << "said before the run";
}

// The run's refusal and partition's warning alike: a part of one sample at least a worker.
TEST(PartitionTest, ATeamOfMoreWorkersThanSamplesIsShortOfThem) {
  EXPECT_EQ(TeamShortOfSamples(2, 3), "the training set holds 2 sample(s), fewer than the job's 3 workers");
  EXPECT_EQ(TeamShortOfSamples(3, 3), "");
  EXPECT_EQ(TeamShortOfSamples(0, 1), "") << "one worker trains on the whole set, whatever it holds";
}

TEST(PartitionTest, LabelsTheTrainingSetHoldsNoSampleOfAreWarnedOf) {
  EXPECT_EQ(LabelsWithoutSamplesWarning(Labels(4, 3), 3), "");
  EXPECT_EQ(LabelsWithoutSamplesWarning(Labels(4, 2), 3),
            "the training set holds no sample of label 2 of its 3 classes (spec.data.classes): the model never "
            "learns it");
  EXPECT_EQ(LabelsWithoutSamplesWarning(Labels(1, 2), 10),
            "the training set holds no sample of labels 2, 3, 4, 5, 6 and 3 more of its 10 classes "
            "(spec.data.classes): the model never learns them");
  EXPECT_EQ(LabelsWithoutSamplesWarning(Labels(2, 1), 3),
            "the training set holds no sample of labels 1 and 2 of its 3 classes (spec.data.classes): the model "
            "never learns them");
  EXPECT_EQ(LabelsWithoutSamplesWarning({}, 3), "") << "no set read yet (a stream's folder)";
}

}  // namespace
}  // namespace edgetrain
