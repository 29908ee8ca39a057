#include "api/trainingjob.h"
#include "api/team_request.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace edgetrain::api {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const Json kValid = Json::parse(R"({
  "apiVersion": "edgetrain.dev/v1alpha1", "kind": "TrainingJob",
  "metadata": {"name": "ok"},
  "spec": {"model": {"name": "mlp"}, "data": {"dataset": "digits"}}
})");

// The valid manifest with a JSON merge patch applied; JSON is YAML.
std::string With(const std::string& patch) {
  Json m = kValid;
  m.merge_patch(Json::parse(patch));
  return m.dump();
}

TEST(TrainingJobTest, EveryExampleIsValid) {
  int examples = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(EDGETRAIN_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    std::string text = ReadFile(entry.path());
    if (text.find("kind: TrainingJob") == std::string::npos) continue;
    ++examples;
    auto job = ParseTrainingJob(text, entry.path().filename());
    EXPECT_TRUE(job.ok()) << entry.path() << ": " << job.status().message();
  }
  EXPECT_GE(examples, 2);
}

TEST(TrainingJobTest, AppliesTheCrdDefaults) {
  auto job = ParseTrainingJob(kValid.dump(), "ok.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->name, "ok");
  const JobSpec& s = job->spec;
  EXPECT_EQ(s.data.batch_size, 64);
  EXPECT_EQ(s.data.partition.kind, PartitionKind::kIid);
  EXPECT_EQ(s.parallelism.mode, ParallelismMode::kDataParallel);
  EXPECT_EQ(s.parallelism.workers, 1);
  EXPECT_EQ(s.parallelism.stages, "planned");
  EXPECT_FALSE(StagesFixed(s.parallelism.stages));
  EXPECT_EQ(s.sync.policy, SyncPolicy::kDeadline);
  EXPECT_EQ(s.optimizer.kind, OptimizerKind::kAdam);
  EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, 0.001);
  EXPECT_EQ(s.budget.wall_clock, std::chrono::minutes(10));
  EXPECT_EQ(s.evaluation.every_iterations, 200);
  EXPECT_EQ(s.fault_tolerance.checkpoint_every, 500);
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(job->object["spec"]["cleanPodPolicy"], "Running");
  EXPECT_FALSE(job->raw["spec"].contains("cleanPodPolicy")) << "raw keeps what was written";
}

TEST(TrainingJobTest, APipelinesStagesByHandAreKeptAsGiven) {
  auto job = ParseTrainingJob(
      With(R"({"spec": {"model": {"hidden": [64, 32, 32, 16]},
                         "parallelism": {"mode": "hybrid", "workers": 3, "stages": "0-1:0,1/2-4:2"}}})"),
      "j.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec.parallelism.stages, "0-1:0,1/2-4:2");
  EXPECT_TRUE(StagesFixed(job->spec.parallelism.stages));
}

TEST(TrainingJobTest, TheDeadlinePolicyTakesItsQuorumAndSlackOrLeavesThemToItsDefaults) {
  auto job = ParseTrainingJob(With(R"({"spec": {"parallelism": {"workers": 4},
                                       "sync": {"policy": "deadline", "compression": "int8", "quorum": 0.5,
                                                "deadlineSlack": 2}}})"),
                              "deadline.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec.sync.policy, SyncPolicy::kDeadline);
  EXPECT_EQ(job->spec.sync.compression, Compression::kInt8);
  EXPECT_EQ(job->spec.sync.quorum, 0.5);
  EXPECT_EQ(job->spec.sync.deadline_slack, 2.0);
  auto plain = ParseTrainingJob(With(R"({"spec": {"parallelism": {"workers": 4}, "sync": {"policy": "deadline"}}})"),
                                "deadline.yaml");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->spec.sync.quorum) << "unset: the policy's default (core/round_deadline.h)";
  EXPECT_FALSE(plain->spec.sync.deadline_slack);
}

