#include "cli/credentials_command.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/exit_codes.h"
#include "pki/job_identity.h"
#include "pki/tls_folder.h"

namespace edgetrain::cli {
namespace {

TEST(CredentialsCommandTest, WritesWhatAHandStartedTeamsAgentsPresent) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "credentials-command" / "tls";
  std::filesystem::remove_all(dir.parent_path());
  std::ostringstream out, err;
  ASSERT_EQ(MakeCredentials({"robots", dir.string(), std::chrono::hours(2)}, out, err), kExitOk) << err.str();
  EXPECT_NE(out.str().find("give every agent of the team --tls-dir=" + dir.string()), std::string::npos) << out.str();
  auto files = pki::ReadTlsFolder(pki::TlsFolderAt(dir.string()));
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_TRUE(pki::CheckKeyPair({files->cert_pem, files->key_pem}).ok());
  const auto now = std::chrono::system_clock::now();
  EXPECT_TRUE(pki::CheckPeer(files->cert_pem, "robots", files->ca_pem, now).accepted());
  EXPECT_EQ(pki::CheckPeer(files->cert_pem, "robots", files->ca_pem, now + std::chrono::hours(3)).verdict,
            pki::PeerVerdict::kExpired)
      << "it lasts --validity";
  EXPECT_FALSE(std::filesystem::exists(dir / "ca.key")) << "the authority's key is not kept";
}

// Run twice over a folder, it does not replace the authority agents may hold.
TEST(CredentialsCommandTest, AFolderThatHoldsCredentialsIsReplacedOnlyWhenAsked) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "credentials-twice" / "tls";
  std::filesystem::remove_all(dir.parent_path());
  std::ostringstream out, err;
  ASSERT_EQ(MakeCredentials({"robots", dir.string(), std::chrono::hours(2)}, out, err), kExitOk) << err.str();
  auto first = pki::ReadTlsFolder(pki::TlsFolderAt(dir.string()));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(MakeCredentials({"robots", dir.string(), std::chrono::hours(2)}, out, err), kExitInvalid);
  EXPECT_NE(err.str().find("holds credentials already"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("--replace"), std::string::npos) << err.str();
  EXPECT_EQ(pki::ReadTlsFolder(pki::TlsFolderAt(dir.string()))->ca_pem, first->ca_pem) << "left as it was";
  ASSERT_EQ(MakeCredentials({"robots", dir.string(), std::chrono::hours(2), /*replace=*/true}, out, err), kExitOk);
  EXPECT_NE(pki::ReadTlsFolder(pki::TlsFolderAt(dir.string()))->ca_pem, first->ca_pem);
  // A key alone, as the openssl recipe leaves one before its certificate is
  // signed, is kept too (it was written over: a security trial).
  const auto key_only = dir.parent_path() / "key-only";
  std::filesystem::create_directories(key_only);
  std::filesystem::permissions(key_only, std::filesystem::perms::owner_all);
  std::ofstream(key_only / "tls.key") << "MY KEY";
  err.str("");
  EXPECT_EQ(MakeCredentials({"robots", key_only.string(), std::chrono::hours(2)}, out, err), kExitInvalid);
  EXPECT_NE(err.str().find("holds credentials already"), std::string::npos) << err.str();
  std::ifstream kept(key_only / "tls.key");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "MY KEY");
}

// A folder every user may write in is refused: any of them could swap the
// authority the team trusts (a security review); so is one inside such a
// folder, and one another user owns (another review). A sticky one is not.
TEST(CredentialsCommandTest, AFolderAnotherUserMayReplaceIsRefused) {
  namespace fs = std::filesystem;
  const auto open = fs::path(testing::TempDir()) / "credentials-open";
  fs::remove_all(open);
  fs::create_directories(open);
  fs::permissions(open, fs::perms::all);
  std::ostringstream out, err;
  for (const fs::path& dir : {open, open / "sub"}) {
    err.str("");
    EXPECT_EQ(MakeCredentials({"robots", dir.string(), std::chrono::hours(1)}, out, err), kExitInvalid) << dir;
    EXPECT_NE(err.str().find(open.string() + " may be written by every user of this machine, who could replace"),
              std::string::npos)
        << err.str();
  }
  EXPECT_TRUE(fs::is_empty(open));
  // Another user's folder: made as root, given to nobody.
  const auto theirs = fs::path(testing::TempDir()) / "credentials-theirs";
  fs::remove_all(theirs);
  fs::create_directories(theirs);
  if (::geteuid() == 0 && ::chown(theirs.c_str(), 65534, 65534) == 0) {
    err.str("");
    EXPECT_EQ(MakeCredentials({"robots", theirs.string(), std::chrono::hours(1)}, out, err), kExitInvalid);
    EXPECT_NE(err.str().find(theirs.string() + " belongs to another user (uid 65534)"), std::string::npos) << err.str();
  }
  fs::permissions(open, fs::perms::all | fs::perms::sticky_bit);
  EXPECT_EQ(MakeCredentials({"robots", (open / "mine").string(), std::chrono::hours(1)}, out, err), kExitOk)
      << err.str();
}

TEST(CredentialsCommandTest, ANameThatIsNoJobsIsRefused) {
  std::ostringstream out, err;
  EXPECT_EQ(MakeCredentials({"Robots_1", testing::TempDir() + "/never", std::chrono::hours(1)}, out, err),
            kExitInvalid);
  EXPECT_NE(err.str().find("\"Robots_1\" is not a job's name"), std::string::npos) << err.str();
  EXPECT_FALSE(std::filesystem::exists(testing::TempDir() + "/never"));
  // One ending in '-' is told the rule it breaks (it met every rule said).
  std::ostringstream ends;
  EXPECT_EQ(MakeCredentials({"abc-", testing::TempDir() + "/never", std::chrono::hours(1)}, out, ends), kExitInvalid);
  EXPECT_NE(ends.str().find("starting and ending with a letter or digit"), std::string::npos) << ends.str();
  // A name of 53 characters, which no job can have (metadata.name's 52).
  EXPECT_EQ(MakeCredentials({std::string(53, 'a'), testing::TempDir() + "/never", std::chrono::hours(1)}, out, err),
            kExitInvalid);
  // A file where the folder goes is said to be one.
  const std::string file = testing::TempDir() + "/a-file";
  std::ofstream(file) << "x";
  std::ostringstream said;
  EXPECT_EQ(MakeCredentials({"robots", file, std::chrono::hours(1)}, out, said), kExitInvalid);
  EXPECT_NE(said.str().find(file + " is a file, not a folder"), std::string::npos) << said.str();
}

}  // namespace
}  // namespace edgetrain::cli
