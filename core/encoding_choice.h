#pragma once
// Adaptive compression (spec.sync.compression adaptive): each worker chooses,
// interval by interval, how its pushes encode their rows. Top-k sends a
// quarter of int8's bytes but only a row's largest 1/32 of values; what it
// leaves stays in the worker's residual for later pushes (error feedback). It
// pays while those values hold most of the gradient (sparse gradients: a
// first layer over inputs that are mostly 0); on a gradient spread evenly it
// would send a little of everything late, and int8 sends it all now.
//
// The measure: the share of the residual's norm (what the next pushes will
// carry) that each row's top-k holds, over the whole model.

#include <cstdint>
#include <span>

#include "core/job_spec.h"
#include "core/row_codec.h"
#include "core/row_layout.h"

namespace edgetrain {

// Top-k while it keeps at least this share of the norm (half the squared norm).
inline constexpr double kTopKKeepsEnough = 0.7;
// Pushes between two choices: the measure reads the whole model.
inline constexpr int64_t kPushesAChoice = 16;

// The share of the norm of `values` (flat in `layout`'s order) that each
// row's top-k keeps; 1 when they are all 0.
double TopKNormShare(const RowLayout& layout, std::span<const float> values);

class EncodingChoice {
 public:
  // Fixed for every compression but adaptive, which starts on int8.
  explicit EncodingChoice(Compression compression);

  bool adaptive() const { return adaptive_; }
  RowEncoding encoding() const { return encoding_; }
  // The last measure (adaptive only; -1 before the first).
  double kept_norm_share() const { return kept_; }

  // A push is about to be composed: is a choice due (adaptive: the first
  // push, and every kPushesAChoice after)?
  bool Due() const { return adaptive_ && pushes_ % kPushesAChoice == 0; }
  // Chooses from what top-k would keep of the residual now.
  void Choose(double kept_norm_share);
  // A push was composed.
  void Composed() {
    ++pushes_;
    if (encoding_ == RowEncoding::kTopK) ++topk_pushes_;
  }
  int64_t pushes() const { return pushes_; }
  int64_t topk_pushes() const { return topk_pushes_; }

 private:
  const bool adaptive_;
  RowEncoding encoding_;
  double kept_ = -1;
  int64_t pushes_ = 0;
  int64_t topk_pushes_ = 0;
};

}  // namespace edgetrain
