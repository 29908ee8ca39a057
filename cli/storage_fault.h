#pragma once
// What to do first when a run failed on its output folder's file system: a
// full disk is not mended by running again, and "run the same command again
// to resume from it" alone sent a user round the same failure at every
// checkpoint (a new user's trial).

#include <string>

namespace edgetrain::cli {

// What the output folder's file system said, where `why` (the failure) says
// the run failed on it ("No space left on device"), and what to do first,
// said so that what to do next follows it ("..., then run ..."); empty for
// any other failure. `checkpoint_path`: the checkpoint kept there, whose
// size another needs beside it.
std::string StorageAtFault(const std::string& why, const std::string& folder, const std::string& checkpoint_path);

}  // namespace edgetrain::cli
