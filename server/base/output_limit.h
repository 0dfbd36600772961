#pragma once
// client-output-buffer-limit, as Redis: per class of client (normal, replica, pubsub) a hard
// limit on the replies a client has not read yet, and a soft limit it may stay above for at most
// soft_seconds. A client over either is closed. The reactor that owns a connection checks it
// whenever the connection's output grows.

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

}  // namespace deadbolt::server
