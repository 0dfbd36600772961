// Key commands of Db (DEL, EXISTS, TYPE, KEYS, SCAN, RANDOMKEY, FLUSHDB), counters, hashes and
// the lifetime of returned views. Expiry is in db_expire_test.cc, strings in db_string_test.cc.

#include "shard/db.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "shard/base/test_util.h"
#include "shard/table/entry.h"

namespace deadbolt::shard {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

SetOptions At(int64_t at) {
  SetOptions o;
  o.expire = SetOptions::Expire::kAt;
  o.expire_at_ms = at;
  return o;
}

std::vector<std::string> AllKeys(Db& db, std::string_view pattern, int64_t now) {
  std::vector<std::string> keys;
  db.Keys(pattern, now, [&](std::string_view k) { keys.emplace_back(k); });
  std::sort(keys.begin(), keys.end());
  return keys;
}

// A full SCAN: every key returned, with how many times.
std::map<std::string, int> FullScan(Db& db, std::string_view pattern, size_t count, ValueType type,
                                    int64_t now) {
  std::map<std::string, int> seen;
  uint64_t cursor = 0;
  int calls = 0;
  do {
    ScanResult r = db.Scan(cursor, pattern, count, type, now);
    for (auto& k : r.keys) ++seen[k];
    cursor = r.cursor;
    if (++calls > 10'000'000) break;
  } while (cursor != 0);
  return seen;
}

TEST(DbTest, DelExistsTypeAndCounters) {
  Db db;
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_FALSE(db.Del("a", kNow));
  EXPECT_FALSE(db.Exists("a", kNow));
  EXPECT_EQ(db.Type("a", kNow), ValueType::kNone);
  db.Set("a", "1", SetOptions{}, kNow);
  db.Set("b", "2", At(kNow + 10), kNow);
  db.HSet("h", "f", "v", kNow);
  EXPECT_EQ(db.Size(), 3u);
  EXPECT_EQ(db.ExpiresSize(), 1u);
  EXPECT_TRUE(db.Exists("a", kNow));
  EXPECT_EQ(db.Type("a", kNow), ValueType::kString);
  EXPECT_EQ(db.Type("h", kNow), ValueType::kHash);
  EXPECT_TRUE(db.Del("b", kNow));
  EXPECT_FALSE(db.Del("b", kNow));
  EXPECT_EQ(db.ExpiresSize(), 0u);
  EXPECT_TRUE(db.Del("h", kNow));
  EXPECT_EQ(db.Size(), 1u);
  // Size counts expired keys nobody has removed yet.
  db.Set("c", "3", At(kNow + 10), kNow);
  EXPECT_EQ(db.Size(), 2u);
  EXPECT_EQ(db.Size(), 2u);
  EXPECT_FALSE(db.Exists("c", kNow + 11));
  EXPECT_EQ(db.Size(), 1u);
}

TEST(DbTest, ManyKeysSetGetDel) {
  Db db;
  constexpr int kN = 50'000;
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(db.Set(Cat("key:", i), Cat("value:", i), SetOptions{}, kNow)->written);
  }
  EXPECT_EQ(db.Size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(*db.Get(Cat("key:", i), kNow), Cat("value:", i));
  }
  for (int i = 0; i < kN; i += 3) ASSERT_TRUE(db.Del(Cat("key:", i), kNow));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(db.Exists(Cat("key:", i), kNow), i % 3 != 0) << i;
  }
  for (int i = 0; i < kN; ++i) db.Del(Cat("key:", i), kNow);
  EXPECT_EQ(db.Size(), 0u);
  db.Set("again", "x", SetOptions{}, kNow);
  EXPECT_EQ(*db.Get("again", kNow), "x");
}

// PrefetchKeys is a hint over windows of keys: any count (none, one window, more than one and a
// part), keys present or not, on an empty keyspace too, and the keyspace reads the same after.
TEST(DbTest, PrefetchKeysChangesNothing) {
  Db db;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) names.push_back(Cat("key:", i));
  std::vector<std::string_view> keys(names.begin(), names.end());
  db.PrefetchKeys(keys.data(), keys.size());
  for (int i = 0; i < 40; i += 2) db.Set(names[i], "v", SetOptions{}, kNow);
  for (size_t n : {size_t{0}, size_t{1}, size_t{16}, size_t{17}, size_t{40}}) {
    db.PrefetchKeys(keys.data(), n);
  }
  EXPECT_EQ(db.Size(), 20u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(db.Exists(names[i], kNow), i % 2 == 0) << i;
}

TEST(DbTest, ViewsStayValidUntilTheKeyChanges) {
  Db db;
  db.Set("k", "value", SetOptions{}, kNow);
  std::string_view v = *db.Get("k", kNow);
  // Reads and even resizes of the table (entries move between buckets, not in memory) leave it.
  for (int i = 0; i < 5000; ++i) db.Set(Cat("other", i), "x", SetOptions{}, kNow);
  for (int i = 0; i < 5000; ++i) db.Get(Cat("other", i), kNow);
  EXPECT_EQ(v, "value");
}