TEST(TrainingJobTest, AcceptsAVggWithOrWithoutItsWidths) {
  auto given = ParseTrainingJob(
      With(R"({"spec": {"model": {"name": "vgg", "widths": [8, 8, 16, 16, 32]}, "data": {"dataset": "fashion-mnist"}}})"),
      "vgg.yaml");
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(given->spec.model.kind, ModelKind::kVgg);
  EXPECT_EQ(given->spec.model.widths, (std::vector<int>{8, 8, 16, 16, 32}));
  auto defaulted =
      ParseTrainingJob(With(R"({"spec": {"model": {"name": "vgg"}, "data": {"dataset": "fashion-mnist"}}})"), "vgg.yaml");
  ASSERT_TRUE(defaulted.ok()) << defaulted.status().ToString();
  EXPECT_TRUE(defaulted->spec.model.widths.empty()) << "the default is VggWidths', as cnn's channels are ConvChannels'";
}

TEST(TrainingJobTest, RefusesBadManifestsNamingFieldAndReason) {
  struct Case {
    std::string yaml;
    const char* error;
  } cases[] = {
      {With(R"({"spec": {"parallelism": {"workers": 0}}})"), "spec.parallelism.workers: must be >= 1 (got 0)"},
      {With(R"({"spec": {"parallelism": {"workers": 2000}}})"), "spec.parallelism.workers: must be <= 1024 (got 2000)"},
      {With(R"({"spec": {"parallelism": {"workers": "four"}}})"),
       "spec.parallelism.workers: must be an integer (got string \"four\")"},
      // A layout by hand is judged as the manifest is read: its layers against
      // a built-in model's, which its spec tells (a module's, only loading it).
      {With(R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 2, "stages": "0-2:0/3-4:2"}}})"),
       "spec.parallelism.stages: \"2\" is not a rank of the job's 2 devices (0-1)"},
      {With(R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 2, "stages": "0-1:0/2-4:1"}}})"),
       "spec.parallelism.stages: the model has layers 0-2 (edgetrain plan lists them)"},
      {With(R"({"spec": {"model": {"name": "vgg", "widths": [8, 8, 16, 16]},
                         "parallelism": {"mode": "pipeline", "workers": 2, "stages": "0-1:0/2-3:1"}}})"),
       "spec.parallelism.stages: layer 4 is in no stage"},
      {With(R"({"spec": {"parallelism": {"mode": "hybrid", "workers": 2, "stages": "Even"}}})"),
       "spec.parallelism.stages: expected planned, even, data-parallel, or a layout such as 0-1:0,1/2:2, got "
       "\"Even\" (did you mean even?)"},
      // Mode pipeline gives each stage one device: a group is a hybrid's.
      {With(R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 3, "stages": "0-2:0/3-4:1,2"}}})"),
       "spec.parallelism.stages: stage 2 has 2 devices, and mode pipeline gives each stage one; mode hybrid lets a "
       "group of devices share a stage"},
      {With(R"({"spec": {"parallelism": {"mode": "pipeline", "workers": 3, "stages": "data-parallel"}}})"),
       "spec.parallelism.stages: data-parallel is one stage on every device, which mode pipeline does not train"},
      {With(R"({"spec": {"parallelism": {"workers": 2, "stages": "even"}}})"),
       "spec.parallelism: stages applies only to a pipeline, hybrid or auto job of 2 or more workers"},
      {With(R"({"spec": {"parallelism": {"mode": "auto", "workers": 1, "stages": "even"}}})"),
       "spec.parallelism: stages applies only to a pipeline, hybrid or auto job of 2 or more workers"},
      {With(R"({"spec": {"modle": {"name": "mlp"}}})"), "spec.modle: unknown field (did you mean \"model\"?)"},
      {With(R"({"spec": {"model": {"name": "resnet"}}})"), "spec.model.name: must be one of \"mlp\", \"cnn\", \"vgg\" (got \"resnet\")"},
      {With(R"({"spec": {"model": {"name": "vggg"}}})"),
       "spec.model.name: must be one of \"mlp\", \"cnn\", \"vgg\" (got \"vggg\") (did you mean \"vgg\"?)"},
      {With(R"({"spec": {"data": {"dataset": "cifar10"}}})"),
       "spec.data.dataset: must be one of \"fashion-mnist\", \"digits\" (got \"cifar10\")"},
      {With(R"({"spec": {"model": null}})"), "spec.model: required field is missing"},
      {With(R"({"spec": null})"), "spec: required field is missing"},
      {With(R"({"spec": {"model": {"hidden": []}}})"), "spec.model.hidden: must have at least 1 item(s) (got 0)"},
      {With(R"({"spec": {"model": {"hidden": [0]}}})"), "spec.model.hidden[0]: must be >= 1 (got 0)"},
      {With(R"({"spec": {"optimizer": {"learningRate": 0}}})"), "spec.optimizer.learningRate: must be > 0 (got 0)"},
      {With(R"({"spec": {"budget": {"targetAccuracy": 1.5}}})"), "spec.budget.targetAccuracy: must be <= 1 (got 1.5)"},
      {With(R"({"spec": {"budget": {"wallClock": "ten minutes"}}})"),
       "spec.budget.wallClock: must be a duration such as 500ms, 30s, 5m or 1h30m (got \"ten minutes\")"},
      {With(R"({"spec": {"budget": {"wallClock": "200000h"}}})"),
       "spec.budget.wallClock: invalid duration \"200000h\": longer than edgetrain counts (at most 100000h, 11 years)"},
      {With(R"({"spec": {"budget": {"wallClock": 120}}})"),
       "spec.budget.wallClock: must be a string (got integer 120); a duration takes its unit: write \"120s\" for 120 seconds"},
      {With(R"({"spec": {"suspend": "no"}})"), "spec.suspend: must be a boolean (got string \"no\")"},
      {With(R"({"spec": {"sync": {"policy": "async"}}})"), "spec.sync.policy: must be one of \"rog\", \"bsp\", \"ssp\""},
      {With(R"({"spec": {"sync": {"policy": "deadline", "quorum": 0}}})"), "spec.sync.quorum: must be > 0 (got 0)"},
      {With(R"({"spec": {"sync": {"policy": "deadline", "quorum": 1.5}}})"), "spec.sync.quorum: must be <= 1 (got 1.5)"},
      {With(R"({"spec": {"sync": {"policy": "deadline", "deadlineSlack": -1}}})"),
       "spec.sync.deadlineSlack: must be >= 0 (got -1)"},
      {With(R"({"apiVersion": "edgetrain.dev/v1"})"), "apiVersion: must be \"edgetrain.dev/v1alpha1\" (got \"edgetrain.dev/v1\")"},
      {With(R"({"kind": "Job"})"), "kind: must be \"TrainingJob\" (got \"Job\")"},
      {With(R"({"kind": "ClusterProfile"})"),
       "kind: must be \"TrainingJob\" (got \"ClusterProfile\"); a ClusterProfile is given with --nodes, after the job"},
      {With(R"({"metadata": null})"), "metadata: required field is missing"},
      {With(R"({"metadata": {"name": null}})"), "metadata.name: required field is missing"},
      // Typed by YAML, and there: not missing (a user's trial).
      {With(R"({"metadata": {"name": 123}})"), "metadata.name: must be a string (got 123: YAML reads an unquoted"},
      {With(R"({"metadata": {"name": false}})"), "metadata.name: must be a string (got false"},
      {With(R"({"spec": {"model": []}})"), "spec.model: must be an object (got a list)"},
      {With(R"({"spec": {"model": {"hidden": {"a": 1}}}})"), "spec.model.hidden: must be a list (got an object)"},
      {With(R"({"metadata": {"name": "Fashion_MLP"}})"), "metadata.name: must be lower-case letters"},
      // The API server refuses what ObjectMeta has not; a typo ran the job in another namespace (a user's trial).
      {With(R"({"metadata": {"name": "ok", "nmespace": "prod"}})"),
       "metadata.nmespace: unknown field (did you mean \"namespace\"?)"},
      {With(R"({"spec": {"model": {"name": "cnn", "channels": [8, 8, 8, 8]}}})"),
       "spec.model.channels: 4 conv blocks would halve the 8x8 images below 1x1; use at most 3"},
      {With(R"({"spec": {"model": {"name": "vgg"}}})"),
       "spec.model.widths: 8 convs make 4 pooled blocks (a 2x2 max-pool after every two convs), which would halve the "
       "8x8 images below 1x1; use at most 6"},
      {With(R"({"spec": {"model": {"name": "vgg", "widths": [16, 0]}}})"), "spec.model.widths[1]: must be >= 1 (got 0)"},
      {With(R"({"spec": {"model": {"name": "vgg", "widths": [16, -4]}}})"), "spec.model.widths[1]: must be >= 1 (got -4)"},
      {With(R"({"spec": {"model": {"name": "vgg", "widths": []}}})"), "spec.model.widths: must have at least 1 item(s) (got 0)"},
      {With(R"({"spec": {"model": {"name": "mlp", "widths": [8]}}})"), "spec.model: widths applies only to the vgg model"},
      {With(R"({"spec": {"model": {"name": null, "torchscript": {"path": "m.pt", "inputShape": [1, 28, 28]}}}})"),
       "spec.model.torchscript.inputShape: [1, 28, 28] (channels, height, width), differs from the data's [1, 8, 8]"},
      // A shape of one number, as written and as read (it was said as [1, 1, 64] only).
      {With(R"({"spec": {"model": {"name": null, "torchscript": {"path": "m.pt", "inputShape": [64]}}}})"),
       "spec.model.torchscript.inputShape: [64], read as [1, 1, 64] (channels, height, width), differs from the data's "
       "[1, 8, 8]"},
      {With(R"({"spec": {"model": {"name": null, "torchscript": {"path": "m.pt", "classes": 5}}}})"),
       "spec.model.torchscript.classes: 5 differs from the data's 10 classes"},
      {With(R"({"spec": {"model": {"name": null, "torchscript": {"path": ""}}}})"),
       "spec.model.torchscript.path: must be at least 1 characters long"},
      {With(R"({"spec": {"data": {"dataset": null, "format": "hdf5"}}})"), "spec.data.format: must be one of \"idx\""},
      {With(R"({"spec": {"data": {"dataset": null, "format": "csv", "train": {"path": "a.csv"}, "test": {"path": "b.csv"},
                                  "inputShape": [1, 1, 1, 4], "classes": 2}}})"),
       "spec.data.inputShape: must have at most 3 item(s) (got 4)"},
      {With(R"({"spec": {"data": {"dataset": null, "format": "csv", "train": {"path": "a.csv"}, "test": {"path": "b.csv"},
                                  "inputShape": [4], "classes": 1}}})"),
       "spec.data.classes: must be >= 2 (got 1)"},
      {With(R"({"spec": {"model": {"name": "cnn"}, "data": {"dataset": null, "format": "csv", "train": {"path": "a.csv"},
                                  "test": {"path": "b.csv"}, "inputShape": [12], "classes": 3}}})"),
       "spec.model.name: cnn takes images, and the data's samples are 1 x 1 x 12 (spec.data.inputShape, as channels x "
       "height x width): a side of 1 leaves its 2x2 pools nothing to halve"},
      // Requests the pods would be refused with (a new user's "lots" went Failed
      // on the cluster with no reason given, and edgetrain validate said valid).
      {With(R"({"spec": {"template": {"resources": {"requests": {"cpu": "lots"}}}}})"),
       "spec.template.resources.requests.cpu: must be a quantity of 0 or more, such as 500m, 2, 256Mi or 1.5Gi (got "
       "\"lots\")"},
      {With(R"({"spec": {"template": {"resources": {"requests": {"cpu": "-1"}}}}})"),
       "spec.template.resources.requests.cpu: must be a quantity of 0 or more"},
      {With(R"({"spec": {"template": {"resources": {"limits": {"memory": -1}}}}})"),
       "spec.template.resources.limits.memory: must be >= 0 (got -1)"},
      {With(R"({"spec": {"template": {"resources": {"requests": {"memory": "1e30"}}}}})"),
       "spec.template.resources.requests.memory: quantity \"1e30\""},
      {With(R"({"spec": {"template": {"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}}}}})"),
       "spec.template.resources.requests.cpu: must be no more than its limit, 1500m (got 2)"},
      // A name the Pod API does not take (a typo, placed and its pods made, where a cluster refuses them).
      {With(R"({"spec": {"template": {"resources": {"requests": {"cpu": "500m", "cpux": 1}}}}})"),
       "spec.template.resources.requests.cpux: not a resource a pod asks for: cpu, memory, ephemeral-storage, "
       "hugepages-<size>, or an extended resource by its qualified name, such as nvidia.com/gpu (did you mean "
       "\"cpu\"?)"},
      // Extended resources as the Pod API takes them: whole, never overcommitted.
      {With(R"({"spec": {"template": {"resources": {"requests": {"nvidia.com/gpu": 1}}}}})"),
       "spec.template.resources.requests.nvidia.com/gpu: needs limits.nvidia.com/gpu too, equal to it"},
      {With(R"({"spec": {"template": {"resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}}}}})"),
       "spec.template.resources.requests.nvidia.com/gpu: must equal its limit, 2 (got 1)"},
      {With(R"({"spec": {"template": {"resources": {"limits": {"nvidia.com/gpu": "500m"}}}}})"),
       "spec.template.resources.limits.nvidia.com/gpu: must be a whole number"},
      // Past an int, narrowed in silence: 4294967297 checkpointed every step.
      {With(R"({"spec": {"faultTolerance": {"checkpointEvery": 4294967297}}})"),
       "spec.faultTolerance.checkpointEvery: must be <= 2147483647 (got 4294967297)"},
      {With(R"({"spec": {"evaluation": {"everySeconds": 1e10}}})"),
       "spec.evaluation.everySeconds: must be <= 360000000 (got 10000000000)"},
      {"", "job.yaml: the manifest is empty; expected a TrainingJob with apiVersion: edgetrain.dev/v1alpha1"},
      {"# only a comment\n", "job.yaml: the manifest is empty"},
      {kValid.dump() + "\n---\n" + kValid.dump(), "job.yaml: expected one TrainingJob, found 2 documents"},
      {"- a\n- b\n", "job.yaml: expected a mapping (a TrainingJob), not a list"},
      {"apiVersion: edgetrain.dev/v1alpha1\nkind: [TrainingJob\n", "job.yaml:3:1:"},
  };
  for (const auto& c : cases) {
    auto job = ParseTrainingJob(c.yaml, "job.yaml");
    ASSERT_FALSE(job.ok()) << c.yaml;
    EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(job.status().message().find(c.error), std::string::npos)
        << "wanted: " << c.error << "\ngot:    " << job.status().message();
  }
}

