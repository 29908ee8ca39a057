#include "agent/agent_flags.h"

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

TEST(AgentFlagsTest, ParsesTheLaunchContract) {
  auto flags = ParseAgentFlags({"--role=worker", "--job=robots", "--rank=2", "--world=4",
                                "--coordinator=10.0.0.1:7070", "--plan=/etc/plan.json", "--listen=0.0.0.0:0",
                                "--http=127.0.0.1:9100", "--data-dir=/data", "--first-worker-timeout=2s",
                                "--stop-grace=500ms", "--plan-poll=100ms", "--connect-attempt=250ms",
                                "--tls-dir=/etc/edgetrain/tls", "--tls-reload=2s", "--progress-every=10ms"});
  ASSERT_TRUE(flags.ok()) << flags.status().ToString();
  EXPECT_EQ(flags->role, Role::kWorker);
  EXPECT_EQ(flags->job, "robots");
  EXPECT_EQ(flags->rank, 2);
  EXPECT_EQ(flags->world, 4);
  EXPECT_EQ(flags->coordinator, "10.0.0.1:7070");
  EXPECT_EQ(flags->plan, "/etc/plan.json");
  EXPECT_EQ(flags->listen, "0.0.0.0:0");
  EXPECT_EQ(flags->http, "127.0.0.1:9100");
  EXPECT_EQ(flags->data_dir, "/data");
  EXPECT_EQ(flags->first_worker_timeout, std::chrono::seconds(2));
  EXPECT_EQ(flags->stop_grace, std::chrono::milliseconds(500));
  EXPECT_EQ(flags->plan_poll, std::chrono::milliseconds(100));
  EXPECT_EQ(flags->connect_attempt, std::chrono::milliseconds(250));
  EXPECT_EQ(flags->tls_dir, "/etc/edgetrain/tls");
  EXPECT_EQ(flags->tls_reload, std::chrono::seconds(2));
  EXPECT_EQ(flags->progress_every, std::chrono::milliseconds(10));
  EXPECT_FALSE(flags->insecure);

  auto defaults = ParseAgentFlags({"--role", "coordinator", "--job", "j", "--plan", "p"});
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->role, Role::kCoordinator);
  EXPECT_EQ(defaults->rank, 0);
  EXPECT_EQ(defaults->world, 1);
  EXPECT_EQ(defaults->http, "127.0.0.1:0");
  EXPECT_EQ(defaults->data_dir, "");
  EXPECT_EQ(defaults->first_worker_timeout, std::chrono::seconds(120));
  EXPECT_EQ(defaults->stop_grace, std::chrono::seconds(3));
  EXPECT_EQ(defaults->tls_reload, std::chrono::seconds(60));
  EXPECT_EQ(defaults->progress_every, std::chrono::milliseconds(100));
  EXPECT_TRUE(ParseAgentFlags({"--role=worker", "--job=j", "--plan=p", "--insecure"})->insecure);
}

// A pipeline head placed anew waits for stages that hear of their old head's
// end by keepalive: unless told otherwise, as long as two keepalives and 10 s.
TEST(AgentFlagsTest, TheRestartGatherFollowsTheKeepaliveUnlessGiven) {
  auto defaults = ParseAgentFlags({"--role=stage", "--job=j", "--plan=p"});
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->keepalive, std::chrono::seconds(10));
  EXPECT_EQ(defaults->RestartGather(), std::chrono::seconds(30));
  auto short_keepalive = ParseAgentFlags({"--role=stage", "--job=j", "--plan=p", "--keepalive=1s"});
  ASSERT_TRUE(short_keepalive.ok()) << short_keepalive.status().ToString();
  EXPECT_EQ(short_keepalive->keepalive, std::chrono::seconds(1));
  EXPECT_EQ(short_keepalive->RestartGather(), std::chrono::seconds(12));
  auto given = ParseAgentFlags({"--role=stage", "--job=j", "--plan=p", "--keepalive=1s", "--restart-gather=3s"});
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(given->RestartGather(), std::chrono::seconds(3));
  EXPECT_FALSE(ParseAgentFlags({"--role=stage", "--job=j", "--plan=p", "--keepalive=0s"}).ok());
}

