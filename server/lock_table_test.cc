#include "server/lock_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace deadbolt::server {
namespace {

std::vector<std::string> Names(std::initializer_list<const char*> keys, int db = 0) {
  std::vector<std::string> v;
  for (const char* k : keys) v.push_back(LockTable::Name(db, k));
  return v;
}

TEST(LockTableTest, IdleUntilSomethingIsHeld) {
  LockTable t;
  EXPECT_TRUE(t.idle());
  EXPECT_FALSE(t.Blocked(0, "a"));
  ASSERT_TRUE(t.TryLock(1, Names({"a", "b"}), false));
  EXPECT_FALSE(t.idle());
  EXPECT_TRUE(t.Blocked(0, "a"));
  EXPECT_TRUE(t.Blocked(0, "b"));
  EXPECT_FALSE(t.Blocked(0, "c"));
  EXPECT_FALSE(t.Blocked(1, "a"));  // another database, another lock
  t.Unlock(1, Names({"a", "b"}), false);
  EXPECT_TRUE(t.idle());
  EXPECT_FALSE(t.Blocked(0, "a"));
}

TEST(LockTableTest, AllOrNothing) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"b"}), false));
  EXPECT_FALSE(t.TryLock(2, Names({"a", "b"}), false));
  EXPECT_FALSE(t.Blocked(0, "a")) << "a failed TryLock must take nothing";
  EXPECT_TRUE(t.TryLock(1, Names({"b"}), false)) << "a holder may ask again";
}

TEST(LockTableTest, ParkedCommandRunsWhenItsKeyIsReleased) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"k"}), false));
  std::vector<int> ran;
  t.Park(Names({"k"}), 0, [&] { ran.push_back(1); });
  t.Park(Names({"other"}), 0, [&] { ran.push_back(2); });  // not blocked, but queued: retried
  EXPECT_TRUE(ran.empty());
  t.Unlock(1, Names({"k"}), false);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_EQ(t.parked(), 0u);
}

TEST(LockTableTest, StillBlockedWorkStaysParkedInOrder) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"x"}), false));
  ASSERT_TRUE(t.TryLock(2, Names({"y"}), false));
  std::vector<std::string> ran;
  t.Park(Names({"y"}), 0, [&] { ran.push_back("y1"); });
  t.Park(Names({"x"}), 0, [&] { ran.push_back("x1"); });
  t.Park(Names({"y"}), 0, [&] { ran.push_back("y2"); });
  t.Unlock(1, Names({"x"}), false);
  EXPECT_EQ(ran, (std::vector<std::string>{"x1"}));
  t.Unlock(2, Names({"y"}), false);
  EXPECT_EQ(ran, (std::vector<std::string>{"x1", "y1", "y2"}));
}

// A waiting transaction is served before a newcomer that wants the same key, even when the
// newcomer arrives while the key is free of holders.
TEST(LockTableTest, NewcomerYieldsToWaitingTransaction) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"a", "b"}), false));
  bool tx2_locked = false;
  auto names2 = Names({"b"});
  // tx 2 waits for b.
  ASSERT_FALSE(t.TryLock(2, names2, false));
  t.ParkTx(2, names2, false, [&] { tx2_locked = t.TryLock(2, names2, false); });
  // tx 3 arrives wanting b as well: it must not jump the queue.
  EXPECT_FALSE(t.TryLock(3, Names({"b"}), false));
  t.Unlock(1, Names({"a", "b"}), false);
  EXPECT_TRUE(tx2_locked);
  EXPECT_TRUE(t.Blocked(0, "b"));
}

