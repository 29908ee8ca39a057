#include "api/capabilities.h"

#include <gtest/gtest.h>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;

TrainingJobManifest Job(const char* patch) {
  Json m = Json::parse(R"({"apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob", "metadata": {"name": "j"},
                           "spec": {"model": {"name": "mlp"}, "data": {"dataset": "digits"}}})");
  m.merge_patch(Json::parse(patch));
  auto job = ParseTrainingJob(m.dump(), "j.yaml");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : TrainingJobManifest{};
}

std::string Joined(const SupportCheck& s) {
  std::string out;
  for (const auto& e : s.invalid) out += "invalid: " + e.ToString() + "\n";
  for (const auto& e : s.unsupported) out += e.ToString() + "\n";
  for (const auto& n : s.notes) out += "note: " + n + "\n";
  return out;
}

TEST(CapabilitiesTest, APlainJobRunsEverywhereWithoutNotes) {
  for (Runner runner : {Runner::kLocal, Runner::kKubernetes}) {
    SupportCheck s = CheckSupport(Job("{}"), runner);
    EXPECT_TRUE(s.unsupported.empty()) << Joined(s);
    EXPECT_TRUE(s.invalid.empty()) << Joined(s);
    EXPECT_TRUE(s.notes.empty()) << Joined(s);
  }
}

TEST(CapabilitiesTest, WhatHasNotLandedIsRefusedEverywhere) {
  struct Case {
    const char* patch;
    const char* error;
  } cases[] = {
      {R"({"spec": {"data": {"stream": {"ratesPerSecond": [5]}}}})",
       "spec.data.stream: streaming data trains data-parallel teams of 2 or more workers; a job of one and a pipeline "
       "read their data set"},
      {R"({"spec": {"parallelism": {"workers": 2}, "data": {"stream": {"directory": "in"}, "injection": {}}}})",
       "spec.data.injection: is not supported yet with a stream from a directory (what a worker lacks is judged "
       "from its partition of the data set)"},
  };
  for (const auto& c : cases) {
    for (Runner runner : {Runner::kLocal, Runner::kKubernetes}) {
      std::string got = Joined(CheckSupport(Job(c.patch), runner));
      EXPECT_NE(got.find(c.error), std::string::npos) << "wanted: " << c.error << "\ngot: " << got;
    }
  }
}

