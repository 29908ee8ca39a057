#include "core/batch_order.h"

#include <algorithm>

namespace edgetrain {

BatchOrder::BatchOrder(std::vector<int64_t> samples, int64_t batch_size, uint64_t seed)
    : order_(std::move(samples)), batch_size_(std::max<int64_t>(1, batch_size)), rng_(seed) {}

std::span<const int64_t> BatchOrder::Next() {
  const int64_t n = static_cast<int64_t>(order_.size());
  if (cursor_ == 0) std::shuffle(order_.begin(), order_.end(), rng_);
  const int64_t begin = cursor_, m = std::min(batch_size_, n - cursor_);
  cursor_ = cursor_ + m == n ? 0 : cursor_ + m;
  return std::span<const int64_t>(order_).subspan(static_cast<size_t>(begin), static_cast<size_t>(m));
}

int64_t BatchOrder::BatchesPerEpoch() const {
  return (static_cast<int64_t>(order_.size()) + batch_size_ - 1) / batch_size_;
}

void BatchOrder::Skip(int64_t batches) {
  for (int64_t i = 0; i < batches; ++i) Next();
}

void BatchOrder::SkipSamples(int64_t samples) {
  const int64_t n = static_cast<int64_t>(order_.size());
  while (n > 0 && samples > 0) {
    if (cursor_ == 0) std::shuffle(order_.begin(), order_.end(), rng_);  // as Next would
    const int64_t m = std::min(samples, n - cursor_);
    cursor_ = cursor_ + m == n ? 0 : cursor_ + m;
    samples -= m;
  }
}

std::vector<MicroBatchSpan> SplitBatch(int64_t n, int micro_batches) {
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(micro_batches, n));
  std::vector<MicroBatchSpan> spans;
  for (int64_t i = 0, begin = 0; i < parts; ++i) {
    const int64_t length = n / parts + (i < n % parts ? 1 : 0);
    spans.push_back({begin, begin + length});
    begin += length;
  }
  return spans;
}

std::vector<int64_t> ShareOut(int64_t n, std::span<const double> weights) {
  double total = 0;
  for (double w : weights) total += w;
  std::vector<int64_t> counts(weights.size(), 0);
  std::vector<std::pair<double, size_t>> remainders;
  int64_t dealt = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double exact = n * weights[i] / total;
    counts[i] = static_cast<int64_t>(exact);
    dealt += counts[i];
    remainders.push_back({exact - counts[i], i});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t k = 0; dealt < n; ++k, ++dealt) ++counts[remainders[k % remainders.size()].second];
  return counts;
}

std::vector<std::vector<int64_t>> DealStep(int64_t samples, int micro_batches, std::span<const double> speeds) {
  std::vector<std::vector<int64_t>> dealt(speeds.size());
  for (const MicroBatchSpan& span : SplitBatch(samples, micro_batches)) {
    const std::vector<int64_t> shares = ShareOut(span.end - span.begin, speeds);
    for (size_t j = 0; j < shares.size(); ++j) dealt[j].push_back(shares[j]);
  }
  return dealt;
}

}  // namespace edgetrain
