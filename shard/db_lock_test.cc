// Native locks on a Db (LockAcquire, LockRelease, LockExtend, LockInfo): fencing tokens, hold
// counts, owner checks, and how the lock's record follows its key through other commands. Time
// is a plain int64 that the tests advance.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "shard/base/test_util.h"
#include "shard/db.h"

namespace deadbolt::shard {
namespace {

class DbLockTest : public ::testing::Test {
 protected:
  // The token of a successful acquire (0 when busy).
  uint64_t Acquire(std::string_view key, std::string_view owner, int64_t lease_ms,
                   bool reentrant = false) {
    auto r = db.LockAcquire(key, owner, lease_ms, reentrant, now);
    EXPECT_TRUE(r.ok());
    if (!r.ok() || !r->acquired) return 0;
    EXPECT_GT(r->token, 0u);
    return r->token;
  }
  int64_t Release(std::string_view key, std::string_view owner) {
    auto r = db.LockRelease(key, owner, now);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : -100;
  }
  LockState Info(std::string_view key) {
    auto r = db.LockInfo(key, now);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : LockState{};
  }

  Db db;
  int64_t now = 1'700'000'000'000;
};

TEST_F(DbLockTest, AcquireCreatesAStringKeyHoldingTheOwnerWithTheLease) {
  const uint64_t t = Acquire("lock", "alice", 5'000);
  EXPECT_EQ(t, 1u);
  EXPECT_EQ(*db.Get("lock", now), "alice");
  EXPECT_EQ(db.Pttl("lock", now), 5'000);
  LockState s = Info("lock");
  EXPECT_TRUE(s.held);
  EXPECT_EQ(s.owner, "alice");
  EXPECT_EQ(s.pttl_ms, 5'000);
  EXPECT_EQ(s.token, t);
  EXPECT_EQ(s.holds, 1);
  // Busy for everyone else, and for the owner itself without REENTRANT.
  EXPECT_EQ(Acquire("lock", "bob", 5'000), 0u);
  EXPECT_EQ(Acquire("lock", "alice", 5'000), 0u);
  EXPECT_EQ(Info("lock").holds, 1);
  // A free lock reads as not held.
  EXPECT_FALSE(Info("free").held);
}

TEST_F(DbLockTest, TokensGrowAcrossReleaseExpiryDeleteOverwriteAndFlush) {
  uint64_t last = 0;
  auto next = [&](std::string_view key, std::string_view owner) {
    const uint64_t t = Acquire(key, owner, 1'000);
    EXPECT_GT(t, last) << key << " " << owner;
    last = t;
  };
  next("k", "a");
  EXPECT_EQ(Release("k", "a"), 0);  // released
  next("k", "b");
  now += 1'001;  // expired (lazily, on the next access)
  next("k", "c");
  EXPECT_TRUE(db.Del("k", now));  // deleted by DEL
  next("k", "d");
  now += 1'001;
  EXPECT_EQ(db.ActiveExpire(now, 1'000), 1u);  // expired by active expiry
  next("k", "e");
  db.Flush();
  next("k", "f");
  next("other", "a");  // one counter per Db, shared by its keys
  next("k2", "b");
  EXPECT_EQ(db.last_fencing_token(), last);
  // A journal restoring the counter: the next token is above what it restored.
  db.AdvanceFencingToken(1'000'000);
  db.AdvanceFencingToken(5);  // never goes back
  EXPECT_EQ(db.last_fencing_token(), 1'000'000u);
  EXPECT_TRUE(db.Del("k", now));
  EXPECT_EQ(Acquire("k", "z", 1'000), 1'000'001u);
}

TEST_F(DbLockTest, ReentrantAcquireCountsHoldsAndKeepsTheToken) {
  const uint64_t t = Acquire("lock", "alice", 5'000, true);
  now += 1'000;
  EXPECT_EQ(db.Pttl("lock", now), 4'000);
  auto r = db.LockAcquire("lock", "alice", 9'000, true, now);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->acquired);
  EXPECT_TRUE(r->reentered);
  EXPECT_EQ(r->token, t);
  EXPECT_EQ(r->holds, 2);
  EXPECT_EQ(db.Pttl("lock", now), 9'000);  // the lease is renewed
  EXPECT_EQ(Acquire("lock", "alice", 9'000, true), t);
  EXPECT_EQ(Info("lock").holds, 3);
  EXPECT_EQ(Acquire("lock", "bob", 9'000, true), 0u);  // REENTRANT is not a way in for others
  EXPECT_EQ(Release("lock", "alice"), 2);
  EXPECT_EQ(Release("lock", "alice"), 1);
  EXPECT_TRUE(db.Exists("lock", now));
  EXPECT_EQ(Release("lock", "alice"), 0);
  EXPECT_FALSE(db.Exists("lock", now));
  EXPECT_EQ(Release("lock", "alice"), -1);
  EXPECT_EQ(db.LockRecords(), 0u);
}

TEST_F(DbLockTest, ReleaseAndExtendCheckTheOwner) {
  Acquire("lock", "alice", 5'000);
  EXPECT_EQ(Release("lock", "bob"), -1);
  EXPECT_EQ(*db.LockExtend("lock", "bob", 60'000, now), false);
  EXPECT_EQ(db.Pttl("lock", now), 5'000);
  EXPECT_EQ(*db.LockExtend("lock", "alice", 60'000, now), true);
  EXPECT_EQ(db.Pttl("lock", now), 60'000);
  EXPECT_EQ(*db.LockExtend("missing", "alice", 60'000, now), false);
  EXPECT_EQ(Release("missing", "alice"), -1);
  // After the lease ran out the owner holds nothing.
  now += 60'001;
  EXPECT_EQ(*db.LockExtend("lock", "alice", 1'000, now), false);
  EXPECT_EQ(Release("lock", "alice"), -1);
  EXPECT_FALSE(db.Exists("lock", now));
}

TEST_F(DbLockTest, ReleaseWithATokenReleasesOnlyThatHolding) {
  const uint64_t first = Acquire("lock", "alice", 5'000);
  EXPECT_EQ(Release("lock", "alice"), 0);
  const uint64_t second = Acquire("lock", "alice", 5'000);
  EXPECT_EQ(*db.LockRelease("lock", "alice", now, first), -1);  // an older holding
  EXPECT_TRUE(db.Exists("lock", now));
  EXPECT_EQ(*db.LockRelease("lock", "alice", now, second), 0);
  EXPECT_FALSE(db.Exists("lock", now));
}

TEST_F(DbLockTest, TheRecordFollowsTheKeyThroughOtherCommands) {
  SetOptions extend;
  extend.cond = SetOptions::Cond::kIfEq;
  extend.cond_value = "alice";
  extend.expire = SetOptions::Expire::kAt;
  extend.expire_at_ms = now + 30'000;
  const uint64_t t = Acquire("lock", "alice", 5'000, true);
  Acquire("lock", "alice", 5'000, true);
  // A TTL change or a write of the same value keeps the holding.
  EXPECT_EQ(db.ExpireAt("lock", now + 20'000, ExpireCond::kNone, now), 1);
  ASSERT_TRUE(db.Set("lock", "alice", extend, now)->written);
  EXPECT_EQ(Info("lock").token, t);
  EXPECT_EQ(Info("lock").holds, 2);
  EXPECT_EQ(Info("lock").pttl_ms, 30'000);
  // Another value: the holding is over; the key is a plain string now.
  ASSERT_TRUE(db.Set("lock", "bob", SetOptions{}, now)->written);
  LockState s = Info("lock");
  EXPECT_EQ(s.owner, "bob");
  EXPECT_EQ(s.token, 0u);
  EXPECT_EQ(s.holds, 1);
  EXPECT_EQ(s.pttl_ms, -1);
  EXPECT_EQ(db.LockRecords(), 0u);
  // Writing "alice" back does not bring the old holding back.
  ASSERT_TRUE(db.Set("lock", "alice", SetOptions{}, now)->written);
  EXPECT_EQ(Info("lock").token, 0u);
  // APPEND changes the value in place: the record goes too.
  EXPECT_TRUE(db.Del("lock", now));
  Acquire("lock", "alice", 5'000);
  ASSERT_TRUE(db.Append("lock", "x", now, 1 << 20).ok());
  EXPECT_EQ(db.LockRecords(), 0u);
  EXPECT_EQ(Release("lock", "alice"), -1);
  EXPECT_EQ(Release("lock", "alicex"), 0);  // a key held without a record is one hold
}

TEST_F(DbLockTest, ALockTakenBySetNxIsOneHoldWithoutAToken) {
  SetOptions nx;
  nx.cond = SetOptions::Cond::kNX;
  nx.expire = SetOptions::Expire::kAt;
  nx.expire_at_ms = now + 5'000;
  ASSERT_TRUE(db.Set("lock", "alice", nx, now)->written);
  LockState s = Info("lock");
  EXPECT_EQ(s.token, 0u);
  EXPECT_EQ(s.holds, 1);
  EXPECT_EQ(Acquire("lock", "bob", 5'000), 0u);
  // Re-entering it gives this holding a token.
  const uint64_t t = Acquire("lock", "alice", 5'000, true);
  EXPECT_GT(t, 0u);
  EXPECT_EQ(Info("lock").holds, 2);
  EXPECT_EQ(Release("lock", "alice"), 1);
  EXPECT_EQ(Release("lock", "alice"), 0);
}

TEST_F(DbLockTest, RecordsNeverOutliveTheirKeys) {
  for (int i = 0; i < 1000; i++) Acquire(Cat("lock:", i), "owner", 100 + i % 7);
  EXPECT_EQ(db.LockRecords(), 1000u);
  for (int i = 0; i < 100; i++) EXPECT_EQ(Release(Cat("lock:", i), "owner"), 0);
  for (int i = 100; i < 200; i++) EXPECT_TRUE(db.Del(Cat("lock:", i), now));
  EXPECT_EQ(db.LockRecords(), 800u);
  now += 200;
  while (db.ActiveExpire(now, 1'000) > 0) {
  }
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.LockRecords(), 0u);
}

TEST_F(DbLockTest, AKeyOfAnotherTypeIsWrongType) {
  ASSERT_EQ(*db.HSet("h", "f", "v", now), 1);
  EXPECT_EQ(db.LockAcquire("h", "a", 1'000, true, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.LockRelease("h", "a", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.LockExtend("h", "a", 1'000, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.LockInfo("h", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.last_fencing_token(), 0u);
}

}  // namespace
}  // namespace deadbolt::shard
