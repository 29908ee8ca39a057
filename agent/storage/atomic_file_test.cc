#include "agent/storage/atomic_file.h"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace edgetrain::agent {
namespace {

namespace fs = std::filesystem;

fs::path Folder() {
  const fs::path folder =
      fs::path(::testing::TempDir()) /
      ("atomic-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder;
}

TEST(WriteFileAtomically, ReplacesTheFileWhole) {
  const std::string path = (Folder() / "model.json").string();
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "new, and longer").ok());
  EXPECT_EQ(*ReadWholeFile(path), "new, and longer");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// A full disk: /dev/full fails every write with ENOSPC. The error says so
// (it said only "cannot write"), the file there is kept, and the part
// written is removed rather than left to keep the disk full.
TEST(WriteFileAtomically, AFullDiskSaysSoAndLeavesTheOldFile) {
  const std::string path = (Folder() / "checkpoint.bin").string();
  ASSERT_TRUE(WriteFileAtomically(path, "the last good one").ok());
  ASSERT_EQ(::symlink("/dev/full", (path + ".tmp").c_str()), 0);
  const Status written = WriteFileAtomically(path, "a new one");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("No space left on device"), std::string::npos) << written.message();
  EXPECT_EQ(*ReadWholeFile(path), "the last good one");
  EXPECT_FALSE(fs::exists(fs::symlink_status(path + ".tmp")));
}

TEST(WriteFileAtomically, AFolderThatIsNotThereIsNamedWithItsReason) {
  const std::string path = (Folder() / "gone" / "model.pt").string();
  const Status written = WriteFileAtomically(path, "x");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("No such file or directory"), std::string::npos) << written.message();
}

// A read that fails (a network volume gone) is said, not taken for the
// file's end: the bytes before it, as a file, failed a checkpoint's CRC and
// were refused for good, and an evaluation log was written back without its
// last rows (found in review). /proc/self/mem fails its first read with EIO.
TEST(ReadWholeFile, AReadThatFailsIsNoShorterFile) {
  const StatusOr<std::string> read = ReadWholeFile("/proc/self/mem");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kUnavailable) << read.status().ToString();
  EXPECT_NE(read.status().message().find("Input/output error"), std::string::npos) << read.status().ToString();
  const StatusOr<std::string> folder = ReadWholeFile(Folder().string());
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.status().message().find("it is a folder"), std::string::npos) << folder.status().ToString();
}

}  // namespace
}  // namespace edgetrain::agent
