// Db: construction, the keyspace change functions, and the key commands (DEL, EXISTS, TYPE,
// EXPIRE family, TTL family, PERSIST, KEYS, SCAN, RANDOMKEY, FLUSHDB) and active expiry.
// String commands are in db_string.cc, hash commands in db_hash.cc.

#include "shard/db.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "shard/base/glob.h"
#include "shard/db_impl.h"
#include "shard/table/random.h"

namespace deadbolt::shard {

namespace {

// RandomKey draws this many times before walking the table for a live key.
constexpr int kRandomKeyTries = 100;

}  // namespace

// --- Impl: the keyspace change functions ---

template <bool kTouch>
Dict::Pos Db::Impl::LookupImpl(std::string_view key, int64_t now_ms, uint64_t* hash) {
  *hash = Dict::Hash(key);
  clock = Entry::ClockAt(now_ms);
  Dict::Pos pos = dict.FindLink(key, *hash);
  if (pos) {
    Entry* e = pos.entry();
    if (e->IsExpired(now_ms)) [[unlikely]] {
      Remove(pos, Change::kExpired);
      return Dict::Pos{};
    }
    if constexpr (kTouch) e->Touch(clock);
  }
  return pos;
}

Dict::Pos Db::Impl::Lookup(std::string_view key, int64_t now_ms, uint64_t* hash) {
  return LookupImpl<true>(key, now_ms, hash);
}

Dict::Pos Db::Impl::LookupNoTouch(std::string_view key, int64_t now_ms, uint64_t* hash) {
  return LookupImpl<false>(key, now_ms, hash);
}

void Db::Impl::Add(Entry* e, uint64_t hash) {
  e->Touch(clock);
  dict.Insert(e, hash);
  if (e->has_expire()) ++expires;
  OnChange(e->key(), Change::kAdded);
}

void Db::Impl::Overwrite(Dict::Pos pos, Entry* e, Change why) {
  Swap(pos, e);
  OnChange(e->key(), why);
}

void Db::Impl::Swap(Dict::Pos pos, Entry* e) {
  e->Touch(clock);  // a new value for a key just looked up
  Entry* old = dict.Replace(pos, e);
  expires -= old->has_expire() ? 1 : 0;
  expires += e->has_expire() ? 1 : 0;
  DestroyEntry(old);
}

bool Db::Impl::OverwriteStringInPlace(Dict::Pos pos, std::string_view value, int64_t at_ms,
                                      Change why) {
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kInlineString || e->string_value().size() != value.size() ||
      !e->ExpireFitsInPlace(at_ms)) {
    return false;
  }
  if (!value.empty()) std::memcpy(e->inline_value_data(), value.data(), value.size());
  expires -= e->has_expire() ? 1 : 0;
  e->SetExpireInPlace(at_ms);
  expires += e->has_expire() ? 1 : 0;
  OnChange(e->key(), why);
  return true;
}

Entry* Db::Impl::SetExpire(Dict::Pos pos, int64_t at_ms) {
  Entry* e = pos.entry();
  const bool had = e->has_expire();
  if (e->ExpireFitsInPlace(at_ms)) {
    e->SetExpireInPlace(at_ms);
  } else {
    Entry* rebuilt = Entry::Rebuild(e, at_ms);
    dict.Replace(pos, rebuilt);
    Entry::FreeShell(e);  // its value object now belongs to `rebuilt`
    e = rebuilt;
  }
  expires -= had ? 1 : 0;
  expires += e->has_expire() ? 1 : 0;
  OnChange(e->key(), Change::kModified);
  return e;
}

void Db::Impl::Remove(Dict::Pos pos, Change why) {
  Entry* e = pos.entry();
  OnChange(e->key(), why);
  if (e->has_expire()) --expires;
  DestroyEntry(dict.Unlink(pos));
}

void Db::Impl::RemovingInScan(Entry* e, Change why) {
  OnChange(e->key(), why);
  if (e->has_expire()) --expires;
}

size_t Db::Impl::ActiveExpire(int64_t now_ms, size_t max_visits, size_t* visited) {
  // Housekeeping: while a resize is under way, move some buckets even if no command comes.
  if (dict.rehashing()) dict.RehashSteps(std::max<size_t>(1, max_visits / 16));
  if (expires == 0 || max_visits == 0) return 0;
  size_t removed = 0;
  size_t visits = 0;
  auto expire_if_due = [&](Entry* e) {
    if (!e->IsExpired(now_ms)) return false;
    RemovingInScan(e, Change::kExpired);
    ++removed;
    return true;
  };
  do {
    // A step during a rehash visits several buckets; never start one the budget cannot pay for
    // (except the first, so that every call makes progress).
    const size_t cost = dict.ScanStepCost();
    if (visits > 0 && visits + cost > max_visits) break;
    expire_cursor = dict.Scan(expire_cursor, expire_if_due, &visits);
  } while (expire_cursor != 0 && visits < max_visits && expires != 0);
  if (removed != 0) dict.MaybeShrink();
  *visited += visits;
  return removed;
}

