#pragma once
// The `ip` and `tc` commands that lay out and shape kernel links
// (cli/netns_links.h), run to completion with a time limit: one that hangs
// (the kernel's network lock held elsewhere, a namespace stuck in teardown)
// held the run for ever, deaf to Ctrl-C, since such a command runs out of
// the terminal's reach (below).

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace edgetrain::cli {

// An `ip` or `tc` took 2-4 ms on the 2-core machine of docs/benchmarks.md;
// ten seconds is one stuck.
inline constexpr Duration kDefaultLinkCommandTimeout = std::chrono::seconds(10);

// Runs `argv` to completion; its stderr becomes the error message. One still
// running after `timeout` is killed, with what it started, and said to have
// outlasted the limit (DeadlineExceeded, naming `limit_flag`, the option that
// sets it).
Status RunKernelCommand(const std::vector<std::string>& argv, Duration timeout, const std::string& limit_flag);

}  // namespace edgetrain::cli
