#include "operator/operator_metrics.h"

#include <gtest/gtest.h>

namespace edgetrain::operator_ {
namespace {

// A series first seen at 1 is a rise that Prometheus' rate() and increase()
// miss: every series of a known label value is there from the start, at 0
// (a user's trial found no `delete` or `patch` series until one was sent).
TEST(OperatorMetricsTest, EveryKnownSeriesIsThereFromTheStartAtZero) {
  OperatorMetrics metrics;
  const std::string text = metrics.Render();
  for (const char* verb : {"get", "list", "create", "update", "patch", "delete", "watch"}) {
    EXPECT_NE(text.find("edgetrain_operator_api_requests_total{verb=\"" + std::string(verb) + "\"} 0"),
              std::string::npos)
        << verb << "\n"
        << text;
  }
  EXPECT_NE(text.find("edgetrain_operator_job_failures_total{reason=\"InvalidSpec\"} 0"), std::string::npos) << text;
  // The refusals EdgetrainOperatorRequestsRefused watches, of every verb.
  EXPECT_NE(text.find("edgetrain_operator_api_errors_total{code=\"FAILED_PRECONDITION\",verb=\"patch\"} 0"),
            std::string::npos)
      << text;
  metrics.CountApiRequest("delete");
  metrics.CountApiRequest("delete");
  EXPECT_NE(metrics.Render().find("edgetrain_operator_api_requests_total{verb=\"delete\"} 2"), std::string::npos);
}

}  // namespace
}  // namespace edgetrain::operator_
