#include "cli/run_folder.h"

#include <gtest/gtest.h>

#include "cli/child_process_testing.h"

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

fs::path EmptyDir() { return FreshTestDir("run-folder"); }

TEST(RunFolderTest, AFolderInUseStaysAndOneWhoseRunnerIsGoneIsRemoved) {
  const fs::path parent = EmptyDir();
  auto live = RunFolder::Create(parent, "live");
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  fs::path abandoned;
  {
    auto gone = RunFolder::Create(parent, "gone");
    ASSERT_TRUE(gone.ok());
    abandoned = gone->path();
  }  // as when its runner is killed: the lock goes, the folder stays
  ASSERT_TRUE(fs::exists(abandoned));
  EXPECT_EQ(abandoned.filename().string().rfind("edgetrain-gone-", 0), 0u) << abandoned;

  EXPECT_EQ(RemoveAbandonedRunFolders(parent), std::vector<fs::path>{abandoned});
  EXPECT_FALSE(fs::exists(abandoned));
  EXPECT_TRUE(fs::exists(live->path()));
  EXPECT_TRUE(RemoveAbandonedRunFolders(parent).empty());
}

TEST(RunFolderTest, KeptFoldersAndOtherFoldersAreLeftAlone) {
  const fs::path parent = EmptyDir();
  fs::path kept;
  {
    auto folder = RunFolder::Create(parent, "failed");
    ASSERT_TRUE(folder.ok());
    folder->Keep();
    kept = folder->path();
  }
  fs::create_directories(parent / "edgetrain-someone-else");
  fs::create_directories(parent / "unrelated");
  EXPECT_TRUE(RemoveAbandonedRunFolders(parent).empty());
  EXPECT_TRUE(fs::exists(kept));
  EXPECT_TRUE(fs::exists(parent / "edgetrain-someone-else"));
}

TEST(RunFolderTest, RemoveTakesTheFolderAway) {
  const fs::path parent = EmptyDir();
  auto folder = RunFolder::Create(parent, "done");
  ASSERT_TRUE(folder.ok());
  folder->Remove();
  EXPECT_FALSE(fs::exists(folder->path()));
  EXPECT_FALSE(RunFolder::Create(parent / "missing", "x").ok());
}

}  // namespace
}  // namespace edgetrain::cli
