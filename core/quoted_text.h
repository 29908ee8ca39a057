#pragma once
// A value from outside — a manifest's field, a file's line — quoted in a
// message about it. Quoted whole, a name of 26,000 characters made a message
// of 26,000, a binary trace's first "line" one of 10 kB, and a manifest's
// ESC byte reached the terminal as an escape sequence that cleared it (a
// user's trial).

#include <cstddef>
#include <string>
#include <string_view>

namespace edgetrain {

// `text` in double quotes, each control character and each byte that is not
// UTF-8 shown escaped (\n, \t, \x1B), and, when longer than `at_most` bytes,
// cut there (between characters) and followed by how long it was:
// "aaaa..." (26,159 characters).
std::string QuotedExcerpt(std::string_view text, size_t at_most = 60);

// `word` as a shell reads it back, in a command a person is told to run: as
// it is when it holds nothing a shell treats apart, else in single quotes
// (an output folder with a space in its name made a command that served
// another folder: found in review).
std::string ShellWord(std::string_view word);

}  // namespace edgetrain
