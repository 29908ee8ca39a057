#include "cli/log_tail.h"

#include <fstream>

#include <gtest/gtest.h>

namespace edgetrain::cli {
namespace {

// A message quotes an agent's last line without the time its log stamps it
// with; a line of LibTorch's or gRPC's own, unstamped, as it is.
TEST(LogTailTest, AnAgentsLastWordsAreItsLastLineWithoutItsTime) {
  const std::string path = ::testing::TempDir() + "/last-words.log";
  std::ofstream(path) << "time=2026-12-03T07:50:58.266Z loading digits\n"
                         "time=2026-12-03T07:50:59.804Z worker 1: label 7 is out of range\n";
  EXPECT_EQ(LastWords(path), "worker 1: label 7 is out of range");
  std::ofstream(path, std::ios::app) << "terminate called after throwing an instance of 'c10::Error'\n";
  EXPECT_EQ(LastWords(path), "terminate called after throwing an instance of 'c10::Error'");
  EXPECT_EQ(LastWords(path + ".none"), "");
}

}  // namespace
}  // namespace edgetrain::cli
