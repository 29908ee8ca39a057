#pragma once
// For tests that drive edgetrain and its agents as processes.

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/child_process.h"
#include "http/socket_address.h"
#include "pki/tls_folder.h"

namespace edgetrain::cli {

inline int FreePort() { return http::FreeLoopbackPort(); }

// The flag that gives a team's agents started by hand their job's credentials,
// as a Secret or the local runner would: an authority of `job` and a
// certificate from it, written into dir/tls the first time.
inline std::string TeamTlsFlag(const std::filesystem::path& dir, const std::string& job) {
  const std::filesystem::path tls = dir / "tls";
  if (!std::filesystem::exists(tls / pki::kCertificateFile)) {
    const auto now = std::chrono::system_clock::now();
    EXPECT_TRUE(
        pki::WriteNewJobCredentials(tls.string(), job, now - std::chrono::hours(1), now + std::chrono::hours(24)).ok());
  }
  return "--tls-dir=" + tls.string();
}

// What follows `prefix` on the first line of the child's stdout that starts
// with it; nullopt if none comes (a minute's wait for each line at most).
inline std::optional<std::string> LineStartingWith(ChildProcess& child, const std::string& prefix) {
  while (auto line = child.ReadLine(std::chrono::seconds(60))) {
    if (line->rfind(prefix, 0) == 0) return line->substr(prefix.size());
  }
  return std::nullopt;
}

// An empty folder for the running test: TempDir()/PREFIX-TestName, emptied first.
inline std::filesystem::path FreshTestDir(const std::string& prefix) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) /
                                    (prefix + "-" + testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A whole file, such as an agent's log; empty if it cannot be read.
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The pid of a live process (not a zombie) whose command line holds
// `needle`, if any.
inline std::optional<pid_t> ProcessWith(const std::string& needle) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    const bool zombie = ReadFile(entry.path() / "stat").find(") Z ") != std::string::npos;
    if (!zombie && cmdline.find(needle) != std::string::npos) return static_cast<pid_t>(std::stol(name));
  }
  return std::nullopt;
}

}  // namespace edgetrain::cli