TEST(DbTest, Keys) {
  Db db;
  EXPECT_TRUE(AllKeys(db, "*", kNow).empty());
  for (const char* k : {"lock:1", "lock:2", "lock:10", "user:1", "Lock:3"}) {
    db.Set(k, "v", SetOptions{}, kNow);
  }
  db.Set("lock:dead", "v", At(kNow + 5), kNow);
  EXPECT_EQ(AllKeys(db, "*", kNow).size(), 6u);
  EXPECT_EQ(AllKeys(db, "lock:?", kNow), (std::vector<std::string>{"lock:1", "lock:2"}));
  EXPECT_EQ(AllKeys(db, "lock:*", kNow + 6),
            (std::vector<std::string>{"lock:1", "lock:10", "lock:2"}));
  EXPECT_EQ(AllKeys(db, "*:1", kNow), (std::vector<std::string>{"lock:1", "user:1"}));
  EXPECT_EQ(AllKeys(db, "[LU]*", kNow), (std::vector<std::string>{"Lock:3"}));
}

TEST(DbTest, ScanReturnsEveryKey) {
  Db db;
  EXPECT_EQ(db.Scan(0, "*", 10, ValueType::kNone, kNow).cursor, 0u);
  constexpr int kN = 5000;
  for (int i = 0; i < kN; ++i) db.Set(Cat("k", i), "v", SetOptions{}, kNow);
  for (size_t count : {1u, 10u, 1000u}) {
    auto seen = FullScan(db, "*", count, ValueType::kNone, kNow);
    EXPECT_EQ(seen.size(), static_cast<size_t>(kN)) << count;
    for (auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;  // a stable table returns each key once
  }
  EXPECT_EQ(db.Scan(0, "*", SIZE_MAX, ValueType::kNone, kNow).keys.size(), static_cast<size_t>(kN));
  EXPECT_EQ(db.Scan(0, "*", SIZE_MAX, ValueType::kNone, kNow).cursor, 0u);
  // COUNT is a hint: a step of count 1000 returns about that many keys, count 10 about ten.
  EXPECT_GE(db.Scan(0, "*", 1000, ValueType::kNone, kNow).keys.size(), 1000u);
  EXPECT_LT(db.Scan(0, "*", 10, ValueType::kNone, kNow).keys.size(), 40u);
}

TEST(DbTest, ScanFilters) {
  Db db;
  for (int i = 0; i < 300; ++i) db.Set(Cat("s", i), "v", SetOptions{}, kNow);
  for (int i = 0; i < 200; ++i) db.HSet(Cat("h", i), "f", "v", kNow);
  for (int i = 0; i < 100; ++i) db.Set(Cat("x", i), "v", At(kNow + 5), kNow);
  EXPECT_EQ(FullScan(db, "*", 10, ValueType::kNone, kNow).size(), 600u);
  EXPECT_EQ(FullScan(db, "*", 10, ValueType::kHash, kNow).size(), 200u);
  EXPECT_EQ(FullScan(db, "*", 10, ValueType::kString, kNow).size(), 400u);
  auto s1 = FullScan(db, "s1*", 10, ValueType::kNone, kNow);
  EXPECT_EQ(s1.size(), 111u);  // s1, s10-s19, s100-s199
  EXPECT_TRUE(FullScan(db, "h*", 10, ValueType::kString, kNow).empty());
  // Expired keys are neither returned nor kept: the scan removes them.
  EXPECT_EQ(FullScan(db, "x*", 10, ValueType::kNone, kNow + 6).size(), 0u);
  EXPECT_EQ(db.Size(), 500u);
}

TEST(DbTest, ScanIsCompleteWhileTheTableGrows) {
  Db db;
  constexpr int kInitial = 2000;
  for (int i = 0; i < kInitial; ++i) db.Set(Cat("old", i), "v", SetOptions{}, kNow);
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int added = 0;
  do {
    ScanResult r = db.Scan(cursor, "*", 5, ValueType::kNone, kNow);
    seen.insert(r.keys.begin(), r.keys.end());
    cursor = r.cursor;
    // Insert many keys between the first steps: the table grows (and rehashes) three times.
    // (Inserting forever would make the scan chase a table that outgrows it.)
    for (int j = 0; j < 50 && added < 7 * kInitial; ++j) {
      db.Set(Cat("new", added++), "v", SetOptions{}, kNow);
    }
  } while (cursor != 0);
  ASSERT_EQ(db.Size(), 8u * kInitial) << "the table did not grow during the scan";
  for (int i = 0; i < kInitial; ++i) EXPECT_TRUE(seen.count(Cat("old", i))) << i;
}

TEST(DbTest, ScanIsCompleteWhileTheTableShrinks) {
  Db db;
  constexpr int kN = 20'000;
  for (int i = 0; i < kN; ++i) db.Set(Cat("k", i), "v", SetOptions{}, kNow);
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int deleted = 0;  // keys k0..k(deleted-1) go away during the scan
  do {
    ScanResult r = db.Scan(cursor, "*", 3, ValueType::kNone, kNow);
    seen.insert(r.keys.begin(), r.keys.end());
    cursor = r.cursor;
    for (int j = 0; j < 40 && deleted < kN - 500; ++j) db.Del(Cat("k", deleted++), kNow);
  } while (cursor != 0);
  ASSERT_EQ(deleted, kN - 500);
  for (int i = deleted; i < kN; ++i) EXPECT_TRUE(seen.count(Cat("k", i))) << i;
}

TEST(DbTest, RandomKey) {
  Db db;
  EXPECT_EQ(db.RandomKey(kNow), std::nullopt);
  for (int i = 0; i < 20; ++i) db.Set(Cat("k", i), "v", SetOptions{}, kNow);
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    auto k = db.RandomKey(kNow);
    ASSERT_TRUE(k.has_value());
    seen.insert(*k);
  }
  EXPECT_EQ(seen.size(), 20u);
}