// Two waiting transactions on the same key: the first one is retried first and wins; the second
// one is not blocked by its own later reservation order (the bug this guards against made the
// first waiter give way to the second, and both waited forever).
TEST(LockTableTest, WaitersOnOneKeyAreServedFirstComeFirstServed) {
  LockTable t;
  auto k = Names({"k"});
  ASSERT_TRUE(t.TryLock(1, k, false));
  std::vector<int> order;
  std::function<void(uint64_t)> wait = [&](uint64_t tx) {
    if (t.TryLock(tx, k, false)) {
      order.push_back(static_cast<int>(tx));
    } else {
      t.ParkTx(tx, k, false, [&, tx] { wait(tx); });
    }
  };
  wait(2);
  wait(3);
  wait(4);
  EXPECT_TRUE(order.empty());
  t.Unlock(1, k, false);
  EXPECT_EQ(order, (std::vector<int>{2}));
  t.Unlock(2, k, false);
  EXPECT_EQ(order, (std::vector<int>{2, 3}));
  t.Unlock(3, k, false);
  EXPECT_EQ(order, (std::vector<int>{2, 3, 4}));
  t.Unlock(4, k, false);
  EXPECT_TRUE(t.idle());
}

TEST(LockTableTest, WholeShardLockExcludesEveryKey) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"a"}), false));
  EXPECT_FALSE(t.TryLock(2, {}, true)) << "a key is held";
  bool whole = false;
  t.ParkTx(2, {}, true, [&] { whole = t.TryLock(2, {}, true); });
  EXPECT_FALSE(t.TryLock(3, Names({"z"}), false)) << "a waiting whole-shard lock goes first";
  t.Unlock(1, Names({"a"}), false);
  EXPECT_TRUE(whole);
  EXPECT_TRUE(t.Blocked(0, "anything"));
  EXPECT_TRUE(t.BlockedWhole());
  t.Unlock(2, {}, true);
  EXPECT_FALSE(t.Blocked(0, "anything"));
}

// A retry that takes and releases its locks synchronously (a transaction local to this shard)
// unlocks from inside the retry round; work parked behind it must still run.
TEST(LockTableTest, UnlockFromInsideARetryRunsTheRest) {
  LockTable t;
  auto k = Names({"k"});
  ASSERT_TRUE(t.TryLock(1, k, false));
  bool later_ran = false;
  t.ParkTx(2, k, false, [&] {
    ASSERT_TRUE(t.TryLock(2, k, false));
    t.Unlock(2, k, false);  // done at once
  });
  t.Park(k, 0, [&] { later_ran = true; });
  t.Unlock(1, k, false);
  EXPECT_TRUE(later_ran);
  EXPECT_TRUE(t.idle());
}

// One client's commands keep their order: a later command whose key is free still waits behind
// the client's earlier command that waits for a lock.
TEST(LockTableTest, AClientsLaterCommandWaitsBehindItsParkedOne) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"a"}), false));
  std::vector<std::string> ran;
  t.Park(Names({"a"}), 7, [&] { ran.push_back("a"); });
  EXPECT_TRUE(t.HasParked(7));
  EXPECT_FALSE(t.HasParked(8));
  t.Park(Names({"b"}), 7, [&] { ran.push_back("b"); });  // b is free, but client 7 waits on a
  t.Park(Names({"c"}), 8, [&] { ran.push_back("c"); });  // another client: free to go
  ASSERT_TRUE(t.TryLock(2, Names({"z"}), false));
  t.Unlock(2, Names({"z"}), false);  // a round in which a is still locked
  EXPECT_EQ(ran, (std::vector<std::string>{"c"}));
  t.Unlock(1, Names({"a"}), false);
  EXPECT_EQ(ran, (std::vector<std::string>{"c", "a", "b"}));
  EXPECT_FALSE(t.HasParked(7));
}

TEST(LockTableTest, LongKeysAreFound) {
  LockTable t;
  std::string big(1000, 'k');
  ASSERT_TRUE(t.TryLock(1, {LockTable::Name(0, big)}, false));
  EXPECT_TRUE(t.Blocked(0, big));
  EXPECT_FALSE(t.Blocked(0, big + "x"));
}

}  // namespace
}  // namespace deadbolt::server
