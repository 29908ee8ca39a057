#include "core/quoted_text.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

#include "core/number_text.h"
#include "core/utf8.h"

namespace edgetrain {
namespace {

// The length of the UTF-8 character at the start of `text`, 0 if none is.
size_t CharacterAt(std::string_view text) {
  for (size_t n = 1; n <= 4 && n <= text.size(); ++n) {
    if (FirstInvalidUtf8(text.substr(0, n)) == std::string_view::npos) return n;
  }
  return 0;
}

}  // namespace

std::string QuotedExcerpt(std::string_view text, size_t at_most) {
  std::string quoted = "\"";
  size_t shown = 0, characters = 0;
  bool cut = false;
  for (size_t i = 0; i < text.size(); ++characters) {
    const size_t n = CharacterAt(text.substr(i));
    if (!cut && shown + std::max<size_t>(n, 1) > at_most) cut = true;
    if (!cut) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (n == 0 || c < 0x20 || c == 0x7F) {
        char escaped[8];
        if (c == '\n') {
          quoted += "\\n";
        } else if (c == '\t') {
          quoted += "\\t";
        } else {
          std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
          quoted += escaped;
        }
      } else {
        quoted.append(text.substr(i, n));
      }
      shown += std::max<size_t>(n, 1);
    }
    i += std::max<size_t>(n, 1);
  }
  if (!cut) return quoted + "\"";
  return quoted + "...\" (" + WithThousands(static_cast<int64_t>(characters)) + " characters)";
}

std::string ShellWord(std::string_view word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_@%+=:,./-").find(c) != std::string::npos;
  });
  if (plain) return std::string(word);
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace edgetrain
