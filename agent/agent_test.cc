#include "agent/agent.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "agent/data/dataset.h"
#include "core/job_plan.h"
#include "core/job_progress.h"
#include "pki/job_identity.h"
#include "pki/tls_folder.h"

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDigitsSpec = R"({
  "model": {"name": "mlp", "hidden": [32]},
  "data": {"dataset": "digits", "batchSize": 32, "partition": {"kind": "iid"}},
  "parallelism": {"mode": "dataParallel", "workers": 1},
  "sync": {"granularity": "row", "policy": "rog", "compression": "none"},
  "optimizer": {"name": "adam", "learningRate": 0.01, "weightDecay": 0},
  "budget": {"wallClock": "5m", "epochs": 3, "energyJoules": 0},
  "evaluation": {"everyIterations": 20},
  "faultTolerance": {"replicateEvery": 100, "replay": true, "checkpointEvery": 0,
                     "maxRecoveries": 5, "nodeLossGrace": "120s"},
  "seed": 3
})";

struct AgentTest : testing::Test {
  void SetUp() override {
    dir = fs::path(testing::TempDir()) / ("agent-" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    JobPlan plan;
    plan.job = "digits";
    plan.spec_json = kDigitsSpec;
    plan.output_dir = (dir / "out").string();
    std::ofstream(dir / "plan.json") << EncodeJobPlan(plan);
    flags.job = "digits";
    flags.plan = (dir / "plan.json").string();
    flags.data_dir = DefaultDataDir();
  }
  int Run() { return RunAgent(flags, lines, log, cancel); }

  fs::path dir;
  AgentFlags flags;
  std::ostringstream lines, log;
  std::atomic<bool> cancel{false};
};

TEST_F(AgentTest, TrainsAJobOfOneAndReportsOnStdout) {
  ASSERT_EQ(Run(), kExitOk) << log.str();
  std::istringstream out(lines.str());
  std::string http, result;
  std::getline(out, http);
  std::getline(out, result);
  EXPECT_EQ(http.rfind("http 127.0.0.1:", 0), 0u) << http;
  ASSERT_EQ(result.rfind("result ", 0), 0u) << result;
  auto progress = DecodeJobProgress(result.substr(7));
  ASSERT_TRUE(progress.ok()) << progress.status().ToString();
  EXPECT_EQ(progress->state, JobState::kSucceeded);
  EXPECT_EQ(progress->iteration, 3 * 45);  // ceil(1437 / 32) steps per epoch
  EXPECT_EQ(progress->stop_reason, StopReason::kEpochs);
  EXPECT_GT(*progress->accuracy, 0.9);
  EXPECT_TRUE(fs::exists(dir / "out" / "model.pt"));
  EXPECT_NE(log.str().find("loaded 1437 training and 360 test samples"), std::string::npos) << log.str();
}

TEST_F(AgentTest, RefusesAPlanForAnotherJob) {
  flags.job = "other";
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("the plan is for job \"digits\", not \"other\""), std::string::npos) << log.str();
}

TEST_F(AgentTest, AFailingAgentStillEndsWithItsResultLine) {
  flags.job = "other";
  ASSERT_EQ(Run(), kExitInvalid);
  const std::string out = lines.str();
  ASSERT_EQ(out.rfind("result ", 0), 0u) << out;
  auto result = DecodeJobProgress(out.substr(7));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->state, JobState::kFailed);
  EXPECT_EQ(result->stop_reason, StopReason::kFailed);
  EXPECT_EQ(result->error, "the plan is for job \"digits\", not \"other\"");

  // A worker whose data set is nowhere: a runtime failure, and its result line.
  JobPlan team;
  team.job = "digits";
  team.spec_json = std::string(kDigitsSpec);
  team.output_dir = (dir / "out").string();
  team.workers = {WorkerSlot{0, "a", 1, std::nullopt, {}}};
  std::ofstream(dir / "team.json") << EncodeJobPlan(team);
  flags = {};
  flags.role = Role::kWorker;
  flags.job = "digits";
  flags.plan = (dir / "team.json").string();
  flags.coordinator = "127.0.0.1:1";
  flags.insecure = true;
  flags.data_dir = (dir / "no-data").string();
  lines.str("");
  EXPECT_EQ(RunAgent(flags, lines, log, cancel), kExitFailed) << log.str();
  const std::string said = lines.str();
  const size_t at = said.find("result ");
  ASSERT_NE(at, std::string::npos) << said;
  auto failed = DecodeJobProgress(said.substr(at + 7));
  ASSERT_TRUE(failed.ok()) << said;
  EXPECT_EQ(failed->state, JobState::kFailed);
}

// A plan not there (its volume not mounted yet) may be there at a restart:
// exit 1, with the system's reason; one that does not decode is wrong, exit 2.
TEST_F(AgentTest, RefusesAMissingOrBrokenPlan) {
  flags.plan = (dir / "absent.json").string();
  EXPECT_EQ(Run(), kExitFailed);
  EXPECT_NE(log.str().find("--plan: cannot read " + flags.plan + ": No such file or directory"), std::string::npos)
      << log.str();
  std::ofstream(dir / "broken.json") << "{\"job\": \"digits\"";
  flags.plan = (dir / "broken.json").string();
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("broken.json: plan: not a JSON object"), std::string::npos) << log.str();
}