TEST(TrainingJobTest, TakesRequestsAndLimitsAsThePodApiDoes) {
  auto job = ParseTrainingJob(With(R"({"spec": {"template": {"resources": {
                                 "requests": {"cpu": "500m", "memory": "256Mi", "nvidia.com/gpu": 1},
                                 "limits": {"cpu": 1, "memory": "0.5Gi", "nvidia.com/gpu": "1"}}}}})"),
                              "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  // Kept as written, a quantity a string or a number, for the pods' spec.
  const auto& resources = job->object["spec"]["template"]["resources"];
  EXPECT_EQ(resources["requests"]["cpu"], "500m");
  EXPECT_EQ(resources["requests"]["memory"], "256Mi");
  EXPECT_EQ(resources["requests"]["nvidia.com/gpu"], 1);
  EXPECT_EQ(resources["limits"]["cpu"], 1);
  EXPECT_EQ(resources["limits"]["memory"], "0.5Gi");
  EXPECT_EQ(resources["limits"]["nvidia.com/gpu"], "1");
  // And read as placement counts them.
  StatusOr<TeamRequest> request = TeamRequestOf(*job, PodDefaults{});
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->worker_requests.cpu_millis, 500);
  EXPECT_EQ(request->worker_requests.memory_bytes, int64_t{256} << 20);
}

