#include "cli/run_folder.h"

#include <cstdlib>
#include <fstream>

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

// Where TMPDIR points, as a run would see it; unset again after.
StatusOr<fs::path> TemporaryFolderWith(const char* tmpdir) {
  EXPECT_EQ(::setenv("TMPDIR", tmpdir, 1), 0);
  StatusOr<fs::path> folder = SafeTemporaryFolder("the run's plan");
  ::unsetenv("TMPDIR");
  return folder;
}

TEST(RunFolderTest, ATmpdirThatNamesNoFolderIsRefusedNotTakenForTheCurrentOne) {
  // A TMPDIR that does not exist, is empty or is a file had the run's folders,
  // its TLS key among them, made in the folder it was started in, unchecked
  // (a new user's trial, started in a folder every user may write).
  const fs::path parent = EmptyDir();
  std::ofstream(parent / "a-file") << "not a folder";
  for (const fs::path& tmpdir : {parent / "missing", fs::path(""), parent / "a-file"}) {
    StatusOr<fs::path> folder = TemporaryFolderWith(tmpdir.c_str());
    ASSERT_FALSE(folder.ok()) << tmpdir << " gave " << *folder;
    EXPECT_EQ(folder.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(folder.status().message().find("the run's plan go in the temporary folder, and TMPDIR=" +
                                             tmpdir.string() + " names none ("),
              std::string::npos)
        << folder.status().message();
    EXPECT_NE(folder.status().message().find("set TMPDIR to a folder of your own, or unset it for /tmp"),
              std::string::npos);
  }

  StatusOr<fs::path> fine = TemporaryFolderWith(parent.c_str());
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ(*fine, parent);

  fs::permissions(parent, fs::perms::all);  // 0777, no sticky bit
  StatusOr<fs::path> open = TemporaryFolderWith(parent.c_str());
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("may be written by every user of this machine, who could swap them"),
            std::string::npos)
      << open.status().message();
}

}  // namespace
}  // namespace edgetrain::cli
