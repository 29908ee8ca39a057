#include "core/parallelism_choice.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

LayerCost Layer(const std::string& name, double work_ms, int64_t parameter_bytes, int64_t activation_bytes) {
  return {name, work_ms / 3000, 2 * work_ms / 3000, parameter_bytes, activation_bytes, {}, 0, ""};
}

// Light early layers heavy on activations, heavy late ones light on them (a
// vgg's shape), on four devices 10:5:2:1 whose links carry `mbps` each.
PipelineProblem Site(double mbps) {
  PipelineProblem p;
  p.layers = {Layer("conv1", 2, 2e3, 1e5), Layer("conv2", 8, 4e4, 1e5), Layer("conv3", 8, 1e5, 5e4),
              Layer("conv4", 8, 3e5, 2e4), Layer("conv5", 6, 1e6, 8e3), Layer("fc", 1, 4e6, 40)};
  const double bytes = mbps * 125000;
  for (auto [name, speed] : {std::pair{"fast", 10.0}, {"mid", 5.0}, {"slow", 2.0}, {"slowest", 1.0}}) {
    p.devices.push_back({name, speed, 0, bytes, bytes});
  }
  p.batch_size = 32;
  return p;
}

// A device whose link is all but down holds data parallelism to next to
// nothing: said as that, not as a ratio against "0 samples/s" (a new user's
// trial read "129378.7x").
TEST(ParallelismChoiceTest, DataParallelismHeldToNothingByALinkThatIsDownIsSaidSoNotAsARatio) {
  PipelineProblem p = Site(100);
  p.devices[3].up_bytes_per_s = p.devices[3].down_bytes_per_s = 1;
  const auto choice = ChooseParallelism(p, ParallelismMode::kAuto);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_LT(choice->data_parallel.cost.samples_per_s, 0.5);
  EXPECT_NE(choice->reason.find("where data parallelism on the same devices and links trains next to nothing"),
            std::string::npos)
      << choice->reason;
  EXPECT_EQ(choice->reason.find("x data parallelism's"), std::string::npos) << choice->reason;
}

TEST(ParallelismChoiceTest, AutoSplitsTheModelWhenLinksAreTooThinToSyncIt) {
  const PipelineProblem p = Site(100);
  const auto choice = ChooseParallelism(p, ParallelismMode::kAuto);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_GT(choice->planned.plan.stages.size(), 1u) << DescribePlan(p, choice->planned.plan);
  EXPECT_NE(choice->chosen, ParallelismMode::kDataParallel);
  EXPECT_EQ(choice->chosen, choice->plan_mode);
  EXPECT_GT(choice->planned.plan.cost.samples_per_s, choice->data_parallel.cost.samples_per_s);
  EXPECT_NE(choice->reason.find("x data parallelism's samples/s on the same devices and links"), std::string::npos)
      << choice->reason;
  EXPECT_EQ(choice->even_split.stages.size(), 4u);
  EXPECT_EQ(choice->data_parallel.stages.size(), 1u);
  ASSERT_EQ(choice->fastest_alone.stages.size(), 1u);
  EXPECT_EQ(choice->fastest_alone.stages[0].devices, std::vector<int>{0});
  // 33 ms of work a sample at speed 1, on 18 units of speed.
  EXPECT_DOUBLE_EQ(choice->ideal_samples_per_s, 18 / 0.033);
  EXPECT_NEAR(choice->fastest_alone.cost.samples_per_s, 10 / 0.033, 1e-9);
  for (const PipelinePlan* plan : {&choice->planned.plan, &choice->even_split, &choice->data_parallel,
                                   &choice->fastest_alone}) {
    EXPECT_LE(plan->cost.samples_per_s, choice->ideal_samples_per_s * (1 + 1e-12));
  }
}

