#include "pki/tls_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace edgetrain::pki {
namespace {

TEST(TlsFolderTest, WrittenFilesReadBackAndTheKeyIsTheOwnersAlone) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "tls-folder-test" / "tls";
  std::filesystem::remove_all(dir.parent_path());
  ASSERT_TRUE(WriteTlsFolder(dir.string(), "CA", {"CERT", "KEY"}).ok());
  auto files = ReadTlsFolder(TlsFolderAt(dir.string()));
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(files->ca_pem, "CA");
  EXPECT_EQ(files->cert_pem, "CERT");
  EXPECT_EQ(files->key_pem, "KEY");
  struct stat st{};
  ASSERT_EQ(::stat((dir / "tls.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // A rotation replaces them whole.
  ASSERT_TRUE(WriteTlsFolder(dir.string(), "CA", {"CERT2", "KEY2"}).ok());
  EXPECT_EQ(ReadTlsFolder(TlsFolderAt(dir.string()))->cert_pem, "CERT2");
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename());
  EXPECT_EQ(names, (std::set<std::string>{"ca.crt", "tls.crt", "tls.key"})) << "no temporary left";
}

// A link planted where a temporary of a known name would go is not
// followed: "tls.key.tmp" had been opened as it was, and the job's key
// written into the file it pointed at, another user's (a security review).
TEST(TlsFolderTest, ALinkPlantedBesideTheKeyIsNotFollowed) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "tls-folder-planted" / "tls";
  std::filesystem::remove_all(dir.parent_path());
  std::filesystem::create_directories(dir);
  const auto loot = dir.parent_path() / "loot";
  std::ofstream(loot) << "untouched";
  for (const char* name : {"tls.key.tmp", "tls.crt.tmp", "ca.crt.tmp"}) {
    std::filesystem::create_symlink(loot, dir / name);
  }
  ASSERT_TRUE(WriteTlsFolder(dir.string(), "CA", {"CERT", "KEY"}).ok());
  std::stringstream kept;
  kept << std::ifstream(loot).rdbuf();
  EXPECT_EQ(kept.str(), "untouched");
  EXPECT_FALSE(std::filesystem::is_symlink(dir / "tls.key"));
  EXPECT_EQ(ReadTlsFolder(TlsFolderAt(dir.string()))->key_pem, "KEY");
}

// An agent's credentials another user could swap are none: a folder every
// user could write in let one replace the authority mid-run (a security
// trial), as a file others may write would.
TEST(TlsFolderTest, CredentialsAnotherUserCouldSwapOrReadAreSaidSo) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "tls-folder-touch" / "tls";
  std::filesystem::remove_all(dir.parent_path());
  ASSERT_TRUE(WriteTlsFolder(dir.string(), "CA", {"CERT", "KEY"}).ok());
  EXPECT_EQ(WhoElseMayTouch(dir.string()), "") << "as WriteTlsFolder leaves them";
  ::chmod((dir / "tls.key").c_str(), 0440);  // a mounted Secret's, under the pod's group
  ::chmod((dir / "ca.crt").c_str(), 0444);
  EXPECT_EQ(WhoElseMayTouch(dir.string()), "");
  EXPECT_EQ(WhoElseMayRead(dir.string()), "") << "its group's alone";
  ::chmod((dir / "tls.key").c_str(), 0644);  // Kubernetes' default mode for a Secret's files
  EXPECT_EQ(WhoElseMayTouch(dir.string()), "");
  EXPECT_EQ(WhoElseMayRead(dir.string()), (dir / "tls.key").string() + " may be read by every user of this machine")
      << "said, not refused";
  ::chmod((dir / "tls.key").c_str(), 0666);
  const std::string others = " may be written by other users of this machine";
  EXPECT_EQ(WhoElseMayTouch(dir.string()), (dir / "tls.key").string() + others);
  ::chmod((dir / "tls.key").c_str(), 0600);
  ::chmod((dir / "ca.crt").c_str(), 0664);
  EXPECT_EQ(WhoElseMayTouch(dir.string()), (dir / "ca.crt").string() + others);
  ::chmod((dir / "ca.crt").c_str(), 0644);
  ::chmod(dir.c_str(), 0777);
  EXPECT_EQ(WhoElseMayTouch(dir.string()), dir.string() + " may be written by every user of this machine");
  ::chmod(dir.c_str(), 0700);
  // A file that is a link is judged where it leads too: a key in a folder
  // every user may write could be swapped there (a security review).
  const auto open_to_all = dir.parent_path() / "open";
  std::filesystem::create_directories(open_to_all);
  ::chmod(open_to_all.c_str(), 0777);
  std::filesystem::rename(dir / "tls.key", open_to_all / "tls.key");
  std::filesystem::create_symlink(open_to_all / "tls.key", dir / "tls.key");
  EXPECT_EQ(WhoElseMayTouch(dir.string()), (dir / "tls.key").string() + " is a link to " +
                                               (open_to_all / "tls.key").string() + ", and " + open_to_all.string() +
                                               " may be written by every user of this machine");
  ::chmod(open_to_all.c_str(), 0700);
  EXPECT_EQ(WhoElseMayTouch(dir.string()), "") << "a link into a folder of its own owner's";
}

// A link to a folder not made yet is said so, not "File exists" (a new
// user's trial), and nothing is made where it points.
TEST(TlsFolderTest, ALinkToAFolderNotMadeYetIsSaidSo) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "tls-folder-dangling";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::create_directory_symlink(dir / "not-yet", dir / "link");
  const Status written = WriteTlsFolder((dir / "link").string(), "CA", {"CERT", "KEY"});
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(written.message(), (dir / "link").string() + " is a link to " + (dir / "not-yet").string() +
                                   ", which does not exist: make that folder first, or name another");
  EXPECT_FALSE(std::filesystem::exists(dir / "not-yet"));
}

TEST(TlsFolderTest, AMissingFileIsNamed) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "tls-folder-missing";
  std::filesystem::remove_all(dir);
  auto files = ReadTlsFolder(TlsFolderAt(dir.string()));
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("ca.crt"), std::string::npos) << files.status().message();
}

}  // namespace
}  // namespace edgetrain::pki
