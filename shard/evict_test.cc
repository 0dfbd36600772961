// The maxmemory policies' choice of keys (Shard::Evict, Db::SampleForEviction, Db::Evict), with a
// fake clock. volatile-ttl: keys with a TTL go soonest-to-expire first, keys without one never, a
// held key is passed over, and an eviction is a deletion that observers (the journal, WATCH) hear
// of. *-lru: the key accessed least recently goes first (the access clock in the entry's link,
// shard/table/entry.h), compared modulo its wrap; reads touch, EXISTS/TTL/OBJECT do not.
// *-random: any key, or any with a TTL.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "shard/db.h"
#include "shard/shard.h"
#include "shard/table/entry.h"

namespace deadbolt::shard {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

// 0 .. n-1 in an order fixed by `seed`.
std::vector<int> ShuffledRanks(int n, uint32_t seed) {
  std::vector<int> ranks(n);
  for (int i = 0; i < n; ++i) ranks[i] = i;
  std::mt19937 gen(seed);
  std::shuffle(ranks.begin(), ranks.end(), gen);
  return ranks;
}

void SetPx(Db& db, std::string_view key, int64_t ttl_ms) {
  SetOptions o;
  if (ttl_ms > 0) {
    o.expire = SetOptions::Expire::kAt;
    o.expire_at_ms = kNow + ttl_ms;
  }
  ASSERT_TRUE(db.Set(key, "value-of-" + std::string(key), o, kNow).ok());
}

class Recorder : public KeyObserver {
 public:
  void OnKeyChanged(std::string_view key) override { events.push_back("c:" + std::string(key)); }
  void OnKeyExpired(std::string_view key) override { events.push_back("x:" + std::string(key)); }
  std::vector<std::string> events;
};

TEST(EvictVolatileTtl, SoonestFirstAndNeverAKeyWithoutTtl) {
  Shard shard(0, 1);
  Db& db = shard.db(0);
  // Inserted out of order; three keys without a TTL.
  SetPx(db, "c", 3000);
  SetPx(db, "a", 1000);
  SetPx(db, "persistent1", 0);
  SetPx(db, "e", 5000);
  SetPx(db, "b", 2000);
  SetPx(db, "persistent2", 0);
  SetPx(db, "d", 4000);
  SetPx(db, "persistent3", 0);
  std::vector<std::string> order;
  for (const char* want : {"a", "b", "c", "d", "e"}) {
    EXPECT_TRUE(db.Exists(want, kNow));
    std::optional<size_t> bytes = shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr);
    ASSERT_TRUE(bytes.has_value());
    EXPECT_FALSE(db.Exists(want, kNow)) << want;
  }
  EXPECT_FALSE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr).has_value());
  EXPECT_EQ(db.Size(), 3u);
  EXPECT_TRUE(db.Exists("persistent1", kNow));
  EXPECT_TRUE(db.Exists("persistent2", kNow));
  EXPECT_TRUE(db.Exists("persistent3", kNow));
}

TEST(EvictVolatileTtl, ReturnsTheBytesMemoryUsageCounts) {
  Shard shard(0, 1);
  Db& db = shard.db(0);
  SetPx(db, "lock:1", 30000);
  const size_t usage = db.Object("lock:1", kNow)->bytes;
  EXPECT_EQ(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr), std::optional<size_t>(usage));
}

TEST(EvictVolatileTtl, SamplingFavoursTheNearestAmongMany) {
  // 2,000 keys with TTLs in random order, 2,000 without. Redis's approximation (5 samples, a
  // pool of 16 kept across calls) evicts keys from the near end: check that nine in ten of the
  // first 200 evicted come from the nearest quarter (187 with this seed), and that no key
  // without a TTL goes.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  constexpr int kN = 2000;
  const std::vector<int> ranks = ShuffledRanks(kN, 42);
  for (int i = 0; i < kN; ++i) {
    SetPx(db, "v" + std::to_string(ranks[i]), 1000 + 10 * int64_t{ranks[i]});
    SetPx(db, "p" + std::to_string(i), 0);
  }
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  int evicted = 0, near = 0;
  for (int r = 0; r < kN; ++r) {
    if (db.Exists("v" + std::to_string(r), kNow)) continue;
    ++evicted;
    near += r < kN / 4 ? 1 : 0;
  }
  EXPECT_EQ(evicted, 200);
  EXPECT_GE(near, 180);
  for (int i = 0; i < kN; ++i) ASSERT_TRUE(db.Exists("p" + std::to_string(i), kNow)) << i;
  // Until nothing with a TTL is left.
  for (int i = 200; i < kN; ++i) ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr)) << i;
  EXPECT_FALSE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  EXPECT_EQ(db.Size(), static_cast<size_t>(kN));
  EXPECT_EQ(db.ExpiresSize(), 0u);
}

