#pragma once
// lockload: a log-linear latency histogram in the manner of HdrHistogram, sized once, with no
// allocation per sample.

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace deadbolt::lockload {

// Counts values (nanoseconds) in log-linear buckets: values below 1024 are counted exactly;
// above, each power-of-two range [2^k, 2^(k+1)) is split into 512 equal buckets, so a value is
// known to within 1/512 (0.2%) of itself - far finer than the microseconds reported. Values above
// kMaxTrackable (about 18 minutes) are counted in the last bucket; max() stays exact.
//
// Owned and written by one worker thread (Record). Any thread may read it concurrently (Merge,
// the accessors): every counter is a relaxed atomic that its one writer updates with a plain
// load and store, so a reader sees each counter whole though not all counters at one instant -
// good enough for a progress line. Readers that need the final numbers read after the writer has
// been joined.
class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 10;
  static constexpr uint64_t kSubBucketCount = 1u << kSubBucketBits;  // 1024
  static constexpr uint64_t kSubBucketHalf = kSubBucketCount / 2;    // 512
  static constexpr int kMaxMagnitude = 40;                           // values < 2^40 ns
  static constexpr uint64_t kMaxTrackable = (uint64_t{1} << kMaxMagnitude) - 1;
  static constexpr int kMaxShift = kMaxMagnitude - kSubBucketBits;                      // 30
  static constexpr size_t kBucketCount = kMaxShift * kSubBucketHalf + kSubBucketCount;  // 16384

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Index of the bucket that counts `value`.
  static size_t IndexOf(uint64_t value) {
    if (value > kMaxTrackable) value = kMaxTrackable;
    int msb = 63 - std::countl_zero(value | 1);
    int shift = msb - (kSubBucketBits - 1);
    if (shift < 0) shift = 0;
    return static_cast<size_t>(shift) * kSubBucketHalf + static_cast<size_t>(value >> shift);
  }
  // The smallest and largest values that land in bucket `index`.
  static uint64_t LowestIn(size_t index) {
    if (index < kSubBucketCount) return index;
    uint64_t shift = (index - kSubBucketHalf) / kSubBucketHalf;
    uint64_t sub = index - shift * kSubBucketHalf;
    return sub << shift;
  }
  static uint64_t HighestIn(size_t index) { return LowestIn(index + 1) - 1; }

  // Writer thread only.
  void Record(uint64_t value) { Record(value, 1); }
  void Record(uint64_t value, uint64_t count) {
    Bump(counts_[IndexOf(value)], count);
    Bump(total_, count);
    Bump(sum_, value * count);
    if (value > max_.load(std::memory_order_relaxed)) max_.store(value, std::memory_order_relaxed);
    if (value < min_.load(std::memory_order_relaxed)) min_.store(value, std::memory_order_relaxed);
  }

  // Adds `other`'s counts into this one. Writer of this histogram only; `other` may be live.
  void Merge(const LatencyHistogram& other);
  // Writer only: forgets every sample.
  void Reset();

  uint64_t count() const { return total_.load(std::memory_order_relaxed); }
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }
  uint64_t min() const { return count() == 0 ? 0 : min_.load(std::memory_order_relaxed); }
  double mean() const;
  // The value at quantile q in [0, 1]: the highest value of the bucket that holds the
  // ceil(q * count)-th smallest sample, capped at max(). 0 when empty.
  uint64_t ValueAtQuantile(double q) const;

 private:
  static void Bump(std::atomic<uint64_t>& c, uint64_t n) {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  std::array<std::atomic<uint64_t>, kBucketCount> counts_{};
  std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
  std::atomic<uint64_t> min_{UINT64_MAX};
};

}  // namespace deadbolt::lockload
