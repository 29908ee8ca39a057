#include "core/step_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/dataset_info.h"
#include "core/model_shape.h"

namespace edgetrain {
namespace {

// Bits a value costs on the wire, with the per-row scale amortised away.
double BitsPerValue(Compression c) {
  switch (c) {
    case Compression::kNone: return 32;
    case Compression::kFp16: return 16;
    case Compression::kInt8: return 8;
    case Compression::kInt4: return 4;
    case Compression::kSign: return 1;
    // Top-k sends a 32-bit index with each kept float32 value, for 1/32 of them.
    case Compression::kTopK: return 64.0 / 32;
    // Adaptive falls back to int8: the prediction takes the dearer.
    case Compression::kAdaptive: return 8;
  }
  return 32;
}

// Row-granular sync sends at most every row each step; the prediction takes
// the whole model both ways, the cost of bsp and the most rog ever pays.
double BitsPerExchange(const JobSpec& spec, int64_t parameters) {
  return 2.0 * static_cast<double>(parameters) * BitsPerValue(spec.sync.compression);
}

}  // namespace

StepCost StepCostOf(const JobSpec& spec, const ModelSize& measured) {
  StepCost cost;
  cost.batch_size = spec.data.batch_size;
  cost.parameters = measured.parameters;
  cost.multiply_adds = measured.multiply_adds;
  cost.bits_per_exchange = BitsPerExchange(spec, cost.parameters);
  return cost;
}

StepCost StepCostOf(const JobSpec& spec) {
  const DatasetInfo data = InfoOf(spec.data);
  StepCost cost;
  cost.batch_size = spec.data.batch_size;
  auto dense = [&](int64_t in, int64_t out) {
    cost.parameters += in * out + out;
    cost.multiply_adds += in * out;
  };
  int64_t in = data.channels, h = data.height, w = data.width;
  auto conv = [&](int64_t out) {
    cost.parameters += in * out * 9 + out;
    cost.multiply_adds += h * w * in * out * 9;  // 3x3, padded: one output per pixel
    in = out;
  };
  auto pool = [&] {
    h /= 2;
    w /= 2;
  };
  switch (spec.model.kind) {
    case ModelKind::kMlp:
      in *= h * w;
      for (int width : HiddenWidths(spec.model)) {
        dense(in, width);
        in = width;
      }
      break;
    case ModelKind::kCnn:
      for (int out : ConvChannels(spec.model)) {
        conv(out);
        pool();
      }
      in *= h * w;
      break;
    case ModelKind::kVgg: {
      const std::vector<int> widths = VggWidths(spec.model);
      for (size_t i = 0; i < widths.size(); ++i) {
        conv(widths[i]);
        if (VggPoolFollows(i, widths.size())) pool();
      }
      in *= h * w;
      break;
    }
    case ModelKind::kTorchScript:
      // Its layers are known only once LibTorch loads it: costed by the
      // overload that takes its measured size, nothing here.
      return cost;
  }
  dense(in, data.classes);
  cost.bits_per_exchange = BitsPerExchange(spec, cost.parameters);
  return cost;
}

double FlopsASample(double multiply_adds, int64_t parameters, int batch) {
  return 6.0 * multiply_adds + 4.0 * static_cast<double>(parameters) / std::max(batch, 1);
}

int64_t MultiplyAddsOf(double flops, int64_t parameters, int batch) {
  const double multiply_adds = (flops - 4.0 * static_cast<double>(parameters) / std::max(batch, 1)) / 6.0;
  return std::max<int64_t>(0, std::llround(multiply_adds));
}

PredictedStep PredictStep(const StepCost& cost, double compute_score, double link_mbps) {
  PredictedStep step;
  const double flops =
      FlopsASample(static_cast<double>(cost.multiply_adds), cost.parameters, cost.batch_size) * cost.batch_size;
  step.compute_seconds = compute_score > 0
                             ? (kStepOverheadSeconds + flops / kReferenceFlopsPerSecond) / compute_score
                             : std::numeric_limits<double>::infinity();
  // The coordinator's own device crosses no link, but exchanges all the same.
  step.communicate_seconds =
      kExchangeOverheadSeconds + (link_mbps > 0 ? cost.bits_per_exchange / (link_mbps * 1e6) : 0);
  return step;
}

}  // namespace edgetrain