TEST(EvictVolatileTtl, SparseTtlKeysAreStillFound) {
  // One key with a TTL among 50,000 without: a sample of 50 buckets rarely meets it, and the
  // eviction must not give up while it exists.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  for (int i = 0; i < 50000; ++i) SetPx(db, "p" + std::to_string(i), 0);
  SetPx(db, "lonely", 1000);
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  EXPECT_FALSE(db.Exists("lonely", kNow));
  EXPECT_FALSE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  EXPECT_EQ(db.Size(), 50000u);
}

TEST(EvictVolatileTtl, AHeldKeyIsPassedOver) {
  Shard shard(0, 2);
  SetPx(shard.db(1), "held", 1000);
  SetPx(shard.db(1), "free", 9000);
  auto skip = [](int db, std::string_view key) { return db == 1 && key == "held"; };
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, skip));
  EXPECT_TRUE(shard.db(1).Exists("held", kNow));
  EXPECT_FALSE(shard.db(1).Exists("free", kNow));
  EXPECT_FALSE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, skip));
  EXPECT_TRUE(shard.db(1).Exists("held", kNow));
}

TEST(EvictVolatileTtl, EveryDbTakesPart) {
  Shard shard(0, 3);
  SetPx(shard.db(2), "soonest", 1000);
  SetPx(shard.db(0), "later", 5000);
  SetPx(shard.db(1), "latest", 9000);
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  EXPECT_FALSE(shard.db(2).Exists("soonest", kNow));
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  EXPECT_FALSE(shard.db(0).Exists("later", kNow));
  EXPECT_TRUE(shard.db(1).Exists("latest", kNow));
}

TEST(EvictVolatileTtl, AKeyWhoseTtlChangedAfterSamplingIsNotEvictedOnStaleOrder) {
  // a, b, c are all sampled into the pool; a goes. Then b is extended (a lock renewed) past c:
  // the next eviction takes c, not b on its old expire time.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  SetPx(db, "a", 1000);
  SetPx(db, "b", 2000);
  SetPx(db, "c", 3000);
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  EXPECT_FALSE(db.Exists("a", kNow));
  EXPECT_EQ(db.ExpireAt("b", kNow + 60000, ExpireCond::kNone, kNow), 1);
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  EXPECT_TRUE(db.Exists("b", kNow));
  EXPECT_FALSE(db.Exists("c", kNow));
}

TEST(EvictVolatileTtl, AnEvictionIsADeletionObserversHear) {
  // The journal writes a deletion for what its observer hears through OnKeyChanged (never for
  // expiries, which a replay drops by itself), so an evicted key does not come back on restart.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  Recorder rec;
  SetPx(db, "lock:1", 1000);
  SetPx(db, "keep", 0);
  db.AddObserver(&rec);
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow, nullptr));
  EXPECT_EQ(rec.events, std::vector<std::string>{"c:lock:1"});
  db.RemoveObserver(&rec);
}

TEST(EvictVolatileTtl, AnExpiredKeyMetIsRemovedAsExpiredNotCountedAsEvicted) {
  Shard shard(0, 1);
  Db& db = shard.db(0);
  SetPx(db, "gone", 10);
  SetPx(db, "live", 5000);
  Recorder rec;
  db.AddObserver(&rec);
  // At kNow + 100 "gone" has expired: it is removed as an expiry, and "live" is evicted.
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileTtl, 5, kNow + 100, nullptr));
  EXPECT_EQ(rec.events, (std::vector<std::string>{"x:gone", "c:live"}));
  db.RemoveObserver(&rec);
}

// --- the access clock and the LRU policies ---

