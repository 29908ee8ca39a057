#pragma once
// A schema's `pattern` matched as the API server matches it: by Go's regexp,
// whose syntax RE2 shares, in time linear in the value, found anywhere in it
// unless the pattern anchors itself. std::regex backtracked by recursion, a
// frame or more a character: a duration of 26,000 digits, which the CRD lets
// through, overflowed the stack, and the operator crashed on it at every
// restart for as long as the job existed (a user's trial).

#include <string_view>

namespace edgetrain::api {

// Whether `value` holds a match of `pattern`; false for a pattern RE2 cannot
// compile (a CRD's own, so never in practice).
bool MatchesPattern(std::string_view pattern, std::string_view value);

}  // namespace edgetrain::api
