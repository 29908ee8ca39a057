#include "core/utf8.h"

#include <cstdint>
#include <cstdio>

namespace edgetrain {

size_t FirstInvalidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const size_t length = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size() || (length == 2 && b < 0xC2)) return i;
    uint32_t code = length == 1 ? b : b & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if ((c >> 6) != 0x2) return i;
      code = code << 6 | (c & 0x3F);
    }
    // Overlong forms, UTF-16's surrogates, and beyond Unicode.
    if ((length == 3 && code < 0x800) || (length == 4 && (code < 0x10000 || code > 0x10FFFF)) ||
        (code >= 0xD800 && code <= 0xDFFF)) {
      return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

std::string ShowInvalidUtf8(std::string_view text) {
  std::string shown;
  for (size_t bad; (bad = FirstInvalidUtf8(text)) != std::string_view::npos; text.remove_prefix(bad + 1)) {
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", static_cast<unsigned char>(text[bad]));
    shown.append(text.substr(0, bad)).append(escaped);
  }
  return shown.append(text);
}

Status CheckUtf8Path(std::string_view path, std::string_view field) {
  if (FirstInvalidUtf8(path) == std::string_view::npos) return Status::Ok();
  return InvalidArgumentError(std::string(field) + ": " + ShowInvalidUtf8(path) +
                              " is not UTF-8, and edgetrain hands paths to its agents in JSON, which carries only "
                              "UTF-8: rename it, or reach it through a symbolic link whose name is UTF-8");
}

}  // namespace edgetrain
