#pragma once
// `edgetrain credentials JOB DIR`: the files a team's agents started by hand
// need for mutual TLS (--tls-dir, docs/launch-contract.md#credentials): a new
// authority of the job and one certificate of it that every agent presents.

#include <ostream>
#include <string>

#include "core/clock.h"

namespace edgetrain::cli {

struct CredentialsOptions {
  std::string job;
  std::string dir;
  Duration validity = std::chrono::hours(24 * 30);
  bool replace = false;  // --replace: write over credentials already in dir
};

// Writes ca.crt, tls.crt and tls.key into `dir` and says where and until when.
// Exit codes as every command's: 2 for a bad job name or a folder that holds
// credentials already (without `replace`), 1 when it cannot write.
int MakeCredentials(const CredentialsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace edgetrain::cli