// --- Db ---

Db::Db() : impl_(std::make_unique<Impl>()) {}
Db::~Db() = default;

bool Db::Del(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return false;
  impl_->Remove(pos, Impl::Change::kDeleted);
  impl_->dict.MaybeShrink();
  return true;
}

void Db::PrefetchKeys(const std::string_view* keys, size_t n) const {
  constexpr size_t kWindow = 16;  // about as many misses as a core keeps in flight
  uint64_t hashes[kWindow];
  for (size_t start = 0; start < n; start += kWindow) {
    const size_t m = std::min(kWindow, n - start);
    for (size_t i = 0; i < m; ++i) hashes[i] = Dict::Hash(keys[start + i]);
    impl_->dict.Prefetch(hashes, m);
  }
}

bool Db::Exists(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  return static_cast<bool>(impl_->LookupNoTouch(key, now_ms, &hash));
}

bool Db::Touch(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  return static_cast<bool>(impl_->Lookup(key, now_ms, &hash));
}

ValueType Db::Type(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->LookupNoTouch(key, now_ms, &hash);
  return pos ? TypeOf(pos.entry()) : ValueType::kNone;
}

int64_t Db::ExpireAt(std::string_view key, int64_t at_ms, ExpireCond cond, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return 0;
  const Entry* e = pos.entry();
  // The conditions come first (Redis's expireGenericCommand); a key without a TTL counts as
  // having an infinite one for GT and LT.
  switch (cond) {
    case ExpireCond::kNone:
      break;
    case ExpireCond::kNX:
      if (e->has_expire()) return 0;
      break;
    case ExpireCond::kXX:
      if (!e->has_expire()) return 0;
      break;
    case ExpireCond::kGT:
      if (!e->has_expire() || at_ms <= e->expire_at()) return 0;
      break;
    case ExpireCond::kLT:
      if (e->has_expire() && at_ms >= e->expire_at()) return 0;
      break;
  }
  if (at_ms <= now_ms) {
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
    return 1;
  }
  impl_->SetExpire(pos, at_ms);
  return 1;
}

int64_t Db::Pttl(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->LookupNoTouch(key, now_ms, &hash);
  if (!pos) return -2;
  const Entry* e = pos.entry();
  if (!e->has_expire()) return -1;
  return std::max<int64_t>(0, e->expire_at() - now_ms);
}

int64_t Db::ExpireTime(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->LookupNoTouch(key, now_ms, &hash);
  if (!pos) return -2;
  const Entry* e = pos.entry();
  return e->has_expire() ? e->expire_at() : -1;
}

bool Db::Persist(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos || !pos.entry()->has_expire()) return false;
  impl_->SetExpire(pos, Entry::kNoExpire);
  return true;
}

void Db::Keys(std::string_view pattern, int64_t now_ms,
              const std::function<void(std::string_view)>& fn) {
  const bool all = pattern == "*";
  // Expired keys are skipped, not removed: the walk must not change the table.
  impl_->dict.ForEach([&](const Entry* e) {
    if (!e->IsExpired(now_ms) && (all || GlobMatch(pattern, e->key()))) fn(e->key());
    return true;
  });
}

ScanResult Db::Scan(uint64_t cursor, std::string_view pattern, size_t count, ValueType type_filter,
                    int64_t now_ms) {
  ScanResult result;
  count = std::max<size_t>(count, 1);
  const bool all = pattern.empty() || pattern == "*";
  // As Redis: step until `count` keys were seen (matching or not), at most 10*count steps.
  size_t seen = 0;
  size_t steps_left = count > SIZE_MAX / 10 ? SIZE_MAX : count * 10;
  size_t removed = 0;
  auto collect = [&](Entry* e) {
    ++seen;
    if (e->IsExpired(now_ms)) {
      impl_->RemovingInScan(e, Impl::Change::kExpired);
      ++removed;
      return true;
    }
    if (type_filter != ValueType::kNone && TypeOf(e) != type_filter) return false;
    if (!all && !GlobMatch(pattern, e->key())) return false;
    result.keys.emplace_back(e->key());
    return false;
  };
  size_t visited = 0;
  do {
    cursor = impl_->dict.Scan(cursor, collect, &visited);
  } while (cursor != 0 && --steps_left > 0 && seen < count);
  if (removed != 0) impl_->dict.MaybeShrink();
  result.cursor = cursor;
  return result;
}