// A user's own model and data train under edgetrain run and in a cluster,
// where what a manifest names relatively is read from a volume it gives.
TEST(CapabilitiesTest, OwnModelsAndDataRunEverywhereTheirFilesCanBeRead) {
  const TrainingJobManifest model = Job(R"({"spec": {"model": {"name": null, "torchscript": {"path": "/m.pt"}}}})");
  const TrainingJobManifest data = Job(R"({"spec": {"data": {"dataset": null, "format": "csv", "inputShape": [64],
      "classes": 10, "train": {"path": "/a.csv"}, "test": {"path": "/b.csv"}}}})");
  // edgetrain plan has the agent measure the module on its machine, as the
  // operator's check pod does on a node.
  for (Runner runner : {Runner::kLocal, Runner::kKubernetes, Runner::kPlanning}) {
    EXPECT_EQ(Joined(CheckSupport(model, runner)), "");
    EXPECT_EQ(Joined(CheckSupport(data, runner)), "");
  }
  const TrainingJobManifest split = Job(R"({"spec": {"model": {"name": null, "torchscript": {"path": "/m.pt"}},
                                                     "parallelism": {"mode": "pipeline", "workers": 2}}})");
  // Its stages are cut between an nn.Sequential's children; any other module
  // is refused a pipeline once the agent has measured it (CheckSplitAllowed).
  EXPECT_EQ(Joined(CheckSupport(split, Runner::kLocal)), "");

  struct Case {
    const char* patch;
    const char* cluster;  // what the operator says; "" when it runs
  } cases[] = {
      {R"({"spec": {"data": {"dataset": null, "format": "csv", "inputShape": [4], "classes": 2,
           "train": {"path": "a.csv"}, "test": {"path": "/b.csv"}}}})",
       "spec.data.volume: is needed to read spec.data's relative paths"},
      {R"({"spec": {"data": {"dataset": null, "format": "csv", "inputShape": [4], "classes": 2,
           "volume": {"configMap": {"name": "rows"}}, "train": {"path": "a.csv"}, "test": {"path": "b.csv"}}}})",
       ""},
      {R"({"spec": {"model": {"name": null, "torchscript": {"path": "m.pt"}}}})",
       "spec.model.torchscript.path: is relative: in a cluster it is read from spec.data.volume or"},
      {R"({"spec": {"model": {"name": null, "torchscript": {"path": "m.pt", "configMap": "net"}}}})", ""},
      {R"({"spec": {"model": {"name": null, "torchscript": {"path": "nets/m.pt", "configMap": "net"}}}})",
       "spec.model.torchscript.path: is the module's key in spec.model.torchscript.configMap"},
      {R"({"spec": {"model": {"name": null, "torchscript": {"path": "m.pt"}},
           "data": {"volume": {"persistentVolumeClaim": {"claimName": "files"}}}}})",
       ""},
      {R"({"spec": {"model": {"name": null, "torchscript": {"path": "../m.pt"}},
           "data": {"volume": {"persistentVolumeClaim": {"claimName": "files"}}}}})",
       "spec.model.torchscript.path: leaves the volume it is read from (..)"},
      {R"({"spec": {"model": {"name": null, "torchscript": {"path": "..m.pt"}},
           "data": {"volume": {"persistentVolumeClaim": {"claimName": "files"}}}}})",
       ""},
      {R"({"spec": {"data": {"dataset": null, "format": "csv", "inputShape": [4], "classes": 2,
           "volume": {"persistentVolumeClaim": {"claimName": "rows"}}, "train": {"path": "a/../../a.csv"},
           "test": {"path": "b.csv"}}}})",
       "spec.data: a relative path of train, test or the stream's folder leaves spec.data.volume (..)"},
      // A stream's folder too: a team without the volume had watched a
      // folder no pod had, for its whole budget (found in review).
      {R"({"spec": {"data": {"stream": {"directory": "incoming"}}, "parallelism": {"workers": 2}}})",
       "spec.data.volume: is needed to read spec.data's relative paths"},
      {R"({"spec": {"data": {"stream": {"directory": "../incoming"},
           "volume": {"persistentVolumeClaim": {"claimName": "frames"}}}, "parallelism": {"workers": 2}}})",
       "leaves spec.data.volume (..)"},
      {R"({"spec": {"data": {"stream": {"directory": "incoming"}, "volume": {"configMap": {"name": "frames"}}},
           "parallelism": {"workers": 2}}})",
       "and a stream's folder need a persistentVolumeClaim"},
      {R"({"spec": {"data": {"stream": {"directory": "incoming"},
           "volume": {"persistentVolumeClaim": {"claimName": "frames"}}}, "parallelism": {"workers": 2}}})",
       ""},
      {R"({"spec": {"data": {"dataset": null, "format": "csv", "inputShape": [4], "classes": 2,
           "volume": {"configMap": {"name": "rows"}}, "train": {"path": "frames/a.csv"}, "test": {"path": "b.csv"}}}})",
       "spec.data.volume.configMap: holds files by their key, not folders"},
      {R"({"spec": {"data": {"dataset": null, "format": "images", "inputShape": [1, 8, 8], "classes": 2,
           "volume": {"configMap": {"name": "frames"}}, "train": {"path": "train"}, "test": {"path": "test"}}}})",
       "images data, a folder of folders, and a stream's folder need a persistentVolumeClaim"},
      {R"({"spec": {"output": {"path": "/data/out"}}})",
       "spec.output.path: is where the job's own files are mounted in a cluster"},
      // The output's volume is mounted at its path: no system folder, and one
      // plain absolute path (a security review mounted it at /, /etc,
      // /etc/edgetrain and ../../../tmp).
      {R"({"spec": {"output": {"path": "/models/run-1"}}})", ""},
      {R"({"spec": {"output": {"path": "/models/run-1/"}}})", ""},
      {R"({"spec": {"output": {"path": "/var/lib/edgetrain"}}})", ""},
      {R"({"spec": {"output": {"path": "/etcetera"}}})", ""},
      {R"({"spec": {"output": {"path": "../../../tmp/escape"}}})",
       "spec.output.path: is where the output volume is mounted in the coordinator's pod in a cluster: an absolute "
       "path with no '.' or '..' step"},
      {R"({"spec": {"output": {"path": "/models/../../etc"}}})", "an absolute path with no '.' or '..' step"},
      {R"({"spec": {"output": {"path": "/models//a"}}})", "an absolute path with no '.' or '..' step"},
      {R"({"spec": {"output": {"path": "/"}}})", "spec.output.path: would be mounted over the agent image's own"},
      {R"({"spec": {"output": {"path": "/etc"}}})", "would be mounted over the agent image's own"},
      {R"({"spec": {"output": {"path": "/etc/edgetrain"}}})", "would be mounted over the agent image's own"},
      {R"({"spec": {"output": {"path": "/var/run/secrets/edgetrain.dev/tls"}}})",
       "would be mounted over the agent image's own"},
      {R"({"spec": {"output": {"path": "/usr/share/models"}}})", "would be mounted over the agent image's own"},
      {R"({"spec": {"output": {"path": "/var"}}})", "would be mounted over the agent image's own"},
      {R"({"spec": {"output": {"path": "/var/run/secrets"}}})", "would be mounted over the agent image's own"},
  };
  for (const Case& c : cases) {
    const TrainingJobManifest job = Job(c.patch);
    const std::string cluster = Joined(CheckSupport(job, Runner::kKubernetes));
    if (*c.cluster == 0) {
      EXPECT_EQ(cluster, "") << c.patch;
    } else {
      // Wrong in a cluster, the user's to mend (InvalidSpec), not a limit of
      // this version (NotSupported).
      const SupportCheck in_cluster = CheckSupport(job, Runner::kKubernetes);
      EXPECT_FALSE(in_cluster.invalid.empty()) << cluster;
      EXPECT_TRUE(in_cluster.unsupported.empty()) << cluster;
      EXPECT_NE(cluster.find(c.cluster), std::string::npos) << "wanted: " << c.cluster << "\ngot: " << cluster;
    }
    // edgetrain run reads them beside the manifest, and says the cluster's fields are no use there.
    const SupportCheck local = CheckSupport(job, Runner::kLocal);
    EXPECT_TRUE(local.unsupported.empty()) << Joined(local);
    EXPECT_TRUE(local.invalid.empty()) << Joined(local);
    EXPECT_EQ(Joined(local).find("note: spec.data.volume has no effect under edgetrain run") != std::string::npos,
              std::string(c.patch).find("volume") != std::string::npos)
        << Joined(local);
  }
}

