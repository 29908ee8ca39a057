#pragma once
// Whether a model file (model.pt, a user's TorchScript module) is as it was
// written. Both are zip archives, each entry with the CRC-32 of its bytes in
// the archive's list of entries, and LibTorch loads them without looking at
// it: a model.pt with 2,000 bytes flipped in a tensor was evaluated at 0.29
// with a loss of 3.5e26, exit 0 (a user's trial). Read before the model is
// loaded.

#include <string>
#include <string_view>

#include "core/status.h"

namespace edgetrain::agent {

// Ok when every entry's bytes match its CRC-32 (a deflated entry's once
// inflated: LibTorch stores its own, a user's tools may not); DataLoss naming
// the first entry that does not, or a header cut short; InvalidArgument when
// the file is no zip archive at all.
Status CheckArchiveIntegrity(const std::string& path);
// The same of an archive's bytes, `name` saying which in a message.
Status CheckArchiveBytes(std::string_view bytes, const std::string& name);

}  // namespace edgetrain::agent