// What a split is against data parallelism, as run, plan and the operator's
// status say it, with why data parallelism's prediction cannot run where it
// does not fit (the operator's status had left that out).
TEST(ParallelismChoiceTest, ASplitIsSaidAgainstDataParallelismAndWhyThatDoesNotFit) {
  PipelineProblem p = Site(100);
  auto choice = ChooseParallelism(p, ParallelismMode::kAuto);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  const std::string fits = AgainstDataParallelism(p, choice->planned.plan, *choice);
  EXPECT_TRUE(fits.starts_with(" against data parallelism's ")) << fits;
  EXPECT_TRUE(fits.ends_with(" as a pipeline runs it, on the same devices and links")) << fits;
  EXPECT_EQ(AgainstDataParallelism(p, choice->data_parallel, *choice), "") << "data parallelism itself";
  p.devices[3].memory_bytes = 1'000'000;  // the whole model's state is about 22 MB
  choice = ChooseParallelism(p, ParallelismMode::kAuto);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  const std::string misfit = AgainstDataParallelism(p, choice->planned.plan, *choice);
  EXPECT_NE(misfit.find(" as a pipeline runs it, on the same devices and links, which does not fit: as one stage of "
                        "the whole model on every device, "),
            std::string::npos)
      << misfit;
}

TEST(ParallelismChoiceTest, AutoKeepsDataParallelismWhereNoSplitBeatsIt) {
  const PipelineProblem p = Site(0);  // links not limited: syncing costs nothing
  const auto choice = ChooseParallelism(p, ParallelismMode::kAuto);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_EQ(choice->chosen, ParallelismMode::kDataParallel);
  EXPECT_EQ(choice->plan_mode, ParallelismMode::kDataParallel);
  EXPECT_NE(choice->reason.find("no split is predicted faster than data parallelism"), std::string::npos)
      << choice->reason;
}

TEST(ParallelismChoiceTest, PipelineGivesEveryStageOneDeviceAndHybridMayGroupThem) {
  const PipelineProblem p = Site(100);
  const auto pipeline = ChooseParallelism(p, ParallelismMode::kPipeline);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().ToString();
  EXPECT_EQ(pipeline->chosen, ParallelismMode::kPipeline);
  for (const PipelineStage& s : pipeline->planned.plan.stages) EXPECT_EQ(s.devices.size(), 1u);
  EXPECT_GE(pipeline->planned.plan.cost.samples_per_s, pipeline->even_split.cost.samples_per_s);

  const auto hybrid = ChooseParallelism(p, ParallelismMode::kHybrid);
  ASSERT_TRUE(hybrid.ok());
  EXPECT_EQ(hybrid->chosen, ParallelismMode::kHybrid);
  EXPECT_GE(hybrid->planned.plan.cost.samples_per_s, pipeline->planned.plan.cost.samples_per_s)
      << "hybrid plans include every plain pipeline";
}

TEST(ParallelismChoiceTest, ModeOfSaysWhatAPlanIs) {
  const PipelineProblem p = Site(100);
  auto plan = [](std::vector<PipelineStage> stages) { return PipelinePlan{std::move(stages), 1, 32, {}}; };
  EXPECT_EQ(ModeOf(p, plan({{0, 6, {0, 1, 2, 3}}})), ParallelismMode::kDataParallel);
  EXPECT_EQ(ModeOf(p, plan({{0, 6, {0}}})), ParallelismMode::kPipeline) << "the fastest device alone";
  EXPECT_EQ(ModeOf(p, plan({{0, 3, {0}}, {3, 6, {2}}})), ParallelismMode::kPipeline);
  EXPECT_EQ(ModeOf(p, plan({{0, 3, {0, 1}}, {3, 6, {2}}})), ParallelismMode::kHybrid);
  EXPECT_EQ(ModeOf(p, plan({{0, 6, {0, 1}}})), ParallelismMode::kHybrid) << "one stage on some of the devices";
}

TEST(ParallelismChoiceTest, HowChosenNamesThePlanByItsShape) {
  ParallelismChoice choice;
  choice.asked = ParallelismMode::kAuto;
  choice.chosen = ParallelismMode::kPipeline;
  choice.planned.plan.stages = {{0, 3, {0}}, {3, 6, {1}}};
  EXPECT_EQ(HowChosen(choice), "auto picks pipeline");
  choice.planned.plan.stages = {{0, 6, {0}}};
  EXPECT_EQ(HowChosen(choice), "auto picks one device (the whole model as one stage)") << "nothing split";
  choice.asked = ParallelismMode::kHybrid;
  choice.plan_mode = ParallelismMode::kHybrid;
  choice.planned.plan.stages = {{0, 3, {0, 1}}, {3, 6, {2}}};
  EXPECT_EQ(HowChosen(choice), "hybrid as asked");
  choice.plan_mode = ParallelismMode::kPipeline;  // one device a stage
  choice.planned.plan.stages = {{0, 3, {0}}, {3, 6, {1}}};
  EXPECT_EQ(HowChosen(choice), "hybrid as asked (planned as pipeline)");
  // Asked for a split, planned on one device: not "as asked" alone.
  choice.asked = ParallelismMode::kPipeline;
  choice.planned.plan.stages = {{0, 6, {1}}};
  EXPECT_EQ(HowChosen(choice), "pipeline as asked (planned as one device: the whole model as one stage)");
}