void Put(Db& db, std::string_view key, int64_t now_ms, int64_t ttl_ms = 0) {
  SetOptions o;
  if (ttl_ms > 0) {
    o.expire = SetOptions::Expire::kAt;
    o.expire_at_ms = now_ms + ttl_ms;
  }
  ASSERT_TRUE(db.Set(key, "value-of-" + std::string(key), o, now_ms).ok());
}

// The clock counts units of 1024 ms (Entry::kClockUnitMs); kNow is a multiple of it.
constexpr int64_t kUnit = Entry::kClockUnitMs;
static_assert(kNow % kUnit == 0);
// OBJECT IDLETIME's seconds for an idle time of `units`.
int64_t Secs(int64_t units) { return units * kUnit / 1000; }

int64_t Idle(Db& db, std::string_view key, int64_t now_ms) {
  std::optional<Db::ObjectInfo> info = db.Object(key, now_ms);
  return info ? info->idle_seconds : -1;
}

TEST(AccessClock, ReadsAndWritesTouchWhileExistsTypeTtlAndObjectDoNot) {
  Shard shard(0, 1);
  Db& db = shard.db(0);
  Put(db, "k", kNow);
  EXPECT_EQ(Idle(db, "k", kNow), 0);
  EXPECT_EQ(Idle(db, "k", kNow + kUnit - 1), 0);  // whole units
  EXPECT_EQ(Idle(db, "k", kNow + 5 * kUnit), 5);
  // Not accesses (Redis's LOOKUP_NOTOUCH).
  EXPECT_TRUE(db.Exists("k", kNow + 5 * kUnit));
  EXPECT_EQ(db.Type("k", kNow + 5 * kUnit), ValueType::kString);
  EXPECT_EQ(db.Pttl("k", kNow + 5 * kUnit), -1);
  EXPECT_EQ(db.ExpireTime("k", kNow + 5 * kUnit), -1);
  EXPECT_EQ(Idle(db, "k", kNow + 7 * kUnit), 7);
  // A read is one.
  EXPECT_TRUE(db.Get("k", kNow + 7 * kUnit).ok());
  EXPECT_EQ(Idle(db, "k", kNow + 7 * kUnit), 0);
  EXPECT_EQ(Idle(db, "k", kNow + 9 * kUnit), 2);
  // TOUCH is one.
  EXPECT_TRUE(db.Touch("k", kNow + 9 * kUnit));
  EXPECT_FALSE(db.Touch("missing", kNow + 9 * kUnit));
  EXPECT_EQ(Idle(db, "k", kNow + 9 * kUnit), 0);
  // An overwrite with a value of another length (a new entry) and a TTL that rebuilds the
  // entry (6-byte to 8-byte expire) keep a fresh clock.
  Put(db, "k", kNow + 12 * kUnit, 100'000);
  EXPECT_EQ(Idle(db, "k", kNow + 12 * kUnit), 0);
  EXPECT_EQ(db.ExpireAt("k", int64_t{1} << 50, ExpireCond::kNone, kNow + 15 * kUnit), 1);
  EXPECT_EQ(Idle(db, "k", kNow + 15 * kUnit), 0);
  EXPECT_EQ(Idle(db, "k", kNow + 20 * kUnit), Secs(5));
  EXPECT_EQ(Idle(db, "k", kNow + 1000 * kUnit), Secs(985));  // 1008 s
}

TEST(AccessClock, ACopyIsNotAnAccess) {
  // Snapshot (the journal's rewrite, RENAME's copy) reads the value without counting as an
  // access, whatever the type.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  Put(db, "s", kNow);
  ASSERT_TRUE(db.HSet("h", "f", "v", kNow).ok());
  for (const char* key : {"s", "h"}) {
    ASSERT_TRUE(db.Snapshot(key, kNow + 3 * kUnit).has_value());
    EXPECT_EQ(Idle(db, key, kNow + 3 * kUnit), Secs(3)) << key;
  }
}

TEST(AccessClock, IdleTimeWrapsAfter65536Units) {
  // The clock is the 1024 ms unit modulo 2^16 (18.6 hours), in the high bits of the entry's
  // link: a key idle for 65536 + 3 units reads as idle for 3. Documented in entry.h.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  Put(db, "k", kNow);
  EXPECT_EQ(Idle(db, "k", kNow + 65535 * kUnit), Secs(65535));  // 67107 s
  EXPECT_EQ(Idle(db, "k", kNow + 65539 * kUnit), Secs(3));
}

TEST(AccessClock, SurvivesRelinking) {
  // The clock lives in the entry's link to the next entry of its bucket chain: growing the
  // table (rehash), removing a neighbour and replacing a neighbour relink entries and must keep
  // every key's clock.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  constexpr int kN = 2000;
  for (int i = 0; i < kN; ++i) Put(db, "k" + std::to_string(i), kNow + kUnit * (i % 50));
  const int64_t later = kNow + 100 * kUnit;
  for (int i = 0; i < kN; i += 3) ASSERT_TRUE(db.Del("k" + std::to_string(i), later));
  for (int i = 1; i < kN; i += 3) Put(db, "k" + std::to_string(i), later);  // same length
  for (int i = 0; i < kN; ++i) {
    const std::string key = "k" + std::to_string(i);
    if (i % 3 == 0) {
      ASSERT_FALSE(db.Exists(key, later));
    } else {
      ASSERT_EQ(Idle(db, key, later), i % 3 == 1 ? 0 : Secs(100 - i % 50)) << key;
    }
  }
}

TEST(EvictLru, TheLeastRecentlyUsedGoFirstWithOrWithoutTtl) {
  Shard shard(0, 2);
  Db& db0 = shard.db(0);
  Db& db1 = shard.db(1);
  // Written at unit 0..9, alternately with a TTL; then 0, 3 and 6 are read at unit 20.
  for (int i = 0; i < 10; ++i) {
    Put(i % 2 ? db1 : db0, "k" + std::to_string(i), kNow + kUnit * i, i % 2 ? 100'000 : 0);
  }
  const int64_t now = kNow + 20 * kUnit;
  for (int i : {0, 3, 6}) ASSERT_TRUE((i % 2 ? db1 : db0).Get("k" + std::to_string(i), now).ok());
  // Evicted oldest access first: 1 2 4 5 7 8 9, then the three read (in key order of their
  // equal clocks, any), whichever db they are in.
  std::vector<int> order;
  for (int n = 0; n < 10; ++n) {
    ASSERT_TRUE(shard.Evict(EvictPolicy::kAllkeysLru, 16, now, nullptr).has_value());
    for (int i = 0; i < 10; ++i) {
      const std::string key = "k" + std::to_string(i);
      if (std::find(order.begin(), order.end(), i) == order.end() &&
          !(i % 2 ? db1 : db0).Exists(key, now)) {
        order.push_back(i);
      }
    }
    ASSERT_EQ(order.size(), static_cast<size_t>(n + 1));
  }
  EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 7),
            (std::vector<int>{1, 2, 4, 5, 7, 8, 9}));
  EXPECT_FALSE(shard.Evict(EvictPolicy::kAllkeysLru, 16, now, nullptr).has_value());
}

