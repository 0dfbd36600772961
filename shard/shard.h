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

}  // namespace deadbolt::shard
