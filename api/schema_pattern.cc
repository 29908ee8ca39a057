#include "api/schema_pattern.h"

#include <re2/re2.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace edgetrain::api {

bool MatchesPattern(std::string_view pattern, std::string_view value) {
  // Compiled once a pattern: a CRD and a cluster profile hold a handful, and
  // the operator validates every job it sees, from several threads.
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<RE2>, std::less<>> compiled;
  const RE2* re = nullptr;
  {
    std::lock_guard lock(mu);
    auto at = compiled.find(pattern);
    if (at == compiled.end()) {
      RE2::Options options;
      options.set_log_errors(false);
      at = compiled.emplace(std::string(pattern), std::make_unique<RE2>(std::string(pattern), options)).first;
    }
    re = at->second.get();
  }
  return re->ok() && RE2::PartialMatch(re2::StringPiece(value.data(), value.size()), *re);
}

}  // namespace edgetrain::api
