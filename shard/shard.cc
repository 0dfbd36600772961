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

size_t Shard::Size() const {
  size_t n = 0;
  for (const auto& db : dbs_) n += db->Size();
  return n;
}

namespace {

constexpr size_t kEvictPoolSize = 16;  // Redis's EVPOOL_SIZE

bool VolatileOnly(EvictPolicy p) {
  return p == EvictPolicy::kVolatileTtl || p == EvictPolicy::kVolatileLru ||
         p == EvictPolicy::kVolatileRandom;
}

Db::EvictRank RankOf(EvictPolicy p) {
  return p == EvictPolicy::kVolatileTtl ? Db::EvictRank::kExpireAt : Db::EvictRank::kLastAccess;
}

}  // namespace

bool Shard::FillEvictionPool(EvictPolicy policy, int samples, int64_t now_ms) {
  const bool volatile_only = VolatileOnly(policy);
  bool any = false;
  for (int i = 0; i < num_dbs(); ++i) {
    Db& db = *dbs_[i];
    if ((volatile_only ? db.ExpiresSize() : db.Size()) == 0) continue;
    any = true;
    evict_sample_.clear();
    db.SampleForEviction(volatile_only, RankOf(policy), static_cast<size_t>(std::max(samples, 1)),
                         now_ms, &evict_sample_);
    for (Db::EvictSample& sample : evict_sample_) {
      const int64_t rank = sample.rank;
      // Insert in order of rank, unless the pool is full of better ones, or holds it.
      auto it = std::find_if(evict_pool_.begin(), evict_pool_.end(),
                             [&](const EvictCandidate& c) { return c.rank > rank; });
      if (it == evict_pool_.end() && evict_pool_.size() >= kEvictPoolSize) continue;
      bool dup = false;
      for (const EvictCandidate& c : evict_pool_) dup = dup || (c.db == i && c.key == sample.key);
      if (dup) continue;
      evict_pool_.insert(it, EvictCandidate{rank, i, std::move(sample.key)});
      if (evict_pool_.size() > kEvictPoolSize) evict_pool_.pop_back();
    }
  }
  return any;
}

std::optional<size_t> Shard::Evict(EvictPolicy policy, int samples, int64_t now_ms,
                                   const EvictSkip& skip) {
  if (policy == EvictPolicy::kVolatileRandom || policy == EvictPolicy::kAllkeysRandom) {
    return EvictRandom(VolatileOnly(policy), now_ms, skip);
  }
  if (policy != pool_policy_) {
    evict_pool_.clear();  // ranks of another kind
    pool_policy_ = policy;
  }
  // Each round refills the pool and tries its candidates best first; a candidate gone, whose
  // rank changed (a TTL changed, a key accessed since it was sampled), or held, is dropped. A
  // round that finds nothing to evict samples again: every round removes what it tried from
  // the pool, and the sampling meets another key, so it ends once the shard has nothing to
  // evict. The number of rounds is bounded for the case where every candidate is held by a
  // transaction.
  for (int round = 0; round < 64; ++round) {
    if (!FillEvictionPool(policy, samples, now_ms)) return std::nullopt;
    while (!evict_pool_.empty()) {
      EvictCandidate c = std::move(evict_pool_.front());
      evict_pool_.erase(evict_pool_.begin());
      Db& db = *dbs_[c.db];
      if (skip && skip(c.db, c.key)) continue;
      // Gone (or expired: removed now), persisted, or its rank changed since it was sampled (a
      // lock extended, a key read): the pool's order no longer holds for it; a later sample
      // meets it again.
      if (db.EvictionRank(c.key, RankOf(policy), now_ms) != c.rank) continue;
      if (std::optional<size_t> bytes = db.Evict(c.key, now_ms)) return bytes;
    }
  }
  return std::nullopt;
}

std::optional<size_t> Shard::EvictRandom(bool volatile_only, int64_t now_ms,
                                         const EvictSkip& skip) {
  // As Redis's *-random: one key drawn from each db in turn, continuing from the db after the
  // last one evicted from.
  const int n = num_dbs();
  for (int round = 0; round < 64; ++round) {
    bool any = false;
    for (int k = 0; k < n; ++k) {
      const int i = (evict_db_cursor_ + k) % n;
      Db& db = *dbs_[i];
      if ((volatile_only ? db.ExpiresSize() : db.Size()) == 0) continue;
      any = true;
      std::optional<std::string> key = db.RandomForEviction(volatile_only);
      if (!key || (skip && skip(i, *key))) continue;
      if (std::optional<size_t> bytes = db.Evict(*key, now_ms)) {
        evict_db_cursor_ = (i + 1) % n;
        return bytes;
      }
    }
    if (!any) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace deadbolt::shard