// Pipelines run under edgetrain run and the operator, a built-in model's and
// a TorchScript module's alike (its size for placement comes from its layers
// as the operator's check pod timed them).
TEST(CapabilitiesTest, PipelinesRunEverywhereAModulesToo) {
  for (const char* mode : {"pipeline", "hybrid", "auto"}) {
    const TrainingJobManifest job =
        Job((std::string(R"({"spec": {"parallelism": {"workers": 2, "mode": ")") + mode + R"("}}})").c_str());
    for (Runner runner : {Runner::kLocal, Runner::kKubernetes, Runner::kPlanning}) {
      EXPECT_EQ(Joined(CheckSupport(job, runner)), "") << mode;
    }
    const TrainingJobManifest module = Job((std::string(R"({"spec": {"model": {"name": null, "torchscript":
        {"path": "/m.pt"}}, "parallelism": {"workers": 2, "mode": ")") + mode + R"("}}})").c_str());
    EXPECT_EQ(Joined(CheckSupport(module, Runner::kLocal)), "");
    EXPECT_EQ(Joined(CheckSupport(module, Runner::kKubernetes)), "") << mode;
  }
}

// An epochs budget of a stream from a folder counts over a data set the
// folder does not draw from: noted, where a wall clock is not.
TEST(CapabilitiesTest, AnEpochsBudgetOfAFolderStreamIsNoted) {
  const std::string folder = R"({"spec": {"parallelism": {"workers": 2}, "data": {"stream": {"directory": "in"}}, )";
  const std::string epochs = Joined(CheckSupport(Job((folder + R"("budget": {"epochs": 3}}})").c_str()), Runner::kLocal));
  EXPECT_NE(epochs.find("spec.budget.epochs counts the samples a stream from a folder trained on"), std::string::npos)
      << epochs;
  const std::string clock = Joined(CheckSupport(Job((folder + R"("budget": {"wallClock": "1m"}}})").c_str()), Runner::kLocal));
  EXPECT_EQ(clock.find("spec.budget.epochs"), std::string::npos) << clock;
}

