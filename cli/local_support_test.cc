#include "cli/local_support.h"

#include <gtest/gtest.h>

namespace edgetrain::cli {
namespace {

using Json = nlohmann::json;

LocalSupport Check(const char* patch) {
  Json m = Json::parse(R"({"apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob", "metadata": {"name": "j"},
                           "spec": {"model": {"name": "mlp"}, "data": {"dataset": "digits"}}})");
  m.merge_patch(Json::parse(patch));
  auto job = api::ParseTrainingJob(m.dump(), "j.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? CheckLocalSupport(*job) : LocalSupport{};
}

std::string Joined(const LocalSupport& s) {
  std::string out;
  for (const auto& e : s.unsupported) out += e.ToString() + "\n";
  for (const auto& n : s.notes) out += "note: " + n + "\n";
  return out;
}

TEST(LocalSupportTest, APlainJobRunsWithoutNotes) {
  LocalSupport s = Check("{}");
  EXPECT_TRUE(s.unsupported.empty());
  EXPECT_TRUE(s.notes.empty()) << Joined(s);
}

TEST(LocalSupportTest, RefusesWhatHasNotLandedYet) {
  struct Case {
    const char* patch;
    const char* error;
  } cases[] = {
      {R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 2}}})", "spec.parallelism.mode: pipeline is not supported yet"},
      {R"({"spec": {"parallelism": {"mode": "auto"}}})", "spec.parallelism.mode: auto is not supported yet"},
      {R"({"spec": {"parallelism": {"workers": 4}, "sync": {"compression": "topk"}}})", "spec.sync.compression: topk is not supported yet"},
      {R"({"spec": {"data": {"stream": {"ratesPerSecond": [5]}}}})", "spec.data.stream: streaming data is not supported yet"},
      {R"({"spec": {"budget": {"energyJoules": 100}}})", "spec.budget.energyJoules: energy budgets are not supported yet"},
  };
  for (const auto& c : cases) {
    std::string got = Joined(Check(c.patch));
    EXPECT_NE(got.find(c.error), std::string::npos) << "wanted: " << c.error << "\ngot: " << got;
  }
}

TEST(LocalSupportTest, NamesFieldsItIgnoresOnlyWhenTheManifestWroteThem) {
  LocalSupport s = Check(R"({"spec": {"placement": {"allowTransient": false}, "template": {"image": "x"},
                                     "sync": {"policy": "bsp"}, "faultTolerance": {"replay": false},
                                     "output": {"path": "/tmp/m", "volume": {"persistentVolumeClaim": {"claimName": "c"}}}}})");
  EXPECT_TRUE(s.unsupported.empty());
  std::string notes = Joined(s);
  for (const char* field : {"spec.placement applies on Kubernetes only", "spec.template applies on Kubernetes only",
                            "spec.sync has no effect on a job of one worker",
                            "spec.faultTolerance.replay applies to pipelines", "spec.output.volume applies on Kubernetes only"}) {
    EXPECT_NE(notes.find(field), std::string::npos) << field << "\n" << notes;
  }
  EXPECT_EQ(notes.find("maxRecoveries"), std::string::npos) << "defaulted, not written: no note";
}

}  // namespace
}  // namespace edgetrain::cli