TEST(TrainingJobTest, OwnModelAndDataDecodeAndTheirRelativePathsAreTheManifestFolders) {
  auto job = ParseTrainingJob(With(R"({"spec": {
      "model": {"name": null, "torchscript": {"path": "models/net.pt", "inputShape": [3, 32, 32], "classes": 4}},
      "data": {"dataset": null, "format": "npy", "inputShape": [3, 32, 32], "classes": 4,
               "train": {"features": "x_train.npy", "labels": "/data/y_train.npy"},
               "test": {"features": "../x_test.npy", "labels": "y_test.npy"}}}})"),
                              "own.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec.model.kind, ModelKind::kTorchScript);
  EXPECT_EQ(job->spec.model.torchscript_path, "models/net.pt");
  ASSERT_TRUE(job->spec.data.files.has_value());
  EXPECT_EQ(job->spec.data.files->format, DataFormat::kNpy);
  EXPECT_EQ(job->spec.data.files->input_shape, (std::vector<int>{3, 32, 32}));
  EXPECT_EQ(DescribeData(job->spec.data), "npy data (x_train.npy)");

  ASSERT_TRUE(ResolveFilePaths(*job, "/home/me/jobs").ok());
  EXPECT_EQ(job->spec.model.torchscript_path, "/home/me/jobs/models/net.pt");
  EXPECT_EQ(job->spec.data.files->train.features, "/home/me/jobs/x_train.npy");
  EXPECT_EQ(job->spec.data.files->train.labels, "/data/y_train.npy") << "absolute paths stay";
  EXPECT_EQ(job->spec.data.files->test.features, "/home/me/x_test.npy");
  // What the agents are handed is the object's spec: it says the same.
  auto handed = DecodeJobSpec(job->SpecJson());
  ASSERT_TRUE(handed.ok()) << handed.status().ToString();
  EXPECT_EQ(handed->model.torchscript_path, "/home/me/jobs/models/net.pt");
  EXPECT_EQ(handed->data.files->test.labels, "/home/me/jobs/y_test.npy");
  EXPECT_TRUE(handed->data.files->test.path.empty());
}