// A test file that is the training file is noted everywhere: its accuracy is
// recall (a new user's trial: 0.68, unsaid).
TEST(CapabilitiesTest, TestFilesThatAreTheTrainingFilesAreNoted) {
  auto files = [](const char* test) {
    return std::string(R"({"spec": {"data": {"dataset": null, "format": "csv", "inputShape": [6], "classes": 3, )"
                       R"("train": {"path": "a.csv"}, "test": {"path": ")") +
           test + R"("}}}})";
  };
  for (Runner runner : {Runner::kLocal, Runner::kKubernetes}) {
    const std::string same = Joined(CheckSupport(Job(files("a.csv").c_str()), runner));
    EXPECT_NE(same.find("note: spec.data.test names the same files as spec.data.train: its accuracy then measures "
                        "how the model recalls the samples it trained on"),
              std::string::npos)
        << same;
    EXPECT_EQ(Joined(CheckSupport(Job(files("b.csv").c_str()), runner)).find("spec.data.test"), std::string::npos);
  }
}

// Rates from the nodes: a cluster profile's locally, the Nodes' (an emulated
// site's) on Kubernetes, where placement puts workers only on nodes with one.
TEST(CapabilitiesTest, AStreamTakesItsRatesFromTheJobOrFromItsNodesEverywhere) {
  const TrainingJobManifest from_nodes = Job(R"({"spec": {"parallelism": {"workers": 2}, "data": {"stream": {}}}})");
  EXPECT_EQ(Joined(CheckSupport(from_nodes, Runner::kLocal)), "");
  EXPECT_EQ(Joined(CheckSupport(from_nodes, Runner::kKubernetes)), "");
  const TrainingJobManifest given =
      Job(R"({"spec": {"parallelism": {"workers": 2}, "data": {"stream": {"ratesPerSecond": [5, 9]}}}})");
  EXPECT_EQ(Joined(CheckSupport(given, Runner::kKubernetes)), "");
}

// `edgetrain plan` holds a job to what the operator does.
TEST(CapabilitiesTest, PlanningHoldsAJobToWhatTheOperatorRuns) {
  EXPECT_TRUE(CheckSupport(Job("{}"), Runner::kPlanning).notes.empty());
  // What has not landed otherwise is refused there too, as the operator refuses it.
  const std::string injection = Joined(CheckSupport(
      Job(R"({"spec": {"parallelism": {"workers": 2}, "data": {"stream": {"directory": "in"}, "injection": {}}}})"),
      Runner::kPlanning));
  EXPECT_NE(injection.find("spec.data.injection: is not supported yet"), std::string::npos) << injection;
  // Notes meant for edgetrain run are not its.
  const std::string cluster = Joined(CheckSupport(Job(R"({"spec": {"template": {"image": "x"}}})"), Runner::kPlanning));
  EXPECT_EQ(cluster, "");
}

// A hybrid of one worker has nothing to split, and is told so (a pipeline
// of one is refused: it needs two workers).
TEST(CapabilitiesTest, AHybridOfOneWorkerIsNoted) {
  const std::string one = Joined(
      CheckSupport(Job(R"({"spec": {"parallelism": {"mode": "hybrid", "workers": 1}}})"), Runner::kLocal));
  EXPECT_NE(one.find("spec.parallelism.mode has nothing to split over one worker, nor batches to share: it trains as "
                     "a job of one"),
            std::string::npos)
      << one;
  const std::string automatic = Joined(
      CheckSupport(Job(R"({"spec": {"parallelism": {"mode": "auto", "workers": 1}}})"), Runner::kKubernetes));
  EXPECT_NE(automatic.find("it trains as a job of one"), std::string::npos) << automatic;
  const std::string two = Joined(
      CheckSupport(Job(R"({"spec": {"parallelism": {"mode": "hybrid", "workers": 2}}})"), Runner::kLocal));
  EXPECT_EQ(two.find("nothing to split"), std::string::npos) << two;
}

