#include "core/encoding_choice.h"

#include <cmath>

#include "core/float_sums.h"

namespace edgetrain {

double TopKNormShare(const RowLayout& layout, std::span<const float> values) {
  double total = 0, kept = 0;
  for (size_t r = 0; r < layout.size(); ++r) {
    const RowSpan& span = layout.row(r);
    const std::span<const float> row = values.subspan(static_cast<size_t>(span.offset), static_cast<size_t>(span.length));
    const double energy = FiniteSquaredNorm(row);
    if (energy <= 0) continue;
    total += energy;
    kept += energy * TopKEnergyShare(row);
  }
  return total > 0 ? std::sqrt(kept / total) : 1.0;
}

EncodingChoice::EncodingChoice(Compression compression)
    : adaptive_(compression == Compression::kAdaptive), encoding_(EncodingFor(compression)) {}

void EncodingChoice::Choose(double kept_norm_share) {
  if (!adaptive_) return;
  kept_ = kept_norm_share;
  encoding_ = kept_norm_share >= kTopKKeepsEnough ? RowEncoding::kTopK : RowEncoding::kInt8;
}

}  // namespace edgetrain