// A part of a partition that holds no sample is refused: the engine takes no
// samples for the whole set, and trained an epoch of every sample.
TEST_F(AgentTest, RefusesAShardThatHoldsNoSample) {
  JobPlan plan;
  plan.job = "digits";
  plan.spec_json = kDigitsSpec;
  plan.output_dir = (dir / "out").string();
  plan.shard = DataShard{.parts = 2000, .part = 1999};
  std::ofstream(dir / "plan.json") << EncodeJobPlan(plan);
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("part 1999 of 2000 holds none of the "), std::string::npos) << log.str();
}

TEST_F(AgentTest, RefusesFlagsThatContradictThePlan) {
  flags.world = 3;
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("--world=3 but the plan has 1 worker(s)"), std::string::npos) << log.str();
  flags.world = 1;
  flags.role = Role::kWorker;
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("--role=worker needs a plan that places workers"), std::string::npos) << log.str();
  flags.role = Role::kStage;
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("--role=stage needs a plan with a pipeline"), std::string::npos) << log.str();
}

// A team's agents talk over mutual TLS: one started with neither the job's
// credentials nor a person's --insecure is refused before it loads anything,
// and credentials that cannot be used are named.
TEST_F(AgentTest, ATeamsAgentNeedsTheJobsCredentialsOrInsecure) {
  JobPlan plan;
  plan.job = "digits";
  plan.spec_json = std::string(kDigitsSpec);
  plan.spec_json.replace(plan.spec_json.find("\"workers\": 1"), std::string("\"workers\": 1").size(),
                         "\"workers\": 2");
  plan.output_dir = (dir / "out").string();
  plan.workers = {{0, "a", 1, std::nullopt, {}}, {1, "b", 1, std::nullopt, {}}};
  std::ofstream(dir / "team.json") << EncodeJobPlan(plan);
  flags.plan = (dir / "team.json").string();
  flags.world = 2;
  flags.first_worker_timeout = std::chrono::milliseconds(200);
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("a team's agents talk over mutual TLS: give --tls-dir=DIR with the job's ca.crt, tls.crt "
                           "and tls.key, or --insecure for a run on loopback"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("loading"), std::string::npos) << "refused before any data is loaded";

  flags.tls_dir = (dir / "tls").string();
  log.str("");
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("--tls-dir: cannot read " + (dir / "tls" / "ca.crt").string()), std::string::npos)
      << log.str();

  const auto now = std::chrono::system_clock::now();
  auto authority = pki::MakeJobAuthority("digits", now - std::chrono::hours(1), now + std::chrono::hours(1));
  ASSERT_TRUE(authority.ok());
  auto mine = pki::IssueAgentCertificate(*authority, now - std::chrono::hours(1), now + std::chrono::hours(1));
  auto other = pki::IssueAgentCertificate(*authority, now - std::chrono::hours(1), now + std::chrono::hours(1));
  ASSERT_TRUE(mine.ok() && other.ok());
  ASSERT_TRUE(pki::WriteTlsFolder(flags.tls_dir, authority->ca.cert_pem, {mine->cert_pem, other->key_pem}).ok());
  log.str("");
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("--tls-dir: tls.key is not the key of tls.crt"), std::string::npos) << log.str();

  // A folder another user could write in holds no credentials worth the
  // name: one swapped the authority mid-run, and the coordinator took in
  // that user's worker (a security trial).
  ASSERT_TRUE(pki::WriteTlsFolder(flags.tls_dir, authority->ca.cert_pem, *mine).ok());
  std::filesystem::permissions(flags.tls_dir, std::filesystem::perms::all);
  log.str("");
  EXPECT_EQ(Run(), kExitInvalid);
  EXPECT_NE(log.str().find("--tls-dir: " + flags.tls_dir + " may be written by every user of this machine, who could "
                           "swap the job's credentials"),
            std::string::npos)
      << log.str();
  std::filesystem::permissions(flags.tls_dir, std::filesystem::perms::owner_all);

  // Plaintext when asked for, loudly: the coordinator then waits for workers that never come.
  flags.tls_dir.clear();
  flags.insecure = true;
  log.str("");
  EXPECT_EQ(Run(), kExitFailed);
  EXPECT_NE(log.str().find("WARNING: --insecure: this team's gradients and model travel in plaintext"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("is not a loopback address"), std::string::npos) << log.str();
  // Louder off loopback (a security review listened on 0.0.0.0 told only the above).
  flags.listen = "0.0.0.0:0";
  log.str("");
  EXPECT_EQ(Run(), kExitFailed);
  EXPECT_NE(log.str().find("WARNING: --insecure --listen=0.0.0.0:0 is not a loopback address: any host that "
                           "reaches it can push gradients into this job; give the job's credentials (--tls-dir) "
                           "instead"),
            std::string::npos)
      << log.str();
}

}  // namespace
}  // namespace edgetrain::agent
