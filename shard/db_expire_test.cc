// Expiry in Db: EXPIRE conditions, TTL queries, lazy expiry seen through every operation, and
// active expiry. Time is a plain int64 that the tests advance.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "shard/base/test_util.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::shard {
namespace {

constexpr int64_t kMaxLen = 512LL << 20;
constexpr int64_t kStart = 1'700'000'000'000;

SetOptions At(int64_t at) {
  SetOptions o;
  o.expire = SetOptions::Expire::kAt;
  o.expire_at_ms = at;
  return o;
}

TEST(DbExpireTest, ExpireAtBasics) {
  Db db;
  int64_t now = kStart;
  EXPECT_EQ(db.ExpireAt("missing", now + 10, ExpireCond::kNone, now), 0);
  db.Set("k", "v", SetOptions{}, now);
  EXPECT_EQ(db.Pttl("k", now), -1);
  EXPECT_EQ(db.ExpireTime("k", now), -1);
  EXPECT_EQ(db.ExpireAt("k", now + 1500, ExpireCond::kNone, now), 1);
  EXPECT_EQ(db.Pttl("k", now), 1500);
  EXPECT_EQ(db.ExpireTime("k", now), now + 1500);
  EXPECT_EQ(db.ExpiresSize(), 1u);
  now += 500;
  EXPECT_EQ(db.Pttl("k", now), 1000);
  now += 1000;  // exactly at the expire time: still there, 0 ms left
  EXPECT_TRUE(db.Exists("k", now));
  EXPECT_EQ(db.Pttl("k", now), 0);
  now += 1;
  EXPECT_FALSE(db.Exists("k", now));
  EXPECT_EQ(db.Pttl("k", now), -2);
  EXPECT_EQ(db.ExpireTime("k", now), -2);
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.ExpiresSize(), 0u);
}

TEST(DbExpireTest, ExpireInThePastDeletes) {
  Db db;
  const int64_t now = kStart;
  db.Set("a", "v", SetOptions{}, now);
  EXPECT_EQ(db.ExpireAt("a", now - 1, ExpireCond::kNone, now), 1);
  EXPECT_FALSE(db.Exists("a", now));
  db.Set("b", "v", SetOptions{}, now);
  EXPECT_EQ(db.ExpireAt("b", now, ExpireCond::kNone, now), 1);  // at == now also deletes
  EXPECT_FALSE(db.Exists("b", now));
  db.Set("c", "v", At(now + 100), now);
  EXPECT_EQ(db.ExpireAt("c", -5, ExpireCond::kNone, now), 1);
  EXPECT_FALSE(db.Exists("c", now));
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.ExpiresSize(), 0u);
}

TEST(DbExpireTest, ConditionsOnKeysWithoutTtl) {
  // Redis 7: a key without TTL has an infinite one. GT never passes; LT always does.
  Db db;
  const int64_t now = kStart;
  db.Set("k", "v", SetOptions{}, now);
  EXPECT_EQ(db.ExpireAt("k", now + 100, ExpireCond::kXX, now), 0);
  EXPECT_EQ(db.ExpireAt("k", now + 100, ExpireCond::kGT, now), 0);
  EXPECT_EQ(db.ExpireAt("k", now - 100, ExpireCond::kGT, now), 0);  // not deleted either
  EXPECT_TRUE(db.Exists("k", now));
  EXPECT_EQ(db.Pttl("k", now), -1);
  EXPECT_EQ(db.ExpireAt("k", now + 100, ExpireCond::kLT, now), 1);
  EXPECT_EQ(db.Pttl("k", now), 100);
  db.Set("n", "v", SetOptions{}, now);
  EXPECT_EQ(db.ExpireAt("n", now + 100, ExpireCond::kNX, now), 1);
  EXPECT_EQ(db.ExpireAt("n", now + 200, ExpireCond::kNX, now), 0);
  EXPECT_EQ(db.Pttl("n", now), 100);
  db.Set("l", "v", SetOptions{}, now);
  EXPECT_EQ(db.ExpireAt("l", now - 100, ExpireCond::kLT, now), 1);  // passes LT, then deleted
  EXPECT_FALSE(db.Exists("l", now));
}

