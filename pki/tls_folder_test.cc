#include "pki/tls_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

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
  EXPECT_FALSE(std::filesystem::exists(dir / "tls.key.tmp"));
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
