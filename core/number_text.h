#pragma once
// Numbers as people read them in logs, conditions and summaries.

#include <cstdint>
#include <string>

namespace edgetrain {

// 1234567 -> "1,234,567"
std::string WithThousands(int64_t n);
// "1 stage", "2,048 steps": a count with its noun, one or many (a log read
// "1 stages": a new user's trial).
std::string CountOf(int64_t n, const char* one, const char* many);

// A number as a person writes it in a manifest or a profile: 1.5, 20,
// 0.001, not 20.000000 (printf's %g, six significant digits).
std::string PlainNumber(double x);

// Bytes in the largest binary unit under which they stay 1 or more:
// 1850368 -> "1.8 MiB" (`decimals` 1), 1000 -> "1000 B".
std::string BinaryBytes(double bytes, int decimals = 1);

}  // namespace edgetrain
