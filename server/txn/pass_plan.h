#pragma once
// Where each phase of a multi-phase cross-shard operation runs when the operation is done in one
// pass along its shards (Transaction::LockRunPhases, server/core/). Pure; any thread.
//
// The pass visits the n shards it locks going up in ascending order, taking each one's locks,
// then comes back down, letting go of each after its last phase there:
//   visit v < n-1: shard v going up; v == n-1: the last shard, once; v > n-1: shard 2n-2-v going
//   down.
// Phase k runs on one shard (on[k] >= 0) or on every one (-1), and only after every phase before
// it has run wherever it runs. Each phase takes the latest visit that leaves room for the phases
// after it, so a single phase on every shard runs at the top and on the way down.
//
// Why the result is the same as running the phases in order with every lock held: each shard's
// locks are taken before its first phase there and let go after its last, and every lock is
// taken (the top) before any is let go (two-phase locking). A phase that runs going up does so
// before the higher shards are locked, but nobody can see what it did until its shard is let go,
// after the top.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace deadbolt::server {

// For parts on `part_shards` (ascending, distinct): per visit, the phases it runs in order; or
// nullopt when the phases do not fit one pass (over A < B the visits are A, B, A: phases on
// B, A, B do not fit), or name a shard not in `part_shards`, or number over 255.
//
// With `earliest`, each phase takes the earliest visit after the phases before it instead (a
// journalled pass, whose changes must all be made by the top: see Transaction::RunStep). The
// visits read the same backwards (part i going up, part i going down), so that is the latest
// placement of the phases in reverse order, read backwards.
inline std::optional<std::vector<std::vector<uint8_t>>> PlanPass(
    const std::vector<int>& part_shards, const std::vector<int>& on, bool earliest = false) {
  const size_t n = part_shards.size();
  if (n == 0 || on.empty() || on.size() > 255) return std::nullopt;
  if (earliest) {
    auto late = PlanPass(part_shards, std::vector<int>(on.rbegin(), on.rend()));
    if (!late) return std::nullopt;
    std::vector<std::vector<uint8_t>> steps(late->size());
    const size_t last = late->size() - 1;
    for (size_t v = 0; v <= last; v++) {
      for (auto it = (*late)[v].rbegin(); it != (*late)[v].rend(); ++it) {
        steps[last - v].push_back(static_cast<uint8_t>(on.size() - 1 - *it));
      }
    }
    return steps;
  }
  // The latest visit each phase can take, from the last phase back: a phase on one shard takes
  // that shard's latest visit at or before where the next phase ran; a phase on every shard
  // takes each one's latest visit down to the earliest of them, where the phase before it may
  // run at the latest.
  const size_t visits = 2 * n - 1;
  auto part_at = [n](size_t v) { return v < n ? v : 2 * n - 2 - v; };
  std::vector<std::vector<uint8_t>> steps(visits);
  size_t limit = visits - 1;  // the latest visit the phase being placed may take
  for (size_t k = on.size(); k-- > 0;) {
    std::vector<char> need(n, 0);
    size_t left = 0;
    if (on[k] < 0) {
      std::fill(need.begin(), need.end(), 1);
      left = n;
    } else {
      for (size_t i = 0; i < n; i++) {
        if (part_shards[i] == on[k]) {
          need[i] = 1;
          left = 1;
        }
      }
      if (left == 0) return std::nullopt;  // a shard it holds no lock on
    }
    size_t v = limit;
    for (;; v--) {
      size_t i = part_at(v);
      if (need[i]) {
        need[i] = 0;
        steps[v].insert(steps[v].begin(), static_cast<uint8_t>(k));
        if (--left == 0) break;
      }
      if (v == 0) return std::nullopt;
    }
    limit = v;
  }
  return steps;
}

}  // namespace deadbolt::server
