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

size_t Shard::ExpiresSize() const {
  size_t n = 0;
  for (const auto& db : dbs_) n += db->ExpiresSize();
  return n;
}

namespace {
constexpr size_t kEvictPoolSize = 16;  // Redis's EVPOOL_SIZE
}  // namespace

bool Shard::FillEvictionPool(int samples) {
  bool any = false;
  for (int i = 0; i < num_dbs(); ++i) {
    Db& db = *dbs_[i];
    if (db.ExpiresSize() == 0) continue;
    any = true;
    evict_sample_.clear();
    db.SampleVolatile(static_cast<size_t>(std::max(samples, 1)), &evict_sample_);
    for (auto& [key, sampled_at] : evict_sample_) {
      // (A copy: clang 14, the fuzz build's compiler, cannot capture a structured binding.)
      const auto at = sampled_at;
      // Insert in order of expire time, unless the pool is full of sooner ones, or holds it.
      auto it = std::find_if(evict_pool_.begin(), evict_pool_.end(),
                             [&](const EvictCandidate& c) { return c.expire_at > at; });
      if (it == evict_pool_.end() && evict_pool_.size() >= kEvictPoolSize) continue;
      bool dup = false;
      for (const EvictCandidate& c : evict_pool_) dup = dup || (c.db == i && c.key == key);
      if (dup) continue;
      evict_pool_.insert(it, EvictCandidate{at, i, std::move(key)});
      if (evict_pool_.size() > kEvictPoolSize) evict_pool_.pop_back();
    }
  }
  return any;
}

std::optional<size_t> Shard::EvictVolatileTtl(int samples, int64_t now_ms, const EvictSkip& skip) {
  // Each round refills the pool and tries its candidates best first; a candidate gone, whose
  // TTL changed, or held, is dropped. A round that finds nothing to evict samples again: every
  // round removes what it tried from the pool, and the sampling meets another key, so it ends
  // once the shard has nothing with a TTL left. The number of rounds is bounded for the case
  // where every key with a TTL is held by a transaction.
  for (int round = 0; round < 64; ++round) {
    if (!FillEvictionPool(samples)) return std::nullopt;
    while (!evict_pool_.empty()) {
      EvictCandidate c = std::move(evict_pool_.front());
      evict_pool_.erase(evict_pool_.begin());
      Db& db = *dbs_[c.db];
      if (skip && skip(c.db, c.key)) continue;
      // Gone (or expired: removed now), persisted, or its TTL changed since it was sampled (a
      // lock extended): the pool's order no longer holds for it; a later sample meets it again.
      if (db.ExpireTime(c.key, now_ms) != c.expire_at) continue;
      if (std::optional<size_t> bytes = db.Evict(c.key, now_ms)) return bytes;
    }
  }
  return std::nullopt;
}

}  // namespace deadbolt::shard
