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

}  // namespace
}  // namespace edgetrain
