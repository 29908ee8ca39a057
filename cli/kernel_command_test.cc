#include "cli/kernel_command.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "cli/child_process_testing.h"

namespace edgetrain::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Waits up to 5 s for no process of `needle` to be left: the kernel takes a
// moment to end one killed.
bool Gone(const std::string& needle) {
  for (int tries = 0; tries < 100 && ProcessWith(needle); ++tries) std::this_thread::sleep_for(milliseconds(50));
  return !ProcessWith(needle).has_value();
}

TEST(KernelCommandTest, SaysWhatAFailedCommandWroteToItsStderr) {
  EXPECT_TRUE(RunKernelCommand({"/bin/true"}, seconds(10), "--limit").ok());
  const Status failed = RunKernelCommand({"/bin/sh", "-c", "echo no such device >&2; exit 2"}, seconds(10), "--limit");
  EXPECT_EQ(failed.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(failed.message(), "`/bin/sh -c echo no such device >&2; exit 2` failed: no such device");
}

// A command that hangs ends at its limit, with what it started: one that held
// the run for ever, out of Ctrl-C's reach, was the risk.
TEST(KernelCommandTest, OneThatOutlastsItsLimitIsKilledWithWhatItStarted) {
  const auto began = std::chrono::steady_clock::now();
  const Status hung = RunKernelCommand({"/bin/sh", "-c", "sleep 31.25 & sleep 31.5"}, milliseconds(200), "--limit");
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(5));
  EXPECT_EQ(hung.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(hung.message().find("did not finish within 200ms and was killed (--limit sets the limit)"),
            std::string::npos)
      << hung.message();
  EXPECT_TRUE(Gone("sleep 31.25"));
  EXPECT_TRUE(Gone("sleep 31.5"));
}

// Its stderr closed is not its end: one that closes it and hangs is waited
// for no longer than one that keeps it.
TEST(KernelCommandTest, OneThatClosesItsStderrAndHangsEndsAtItsLimitToo) {
  const Status hung = RunKernelCommand({"/bin/sh", "-c", "exec 2>&-; sleep 32.5"}, milliseconds(200), "--limit");
  EXPECT_EQ(hung.code(), StatusCode::kDeadlineExceeded) << hung.message();
  EXPECT_TRUE(Gone("sleep 32.5"));
}

}  // namespace
}  // namespace edgetrain::cli
