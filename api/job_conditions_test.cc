#include "api/job_conditions.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "api/crd.h"

namespace edgetrain::api {
namespace {

std::set<std::string> EnumAt(const nlohmann::json& schema, const char* pointer) {
  return schema.at(nlohmann::json::json_pointer(pointer)).get<std::set<std::string>>();
}

// The operator writes these names into status; the API server refuses any its
// CRD does not list.
TEST(JobConditionsTest, EveryPhaseAndConditionTypeIsOneTheCrdAllows) {
  StatusOr<nlohmann::json> schema = TrainingJobSchema();
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  const auto phases = EnumAt(*schema, "/properties/status/properties/phase/enum");
  for (const char* p : {phase::kPending, phase::kPlacing, phase::kRunning, phase::kRecovering, phase::kSucceeded,
                        phase::kFailed, phase::kSuspended}) {
    EXPECT_TRUE(phases.count(p)) << p;
  }
  EXPECT_EQ(phases.size(), 7u) << "a phase in the CRD that the operator never writes";
  const auto types = EnumAt(*schema, "/properties/status/properties/conditions/items/properties/type/enum");
  for (const char* t : {condition::kPlaced, condition::kRunning, condition::kStalled, condition::kBandwidthDegraded,
                        condition::kComplete, condition::kFailed, condition::kInvalid, condition::kReplaying}) {
    EXPECT_TRUE(types.count(t)) << t;
  }
  EXPECT_EQ(types.size(), 8u) << "a condition type in the CRD that the operator never writes";
}

}  // namespace
}  // namespace edgetrain::api