// A manifest's text is UTF-8, but the folder it lies in may not be, and the
// resolved paths go to the agents in JSON (`edgetrain run --output` in a
// Latin-1 folder aborted on the encoder's exception).
TEST(TrainingJobTest, APathResolvedIntoAFolderThatIsNotUtf8IsRefusedByItsField) {
  auto job = ParseTrainingJob(With(R"({"spec": {"model": {"name": null, "torchscript": {"path": "net.pt"}},
      "data": {"dataset": null, "format": "csv", "inputShape": [4], "classes": 3,
               "train": {"path": "train.csv"}, "test": {"path": "/data/test.csv"}}}})"),
                              "own.yaml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const Status resolved = ResolveFilePaths(*job, "/home/caf\xE9");
  EXPECT_EQ(resolved.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(resolved.message().find("spec.model.torchscript.path: /home/caf\\xE9/net.pt is not UTF-8"), std::string::npos)
      << resolved.message();
  EXPECT_NE(resolved.message().find("spec.data.train.path: /home/caf\\xE9/train.csv is not UTF-8"), std::string::npos);
  EXPECT_EQ(resolved.message().find("spec.data.test.path"), std::string::npos) << "an absolute path is not the folder's";
}

TEST(TrainingJobTest, OnAClusterRelativePathsAreInTheDataVolumeOrTheModelsConfigMap) {
  const std::string data = R"("data": {"dataset": null, "format": "csv", "inputShape": [4], "classes": 3,
               "volume": {"persistentVolumeClaim": {"claimName": "robot-frames"}},
               "train": {"path": "frames/train.csv"}, "test": {"path": "/opt/frames/test.csv"}})";
  auto on_volume = ParseTrainingJob(
      With(R"({"spec": {"model": {"name": null, "torchscript": {"path": "net.pt"}}, )" + data + "}}"), "own.yaml");
  ASSERT_TRUE(on_volume.ok()) << on_volume.status().ToString();
  ASSERT_TRUE(ResolveClusterPaths(*on_volume).ok());
  EXPECT_EQ(on_volume->spec.model.torchscript_path, "/data/net.pt");
  EXPECT_EQ(on_volume->spec.data.files->train.path, "/data/frames/train.csv");
  EXPECT_EQ(on_volume->spec.data.files->test.path, "/opt/frames/test.csv") << "the image's own file";

  auto in_config_map = ParseTrainingJob(
      With(R"({"spec": {"model": {"name": null, "torchscript": {"path": "net.pt", "configMap": "small-net"}}, )" +
           data + "}}"),
      "own.yaml");
  ASSERT_TRUE(in_config_map.ok()) << in_config_map.status().ToString();
  ASSERT_TRUE(ResolveClusterPaths(*in_config_map).ok());
  EXPECT_EQ(in_config_map->spec.model.torchscript_path, "/model/net.pt");
  EXPECT_EQ(in_config_map->spec.data.files->train.path, "/data/frames/train.csv");
}

