#pragma once
// Numbers as people read them in logs, conditions and summaries.

#include <cstdint>
#include <string>

namespace edgetrain {

// 1234567 -> "1,234,567"
std::string WithThousands(int64_t n);

}  // namespace edgetrain