TEST(DbTest, RandomKeySkipsExpiredKeys) {
  Db db;
  for (int i = 0; i < 1000; ++i) db.Set(Cat("dead", i), "v", At(kNow + 1), kNow);
  db.Set("alive", "v", SetOptions{}, kNow);
  // Nearly every draw hits an expired key: bounded retries, then a walk, still find the live one.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(db.RandomKey(kNow + 2), "alive");
  EXPECT_LT(db.Size(), 1001u);  // the expired keys it met were removed
  // Only expired keys: none.
  Db all_dead;
  for (int i = 0; i < 500; ++i) all_dead.Set(Cat("d", i), "v", At(kNow + 1), kNow);
  EXPECT_EQ(all_dead.RandomKey(kNow + 2), std::nullopt);
}

TEST(DbTest, Flush) {
  Db db;
  for (int i = 0; i < 1000; ++i) db.Set(Cat("k", i), "v", At(kNow + 100), kNow);
  db.HSet("h", "f", "v", kNow);
  db.Flush();
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.ExpiresSize(), 0u);
  EXPECT_FALSE(db.Exists("k1", kNow));
  EXPECT_EQ(db.Scan(0, "*", 10, ValueType::kNone, kNow).keys.size(), 0u);
  db.Set("k1", "again", SetOptions{}, kNow);
  EXPECT_EQ(*db.Get("k1", kNow), "again");
}

TEST(DbTest, Hashes) {
  Db db;
  EXPECT_EQ(db.HGet("h", "f", kNow).status(), OpStatus::kKeyNotFound);
  EXPECT_EQ(*db.HSet("h", "f", "1", kNow), 1);
  EXPECT_EQ(*db.HSet("h", "f", "2", kNow), 0);
  EXPECT_EQ(*db.HSet("h", "g", "3", kNow), 1);
  EXPECT_EQ(*db.HGet("h", "f", kNow), "2");
  EXPECT_EQ(*db.HGet("h", "g", kNow), "3");
  EXPECT_EQ(db.HGet("h", "nope", kNow).status(), OpStatus::kKeyNotFound);
  db.Set("s", "v", SetOptions{}, kNow);
  EXPECT_EQ(db.HSet("s", "f", "v", kNow).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HGet("s", "f", kNow).status(), OpStatus::kWrongType);
  EXPECT_EQ(*db.Get("s", kNow), "v");
}

// RESTORE ... IDLETIME: the access clock as if the key was last touched that long ago, up to
// the clock's wrap; a missing key is left alone.
TEST(DbTest, SetIdleMovesTheAccessClockBack) {
  Db db;
  db.Set("k", "v", SetOptions{}, kNow);
  db.SetIdle("k", 100, kNow);
  int64_t idle = db.Object("k", kNow)->idle_seconds;
  EXPECT_GE(idle, 98);
  EXPECT_LE(idle, 101);
  db.SetIdle("k", INT64_MAX, kNow);
  EXPECT_EQ(db.Object("k", kNow)->idle_seconds,
            (Entry::kClockPeriod - 1) * Entry::kClockUnitMs / 1000);
  db.SetIdle("k", 0, kNow);
  EXPECT_LE(db.Object("k", kNow)->idle_seconds, 1);
  db.SetIdle("missing", 5, kNow);
  EXPECT_FALSE(db.Object("missing", kNow).has_value());
}

}  // namespace
}  // namespace deadbolt::shard