TEST(ParallelismChoiceTest, DataParallelIsNotThePlannersAndMemoryMayHoldNoPlan) {
  EXPECT_EQ(ChooseParallelism(Site(100), ParallelismMode::kDataParallel).status().code(), StatusCode::kInvalidArgument);
  PipelineProblem tight = Site(100);
  for (auto& d : tight.devices) d.memory_bytes = 1000;
  EXPECT_EQ(ChooseParallelism(tight, ParallelismMode::kAuto).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ChooseParallelism(tight, ParallelismMode::kPipeline).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ParallelismChoiceTest, AStageLayoutGivenByHandIsReadOrRefusedSayingWhy) {
  const PipelineProblem site = Site(100);  // 6 layers, 4 devices
  auto stages = ParseStageLayout("0-3:0,1/4-5:2", site);
  ASSERT_TRUE(stages.ok()) << stages.status().ToString();
  ASSERT_EQ(stages->size(), 2u);
  EXPECT_EQ((*stages)[0].first_layer, 0);
  EXPECT_EQ((*stages)[0].end_layer, 4);
  EXPECT_EQ((*stages)[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ((*stages)[1].first_layer, 4);
  EXPECT_EQ((*stages)[1].end_layer, 6);
  EXPECT_EQ((*stages)[1].devices, (std::vector<int>{2}));
  auto one_layer_each = ParseStageLayout("0:3/1-5:0", site);
  ASSERT_TRUE(one_layer_each.ok()) << one_layer_each.status().ToString();
  EXPECT_EQ((*one_layer_each)[0].end_layer, 1);
  EXPECT_TRUE(NamesAPlan("even"));
  EXPECT_FALSE(NamesAPlan("0-5:0"));
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"sideways", "expected planned, even, data-parallel, or a layout such as 0-1:0,1/2:2, got \"sideways\""},
      {"evn", "got \"evn\" (did you mean even?)"},
      {"dataParallel", "got \"dataParallel\" (did you mean data-parallel?)"},
      {"0-3:0/5:1", "stage 2 must begin at layer 4, the one after layer 3, where the one before ends"},
      {"1-5:0", "stage 1 must begin at layer 0"},
      {"0-3:0", "layers 4-5 are in no stage"},
      {"0-9:0", "the model has layers 0-5"},
      {"0-3:0,0/4-5:1", "rank 0 is twice in stage 1"},
      {"0-3:0/4-5:0", "rank 0 is in stage 1 and stage 2; a device holds one stage's layers"},
      {"0-3:0/4-5:01", "\"01\" is not a rank of the job's"},
      {"0-3:4/4-5:1", "\"4\" is not a rank of the job's 4 devices (0-3)"},
      {"0-3:/4-5:1", "\"\" is not a rank"},
      {"a-3:0/4-5:1", "\"a-3\" is not layers"},
      {"3-2:0", "stage 1 must begin at layer 0"},
      {"0-2:0/3-2:1", "end no earlier than it begins"},
      {"0-5:0/", "stage 2 is empty"},
      {"0-4:0,1//5:2", "stage 2 is empty"},
      {"0-1234567:0", "\"0-1234567\" is not layers"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseStageLayout(c.text, site);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_NE(parsed.status().message().find(c.error), std::string::npos)
        << c.text << ": " << parsed.status().message();
    // Before the layers are counted, all but their range is judged alike.
    const std::string error = c.error;
    if (error.find("in no stage") != std::string::npos || error.find("the model has") != std::string::npos) {
      EXPECT_TRUE(ParseStageLayout(c.text, std::nullopt, 4).ok()) << c.text;
    } else {
      auto early = ParseStageLayout(c.text, std::nullopt, 4);
      ASSERT_FALSE(early.ok()) << c.text;
      EXPECT_EQ(early.status().message(), parsed.status().message());
    }
  }
}

}  // namespace
}  // namespace edgetrain
