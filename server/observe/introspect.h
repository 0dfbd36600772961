#pragma once
// What operators see of the commands that run: a cheap tick clock, per-command latency
// histograms (INFO latencystats, LATENCY HISTOGRAM), the slow log's entries (SLOWLOG), the
// latency monitor (LATENCY) and MONITOR's lines.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#else
#include <ctime>
#endif

namespace deadbolt::server {

// A monotonic tick counter read once per command. On x86-64 the CPU's time-stamp counter, which
// runs at a constant rate on every CPU this server supports (it is the kernel's clocksource on
// the project's VMs): one instruction, no system call, no fence (a command is hundreds of
// nanoseconds; the few cycles rdtsc may be reordered by do not matter). Elsewhere
// CLOCK_MONOTONIC's nanoseconds (one vDSO call). CLOCK_MONOTONIC_COARSE would be cheaper but
// moves in steps of a few milliseconds: useless for microseconds.
struct TickClock {
  static uint64_t Now() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + ts.tv_nsec;
#endif
  }
  // Ticks per microsecond, measured against CLOCK_MONOTONIC the first time (a few ms; the
  // server calls it at start-up, on the main thread). Thread-safe.
  static double TicksPerUsec();
  static uint64_t ToUsec(uint64_t ticks) {
    return static_cast<uint64_t>(static_cast<double>(ticks) / TicksPerUsec());
  }
  static uint64_t FromUsec(uint64_t usec) {
    return static_cast<uint64_t>(static_cast<double>(usec) * TicksPerUsec());
  }
};

// Counts of durations in ticks, log-linear: 16 buckets per power of two (each at most 6.25%
// wide), so recording is a count-leading-zeros and an increment. Empty (no memory) until the
// first Record. Owned by one reactor; INFO merges copies.
class LatencyHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr size_t kBuckets = (64 - kSubBits + 1) << kSubBits;

  LatencyHistogram() = default;
  LatencyHistogram(const LatencyHistogram& o) { *this = o; }
  LatencyHistogram& operator=(const LatencyHistogram& o) {
    if (this == &o) return *this;
    counts_.reset();
    if (o.counts_) {
      counts_ = std::make_unique<uint64_t[]>(kBuckets);
      std::copy(o.counts_.get(), o.counts_.get() + kBuckets, counts_.get());
    }
    return *this;
  }
  LatencyHistogram(LatencyHistogram&&) = default;
  LatencyHistogram& operator=(LatencyHistogram&&) = default;

  // The hot path: a compare, a count-leading-zeros, two shifts and an increment.
  [[gnu::always_inline]] void Record(uint64_t ticks) {
    if (!counts_) [[unlikely]] counts_ = std::make_unique<uint64_t[]>(kBuckets);
    counts_[Bucket(ticks)]++;
  }
  void Merge(const LatencyHistogram& o);
  uint64_t total() const;
  // The smallest bucket's upper bound (in ticks) under which at least `percentile`% of the
  // recorded values lie; 0 when empty.
  uint64_t Percentile(double percentile) const;
  // Non-empty buckets as (upper bound in ticks, count), ascending.
  std::vector<std::pair<uint64_t, uint64_t>> Buckets() const;

  // Values under 2^kSubBits ticks (a few nanoseconds) share the first bucket.
  static size_t Bucket(uint64_t v) {
    v = v < (1u << kSubBits) ? (1u << kSubBits) : v;
    int e = 63 - __builtin_clzll(v);  // e >= kSubBits
    return (static_cast<size_t>(e - kSubBits + 1) << kSubBits) |
           static_cast<size_t>((v >> (e - kSubBits)) & ((1u << kSubBits) - 1));
  }
  // The largest value that falls in bucket b.
  static uint64_t UpperBound(size_t b);

 private:
  std::unique_ptr<uint64_t[]> counts_;  // kBuckets, or null before the first Record
};

// One SLOWLOG entry, as Redis keeps it: at most 32 arguments (the last saying how many more
// there were), each at most 128 bytes (saying how many more there were).
struct SlowlogEntry {
  uint64_t id = 0;
  int64_t unix_sec = 0;
  uint64_t usec = 0;
  std::vector<std::string> args;
  std::string peer;
  std::string name;
};

// Builds an entry's arguments as Redis's slowlogCreateEntry does.
std::vector<std::string> SlowlogArgs(const std::string_view* args, size_t argc);
// The arguments shown for a run of n fast calls timed together (server/core/reactor.h), the
// last of them a `name`: {name, "(a run of n fast calls, timed together)"}.
std::vector<std::string> RunSlowlogArgs(std::string_view name, int n);

// A reactor's slow log: the newest first, at most max_len entries (slowlog-max-len). Owned by
// that reactor; SLOWLOG GET merges every reactor's by id.
class SlowLog {
 public:
  void Add(SlowlogEntry e, size_t max_len) {
    entries_.push_front(std::move(e));
    Trim(max_len);
  }
  void Trim(size_t max_len) {
    while (entries_.size() > max_len) entries_.pop_back();
  }
  void Reset() { entries_.clear(); }
  const std::deque<SlowlogEntry>& entries() const { return entries_; }

 private:
  std::deque<SlowlogEntry> entries_;
};

// The latency monitor (LATENCY LATEST/HISTORY/RESET): per event ("command", "fast-command"),
// the latest 160 samples of calls that took at least latency-monitor-threshold ms, at most one
// per second (the largest), and the largest ever. Owned by one reactor; LATENCY merges them.
struct LatencySample {
  int64_t unix_sec = 0;
  uint64_t ms = 0;
};
struct LatencySeries {
  static constexpr size_t kMaxSamples = 160;
  std::deque<LatencySample> samples;  // oldest first
  uint64_t max_ms = 0;
  void Add(int64_t unix_sec, uint64_t ms) {
    if (!samples.empty() && samples.back().unix_sec == unix_sec) {
      samples.back().ms = std::max(samples.back().ms, ms);
    } else {
      samples.push_back({unix_sec, ms});
      if (samples.size() > kMaxSamples) samples.pop_front();
    }
    max_ms = std::max(max_ms, ms);
  }
  // Folds another reactor's series of the same event into this one.
  void Merge(const LatencySeries& o);
};
using LatencyEvents = std::map<std::string, LatencySeries>;

// One MONITOR line, as Redis writes it: `+1700000000.123456 [0 127.0.0.1:1234] "SET" "k" "v"`
// (a status reply; arguments quoted and escaped as sdscatrepr does), with its CRLF. AUTH's
// arguments, and HELLO's after AUTH, are "(redacted)".
std::string MonitorLine(int64_t unix_us, int db, std::string_view peer,
                        const std::string_view* args, size_t argc);

}  // namespace deadbolt::server
