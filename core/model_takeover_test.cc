#include "core/model_takeover.h"

#include <gtest/gtest.h>

namespace edgetrain {
namespace {

TEST(ModelTakeoverTest, TheCopyFurthestAlongIsAskedForOnlyWhenItIsAheadOfTheCoordinators) {
  struct Case {
    const char* story;
    std::vector<int64_t> offers;  // -1: no hello
    int64_t own;
    std::optional<int> donor;
  } cases[] = {
      {"a fresh job: nothing to take", {0, 0, 0}, 0, std::nullopt},
      {"placed anew: the furthest along", {340, 352, 348}, 0, 1},
      {"restarted on an older checkpoint", {352, 355}, 330, 1},
      {"the checkpoint is as far along", {330, 330}, 330, std::nullopt},
      {"equals: the lowest rank", {352, 352, 340}, 0, 0},
      {"one not there yet", {-1, 120, -1}, 0, 1},
  };
  for (const Case& c : cases) {
    ModelTakeover takeover(static_cast<int>(c.offers.size()));
    for (size_t w = 0; w < c.offers.size(); ++w) {
      if (c.offers[w] >= 0) takeover.Offered(static_cast<int>(w), c.offers[w]);
    }
    EXPECT_EQ(takeover.Donor(c.own), c.donor) << c.story;
    EXPECT_EQ(takeover.asked(), c.donor) << c.story;
    EXPECT_EQ(takeover.settled(), !c.donor.has_value()) << c.story;
  }
}

TEST(ModelTakeoverTest, EachOfferKeepsTheJobsTimeItCameWith) {
  ModelTakeover takeover(2);
  takeover.Offered(0, 340, 41.5);
  takeover.Offered(1, 352, 42.0);
  EXPECT_EQ(takeover.Donor(0), 1);
  EXPECT_DOUBLE_EQ(takeover.offered_elapsed_s(1), 42.0);
  EXPECT_DOUBLE_EQ(takeover.offered_elapsed_s(0), 41.5);
}

TEST(ModelTakeoverTest, AWorkerThatCannotDeliverIsPassedOverForTheNext) {
  ModelTakeover takeover(3);
  takeover.Offered(0, 200);
  takeover.Offered(1, 210);
  takeover.Offered(2, 90);
  ASSERT_EQ(takeover.Donor(100), 1);
  EXPECT_EQ(takeover.Donor(100), std::nullopt) << "one asked at a time";
  takeover.Withdrawn(1);  // its stream ended before its copy came
  EXPECT_EQ(takeover.asked(), std::nullopt);
  takeover.Offered(1, 210);  // back on a new stream: passed over all the same
  ASSERT_EQ(takeover.Donor(100), 0);
  takeover.Withdrawn(0);  // its copy was refused
  EXPECT_EQ(takeover.Donor(100), std::nullopt) << "worker 2's copy is behind ours";
  EXPECT_TRUE(takeover.settled());
}

TEST(ModelTakeoverTest, OnceACopyIsTakenLaterHellosAreTeammatesRejoining) {
  ModelTakeover takeover(2);
  takeover.Offered(0, 50);
  ASSERT_EQ(takeover.Donor(0), 0);
  takeover.Taken();
  EXPECT_TRUE(takeover.settled());
  EXPECT_EQ(takeover.asked(), std::nullopt);
  takeover.Offered(1, 500);
  EXPECT_EQ(takeover.Donor(50), std::nullopt);
}

}  // namespace
}  // namespace edgetrain
