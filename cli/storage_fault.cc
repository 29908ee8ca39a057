#include "cli/storage_fault.h"

#include <filesystem>
#include <system_error>

#include "cli/run_report.h"

namespace edgetrain::cli {

std::string StorageAtFault(const std::string& why, const std::string& folder, const std::string& checkpoint_path) {
  std::error_code ec;
  const auto said = [&](const char* words) { return why.find(words) != std::string::npos; };
  if (said("No space left on device") || said("Disk quota exceeded")) {
    // Written beside the one kept, then renamed over it: room for two.
    const auto bytes = std::filesystem::file_size(checkpoint_path, ec);
    // Its own size, not rounded up to a unit: "1 MB" of a 49 kB checkpoint
    // on a 1 MB file system read as past mending (a new user's trial).
    return folder + "'s file system is full" +
           (ec ? std::string()
               : ": a checkpoint is written beside the one kept, so another needs " +
                     SizeText(static_cast<double>(bytes)) + " more") +
           "; free room there, or give another --output, then ";
  }
  // EFBIG: a file past the size the process may write (ulimit -f), which
  // running again meets again as a full disk would.
  if (said("File too large")) {
    return "a file in " + folder + " is larger than this process may write (its file size limit, ulimit -f); "
           "raise the limit, then ";
  }
  for (const char* words : {"Read-only file system", "Permission denied", "Operation not permitted"}) {
    if (said(words)) return folder + " cannot be written now (" + words + "); once it can, ";
  }
  return "";
}

}  // namespace edgetrain::cli
