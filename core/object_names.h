#pragma once
// The shapes Kubernetes gives object names, checked by hand rather than by
// std::regex, which recursed once a character: a name of 26,000 characters
// overflowed the stack (a user's trial). Lengths are the caller's to bound.

#include <string_view>

namespace edgetrain {

// RFC 1123 label: lower-case letters, digits and '-', starting and ending with
// a letter or digit (a Pod's or Service's name, a TrainingJob's).
bool IsDnsLabel(std::string_view name);

// RFC 1123 subdomain: labels joined by '.' (a Lease's name).
bool IsDnsSubdomain(std::string_view name);

}  // namespace edgetrain
