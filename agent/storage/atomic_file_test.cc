#include "agent/storage/atomic_file.h"

#include <signal.h>
#include <sys/resource.h>
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

size_t EntriesIn(const fs::path& folder) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(folder)) ++n;
  return n;
}

TEST(WriteFileAtomically, ReplacesTheFileWhole) {
  const fs::path folder = Folder();
  const std::string path = (folder / "model.json").string();
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "new, and longer").ok());
  EXPECT_EQ(*ReadWholeFile(path), "new, and longer");
  EXPECT_EQ(EntriesIn(folder), 1u) << "no temporary left";
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::others_write, fs::perms::none);
}

// A write that fails midway (a full disk; here the process's file size
// limit, which fails a write past it as a full disk does) says why (it said
// only "cannot write"), the file there is kept, and the part written is
// removed rather than left to keep the disk full.
TEST(WriteFileAtomically, AWriteThatFailsSaysWhyAndLeavesTheOldFile) {
  const fs::path folder = Folder();
  const std::string path = (folder / "checkpoint.bin").string();
  ASSERT_TRUE(WriteFileAtomically(path, "the last good one").ok());
  struct sigaction ignore {}, before_signal{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &before_signal), 0);
  rlimit before{}, four{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
  four = before;
  four.rlim_cur = 4;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &four), 0);
  const Status written = WriteFileAtomically(path, "a new one, of more than four bytes");
  ::setrlimit(RLIMIT_FSIZE, &before);
  ::sigaction(SIGXFSZ, &before_signal, nullptr);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("File too large"), std::string::npos) << written.message();
  EXPECT_EQ(*ReadWholeFile(path), "the last good one");
  EXPECT_EQ(EntriesIn(folder), 1u) << "the part written is gone";
}

// Its temporary is of a name no one could know beforehand: a link planted at
// the name it used to take (NAME.tmp) was followed, the model written into
// whatever it named (found in review).
TEST(WriteFileAtomically, ALinkPlantedBesideTheFileIsNotFollowed) {
  const fs::path folder = Folder();
  const std::string path = (folder / "model.pt").string();
  const std::string victim = (folder / "someone-elses").string();
  ASSERT_TRUE(WriteFileAtomically(victim, "theirs").ok());
  ASSERT_EQ(::symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(path, "the model").ok());
  EXPECT_EQ(*ReadWholeFile(path), "the model");
  EXPECT_EQ(*ReadWholeFile(victim), "theirs");
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