TEST(TrainingJobTest, ReportsEveryStructuralErrorAtOnce) {
  auto job = ParseTrainingJob(With(R"({"spec": {"parallelism": {"workers": 0}, "seed": -1, "colour": "red"}})"), "j.yaml");
  ASSERT_FALSE(job.ok());
  const std::string m = job.status().message();
  EXPECT_NE(m.find("spec.parallelism.workers: must be >= 1 (got 0)"), std::string::npos) << m;
  EXPECT_NE(m.find("spec.seed: must be >= 0 (got -1)"), std::string::npos) << m;
  EXPECT_NE(m.find("spec.colour: unknown field"), std::string::npos) << m;
}

// Values the CRD lets through at any length: judged in time linear in them,
// and quoted in part. std::regex recursed once a character, and 26,000
// characters overflowed the stack, in edgetrain and in the operator, which
// crashed at every restart while the job existed (a user's trial).
TEST(TrainingJobTest, ValuesTensOfThousandsOfCharactersLongAreRefusedNotACrash) {
  const std::string digits(40000, '1');
  auto grace = ParseTrainingJob(With(R"({"spec": {"faultTolerance": {"nodeLossGrace": ")" + digits + R"(s"}}})"),
                                "j.yaml");
  ASSERT_FALSE(grace.ok());
  EXPECT_NE(grace.status().message().find("spec.faultTolerance.nodeLossGrace: invalid duration \"1111"),
            std::string::npos) << grace.status().message().substr(0, 400);
  EXPECT_NE(grace.status().message().find("(40,001 characters)"), std::string::npos);
  const std::string limits = R"({"spec": {"template": {"resources": {"limits": {"cpu": ")" + digits + R"(m"}}}}})";
  auto cpu = ParseTrainingJob(With(limits), "j.yaml");
  EXPECT_FALSE(cpu.ok());
  auto name = ParseTrainingJob(With(R"({"metadata": {"name": ")" + std::string(30000, 'a') + R"("}})"), "j.yaml");
  ASSERT_FALSE(name.ok());
  EXPECT_LT(name.status().message().size(), 400u) << "the name is quoted in part";
}

