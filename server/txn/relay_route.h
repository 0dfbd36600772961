#pragma once
// How a pipeline's relay travels between the shards (server/core/relay.cc): the messages each
// route costs, counted from the shards of its commands in pipeline order. No I/O; a Tally
// belongs to the thread building the relay (its origin's reactor).
//
// Two routes: in order (to the shard of each next command, a message at each change of shard,
// then home), or ascending (each shard of the relay once in ascending order, running all of its
// commands there, then home, and a message to each shard other than the origin where commands
// ran ahead of an earlier one, to release their keys). Ascending, the commands therefore run
// grouped by shard, in ascending shard order, in pipeline order within a shard.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace deadbolt::server::relay_route {

struct Messages {
  int in_order = 0;
  int ascending = 0;
};

// Counts the messages each route costs when nothing waits, one command's shard at a time, as
// the commands join a relay (sent from `origin`; a run on the origin's own reactor costs none).
class Tally {
 public:
  explicit Tally(int origin = 0) { Reset(origin); }

  // Starts over for a relay from `origin` (the bitmaps of shards from 64 on keep their capacity).
  void Reset(int origin) {
    origin_ = prev_ = origin;
    in_order_ = 0;
    low_ = INT32_MAX;
    high_ = -1;
    visited_ = ahead_ = 0;
    std::fill(more_.begin(), more_.end(), 0);
  }

  void Add(int shard) {
    in_order_ += shard != prev_;
    prev_ = shard;
    // After a command on a higher shard, it runs ahead of that one.
    const uint64_t bit = uint64_t{1} << (shard % 64), ahead = high_ > shard ? bit : 0;
    if (shard < 64) [[likely]] {
      visited_ |= bit;
      ahead_ |= ahead;
    } else {
      const size_t w = static_cast<size_t>(shard) / 64 * 2;
      if (more_.size() < w) more_.resize(w, 0);
      more_[w - 2] |= bit;
      more_[w - 1] |= ahead;
    }
    low_ = std::min(low_, shard);
    high_ = std::max(high_, shard);
  }

  // The lowest shard added (ascending, the first one visited); INT32_MAX when none was.
  int low() const { return low_; }

  Messages Done() const {
    Messages m;
    if (high_ < 0) return m;
    m.in_order = in_order_ + (prev_ != origin_);
    // origin -> each shard in ascending order -> origin, the legs between equal ends free; and a
    // release for each shard but the origin where commands ran ahead.
    m.ascending = 1 - (low_ == origin_) - (high_ == origin_) + Releases(0, visited_, ahead_);
    for (size_t w = 0; w < more_.size(); w += 2) {
      m.ascending += Releases(w / 2 + 1, more_[w], more_[w + 1]);
    }
    return m;
  }

 private:
  // The visits and releases of the 64 shards from 64 * word on.
  int Releases(size_t word, uint64_t visited, uint64_t ahead) const {
    if (static_cast<size_t>(origin_) / 64 == word) ahead &= ~(uint64_t{1} << (origin_ % 64));
    return std::popcount(visited) + std::popcount(ahead);
  }

  int origin_ = 0, prev_ = 0, in_order_ = 0, low_ = INT32_MAX, high_ = -1;
  // Bit s: shard s has commands (visited), some of them run ahead (ahead). Shards from 64 on in
  // `more_`, two words for each 64: visited, then ahead.
  uint64_t visited_ = 0, ahead_ = 0;
  std::vector<uint64_t> more_;
};

// Both routes' messages for a whole list of commands whose shards `shard_of(cmd)` gives.
template <typename Cmds, typename ShardOf>
Messages Count(int origin, const Cmds& cmds, ShardOf shard_of) {
  Tally t(origin);
  for (const auto& c : cmds) t.Add(shard_of(c));
  return t.Done();
}

}  // namespace deadbolt::server::relay_route