TEST(DbExpireTest, ConditionMatrix) {
  // Rules of expireGenericCommand (Redis 7): the condition is checked first, against the
  // current TTL (none = infinite); only then does a time at or before now delete the key.
  const ExpireCond conds[] = {ExpireCond::kNone, ExpireCond::kNX, ExpireCond::kXX, ExpireCond::kGT,
                              ExpireCond::kLT};
  const int64_t now = kStart;
  const int64_t cur = now + 1000;
  const int64_t targets[] = {now - 1, now, now + 500, cur, now + 2000};
  int checked = 0;
  for (bool has_ttl : {false, true}) {
    for (ExpireCond cond : conds) {
      for (int64_t at : targets) {
        SCOPED_TRACE(Cat("ttl=", has_ttl) + " cond=" + std::to_string(static_cast<int>(cond)) +
                     Cat(" at=now+", at - now));
        Db db;
        db.Set("k", "v", has_ttl ? At(cur) : SetOptions{}, now);
        bool pass = true;
        switch (cond) {
          case ExpireCond::kNone:
            break;
          case ExpireCond::kNX:
            pass = !has_ttl;
            break;
          case ExpireCond::kXX:
            pass = has_ttl;
            break;
          case ExpireCond::kGT:
            pass = has_ttl && at > cur;
            break;
          case ExpireCond::kLT:
            pass = !has_ttl || at < cur;
            break;
        }
        EXPECT_EQ(db.ExpireAt("k", at, cond, now), pass ? 1 : 0);
        if (!pass) {
          EXPECT_EQ(db.ExpireTime("k", now), has_ttl ? cur : -1);
        } else if (at <= now) {
          EXPECT_FALSE(db.Exists("k", now));
          EXPECT_EQ(db.ExpiresSize(), 0u);
        } else {
          EXPECT_EQ(db.ExpireTime("k", now), at);
          EXPECT_EQ(db.ExpiresSize(), 1u);
        }
        EXPECT_EQ(db.ExpireAt("missing", at, cond, now), 0);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * 5 * 5);
}

TEST(DbExpireTest, Persist) {
  Db db;
  const int64_t now = kStart;
  EXPECT_FALSE(db.Persist("missing", now));
  db.Set("k", "v", SetOptions{}, now);
  EXPECT_FALSE(db.Persist("k", now));
  db.ExpireAt("k", now + 100, ExpireCond::kNone, now);
  EXPECT_EQ(db.ExpiresSize(), 1u);
  EXPECT_TRUE(db.Persist("k", now));
  EXPECT_EQ(db.Pttl("k", now), -1);
  EXPECT_EQ(db.ExpiresSize(), 0u);
  EXPECT_FALSE(db.Persist("k", now));
  EXPECT_TRUE(db.Exists("k", now + 1'000'000));
  // A hash keeps its value across TTL changes (the entry may be rebuilt).
  db.HSet("h", "f", "v", now);
  EXPECT_EQ(db.ExpireAt("h", now + 50, ExpireCond::kNone, now), 1);
  EXPECT_EQ(*db.HGet("h", "f", now), "v");
  EXPECT_TRUE(db.Persist("h", now));
  EXPECT_EQ(*db.HGet("h", "f", now), "v");
}

// Every operation, met with a key whose TTL has passed, behaves as if the key were missing.
TEST(DbExpireTest, LazyExpiryIsInvisibleToEveryOperation) {
  struct Op {
    const char* name;
    std::function<void(Db&, int64_t)> check;
  };
  const std::vector<Op> ops = {
      {"Get",
       [](Db& db, int64_t t) { EXPECT_EQ(db.Get("k", t).status(), OpStatus::kKeyNotFound); }},
      {"Set NX",
       [](Db& db, int64_t t) {
         SetOptions o;
         o.cond = SetOptions::Cond::kNX;
         o.get = true;
         auto r = db.Set("k", "new", o, t);
         EXPECT_TRUE(r->written);
         EXPECT_FALSE(r->old_value.has_value());
         EXPECT_EQ(db.Pttl("k", t), -1);
       }},
      {"Set XX",
       [](Db& db, int64_t t) {
         SetOptions o;
         o.cond = SetOptions::Cond::kXX;
         EXPECT_FALSE(db.Set("k", "new", o, t)->written);
         EXPECT_FALSE(db.Exists("k", t));
       }},
      {"Set KEEPTTL",
       [](Db& db, int64_t t) {
         SetOptions o;
         o.expire = SetOptions::Expire::kKeep;
         EXPECT_TRUE(db.Set("k", "new", o, t)->written);
         EXPECT_EQ(db.Pttl("k", t), -1);  // the dead key's TTL is not inherited
       }},
      {"GetDel",
       [](Db& db, int64_t t) { EXPECT_EQ(db.GetDel("k", t).status(), OpStatus::kKeyNotFound); }},
      {"GetEx",
       [](Db& db, int64_t t) {
         EXPECT_EQ(db.GetEx("k", {ExpireChange::Kind::kPersist, 0}, t).status(),
                   OpStatus::kKeyNotFound);
       }},
      {"Append",
       [](Db& db, int64_t t) {
         EXPECT_EQ(*db.Append("k", "xy", t, kMaxLen), 2);
         EXPECT_EQ(*db.Get("k", t), "xy");
         EXPECT_EQ(db.Pttl("k", t), -1);
       }},
      {"StrLen", [](Db& db, int64_t t) { EXPECT_EQ(*db.StrLen("k", t), 0); }},
      {"GetRange", [](Db& db, int64_t t) { EXPECT_EQ(*db.GetRange("k", 0, -1, t), ""); }},
      {"SetRange empty",
       [](Db& db, int64_t t) {
         EXPECT_EQ(*db.SetRange("k", 0, "", t, kMaxLen), 0);
         EXPECT_FALSE(db.Exists("k", t));
       }},
      {"SetRange",
       [](Db& db, int64_t t) {
         EXPECT_EQ(*db.SetRange("k", 2, "z", t, kMaxLen), 3);
         EXPECT_EQ(*db.Get("k", t), std::string("\0\0z", 3));
       }},
      {"IncrBy", [](Db& db, int64_t t) { EXPECT_EQ(*db.IncrBy("k", 7, t), 7); }},
      {"IncrByFloat", [](Db& db, int64_t t) { EXPECT_EQ(*db.IncrByFloat("k", 1.5L, t), "1.5"); }},
      {"Del", [](Db& db, int64_t t) { EXPECT_FALSE(db.Del("k", t)); }},
      {"Exists", [](Db& db, int64_t t) { EXPECT_FALSE(db.Exists("k", t)); }},
      {"Type", [](Db& db, int64_t t) { EXPECT_EQ(db.Type("k", t), ValueType::kNone); }},
      {"ExpireAt",
       [](Db& db, int64_t t) { EXPECT_EQ(db.ExpireAt("k", t + 100, ExpireCond::kNone, t), 0); }},
      {"ExpireAt LT",
       [](Db& db, int64_t t) { EXPECT_EQ(db.ExpireAt("k", t + 100, ExpireCond::kLT, t), 0); }},
      {"Pttl", [](Db& db, int64_t t) { EXPECT_EQ(db.Pttl("k", t), -2); }},
      {"ExpireTime", [](Db& db, int64_t t) { EXPECT_EQ(db.ExpireTime("k", t), -2); }},
      {"Persist", [](Db& db, int64_t t) { EXPECT_FALSE(db.Persist("k", t)); }},
      {"Keys",
       [](Db& db, int64_t t) {
         std::vector<std::string> keys;
         db.Keys("*", t, [&](std::string_view k) { keys.emplace_back(k); });
         EXPECT_EQ(keys, std::vector<std::string>{"live"});
       }},
      {"Scan",
       [](Db& db, int64_t t) {
         auto r = db.Scan(0, "*", 100, ValueType::kNone, t);
         EXPECT_EQ(r.cursor, 0u);
         EXPECT_EQ(r.keys, std::vector<std::string>{"live"});
       }},
      {"RandomKey",
       [](Db& db, int64_t t) {
         for (int i = 0; i < 20; ++i) EXPECT_EQ(db.RandomKey(t), "live");
       }},
      {"HSet",
       [](Db& db, int64_t t) {
         EXPECT_EQ(*db.HSet("k", "f", "v", t), 1);
         EXPECT_EQ(db.Type("k", t), ValueType::kHash);
       }},
      {"HGet",
       [](Db& db, int64_t t) { EXPECT_EQ(db.HGet("k", "f", t).status(), OpStatus::kKeyNotFound); }},
  };
  for (bool hash_value : {false, true}) {
    for (const Op& op : ops) {
      SCOPED_TRACE(std::string(op.name) + (hash_value ? " (hash)" : " (string)"));
      Db db;
      int64_t now = kStart;
      if (hash_value) {
        db.HSet("k", "f", "old", now);
        db.ExpireAt("k", now + 10, ExpireCond::kNone, now);
      } else {
        db.Set("k", "old", At(now + 10), now);
      }
      db.Set("live", "x", SetOptions{}, now);
      ASSERT_TRUE(db.Exists("k", now + 10));  // alive up to and including its expire time
      now += 11;
      EXPECT_EQ(db.Size(), 2u);  // nothing removed it yet
      op.check(db, now);
      EXPECT_EQ(db.ExpiresSize(), db.Pttl("k", now) >= 0 ? 1u : 0u);
    }
  }
}

TEST(DbExpireTest, ActiveExpireReclaimsUntouchedKeys) {
  Db db;
  int64_t now = kStart;
  constexpr int kN = 100'000;
  for (int i = 0; i < kN; ++i) {
    db.Set(Cat("lock:", i), "owner", At(now + 1000), now);
    db.Set(Cat("keep:", i), "owner", i % 2 ? At(now + 1'000'000) : SetOptions{}, now);
  }
  ASSERT_EQ(db.Size(), 2u * kN);
  ASSERT_EQ(db.ExpiresSize(), kN + kN / 2u);
  // Nothing has expired yet: a full cycle removes nothing.
  size_t visited = 0;
  for (int i = 0; i < 300; ++i) EXPECT_EQ(db.ActiveExpire(now, 1000, &visited), 0u);
  now += 1001;
  // 200k keys live in 262144 buckets: with 1000 visits per call a full cycle is ~263 calls.
  size_t removed = 0;
  int calls = 0;
  while (removed < kN) {
    size_t v = 0;
    removed += db.ActiveExpire(now, 1000, &v);
    EXPECT_LE(v, 1000u);
    ASSERT_LT(++calls, 600) << "active expiry did not reclaim the keys in bounded time";
  }
  EXPECT_EQ(removed, static_cast<size_t>(kN));
  EXPECT_EQ(db.Size(), static_cast<size_t>(kN));
  EXPECT_EQ(db.ExpiresSize(), kN / 2u);
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(db.Exists(Cat("keep:", i), now)) << i;
    ASSERT_FALSE(db.Exists(Cat("lock:", i), now)) << i;
  }
}

TEST(DbExpireTest, ActiveExpireAcrossShrink) {
  // Every key expires: the table shrinks while the cursor walks it; all are still reclaimed.
  Db db;
  int64_t now = kStart;
  constexpr int kN = 100'000;
  for (int i = 0; i < kN; ++i) db.Set(Cat("k", i), "v", At(now + 5 + i % 7), now);
  now += 100;
  size_t removed = 0;
  int calls = 0;
  while (db.Size() > 0) {
    removed += db.ActiveExpire(now, 500);
    ASSERT_LT(++calls, 2000);
  }
  EXPECT_EQ(removed, static_cast<size_t>(kN));
  EXPECT_EQ(db.ExpiresSize(), 0u);
  EXPECT_EQ(db.ActiveExpire(now, 500), 0u);
}

TEST(DbExpireTest, ActiveExpireWithoutTtlsVisitsNothing) {
  Db db;
  for (int i = 0; i < 1000; ++i) db.Set(Cat("k", i), "v", SetOptions{}, kStart);
  size_t visited = 0;
  EXPECT_EQ(db.ActiveExpire(kStart + 1'000'000, 100, &visited), 0u);
  EXPECT_EQ(visited, 0u);
  EXPECT_EQ(db.Size(), 1000u);
}

TEST(DbExpireTest, ActiveExpireStopsAfterOneCycle) {
  Db db;
  db.Set("a", "v", At(kStart + 1'000'000), kStart);  // TTL, never due
  size_t visited = 0;
  EXPECT_EQ(db.ActiveExpire(kStart, 1'000'000, &visited), 0u);
  EXPECT_EQ(visited, 4u);  // the 4 buckets of a tiny table, once
}

TEST(ShardTest, ActiveExpireCoversEveryDb) {
  Shard shard(3, 16);
  EXPECT_EQ(shard.index(), 3);
  EXPECT_EQ(shard.num_dbs(), 16);
  int64_t now = kStart;
  for (int d : {0, 5, 15}) {
    for (int i = 0; i < 2000; ++i) {
      shard.db(d).Set(Cat("k", i), "v", At(now + 10), now);
      shard.db(d).Set(Cat("p", i), "v", SetOptions{}, now);
    }
  }
  now += 11;
  size_t removed = 0;
  int calls = 0;
  while (removed < 6000) {
    removed += shard.ActiveExpire(now, 64);
    ASSERT_LT(++calls, 2000);
  }
  EXPECT_EQ(removed, 6000u);
  for (int d = 0; d < 16; ++d) {
    EXPECT_EQ(shard.db(d).ExpiresSize(), 0u) << d;
    EXPECT_EQ(shard.db(d).Size(), (d == 0 || d == 5 || d == 15) ? 2000u : 0u) << d;
  }
}

TEST(ShardTest, ActiveExpireBudgetBelowDbCount) {
  // One visit per call: the calls rotate over the dbs, so each db's 4-bucket table is walked
  // within 16 * 4 calls.
  Shard shard(0, 16);
  int64_t now = kStart;
  for (int d = 0; d < 16; ++d) shard.db(d).Set("x", "v", At(now + 1), now);
  now += 2;
  size_t removed = 0;
  for (int i = 0; i < 16 * 4; ++i) removed += shard.ActiveExpire(now, 1);
  EXPECT_EQ(removed, 16u);
  for (int d = 0; d < 16; ++d) EXPECT_EQ(shard.db(d).Size(), 0u) << d;
}

}  // namespace
}  // namespace deadbolt::shard
