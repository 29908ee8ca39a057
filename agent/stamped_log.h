#pragma once
// The agent's log, each line stamped with when it was written, as the
// operator's are ("time=2026-12-03T07:50:01.123Z worker 1: rejoined ..."):
// without it, `edgetrain run`'s worker logs could not say when a worker went
// silent or how long its rejoin took, and on a cluster only `kubectl logs
// --timestamps` could (a new user's trial). Each thread's text is held until
// its line ends and then written whole, so the lines of a coordinator's
// streams, its senders and its job driver never break into one another.
//
// What is written to stderr's file descriptor around std::cerr (gRPC's
// logging, C's stdio, an abort's message) goes unstamped.

#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>

#include "core/utc_time_text.h"

namespace edgetrain::agent {

class StampedLog final : public std::streambuf {
 public:
  using Now = std::function<WallTime()>;
  explicit StampedLog(std::ostream& out, Now now = [] { return std::chrono::system_clock::now(); });
  // Text no thread ended with a line is written as its own line: the last
  // words of an agent that returns mid-line are kept (not of one that
  // aborts; its whole lines are written as they end). A thread that ended
  // mid-line leaves its text to the next thread given its id.
  ~StampedLog() override;

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* text, std::streamsize n) override;
  // Lines are written as they end; a flush flushes them, and leaves a
  // line still being written to its end.
  int sync() override;

 private:
  void TakeLocked(const char* text, std::streamsize n);
  void WriteLocked(const std::string& line);

  std::ostream& out_;
  const Now now_;
  std::mutex mu_;
  std::map<std::thread::id, std::string> unended_;  // each thread's line so far; none once it ends
};

// std::cerr stamped while this lives: every write the agent makes to it,
// from any thread, goes through a StampedLog, and the threads keep sharing
// std::cerr, the standard stream they may share, rather than an ostream of
// our own, whose state (its width) each insertion writes.
class StampedStderr {
 public:
  StampedStderr() : raw_(std::cerr.rdbuf()), stamped_(raw_), was_(std::cerr.rdbuf(&stamped_)) {}
  ~StampedStderr() { std::cerr.rdbuf(was_); }  // then stamped_ writes what is left, to the raw stream
  StampedStderr(const StampedStderr&) = delete;
  StampedStderr& operator=(const StampedStderr&) = delete;

 private:
  std::ostream raw_;  // stderr as it was
  StampedLog stamped_;
  std::streambuf* was_;
};

}  // namespace edgetrain::agent
