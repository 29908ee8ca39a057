#pragma once
// How far apart two words are, to suggest what a typo meant: a field of a
// manifest, an option of the command line.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace edgetrain {

// Levenshtein distance: the fewest insertions, deletions and substitutions.
size_t EditDistance(std::string_view a, std::string_view b);

// The first of `candidates` nearest `word`, when fewer than `below` edits
// away (a typo, not another word); empty when none is.
std::string Nearest(std::string_view word, const std::vector<std::string>& candidates, size_t below = 3);

}  // namespace edgetrain
