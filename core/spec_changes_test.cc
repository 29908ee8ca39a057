#include "core/spec_changes.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(SpecChangesTest, SameSpecsChangeNothing) {
  const char* spec = R"({"optimizer": {"name": "adam", "learningRate": 0.001}, "budget": {"epochs": 3}})";
  EXPECT_TRUE(SpecChanges(spec, spec).empty());
}

TEST(SpecChangesTest, EachChangedFieldByItsPathWithBothValues) {
  const auto changes = SpecChanges(
      R"({"optimizer": {"name": "adam", "learningRate": 0.001}, "budget": {"epochs": 3}, "data": {"dataset": "digits"}})",
      R"({"optimizer": {"name": "sgd", "learningRate": 0.002}, "budget": {"wallClock": "60s"}, "data": {"dataset": "digits"}})");
  EXPECT_EQ(changes, (std::vector<std::string>{"spec.budget.epochs: 3 -> (none)",
                                               "spec.budget.wallClock: (none) -> 60s",
                                               "spec.optimizer.learningRate: 0.001 -> 0.002",
                                               "spec.optimizer.name: adam -> sgd"}));
}

TEST(SpecChangesTest, ASectionAddedOrTakenAwayIsSaidFieldByField) {
  EXPECT_EQ(SpecChanges(R"({"data": {"dataset": "digits"}})",
                        R"({"data": {"dataset": "digits"}, "injection": {"batchShare": 0.5, "every": 2}})"),
            (std::vector<std::string>{"spec.injection.batchShare: (none) -> 0.5", "spec.injection.every: (none) -> 2"}));
  EXPECT_EQ(SpecChanges(R"({"stream": {"rate": 3}})", "{}"), std::vector<std::string>{"spec.stream.rate: 3 -> (none)"});
}

TEST(SpecChangesTest, TextAgainstANumberKeepsItsQuotes) {
  EXPECT_EQ(SpecChanges(R"({"lr": "0.1"})", R"({"lr": 0.1})"), std::vector<std::string>{"spec.lr: \"0.1\" -> 0.1"});
}

TEST(SpecChangesTest, AListDiffersAsAWhole) {
  EXPECT_EQ(SpecChanges(R"({"model": {"hidden": [128, 64]}})", R"({"model": {"hidden": [128, 32]}})"),
            (std::vector<std::string>{"spec.model.hidden: [128,64] -> [128,32]"}));
}

TEST(SpecChangesTest, AnUnknownEarlierSpecSaysNothing) {
  EXPECT_TRUE(SpecChanges("", R"({"a": 1})").empty()) << "a checkpoint written before specs were kept in it";
  EXPECT_TRUE(SpecChanges("{not json", R"({"a": 1})").empty());
}

// A team resumed on another profile, or the same one edited: each rank's
// node, slowdown and link as the profile gave them, the trace by its name.
TEST(SpecChangesTest, DevicesThatDifferAreSaidByRankAndTheSameDevicesAreNoChange) {
  auto slot = [](int rank, std::string node, double slowdown, std::optional<LinkSpec> link) {
    WorkerSlot s;
    s.rank = rank;
    s.node = std::move(node);
    s.slowdown = slowdown;
    s.link = std::move(link);
    return s;
  };
  LinkSpec wifi;
  wifi.trace_path = "/home/a/traces/wifi-1.csv";
  wifi.scale = 1.5;
  LinkSpec lte = wifi;
  lte.trace_path = "/home/a/traces/lte.csv";
  const std::string before = DevicesRecord({slot(0, "gateway", 2, std::nullopt), slot(1, "robot-1", 5, wifi)});
  EXPECT_TRUE(DeviceChanges(before, before).empty());
  const std::string after = DevicesRecord({slot(0, "gateway", 2, std::nullopt), slot(1, "robot-2", 10, lte)});
  EXPECT_EQ(DeviceChanges(before, after),
            (std::vector<std::string>{"devices.rank 1.link: wifi-1.csv x1.5 -> lte.csv x1.5",
                                      "devices.rank 1.node: robot-1 -> robot-2",
                                      "devices.rank 1.slowdown: 5 -> 10"}));
  // A device added, as a team of another size (its checkpoint is refused then,
  // and what differs is said by the agent).
  const std::string three = DevicesRecord(
      {slot(0, "gateway", 2, std::nullopt), slot(1, "robot-1", 5, wifi), slot(2, "hub", 1, std::nullopt)});
  EXPECT_EQ(DeviceChanges(before, three).size(), 4u) << "rank 2's node, slowdown, link and power";
  // Its compute changes and stream, as the profile writes them.
  WorkerSlot changing = slot(1, "robot-1", 5, wifi);
  changing.slowdown_changes = {{90, 4}, {120, 1}};
  changing.stream = StreamSource{12.5, "", 0};
  EXPECT_EQ(DeviceChanges(before, DevicesRecord({slot(0, "gateway", 2, std::nullopt), changing})),
            (std::vector<std::string>{"devices.rank 1.computeChanges: (none) -> 4 from 90 s, 1 from 120 s",
                                      "devices.rank 1.stream: (none) -> 12.5 samples/s"}));
  EXPECT_TRUE(DeviceChanges("", after).empty()) << "no record: a folder of a run before devices were kept";
}

}  // namespace
}  // namespace edgetrain
