#pragma once
// How a pipeline's relay travels between the shards (server/core/relay.cc): pure functions of
// the shards of its commands, in pipeline order. Any thread; no state.
//
// Two routes: in order (to the shard of each next command, a message at each change of shard,
// then home), or ascending (each shard of the relay once in ascending order, running all of its
// commands there, then home, and a message to each shard other than the origin where commands
// ran ahead of an earlier one, to release their keys). Ascending, the commands therefore run
// grouped by shard, in ascending shard order, in pipeline order within a shard.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace deadbolt::server::relay_route {

struct Messages {
  int in_order = 0;
  int ascending = 0;
};

// The messages each route costs when nothing waits, for commands whose shards `shard_of(cmd)`
// gives, sent from `origin`. A run on the origin's own reactor costs none.
template <typename Cmds, typename ShardOf>
Messages Count(int origin, const Cmds& cmds, ShardOf shard_of) {
  Messages m;
  int prev = origin;
  int low = INT32_MAX, high = -1, max_seen = -1;
  thread_local std::vector<uint8_t> seen;  // 1: visited, 2: commands run ahead there
  for (const auto& c : cmds) {
    const int s = shard_of(c);
    m.in_order += s != prev;
    prev = s;
    if (seen.size() <= static_cast<size_t>(s)) seen.resize(s + 1, 0);
    if (!seen[s]) seen[s] = 1;
    if (max_seen > s) seen[s] = 2;  // after a command on a higher shard: runs ahead of it
    max_seen = std::max(max_seen, s);
    low = std::min(low, s);
    high = std::max(high, s);
  }
  if (high < 0) return m;
  m.in_order += prev != origin;
  // origin -> each shard in ascending order -> origin, the legs between equal ends are free.
  m.ascending = 1 - (low == origin) - (high == origin);
  for (int s = low; s <= high; s++) {
    if (!seen[s]) continue;
    m.ascending += 1 + (seen[s] == 2 && s != origin);
    seen[s] = 0;
  }
  return m;
}

// Ascending, the order the commands ran in: (*ran)[k] is the index of the k-th command run
// (a stable counting sort by shard).
template <typename Cmds, typename ShardOf>
void AscendingRunOrder(const Cmds& cmds, ShardOf shard_of, std::vector<uint32_t>* ran) {
  thread_local std::vector<uint32_t> first;  // where each shard's commands begin
  first.assign(1, 0);
  for (const auto& c : cmds) {
    const size_t s = static_cast<size_t>(shard_of(c));
    if (first.size() < s + 2) first.resize(s + 2, 0);
    first[s + 1]++;
  }
  for (size_t s = 1; s < first.size(); s++) first[s] += first[s - 1];
  ran->resize(cmds.size());
  uint32_t i = 0;
  for (const auto& c : cmds) (*ran)[first[shard_of(c)]++] = i++;
}

}  // namespace deadbolt::server::relay_route