// A user's module declared unlike its data: each misfit said at once, with
// its line (the classes were said only once the inputShape was mended, and
// with no line: a user's trial).
TEST(TrainingJobTest, AModulesMisfitsToItsDataAreSaidAtOnceWithTheirLines) {
  const std::string yaml =
      "apiVersion: edgetrain.dev/v1alpha1\n"
      "kind: TrainingJob\n"
      "metadata: {name: mine}\n"
      "spec:\n"
      "  model:\n"
      "    torchscript:\n"
      "      path: net.pt\n"
      "      inputShape: [21]\n"
      "      classes: 5\n"
      "  data: {dataset: digits}\n";
  auto job = ParseTrainingJob(yaml, "mine.yaml");
  ASSERT_FALSE(job.ok());
  const std::string m = job.status().message();
  EXPECT_NE(m.find("mine.yaml:8: spec.model.torchscript.inputShape: [21], read as [1, 1, 21] (channels, height, "
                   "width), differs from the data's [1, 8, 8]"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("mine.yaml:9: spec.model.torchscript.classes: 5 differs from the data's 10 classes"),
            std::string::npos)
      << m;
}

// A field's error names the line it is written on, as a syntax error does;
// a missing field's, the line of the field it belongs under.
TEST(TrainingJobTest, AFieldsErrorNamesTheLineItIsWrittenOn) {
  const std::string yaml =
      "apiVersion: edgetrain.dev/v1alpha1\n"
      "kind: TrainingJob\n"
      "metadata: {name: typo}\n"
      "spec:\n"
      "  model: {name: mlp}\n"
      "  data:\n"
      "    dataset: digits\n"
      "    batchSzie: 64\n"
      "  parallelism:\n"
      "    workers: \"2\"\n"
      "  budget: {}\n"
      "  template:\n"
      "    tolerations:\n"
      "      - {key: a}\n"
      "      - {key: b, effect: Sometimes}\n";
  auto job = ParseTrainingJob(yaml, "typo.yaml");
  ASSERT_FALSE(job.ok());
  const std::string m = job.status().message();
  EXPECT_NE(m.find("typo.yaml:8: spec.data.batchSzie: unknown field (did you mean \"batchSize\"?)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("typo.yaml:10: spec.parallelism.workers: must be an integer"), std::string::npos) << m;
  EXPECT_NE(m.find("typo.yaml:15: spec.template.tolerations[1].effect: "), std::string::npos) << m;
  // The operator's manifest, the API server's object as one line of JSON,
  // has no lines worth saying.
  auto from_api = ParseTrainingJob(With(R"({"spec": {"modle": {"name": "mlp"}}})"), "default/typo");
  ASSERT_FALSE(from_api.ok());
  EXPECT_EQ(from_api.status().message().rfind("spec.modle: unknown field", 0), 0u) << from_api.status().message();
}

}  // namespace
}  // namespace edgetrain::api