TEST(CapabilitiesTest, ClusterFieldsAreNamedLocallyOnlyAndOnlyWhenWritten) {
  const TrainingJobManifest job = Job(R"({"spec": {"placement": {"allowTransient": false}, "template": {"image": "x"},
                                     "sync": {"policy": "bsp"}, "faultTolerance": {"replay": false, "replicateEvery": 50, "replicateCentralEvery": 5},
                                     "output": {"path": "/tmp/m", "volume": {"persistentVolumeClaim": {"claimName": "c"}}}}})");
  SupportCheck local = CheckSupport(job, Runner::kLocal);
  EXPECT_TRUE(local.unsupported.empty());
  std::string notes = Joined(local);
  for (const char* field : {"spec.placement applies on Kubernetes only", "spec.template applies on Kubernetes only",
                            "spec.sync has no effect on a job of one worker",
                            "spec.faultTolerance.replay applies to pipelines only",
                            "spec.faultTolerance.replicateEvery applies to pipelines only",
                            "spec.faultTolerance.replicateCentralEvery applies to pipelines only",
                            "spec.output.volume applies on Kubernetes only"}) {
    EXPECT_NE(notes.find(field), std::string::npos) << field << "\n" << notes;
  }
  EXPECT_EQ(notes.find("maxRecoveries"), std::string::npos) << "defaulted, not written: no note";
  const std::string pipeline = Joined(CheckSupport(
      Job(R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 3},
                       "faultTolerance": {"replay": false, "replicateEvery": 50}}})"),
      Runner::kLocal));
  EXPECT_EQ(pipeline.find("replay"), std::string::npos) << "edgetrain run honours it for a pipeline\n" << pipeline;
  EXPECT_EQ(pipeline.find("replicateEvery"), std::string::npos) << "and the replicas too\n" << pipeline;

  SupportCheck cluster = CheckSupport(job, Runner::kKubernetes);
  EXPECT_EQ(Joined(cluster), "note: spec.sync has no effect on a job of one worker\n");
}

// A pipeline, hybrid or auto job's devices step together on uncompressed
// gradients over batches of the whole data set: a sync policy, compression
// or partition written for it is named as not its own, everywhere (a new
// user's robot team with mode pipeline kept sign rows and a Dirichlet split
// without a word).
// On a cluster the API server fills the CRD's defaults in before the
// operator reads the job: a pipeline that named neither spec.sync nor a
// partition is not told they do not apply (every one was, a new user's trial).
TEST(CapabilitiesTest, TheDefaultsAClusterFillsInAreNotTakenForWhatTheManifestWrote) {
  const TrainingJobManifest as_written = Job(R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 3}}})");
  const TrainingJobManifest as_served = ParseTrainingJob(as_written.object.dump(), "served.yaml").value();
  ASSERT_TRUE(as_served.raw["spec"].contains("sync")) << "the defaults are in what the cluster serves";
  const std::string notes = Joined(CheckSupport(as_served, Runner::kKubernetes));
  EXPECT_EQ(notes.find("spec.sync"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("spec.data.partition"), std::string::npos) << notes;
}

TEST(CapabilitiesTest, ASplitModelsJobNamesTheDataParallelFieldsItIgnores) {
  for (const char* mode : {"pipeline", "hybrid", "auto"}) {
    const std::string text = std::string(R"({"spec": {"parallelism": {"mode": ")") + mode +
                             R"(", "workers": 4}, "sync": {"policy": "deadline", "compression": "sign"},
                             "data": {"dataset": "fashion-mnist", "partition": {"kind": "dirichlet", "alpha": 0.5}}}})";
    const TrainingJobManifest job = Job(text.c_str());
    for (Runner runner : {Runner::kLocal, Runner::kKubernetes}) {
      const std::string notes = Joined(CheckSupport(job, runner));
      EXPECT_NE(notes.find("spec.sync applies to data-parallel teams only"), std::string::npos) << mode << "\n" << notes;
      EXPECT_NE(notes.find("spec.data.partition applies to data-parallel teams only"), std::string::npos)
          << mode << "\n" << notes;
    }
  }
  const std::string team = Joined(CheckSupport(
      Job(R"({"spec": {"parallelism": {"workers": 4}, "sync": {"compression": "sign"},
                       "data": {"dataset": "fashion-mnist", "partition": {"kind": "dirichlet", "alpha": 0.5}}}})"),
      Runner::kLocal));
  EXPECT_EQ(team, "") << "a data-parallel team's own fields";
}

}  // namespace
}  // namespace edgetrain::api
