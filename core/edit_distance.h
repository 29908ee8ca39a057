#pragma once
// How far apart two words are, to suggest what a typo meant: a field of a
// manifest, an option of the command line.

#include <cstddef>
#include <string_view>

namespace edgetrain {

// Levenshtein distance: the fewest insertions, deletions and substitutions.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace edgetrain
