#pragma once
// One shard of the keyspace: the databases it holds and its housekeeping.

#include <cstdint>
#include <memory>
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

 private:
  int index_;
  std::vector<std::unique_ptr<Db>> dbs_;
  int expire_db_cursor_ = 0;
};

// The Redis Cluster slot of a key: CRC16 (XMODEM) of the key, or of the part between the first
// '{' and the next '}' when that part is non-empty, modulo 16384.
uint16_t KeySlot(std::string_view key);
constexpr int kNumSlots = 16384;
// Redis's glob matching (stringmatchlen): * ? [a-z] [^x] and \ escapes.
bool GlobMatch(std::string_view pattern, std::string_view str, bool nocase = false);

}  // namespace deadbolt::shard