std::optional<std::string> Db::RandomKey(int64_t now_ms) {
  for (int i = 0; i < kRandomKeyTries; ++i) {
    const Entry* e = impl_->dict.Random(&impl_->rng);
    if (e == nullptr) return std::nullopt;
    if (!e->IsExpired(now_ms)) return std::string(e->key());
    // Remove it, as Redis does, through the lazy-expiry path.
    std::string key(e->key());
    uint64_t hash;
    impl_->Lookup(key, now_ms, &hash);
  }
  // Mostly expired keys: walk for a live one rather than drawing forever.
  std::optional<std::string> found;
  impl_->dict.ForEach([&](const Entry* e) {
    if (e->IsExpired(now_ms)) return true;
    found.emplace(e->key());
    return false;
  });
  return found;
}

size_t Db::Size() const { return impl_->dict.size(); }

size_t Db::ExpiresSize() const { return impl_->expires; }

void Db::AddObserver(KeyObserver* o) { impl_->observers.push_back(o); }

void Db::RemoveObserver(KeyObserver* o) {
  auto& v = impl_->observers;
  v.erase(std::remove(v.begin(), v.end(), o), v.end());
}

void Db::Flush() {
  // Observers that take the flush as a whole are not told of each key.
  std::vector<KeyObserver*> all;
  all.swap(impl_->observers);
  for (KeyObserver* o : all) {
    if (o->OnFlush()) impl_->observers.push_back(o);
  }
  impl_->dict.ForEach([&](const Entry* e) {
    impl_->OnChange(e->key(), Impl::Change::kDeleted);
    return true;
  });
  impl_->observers.swap(all);
  impl_->dict.Clear();
  impl_->expires = 0;
  impl_->expire_cursor = 0;
}

void Db::SampleForEviction(bool volatile_only, EvictRank by, size_t count, int64_t now_ms,
                           std::vector<EvictSample>* out) {
  Impl& d = *impl_;
  if ((volatile_only ? d.expires : d.dict.size()) == 0 || count == 0) return;
  // Redis samples its table of TTL keys (dictGetSomeKeys); here TTL keys share the one table,
  // so walk it from a random cursor and keep those that have one.
  uint64_t cursor = NextRandom(&d.rng);
  size_t found = 0, visits = 0;
  const size_t budget = 10 * count;
  const int64_t now_units = Entry::ClockUnits(now_ms);
  auto take = [&](Entry* e) {
    if (found < count && (!volatile_only || e->has_expire())) {
      const int64_t rank =
          by == EvictRank::kExpireAt ? e->expire_at() : now_units - e->IdleUnits(now_ms);
      out->push_back(EvictSample{std::string(e->key()), rank});
      ++found;
    }
    return false;  // keep it
  };
  // Past the budget, go on while nothing was found: at most the whole table once more.
  const size_t limit = budget + d.dict.bucket_count() + 1;
  while (found < count && visits < limit && (found == 0 || visits < budget)) {
    cursor = d.dict.Scan(cursor, take, &visits);
  }
}

std::optional<std::string> Db::RandomForEviction(bool volatile_only) {
  Impl& d = *impl_;
  if ((volatile_only ? d.expires : d.dict.size()) == 0) return std::nullopt;
  // Keys with a TTL share the table with the others: draw a few times, then take a random one
  // of a sample (a Db whose TTL keys are sparse still yields one).
  for (int i = 0; i < 16; ++i) {
    const Entry* e = d.dict.Random(&d.rng);
    if (!volatile_only || e->has_expire()) return std::string(e->key());
  }
  std::vector<EvictSample> sample;
  SampleForEviction(true, EvictRank::kExpireAt, 16, 0, &sample);
  if (sample.empty()) return std::nullopt;
  return std::move(sample[NextRandom(&d.rng) % sample.size()].key);
}

std::optional<int64_t> Db::EvictionRank(std::string_view key, EvictRank by, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->LookupNoTouch(key, now_ms, &hash);
  if (!pos) return std::nullopt;
  const Entry* e = pos.entry();
  if (by == EvictRank::kExpireAt) {
    if (!e->has_expire()) return std::nullopt;
    return e->expire_at();
  }
  const int64_t now_units = Entry::ClockUnits(now_ms);
  return now_units - e->IdleUnits(now_ms);
}

std::optional<size_t> Db::Evict(std::string_view key, int64_t now_ms) {
  std::optional<ObjectInfo> info = Object(key, now_ms);
  if (!info) return std::nullopt;
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  impl_->Remove(pos, Impl::Change::kDeleted);
  impl_->dict.MaybeShrink();
  return info->bytes;
}

size_t Db::ActiveExpire(int64_t now_ms, size_t max_visits) {
  size_t visited = 0;
  return impl_->ActiveExpire(now_ms, max_visits, &visited);
}

size_t Db::ActiveExpire(int64_t now_ms, size_t max_visits, size_t* visited) {
  return impl_->ActiveExpire(now_ms, max_visits, visited);
}

}  // namespace deadbolt::shard
