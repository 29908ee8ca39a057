// The agent's exposition: the label names Prometheus leaves alone, counters that
// only grow when fed running totals, bandwidth in bytes per second, and the
// staleness histogram fed one iteration at a time.
#include "agent/telemetry/metrics.h"

#include <gtest/gtest.h>

#include <sstream>
#include <vector>

#include "agent/refusal_report.h"

namespace edgetrain::agent {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(MetricsTest, WorkerSeriesCarryTrainingjobNotJob) {
  MetricsRegistry registry;
  WorkerMetrics w(registry, "digits", 2);
  w.AddSamples(64);
  const std::string text = registry.Render();
  EXPECT_TRUE(Has(text, "edgetrain_samples_total{trainingjob=\"digits\",worker=\"2\"} 64")) << text;
  EXPECT_EQ(text.find("{job="), std::string::npos) << text;
  EXPECT_EQ(text.find(",job="), std::string::npos) << text;
}

// A coordinator that refused every worker that came ends "no worker
// connected"; what it refused is said with it (agent.cc), from this.
TEST(MetricsTest, ARefusalReportCountsItsRefusalsAndKeepsTheLast) {
  MetricsRegistry registry;
  ConnectionMetrics connections(registry, "digits");
  std::ostringstream log;
  RefusalReport report("coordinator", log, connections);
  EXPECT_EQ(report.Summary(), "");
  report.Refused({"ipv4:127.0.0.1:40001", "other_job", "a certificate of job \"a\", not of job \"digits\""});
  EXPECT_EQ(report.Summary(), "1 connection refused for their certificates, the last from ipv4:127.0.0.1:40001: "
                              "a certificate of job \"a\", not of job \"digits\"");
  report.Refused({"ipv4:127.0.0.1:40002", "untrusted", "a certificate of job \"digits\" not issued by this job's "
                                                       "authority: it is self-signed"});
  EXPECT_EQ(report.Summary(), "2 connections refused for their certificates, the last from ipv4:127.0.0.1:40002: "
                              "a certificate of job \"digits\" not issued by this job's authority: it is self-signed");
  EXPECT_TRUE(Has(registry.Render(), "edgetrain_agent_refused_connections_total{reason=\"untrusted\","
                                     "trainingjob=\"digits\"} 1"))
      << registry.Render();
  EXPECT_NE(log.str().find("coordinator: refused a connection from ipv4:127.0.0.1:40001: "), std::string::npos);
}

TEST(MetricsTest, EnergyIsACounterThatGrowsByWhatTheMeterAdded) {
  MetricsRegistry registry;
  WorkerMetrics w(registry, "j", 0);
  w.SetEnergy(EnergyState::kCompute, 10);
  w.SetEnergy(EnergyState::kCompute, 25.5);
  w.SetEnergy(EnergyState::kCompute, 20);  // a meter that went back adds nothing
  w.SetEnergy(EnergyState::kIdle, 3);
  const std::string text = registry.Render();
  EXPECT_TRUE(Has(text, "# TYPE edgetrain_energy_joules_total counter")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_energy_joules_total{state=\"compute\",trainingjob=\"j\",worker=\"0\"} 25.5"))
      << text;
  EXPECT_TRUE(Has(text, "edgetrain_energy_joules_total{state=\"idle\",trainingjob=\"j\",worker=\"0\"} 3")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_energy_joules_total{state=\"communicate\",trainingjob=\"j\",worker=\"0\"} 0"))
      << text;
}

TEST(MetricsTest, AStageDevicesEnergyIsAWorkersSeriesThatGrowsByWhatEachStepAdded) {
  MetricsRegistry registry;
  DeviceEnergyMetrics d(registry, "j", 3);
  d.Add(EnergyState::kCompute, 2);
  d.Add(EnergyState::kCompute, 0.5);  // a session begun afresh adds from its own 0
  d.Add(EnergyState::kIdle, -1);      // nothing taken back
  const std::string text = registry.Render();
  EXPECT_TRUE(Has(text, "edgetrain_energy_joules_total{state=\"compute\",trainingjob=\"j\",worker=\"3\"} 2.5"))
      << text;
  EXPECT_TRUE(Has(text, "edgetrain_energy_joules_total{state=\"idle\",trainingjob=\"j\",worker=\"3\"} 0")) << text;
}

// A resumed pipeline's series count on from the checkpoint's totals: begun at
// 0 in the new process, they rose by every earlier run's seconds at its
// first step, which rate() took for this run's.
TEST(MetricsTest, AResumedStageDevicesSecondsCountOnFromItsCheckpoint) {
  MetricsRegistry registry;
  PipelineMetrics p(registry, "j", {0, 1});
  p.CountOnFrom(1, 100, 40);
  p.SetStageSeconds(1, 1, 101.5, 40.25);
  p.SetStageSeconds(0, 0, 2, 1);
  const std::string text = registry.Render();
  EXPECT_TRUE(Has(text, "edgetrain_stage_compute_seconds_total{stage=\"1\",trainingjob=\"j\",worker=\"1\"} 1.5"))
      << text;
  EXPECT_TRUE(Has(text, "edgetrain_stage_bubble_seconds_total{stage=\"1\",trainingjob=\"j\",worker=\"1\"} 0.25"))
      << text;
  EXPECT_TRUE(Has(text, "edgetrain_stage_compute_seconds_total{stage=\"0\",trainingjob=\"j\",worker=\"0\"} 2"))
      << text;
}

TEST(MetricsTest, BandwidthIsInBytesPerSecond) {
  MetricsRegistry registry;
  WorkerMetrics w(registry, "j", 1);
  CoordinatorMetrics c(registry, "j", 2);
  w.SetUplinkMbps(8);
  c.SetDownlinkMbps(1, 16);
  const std::string text = registry.Render();
  EXPECT_TRUE(Has(text, "edgetrain_link_bandwidth_bytes_per_second{direction=\"up\",trainingjob=\"j\",worker=\"1\"} "
                        "1000000"))
      << text;
  EXPECT_TRUE(Has(text, "edgetrain_link_bandwidth_bytes_per_second{direction=\"down\",trainingjob=\"j\",worker=\"1\"} "
                        "2000000"))
      << text;
}

TEST(MetricsTest, StalenessOfAnIterationIsObservedAtOnce) {
  MetricsRegistry registry;
  WorkerMetrics w(registry, "j", 0);
  const std::vector<int64_t> clocks = {10, 10, 9, 7, 2};  // used at iteration 10: 0, 0, 1, 3, 8
  w.ObserveRowStaleness(10, clocks);
  w.ObserveRowStaleness(11, {});  // no rows: nothing observed (the count below stays 5)
  const std::string text = registry.Render();
  const std::string l = "trainingjob=\"j\",worker=\"0\"";
  EXPECT_TRUE(Has(text, "edgetrain_row_staleness_iterations_count{" + l + "} 5")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_row_staleness_iterations_sum{" + l + "} 12")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_row_staleness_iterations_bucket{" + l + ",le=\"0\"} 2")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_row_staleness_iterations_bucket{" + l + ",le=\"1\"} 3")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_row_staleness_iterations_bucket{" + l + ",le=\"3\"} 4")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_row_staleness_iterations_bucket{" + l + ",le=\"4\"} 4")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_row_staleness_iterations_bucket{" + l + ",le=\"8\"} 5")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_row_staleness_iterations_bucket{" + l + ",le=\"+Inf\"} 5")) << text;

