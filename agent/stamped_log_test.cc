#include "agent/stamped_log.h"

#include <gtest/gtest.h>

#include <future>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

namespace edgetrain::agent {
namespace {

const WallTime kNoon = std::chrono::system_clock::from_time_t(1796212800);  // 2026-12-02T12:00:00Z

TEST(StampedLogTest, StampsEachLineWhenItEndsAndFlushesNoneInHalves) {
  std::ostringstream out;
  WallTime now = kNoon;
  {
    StampedLog stamped(out, [&] { return now; });
    std::ostream log(&stamped);
    log << "worker " << 1 << ": joined\nworker 2: ";
    log << std::flush;  // a flush mid-line leaves the line whole
    EXPECT_EQ(out.str(), "time=2026-12-02T12:00:00.000Z worker 1: joined\n");
    now += std::chrono::milliseconds(1250);
    log << "silent since 3 s" << '\n';
    log << "ending mid-line";
    EXPECT_EQ(out.str(),
              "time=2026-12-02T12:00:00.000Z worker 1: joined\n"
              "time=2026-12-02T12:00:01.250Z worker 2: silent since 3 s\n");
  }
  EXPECT_EQ(out.str(),
            "time=2026-12-02T12:00:00.000Z worker 1: joined\n"
            "time=2026-12-02T12:00:01.250Z worker 2: silent since 3 s\n"
            "time=2026-12-02T12:00:01.250Z ending mid-line\n")
      << "the last words of an agent that ends mid-line are kept";
}

TEST(StampedLogTest, ALineOfOneThreadIsNeverBrokenByAnothers) {
  std::ostringstream out;
  StampedLog stamped(out, [] { return kNoon; });
  std::ostream log(&stamped);
  std::promise<void> begun;
  std::promise<void> other_written;
  std::thread sender([&] {
    log << "coordinator: worker 3 ";
    begun.set_value();
    other_written.get_future().wait();
    log << "counted out\n";
  });
  begun.get_future().wait();
  log << "job: step 120\n";  // while the sender's line is half written
  other_written.set_value();
  sender.join();
  EXPECT_EQ(out.str(),
            "time=2026-12-02T12:00:00.000Z job: step 120\n"
            "time=2026-12-02T12:00:00.000Z coordinator: worker 3 counted out\n");
}

// The agent's stderr, as main() stamps it: std::cerr itself, shared by its
// threads, its lines stamped while the guard lives and not after.
TEST(StampedLogTest, StderrIsStampedWhileTheGuardLives) {
  std::ostringstream captured;
  std::streambuf* const real = std::cerr.rdbuf(captured.rdbuf());
  {
    const StampedStderr stamped;
    std::cerr << "worker 0: training on its part\n" << "half a line";
  }
  std::cerr << "after\n";
  std::cerr.rdbuf(real);
  const std::regex want(R"(time=20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z worker 0: training on its part\n)"
                        R"(time=\S+Z half a line\n)"
                        R"(after\n)");
  EXPECT_TRUE(std::regex_match(captured.str(), want)) << captured.str();
}

}  // namespace
}  // namespace edgetrain::agent