TEST(AgentFlagsTest, RefusesBadCommandLinesWithTheReason) {
  struct Case {
    std::vector<std::string> args;
    const char* error;
  } cases[] = {
      {{"--job=j", "--plan=p"}, "--role is required"},
      {{"--role=boss", "--job=j", "--plan=p"}, "--role: must be coordinator, worker or stage, got \"boss\""},
      {{"--role=worker", "--plan=p"}, "--job is required"},
      {{"--role=worker", "--job=j"}, "--plan is required"},
      {{"--role=worker", "--job=j", "--plan=p", "--rank=two"}, "--rank: Value two not in range"},
      {{"--role=worker", "--job=j", "--plan=p", "--world=0"}, "--world: Value 0 not in range"},
      {{"--role=worker", "--job=j", "--plan=p", "--rank=3", "--world=3"}, "--rank must be below --world (3 >= 3)"},
      {{"--role=worker", "--job=j", "--plan=p", "--colour=blue"}, "unknown flag: --colour=blue"},
      {{"--role=worker", "--job=j", "--plan=p", "--stop-grace=soon"},
       "--stop-grace: expected a duration such as 500ms or 2m, got \"soon\""},
      {{"--role=worker", "--job=j", "--plan=p", "--plan-poll=0s"}, "--plan-poll: expected a duration"},
      {{"--role=worker", "--job=j", "--plan=p", "--insecure", "--tls-dir=/tls"},
       "--insecure and --tls-dir exclude each other"},
      {{"--role=worker", "--job=j", "--coordinator=", "--plan=p"},
       "--coordinator: expected a value after the =, got none"},
      {{"--role=worker", "--job=j", "--plan=p", "--coordinator=127.0.0.1:99999"},
       "--coordinator: expected HOST:PORT, a port from 1 to 65535, got \"127.0.0.1:99999\""},
      {{"--role=worker", "--job=j", "--plan=p", "--coordinator=:7000"}, "--coordinator: expected HOST:PORT"},
      {{"--role=worker", "--job=j", "--plan=p", "--coordinator=127.0.0.1"}, "--coordinator: expected HOST:PORT"},
      {{"--role=worker", "--job=j", "--plan=p", "--coordinator= "}, "--coordinator: expected HOST:PORT"},
      // Listened on modulo 65536, or failing only after the data were loaded.
      {{"--role=worker", "--job=j", "--plan=p", "--listen=127.0.0.1:70000"},
       "--listen: expected HOST:PORT, a port from 0 to 65535"},
      {{"--role=worker", "--job=j", "--plan=p", "--listen=:0"}, "--listen: expected HOST:PORT"},
      {{"--role=worker", "--job=j", "--plan=p", "--http=foo"}, "--http: expected HOST:PORT"},
      // NaN passes every comparison a range makes.
      {{"--role=stage", "--job=j", "--plan=p", "--hung-pass-factor=nan"},
       "--hung-pass-factor: must be a finite number, got nan"},
      {{"--role=stage", "--job=j", "--plan=p", "--straggler-factor=-nan"}, "--straggler-factor: must be a finite"},
      {{"--role=worker", "--job=j", "--plan=p", "--tls-reload=100ms"},
       "--tls-reload: at least 1s, as often as gRPC reads credentials again, got 100ms"},
  };
  for (const auto& c : cases) {
    auto flags = ParseAgentFlags(c.args);
    ASSERT_FALSE(flags.ok()) << c.error;
    EXPECT_EQ(flags.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(flags.status().message().find(c.error), std::string::npos) << flags.status().message();
  }
}

TEST(AgentFlagsTest, TheUsageNamesEveryFlag) {
  const std::string usage = AgentUsage();
  for (const char* flag :
       {"--role", "--job", "--rank", "--world", "--plan", "--coordinator", "--listen", "--http", "--data-dir",
        "--first-worker-timeout", "--first-push-deadline", "--stop-grace", "--plan-poll", "--connect-attempt",
        "--tls-dir", "--insecure", "--tls-reload", "--keepalive", "--restart-gather", "--heartbeat",
        "--head-return-grace", "--hung-pass-factor", "--hung-pass-floor", "--progress-every", "--rebalance-every",
        "--rebalance-within", "--straggler-factor", "--straggler-rejoin-after", "--termination-log"}) {
    // Its own entry, at the start of a line: "--plan" is also in "--plan-poll",
    // and some flags are named in others' help.
    const std::string entry = std::string("\n  ") + flag;
    bool found = false;
    for (size_t at = usage.find(entry); at != std::string::npos && !found; at = usage.find(entry, at + 1)) {
      const char after = at + entry.size() < usage.size() ? usage[at + entry.size()] : '\n';
      found = after == ' ' || after == '\n';
    }
    EXPECT_TRUE(found) << flag << "\n" << usage;
  }
}

}  // namespace
}  // namespace edgetrain::agent
