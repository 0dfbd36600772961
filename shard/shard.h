#pragma once
// One shard of the keyspace: the databases it holds and its housekeeping.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shard/db.h"

namespace deadbolt::shard {

// The maxmemory policies that evict (noeviction is the caller's: it never calls Evict).
enum class EvictPolicy : uint8_t {
  kVolatileTtl,
  kVolatileLru,
  kAllkeysLru,
  kVolatileRandom,
  kAllkeysRandom,
};

// Owned by one reactor thread, which alone calls it. Holds `num_dbs` databases (SELECT 0..n-1)
// for the keys whose slot maps to this shard. No I/O, no clocks: time comes in as now_ms.
class Shard {
 public:
  Shard(int index, int num_dbs);
  int index() const { return index_; }
  int num_dbs() const { return static_cast<int>(dbs_.size()); }
  Db& db(int i) { return *dbs_[i]; }

  // Active expiry for all databases: visits at most `max_visits` slots in total, continuing where
  // the last call left off. Returns keys removed. The reactor calls it on a timer with a budget.
  size_t ActiveExpire(int64_t now_ms, size_t max_visits);

  // Over maxmemory: removes, as DEL does, one key the policy picks, approximated as Redis does
  // (evict.c). volatile-ttl: the key with a TTL that expires soonest; *-lru: the key accessed
  // least recently (its access clock, shard/table/entry.h), among keys with a TTL (volatile-lru)
  // or all (allkeys-lru). For these `samples` keys drawn from every db go into a pool of the
  // best 16 candidates, kept across calls while the policy stays, and the best candidate whose
  // rank has not changed since (a key read, a lock extended) is removed. *-random: a random key
  // (with a TTL for volatile-random), from each db in turn. A key for which skip(db, key) is
  // true (one a cross-shard transaction holds) is passed over. Returns the bytes freed (MEMORY
  // USAGE's count), or nullopt when no key the policy may evict is left.
  using EvictSkip = std::function<bool(int db, std::string_view key)>;
  std::optional<size_t> Evict(EvictPolicy policy, int samples, int64_t now_ms,
                              const EvictSkip& skip);
  // Keys with a TTL over all dbs; keys over all dbs (expired ones not yet removed included).
  size_t ExpiresSize() const;
  size_t Size() const;

 private:
  struct EvictCandidate {
    int64_t rank;  // Db::EvictRank's: lowest goes first
    int db;
    std::string key;
  };
  // Fills the pool from every db; false when no db has a key the policy may evict.
  bool FillEvictionPool(EvictPolicy policy, int samples, int64_t now_ms);
  std::optional<size_t> EvictRandom(bool volatile_only, int64_t now_ms, const EvictSkip& skip);

  int index_;
  std::vector<std::unique_ptr<Db>> dbs_;
  int expire_db_cursor_ = 0;
  std::vector<EvictCandidate> evict_pool_;  // best (lowest rank) first, at most kEvictPoolSize
  EvictPolicy pool_policy_ = EvictPolicy::kVolatileTtl;  // the policy that filled the pool
  std::vector<Db::EvictSample> evict_sample_;  // reused by FillEvictionPool and EvictRandom
  int evict_db_cursor_ = 0;                    // EvictRandom's next db
};

}  // namespace deadbolt::shard