TEST(EvictLru, VolatileLruTakesOnlyKeysWithATtl) {
  Shard shard(0, 1);
  Db& db = shard.db(0);
  Put(db, "old-persistent", kNow);
  Put(db, "new-volatile", kNow + 5 * kUnit, 100'000);
  Put(db, "old-volatile", kNow + kUnit, 100'000);
  const int64_t now = kNow + 10 * kUnit;
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileLru, 5, now, nullptr));
  EXPECT_FALSE(db.Exists("old-volatile", now));
  ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileLru, 5, now, nullptr));
  EXPECT_FALSE(db.Exists("new-volatile", now));
  EXPECT_FALSE(shard.Evict(EvictPolicy::kVolatileLru, 5, now, nullptr));
  EXPECT_TRUE(db.Exists("old-persistent", now));
  // allkeys-lru then takes it.
  ASSERT_TRUE(shard.Evict(EvictPolicy::kAllkeysLru, 5, now, nullptr));
  EXPECT_EQ(db.Size(), 0u);
}

TEST(EvictLru, ComparesAcrossTheClockWrap) {
  // Keys written just before the clock wraps (unit 65535 modulo 2^16) are older than keys
  // written just after it (unit 0, 1): a plain comparison of the stored 16-bit clocks would get
  // it backwards.
  const int64_t wrap = Entry::kClockPeriod;
  const int64_t base = (kNow / kUnit / wrap + 1) * wrap * kUnit;  // where the clock is 0
  Shard shard(0, 1);
  Db& db = shard.db(0);
  Put(db, "before-wrap", base - kUnit);  // clock 65535
  Put(db, "after-wrap", base + kUnit);   // clock 1
  EXPECT_EQ(shard.db(0).Object("before-wrap", base)->lru, 65535);
  EXPECT_EQ(shard.db(0).Object("after-wrap", base + kUnit)->lru, 1);
  const int64_t now = base + 5 * kUnit;
  EXPECT_EQ(Idle(db, "before-wrap", now), Secs(6));
  EXPECT_EQ(Idle(db, "after-wrap", now), Secs(4));
  ASSERT_TRUE(shard.Evict(EvictPolicy::kAllkeysLru, 5, now, nullptr));
  EXPECT_FALSE(db.Exists("before-wrap", now));
  EXPECT_TRUE(db.Exists("after-wrap", now));
}

