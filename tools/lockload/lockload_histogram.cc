#include "tools/lockload/lockload_histogram.h"

#include <cmath>

namespace deadbolt::lockload {

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBucketCount; ++i) {
    uint64_t n = other.counts_[i].load(std::memory_order_relaxed);
    if (n != 0) Bump(counts_[i], n);
  }
  Bump(total_, other.total_.load(std::memory_order_relaxed));
  Bump(sum_, other.sum_.load(std::memory_order_relaxed));
  uint64_t omax = other.max_.load(std::memory_order_relaxed);
  if (omax > max_.load(std::memory_order_relaxed)) max_.store(omax, std::memory_order_relaxed);
  uint64_t omin = other.min_.load(std::memory_order_relaxed);
  if (omin < min_.load(std::memory_order_relaxed)) min_.store(omin, std::memory_order_relaxed);
}

void LatencyHistogram::Reset() {
  for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
  total_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  max_.store(0, std::memory_order_relaxed);
  min_.store(UINT64_MAX, std::memory_order_relaxed);
}

double LatencyHistogram::mean() const {
  uint64_t n = count();
  return n == 0 ? 0.0 : static_cast<double>(sum_.load(std::memory_order_relaxed)) / n;
}

uint64_t LatencyHistogram::ValueAtQuantile(double q) const {
  // Sum the buckets rather than trusting total_: a concurrent reader may see them out of step.
  uint64_t total = 0;
  for (const auto& c : counts_) total += c.load(std::memory_order_relaxed);
  if (total == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(total)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  uint64_t top = max();
  for (size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i].load(std::memory_order_relaxed);
    if (seen >= rank) {
      uint64_t v = HighestIn(i);
      return v < top ? v : top;
    }
  }
  return top;
}

}  // namespace deadbolt::lockload
