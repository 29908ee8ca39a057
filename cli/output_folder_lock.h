#pragma once
// One `edgetrain run` at a time into an output folder. Two runs of a job into
// one folder both resumed from its checkpoint, trained side by side, tore
// each other's lines of evaluations.csv and replaced each other's model (a
// user's trial). The lock is the kernel's (flock on the folder itself), so
// a runner that dies, however it dies, holds it no longer; the agents it
// starts do not inherit it.

#include <string>

#include "core/status.h"

namespace edgetrain::cli {

class OutputFolderLock {
 public:
  // The folder, which exists, locked for this run; FailedPrecondition, saying
  // what to do, while another run holds it.
  static StatusOr<OutputFolderLock> Take(const std::string& folder);

  OutputFolderLock(OutputFolderLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  OutputFolderLock& operator=(OutputFolderLock&&) = delete;
  OutputFolderLock(const OutputFolderLock&) = delete;
  ~OutputFolderLock();

 private:
  explicit OutputFolderLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace edgetrain::cli
