#pragma once
// client-output-buffer-limit, as Redis: per class of client (normal, replica, pubsub) a hard
// limit on the replies a client has not read yet, and a soft limit it may stay above for at most
// soft_seconds. A client over either is closed. The reactor that owns a connection checks it
// whenever the connection's output grows.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deadbolt::server {

struct OutputBufferLimit {
  int64_t hard = 0;  // bytes; 0: none
  int64_t soft = 0;  // bytes; 0: none
  int64_t soft_seconds = 0;
  bool operator==(const OutputBufferLimit&) const = default;
};

// The three classes of Redis's setting, with Redis's defaults.
struct OutputBufferLimits {
  OutputBufferLimit normal{0, 0, 0};
  OutputBufferLimit replica{256LL << 20, 64LL << 20, 60};  // no replicas yet: kept, reported
  OutputBufferLimit pubsub{32LL << 20, 8LL << 20, 60};

  // CONFIG SET client-output-buffer-limit "<class> <hard> <soft> <seconds> ...": any number of
  // classes (normal, replica or slave, pubsub), sizes with units ("64mb"). On error returns
  // Redis's text and changes nothing.
  std::optional<std::string> Parse(std::string_view text);
  // CONFIG GET: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".
  std::string Format() const;
};

// Owned by one connection (its reactor thread): when its output went over the soft limit.
class OutputLimitState {
 public:
  // Whether a client with `unsent` bytes of replies must now be closed under `limit`.
  bool Over(const OutputBufferLimit& limit, size_t unsent, int64_t now_ms);
  // The client's unread replies are under every limit (checked without Over).
  void Clear() { soft_since_ms_ = 0; }

 private:
  int64_t soft_since_ms_ = 0;  // 0: not over the soft limit
};

// maxmemory-clients in bytes, as Redis's getClientEvictionLimit: `setting` in bytes, or its
// negation a percentage of `maxmemory` (none while maxmemory is 0); never under 128 KiB, so that
// a setting too small cannot cut every client off. 0: off.
int64_t ClientEvictionLimit(int64_t setting, int64_t maxmemory);

// maxmemory-clients across reactors. Each reactor owns its clients and adds up their memory (its
// tick, or when a client's replies grow past the limit's reach); it publishes here its total and
// the size of its biggest client that may be evicted. A reactor reads the others' slots to know
// the total, and evicts its biggest client only if that is at least as big as every other
// reactor's biggest, so clients go biggest first across the server. Each slot is written by its
// reactor only and read by any (relaxed atomics: a reading may be one tick old).
class ClientMemoryBoard {
 public:
  static constexpr int kMaxReactors = 256;  // --threads' upper bound
  static void Publish(int reactor, int64_t total, int64_t biggest_evictable) {
    slots_[reactor].total.store(total, std::memory_order_relaxed);
    slots_[reactor].biggest.store(biggest_evictable, std::memory_order_relaxed);
  }
  // The other reactors' totals, added up, and the biggest of their biggest evictable clients.
  static void Others(int reactor, int reactors, int64_t* total, int64_t* biggest);

 private:
  struct alignas(64) Slot {
    std::atomic<int64_t> total{0};
    std::atomic<int64_t> biggest{0};
  };
  static Slot slots_[kMaxReactors];
};

}  // namespace deadbolt::server
