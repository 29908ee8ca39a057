#include "cli/output_folder_lock.h"

#include <filesystem>
#include <optional>

#include <gtest/gtest.h>

namespace edgetrain::cli {
namespace {

namespace fs = std::filesystem;

TEST(OutputFolderLockTest, OneRunAtATimeIntoAFolder) {
  const fs::path folder = fs::path(::testing::TempDir()) / "locked-output";
  fs::create_directories(folder);
  std::optional<OutputFolderLock> first;
  {
    auto taken = OutputFolderLock::Take(folder.string());
    ASSERT_TRUE(taken.ok()) << taken.status().ToString();
    first.emplace(std::move(*taken));
  }
  auto second = OutputFolderLock::Take(folder.string());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("another edgetrain run is using " + folder.string()),
            std::string::npos)
      << second.status().message();
  first.reset();  // the run ended
  EXPECT_TRUE(OutputFolderLock::Take(folder.string()).ok()) << "released with its run";
  EXPECT_FALSE(OutputFolderLock::Take((folder / "missing").string()).ok());
}

}  // namespace
}  // namespace edgetrain::cli