TEST(EvictLru, AKeyReadAfterItWasSampledIsNotEvictedOnItsOldClock) {
  // a, b, c enter the pool; a goes. Then b is read: the next eviction takes c, not b.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  Put(db, "a", kNow);
  Put(db, "b", kNow + kUnit);
  Put(db, "c", kNow + 2 * kUnit);
  const int64_t now = kNow + 10 * kUnit;
  ASSERT_TRUE(shard.Evict(EvictPolicy::kAllkeysLru, 5, now, nullptr));
  EXPECT_FALSE(db.Exists("a", now));
  ASSERT_TRUE(db.Get("b", now).ok());
  ASSERT_TRUE(shard.Evict(EvictPolicy::kAllkeysLru, 5, now, nullptr));
  EXPECT_TRUE(db.Exists("b", now));
  EXPECT_FALSE(db.Exists("c", now));
}

TEST(EvictLru, SamplingFavoursTheOldestAmongMany) {
  // 4,000 keys accessed at 4,000 distinct units, in random order; with 5 samples and the
  // pool, nine in ten of the first 400 evicted are from the oldest quarter, and a key read
  // last never goes among them.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  constexpr int kN = 4000;
  const std::vector<int> ranks = ShuffledRanks(kN, 7);
  for (int r : ranks) Put(db, "k" + std::to_string(r), kNow + kUnit * r);
  const int64_t now = kNow + kUnit * kN;
  for (int i = 0; i < 400; ++i) ASSERT_TRUE(shard.Evict(EvictPolicy::kAllkeysLru, 5, now, nullptr));
  int evicted = 0, old = 0;
  for (int r = 0; r < kN; ++r) {
    if (db.Exists("k" + std::to_string(r), now)) continue;
    ++evicted;
    old += r < kN / 4 ? 1 : 0;
  }
  EXPECT_EQ(evicted, 400);
  EXPECT_GE(old, 360);
}

TEST(EvictRandom, VolatileRandomOnlyWithTtlAndAllkeysRandomAny) {
  Shard shard(0, 2);
  for (int i = 0; i < 20; ++i) {
    Put(shard.db(i % 2), "v" + std::to_string(i), kNow, 100'000);
    Put(shard.db(i % 2), "p" + std::to_string(i), kNow);
  }
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(shard.Evict(EvictPolicy::kVolatileRandom, 5, kNow, nullptr)) << i;
  }
  EXPECT_FALSE(shard.Evict(EvictPolicy::kVolatileRandom, 5, kNow, nullptr));
  EXPECT_EQ(shard.ExpiresSize(), 0u);
  EXPECT_EQ(shard.Size(), 20u);
  // Held keys are passed over.
  auto skip = [](int, std::string_view key) { return key == "p0" || key == "p1"; };
  for (int i = 0; i < 18; ++i) ASSERT_TRUE(shard.Evict(EvictPolicy::kAllkeysRandom, 5, kNow, skip));
  EXPECT_FALSE(shard.Evict(EvictPolicy::kAllkeysRandom, 5, kNow, skip));
  EXPECT_TRUE(shard.db(0).Exists("p0", kNow));
  EXPECT_TRUE(shard.db(1).Exists("p1", kNow));
  EXPECT_EQ(shard.Size(), 2u);
}

}  // namespace
}  // namespace deadbolt::shard
