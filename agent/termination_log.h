#pragma once
// The agent's last word for whoever cannot read its stdout: the JSON of its
// `result` line, written to a file when it ends. In a pod that file is the
// container's terminationMessagePath; the kubelet copies it into
// status.containerStatuses[].state.terminated.message, where the operator reads
// whether the job reached its target, its accuracy and its model's path.

#include <memory>
#include <ostream>
#include <string>

namespace edgetrain::agent {

// The kubelet keeps at most this much of a termination message.
inline constexpr size_t kTerminationMessageLimit = 4096;

// Passes everything written to it through to `out`, remembering the JSON of the
// last line that starts with "result ".
class ResultCapture {
 public:
  explicit ResultCapture(std::ostream& out);
  ~ResultCapture();
  std::ostream& stream();
  // The last result's JSON; empty if none was written.
  std::string result() const;
  // Flushes what was written, then writes the last result, fitted
  // (FitTerminationMessage), to the termination log at `path`; nothing
  // when none was written. What main does at its end, and its terminate
  // handler at the agent's.
  void WriteTerminationLogTo(const std::string& path, std::ostream& log);

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// `result` as it fits the limit, and still JSON: whole if it does, else
// without its per-worker detail ("workers"), which a team of hundreds makes
// long; then with strings past 512 characters shortened (an error quoting a
// file), and then without its largest fields, named in "omitted".
std::string FitTerminationMessage(const std::string& result);

// Writes `message` to `path` (which the kubelet made). False on failure, after
// saying why on `log`.
bool WriteTerminationLog(const std::string& path, const std::string& message, std::ostream& log);

}  // namespace edgetrain::agent
