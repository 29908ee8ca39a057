#pragma once
// What an agent's log says last: read by the runner to quote why an agent
// ended, and shown beneath a failure.

#include <cstddef>
#include <string>
#include <vector>

namespace edgetrain::cli {

// The last `lines` lines of a file (fewer if it has fewer; none if unreadable).
std::vector<std::string> LastLines(const std::string& path, size_t lines);
// An agent's last words: its log's last line without the time its log
// stamps each line with (agent/stamped_log.h), which a message quoting them
// ("worker 1 refused its inputs (exit 2): ...") does not need; empty when
// there is none.
std::string LastWords(const std::string& path);
// The last `lines` lines of a log, indented with "  | ".
std::string LogTail(const std::string& path, size_t lines);

}  // namespace edgetrain::cli
