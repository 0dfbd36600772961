// maxmemory-policy volatile-ttl's choice of keys (Shard::EvictVolatileTtl, Db::SampleVolatile,
// Db::Evict), with a fixed clock: keys with a TTL go soonest-to-expire first, keys without one
// never, a held key is passed over, and an eviction is a deletion that observers (the journal,
// WATCH) hear of.

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

namespace deadbolt::shard {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

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
    std::optional<size_t> bytes = shard.EvictVolatileTtl(5, kNow, nullptr);
    ASSERT_TRUE(bytes.has_value());
    EXPECT_FALSE(db.Exists(want, kNow)) << want;
  }
  EXPECT_FALSE(shard.EvictVolatileTtl(5, kNow, nullptr).has_value());
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
  EXPECT_EQ(shard.EvictVolatileTtl(5, kNow, nullptr), std::optional<size_t>(usage));
}

TEST(EvictVolatileTtl, SamplingFavoursTheNearestAmongMany) {
  // 2,000 keys with TTLs in random order, 2,000 without. Redis's approximation (5 samples, a
  // pool of 16 kept across calls) evicts keys from the near end: check that nine in ten of the
  // first 200 evicted come from the nearest quarter (187 with this seed), and that no key
  // without a TTL goes.
  Shard shard(0, 1);
  Db& db = shard.db(0);
  constexpr int kN = 2000;
  std::vector<int> ranks(kN);
  for (int i = 0; i < kN; ++i) ranks[i] = i;
  std::mt19937 gen(42);
  std::shuffle(ranks.begin(), ranks.end(), gen);
  for (int i = 0; i < kN; ++i) {
    SetPx(db, "v" + std::to_string(ranks[i]), 1000 + 10 * int64_t{ranks[i]});
    SetPx(db, "p" + std::to_string(i), 0);
  }
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, nullptr));
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
  for (int i = 200; i < kN; ++i) ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, nullptr)) << i;
  EXPECT_FALSE(shard.EvictVolatileTtl(5, kNow, nullptr));
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
  ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, nullptr));
  EXPECT_FALSE(db.Exists("lonely", kNow));
  EXPECT_FALSE(shard.EvictVolatileTtl(5, kNow, nullptr));
  EXPECT_EQ(db.Size(), 50000u);
}

TEST(EvictVolatileTtl, AHeldKeyIsPassedOver) {
  Shard shard(0, 2);
  SetPx(shard.db(1), "held", 1000);
  SetPx(shard.db(1), "free", 9000);
  auto skip = [](int db, std::string_view key) { return db == 1 && key == "held"; };
  ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, skip));
  EXPECT_TRUE(shard.db(1).Exists("held", kNow));
  EXPECT_FALSE(shard.db(1).Exists("free", kNow));
  EXPECT_FALSE(shard.EvictVolatileTtl(5, kNow, skip));
  EXPECT_TRUE(shard.db(1).Exists("held", kNow));
}

TEST(EvictVolatileTtl, EveryDbTakesPart) {
  Shard shard(0, 3);
  SetPx(shard.db(2), "soonest", 1000);
  SetPx(shard.db(0), "later", 5000);
  SetPx(shard.db(1), "latest", 9000);
  ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, nullptr));
  EXPECT_FALSE(shard.db(2).Exists("soonest", kNow));
  ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, nullptr));
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
  ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, nullptr));
  EXPECT_FALSE(db.Exists("a", kNow));
  EXPECT_EQ(db.ExpireAt("b", kNow + 60000, ExpireCond::kNone, kNow), 1);
  ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, nullptr));
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
  ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow, nullptr));
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
  ASSERT_TRUE(shard.EvictVolatileTtl(5, kNow + 100, nullptr));
  EXPECT_EQ(rec.events, (std::vector<std::string>{"x:gone", "c:live"}));
  db.RemoveObserver(&rec);
}

}  // namespace
}  // namespace deadbolt::shard
