#include "agent/agent_flags.h"

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

TEST(AgentFlagsTest, ParsesTheLaunchContract) {
  auto flags = ParseAgentFlags({"--role=worker", "--job=robots", "--rank=2", "--world=4",
                                "--coordinator=10.0.0.1:7070", "--plan=/etc/plan.json", "--listen=0.0.0.0:0",
                                "--http=127.0.0.1:9100", "--data-dir=/data"});
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

  auto defaults = ParseAgentFlags({"--role", "coordinator", "--job", "j", "--plan", "p"});
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->role, Role::kCoordinator);
  EXPECT_EQ(defaults->rank, 0);
  EXPECT_EQ(defaults->world, 1);
  EXPECT_EQ(defaults->http, "127.0.0.1:0");
  EXPECT_EQ(defaults->data_dir, "");
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
  for (const char* flag : {"--role", "--job", "--rank", "--world", "--plan", "--coordinator", "--listen", "--http",
                           "--data-dir"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag << "\n" << usage;
  }
}

}  // namespace
}  // namespace edgetrain::agent
