#pragma once
// The random picks of the *RANDMEMBER / *RANDFIELD / SPOP commands: splitmix64 steps over a
// state the shard keeps, and distinct picks by a partial shuffle. Single-threaded: each shard
// passes its own state.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace deadbolt::shard {

// One splitmix64 step, as the keyspace's Dict uses.
inline uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Keeps `count` (< all->size()) distinct elements of `all`, picked at random: a partial
// Fisher-Yates shuffle.
template <typename T>
void KeepRandom(std::vector<T>* all, size_t count, uint64_t* state) {
  for (size_t i = 0; i < count; ++i) {
    const size_t j = i + NextRandom(state) % (all->size() - i);
    std::swap((*all)[i], (*all)[j]);
  }
  all->resize(count);
}

}  // namespace deadbolt::shard
