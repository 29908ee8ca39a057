#include "cli/ephemeral_credentials.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "cli/child_process_testing.h"
#include "cli/run_folder.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

// The run's key goes with the run; a runner killed outright leaves its TLS
// folder, key and all, and the next runner's sweep removes it (a new user
// found them piling up in /tmp).
TEST(EphemeralCredentialsTest, ATlsFolderGoesWithItsRunOrWithTheNextRunnersSweep) {
  const fs::path parent = FreshTestDir("ephemeral-credentials");
  ASSERT_EQ(::setenv("TMPDIR", parent.c_str(), 1), 0);
  std::string dir;
  {
    auto made = EphemeralCredentials::Make("team", std::chrono::hours(1));
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    dir = made->dir();
    EXPECT_EQ(fs::path(dir).parent_path(), parent);
    EXPECT_TRUE(fs::exists(fs::path(dir) / "tls.key"));
    EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all) << "the key is the runner's alone";
    EXPECT_TRUE(RemoveAbandonedRunFolders(parent).empty()) << "in use: not swept";
  }
  EXPECT_FALSE(fs::exists(dir)) << "gone with its run";

  // A runner killed outright: a child that makes them and dies without a
  // destructor run.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto made = EphemeralCredentials::Make("killed", std::chrono::hours(1));
    ::_exit(made.ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::vector<fs::path> left;
  for (const auto& e : fs::directory_iterator(parent)) left.push_back(e.path());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].filename().string().rfind("edgetrain-tls-killed-", 0), 0u) << left[0];
  EXPECT_EQ(RemoveAbandonedRunFolders(parent), left);
  EXPECT_FALSE(fs::exists(left[0]));
  ::unsetenv("TMPDIR");
}

// A temporary folder another user may write in, without the sticky bit:
// they could rename the run's folder and put their own credentials in its
// place, so none are made there (a security review's TMPDIR of mode 0777).
TEST(EphemeralCredentialsTest, NoneAreMadeWhereAnotherUserCouldSwapThem) {
  const fs::path parent = FreshTestDir("ephemeral-credentials-open");
  fs::permissions(parent, fs::perms::all);
  ASSERT_EQ(::setenv("TMPDIR", parent.c_str(), 1), 0);
  auto made = EphemeralCredentials::Make("team", std::chrono::hours(1));
  ::unsetenv("TMPDIR");
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find(parent.string() + " may be written by every user of this machine, who "
                                                           "could swap them; set TMPDIR to a folder of your own"),
            std::string::npos)
      << made.status().message();
  EXPECT_TRUE(fs::is_empty(parent));
}

}  // namespace
}  // namespace edgetrain::cli