  // Rows the team has stepped past the worker's iteration (others ahead of
  // it, a worker just back) are fresh, 0: the _sum went negative.
  w.ObserveRowStaleness(5, std::vector<int64_t>{9, 7});
  const std::string after = registry.Render();
  EXPECT_TRUE(Has(after, "edgetrain_row_staleness_iterations_sum{" + l + "} 12")) << after;
  EXPECT_TRUE(Has(after, "edgetrain_row_staleness_iterations_bucket{" + l + ",le=\"0\"} 4")) << after;
}

TEST(MetricsTest, CoordinatorExportsTotalsPlanAndBudget) {
  MetricsRegistry registry;
  CoordinatorMetrics c(registry, "j", 3, 5000);
  c.SetSamples(640);
  c.SetSamples(1280);
  c.SetEnergy(12.5);
  const std::string text = registry.Render();
  EXPECT_TRUE(Has(text, "edgetrain_job_samples_total{trainingjob=\"j\"} 1280")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_job_energy_joules_total{trainingjob=\"j\"} 12.5")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_job_energy_budget_joules{trainingjob=\"j\"} 5000")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_job_workers{trainingjob=\"j\"} 3")) << text;
  EXPECT_TRUE(Has(text, "edgetrain_coordinator_sent_bytes_total{trainingjob=\"j\",worker=\"2\"} 0")) << text;
  EXPECT_EQ(text.find("edgetrain_job_accuracy{"), std::string::npos) << "no evaluation yet: no accuracy\n" << text;
  c.SetAccuracy(0.75);
  EXPECT_TRUE(Has(registry.Render(), "edgetrain_job_accuracy{trainingjob=\"j\"} 0.75")) << registry.Render();

  // A resumed job's totals start where its checkpoint has them, not at 0 a
  // second earlier (increase() counted the earlier runs as this one's: a new
  // user's trial); the loss appears with the first step.
  MetricsRegistry resumed_registry;
  CoordinatorMetrics resumed(resumed_registry, "r", 2, 0);
  resumed.SetLoss(0);
  std::string before = resumed_registry.Render();
  EXPECT_EQ(before.find("edgetrain_job_samples_total{"), std::string::npos) << before;
  EXPECT_EQ(before.find("edgetrain_job_energy_joules_total{"), std::string::npos) << before;
  EXPECT_EQ(before.find("edgetrain_job_loss{"), std::string::npos) << "no step yet: no loss\n" << before;
  resumed.SetSamples(39872);
  resumed.SetEnergy(70.5);
  resumed.SetLoss(0.42);
  const std::string after = resumed_registry.Render();
  EXPECT_TRUE(Has(after, "edgetrain_job_samples_total{trainingjob=\"r\"} 39872")) << after;
  EXPECT_TRUE(Has(after, "edgetrain_job_energy_joules_total{trainingjob=\"r\"} 70.5")) << after;
  EXPECT_TRUE(Has(after, "edgetrain_job_loss{trainingjob=\"r\"} 0.42")) << after;

  // A pipeline's head: its devices counted, no link series of a team.
  MetricsRegistry head_registry;
  CoordinatorMetrics head(head_registry, "p", 2, 0, /*links=*/false);
  const std::string head_text = head_registry.Render();
  EXPECT_TRUE(Has(head_text, "edgetrain_job_workers{trainingjob=\"p\"} 2")) << head_text;
  EXPECT_EQ(head_text.find("edgetrain_coordinator_received_bytes_total{"), std::string::npos) << head_text;
}

}  // namespace
}  // namespace edgetrain::agent
