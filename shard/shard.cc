#include "shard/shard.h"

#include <algorithm>

namespace deadbolt::shard {

Shard::Shard(int index, int num_dbs) : index_(index) {
  dbs_.reserve(static_cast<size_t>(std::max(num_dbs, 0)));
  for (int i = 0; i < num_dbs; ++i) dbs_.push_back(std::make_unique<Db>());
}

size_t Shard::ActiveExpire(int64_t now_ms, size_t max_visits) {
  const int n = num_dbs();
  if (n == 0) return 0;
  size_t removed = 0;
  size_t used = 0;
  // Each call starts at the next db, so that a small budget still reaches every db in turn. A
  // db gets an equal share of what is left; what it does not use (no TTLs, small table) goes to
  // the dbs after it.
  for (int i = 0; i < n && used < max_visits; ++i) {
    Db& db = *dbs_[(expire_db_cursor_ + i) % n];
    const size_t share = std::max<size_t>(1, (max_visits - used) / static_cast<size_t>(n - i));
    size_t visited = 0;
    removed += db.ActiveExpire(now_ms, share, &visited);
    used += visited;
  }
  expire_db_cursor_ = (expire_db_cursor_ + 1) % n;
  return removed;
}

}  // namespace deadbolt::shard
