#include "core/sample_stream.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace edgetrain {

SampleStream::SampleStream(StreamRate rate, std::vector<int64_t> partition, uint64_t seed, int64_t capacity)
    : rate_(std::move(rate)), order_(std::move(partition), 1, seed), capacity_(std::max<int64_t>(1, capacity)) {}

void SampleStream::CatchUp(double seconds) {
  // A hair of slack: at the time WhenBuffered named, the integral may round
  // to just under the whole sample it promised.
  const auto by_now = static_cast<int64_t>(std::floor(rate_.ArrivedBy(seconds) + 1e-9));
  const int64_t fresh = by_now - arrived_;
  if (fresh <= 0) return;
  arrived_ = by_now;
  // Only the newest `capacity_` of what arrived can stay: the rest is dropped
  // unseen (a long pause at a high rate draws no more samples than fit).
  const int64_t kept = std::min(fresh, capacity_);
  dropped_ += fresh - kept;
  for (int64_t i = 0; i < kept; ++i) Admit(order_.Next()[0]);
}

void SampleStream::Arrive(int64_t first, int64_t n) {
  if (n <= 0) return;
  arrived_ += n;
  const int64_t kept = std::min(n, capacity_);
  dropped_ += n - kept;
  for (int64_t i = n - kept; i < n; ++i) Admit(first + i);
}

void SampleStream::Admit(int64_t sample) {
  if (static_cast<int64_t>(buffer_.size()) == capacity_) {
    buffer_.pop_front();
    ++dropped_;
  }
  buffer_.push_back(sample);
}

std::vector<int64_t> SampleStream::Take(int64_t most) {
  const auto n = static_cast<size_t>(std::clamp<int64_t>(most, 0, static_cast<int64_t>(buffer_.size())));
  std::vector<int64_t> batch(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
  consumed_ += static_cast<int64_t>(n);
  return batch;
}

double SampleStream::WhenBuffered(int64_t samples) const {
  if (samples > capacity_) return std::numeric_limits<double>::infinity();
  const int64_t missing = samples - static_cast<int64_t>(buffer_.size());
  if (missing <= 0) return 0;
  return rate_.WhenArrived(static_cast<double>(arrived_ + missing));
}

std::optional<int64_t> SampleStream::Oldest() const {
  if (buffer_.empty()) return std::nullopt;
  return buffer_.front();
}

StreamCounts SampleStream::counts() const {
  return {arrived_, dropped_, consumed_, static_cast<int64_t>(buffer_.size())};
}

StreamCounts SampleStream::CountsAt(double seconds) const {
  StreamCounts c = counts();
  const auto by_now = static_cast<int64_t>(std::floor(rate_.ArrivedBy(seconds) + 1e-9));
  const int64_t fresh = by_now - arrived_;
  if (fresh <= 0) return c;
  // As CatchUp: the buffer keeps the newest `capacity_`, the rest dropped.
  const int64_t held = std::min(c.backlog + fresh, capacity_);
  c.dropped += c.backlog + fresh - held;
  c.arrived = by_now;
  c.backlog = held;
  return c;
}

}  // namespace edgetrain
