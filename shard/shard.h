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

  // maxmemory-policy volatile-ttl: removes, as DEL does, the key with a TTL that expires
  // soonest, approximated as Redis does (evict.c): `samples` keys with a TTL drawn from every
  // db go into a pool of the best 16 candidates, kept across calls, and the best candidate
  // that still has a TTL is removed. A key for which skip(db, key) is true (one a cross-shard
  // transaction holds) is passed over. Returns the bytes freed (MEMORY USAGE's count), or
  // nullopt when no key with a TTL is left to evict.
  using EvictSkip = std::function<bool(int db, std::string_view key)>;
  std::optional<size_t> EvictVolatileTtl(int samples, int64_t now_ms, const EvictSkip& skip);
  // Keys with a TTL over all dbs.
  size_t ExpiresSize() const;

 private:
  struct EvictCandidate {
    int64_t expire_at;
    int db;
    std::string key;
  };
  // Fills the pool from every db; false when no db has a key with a TTL.
  bool FillEvictionPool(int samples);

  int index_;
  std::vector<std::unique_ptr<Db>> dbs_;
  int expire_db_cursor_ = 0;
  std::vector<EvictCandidate> evict_pool_;  // best (soonest) first, at most kEvictPoolSize
  std::vector<std::pair<std::string, int64_t>> evict_sample_;  // reused by FillEvictionPool
};

}  // namespace deadbolt::shard
