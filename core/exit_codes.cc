#include "core/exit_codes.h"

namespace edgetrain {

int ExitCodeFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return kExitOk;
    // What the person or the launcher asked for is wrong, or not there yet:
    // running again unchanged gives the same.
    case StatusCode::kInvalidArgument:  // bad flags, manifest, profile or plan
    case StatusCode::kUnimplemented:    // "... is not supported yet"
    case StatusCode::kAborted:          // another job's or an older generation's plan
      return kExitInvalid;
    case StatusCode::kCancelled:
      return kExitInterrupted;
    // The work could not be done here and now.
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kDataLoss:
    case StatusCode::kInternal:
      return kExitFailed;
  }
  return kExitFailed;
}

}  // namespace edgetrain
