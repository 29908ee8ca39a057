#include "agent/agent_flags.h"

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

TEST(AgentFlagsTest, ParsesTheLaunchContract) {
  auto flags = ParseAgentFlags({"--role=worker", "--job=robots", "--rank=2", "--world=4",
                                "--coordinator=10.0.0.1:7070", "--plan=/etc/plan.json", "--listen=0.0.0.0:0",
                                "--http=127.0.0.1:9100"});
  ASSERT_TRUE(flags.ok()) << flags.status().ToString();
  EXPECT_EQ(flags->role, Role::kWorker);
  EXPECT_EQ(flags->job, "robots");
  EXPECT_EQ(flags->rank, 2);
  EXPECT_EQ(flags->world, 4);
  EXPECT_EQ(flags->coordinator, "10.0.0.1:7070");
  EXPECT_EQ(flags->plan, "/etc/plan.json");
  EXPECT_EQ(flags->listen, "0.0.0.0:0");
  EXPECT_EQ(flags->http, "127.0.0.1:9100");
}

TEST(AgentFlagsTest, RefusesBadCommandLinesWithTheReason) {
  struct Case {
    std::vector<std::string> args;
    const char* error;
  } cases[] = {
      {{"--job=j", "--plan=p"}, "--role is required"},
      {{"--role=boss", "--job=j", "--plan=p"}, "--role: must be coordinator, worker or stage"},
      {{"--role=worker", "--plan=p"}, "--job is required"},
      {{"--role=worker", "--job=j"}, "--plan is required"},
      {{"--role=worker", "--job=j", "--plan=p", "--rank=two"}, "--rank: expected an integer"},
      {{"--role=worker", "--job=j", "--plan=p", "--world=0"}, "--world: must be >= 1"},
      {{"--role=worker", "--job=j", "--plan=p", "--rank=3", "--world=3"}, "--rank must be below --world"},
      {{"--role=worker", "--job=j", "--plan=p", "--colour=blue"}, "unknown flag --colour"},
      {{"--role", "worker"}, "expected --name=value"},
  };
  for (const auto& c : cases) {
    auto flags = ParseAgentFlags(c.args);
    ASSERT_FALSE(flags.ok()) << c.error;
    EXPECT_NE(flags.status().message().find(c.error), std::string::npos) << flags.status().message();
  }
}

}  // namespace
}  // namespace edgetrain::agent
