#include "server/txn/lock_table.h"

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

TEST(LockTableTest, AnyHeldByMaskTellsWhoseLockBlocks) {
  constexpr uint64_t kTop = uint64_t{1} << 63;  // relays' lock ids have it
  LockTable t;
  ASSERT_TRUE(t.TryLock(7, Names({"tx"}), false));
  ASSERT_TRUE(t.TryLock(kTop | 7, Names({"relay"}), false));
  EXPECT_FALSE(t.AnyHeldByMask(Names({"tx"}), kTop));
  EXPECT_TRUE(t.AnyHeldByMask(Names({"tx", "relay"}), kTop));
  EXPECT_FALSE(t.AnyHeldByMask(Names({"free"}), kTop));
  t.Unlock(kTop | 7, Names({"relay"}), false);
  EXPECT_FALSE(t.AnyHeldByMask(Names({"tx", "relay"}), kTop));
}

TEST(LockTableTest, FailedTryLockKeepsWhatTheCallerHeldBefore) {
  // A relay asks for more names (and a duplicate) while holding one: a conflict gives back only
  // what this call took.
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"b"}), false));
  ASSERT_TRUE(t.TryLock(2, Names({"c"}), false));
  EXPECT_FALSE(t.TryLock(1, Names({"a", "a", "b", "c"}), false));
  EXPECT_FALSE(t.Blocked(0, "a"));
  EXPECT_TRUE(t.Blocked(0, "b"));
  EXPECT_EQ(t.held(), 2u);
  EXPECT_TRUE(t.TryLock(1, Names({"a", "a", "b"}), false));
  t.Unlock(1, Names({"a", "a", "b"}), false);
  EXPECT_EQ(t.held(), 1u);
}

TEST(LockTableTest, ParkedCommandRunsWhenItsKeyIsReleased) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"k"}), false));
  std::vector<int> ran;
  t.Park(Names({"k"}), 0, [&] { ran.push_back(1); });
  t.Park(Names({"other"}), 0, [&] { ran.push_back(2); });  // nothing blocks it: runs at once
  EXPECT_EQ(ran, (std::vector<int>{2}));
  t.Unlock(1, Names({"k"}), false);
  EXPECT_EQ(ran, (std::vector<int>{2, 1}));
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

// The wedge of issue 16: thousands of transactions queue for one hot key (every MSET a b / MGET
// a b c of a crowd of clients). Each release must cost the work it wakes, not a pass over the
// whole queue: with a pass per release, draining n waiters cost n^2/2 looks, and a shard with a
// few thousand waiters stopped answering for minutes.
TEST(LockTableTest, ReleasingAHotKeyCostsWhatItWakesNotTheQueueLength) {
  LockTable t;
  auto hot = Names({"b"});
  auto hot2 = Names({"b", "c"});
  ASSERT_TRUE(t.TryLock(1, hot, false));
  constexpr uint64_t kWaiters = 4000;
  std::vector<uint64_t> granted;
  for (uint64_t tx = 2; tx < 2 + kWaiters; tx++) {
    const auto& names = tx % 2 ? hot : hot2;
    ASSERT_FALSE(t.TryLock(tx, names, false));
    t.ParkTx(tx, names, false, [&, tx] { granted.push_back(tx); });
  }
  // A reader of the hot key, queued after them all, is served after them (arrival order).
  bool read = false;
  t.Park(Names({"b"}), 99, [&] { read = true; });
  ASSERT_EQ(t.parked(), kWaiters + 1);
  uint64_t before = t.examined();
  uint64_t holder = 1;
  for (uint64_t i = 0; i < kWaiters; i++) {
    t.Unlock(holder, hot2, false);
    ASSERT_EQ(granted.size(), i + 1) << "each release grants the next waiter";
    holder = granted.back();
    EXPECT_EQ(holder, i + 2) << "first come, first served";
  }
  EXPECT_FALSE(read);
  t.Unlock(holder, hot2, false);
  EXPECT_TRUE(read);
  EXPECT_TRUE(t.idle());
  // A few looks per release (the granted waiter, its successor, the reader): linear, where the
  // old round over every waiter took about kWaiters^2 / 2 = 8,000,000.
  EXPECT_LT(t.examined() - before, 10 * kWaiters);
}

// A command waiting behind a transaction on one key runs in arrival order with the
// transactions on that key: before a later-queued transaction is granted the key.
TEST(LockTableTest, CommandsAndTransactionsOnOneKeyKeepArrivalOrder) {
  LockTable t;
  auto k = Names({"k"});
  ASSERT_TRUE(t.TryLock(1, k, false));
  std::vector<std::string> ran;
  t.Park(k, 5, [&] { ran.push_back("cmd-early"); });
  ASSERT_FALSE(t.TryLock(2, k, false));
  t.ParkTx(2, k, false, [&] { ran.push_back("tx2"); });
  t.Park(k, 6, [&] { ran.push_back("cmd-late"); });
  t.Unlock(1, k, false);
  EXPECT_EQ(ran, (std::vector<std::string>{"cmd-early", "tx2"})) << "cmd-late waits for tx 2";
  EXPECT_TRUE(t.Blocked(0, "k"));
  t.Unlock(2, k, false);
  EXPECT_EQ(ran, (std::vector<std::string>{"cmd-early", "tx2", "cmd-late"}));
  EXPECT_TRUE(t.idle());
}

// A transaction waiting for two keys is granted only when it is first in both queues and both
// are free; the one ahead of it on its second key goes first even if its first key frees.
TEST(LockTableTest, AWaiterNeedsTheFrontOfEveryQueueItIsIn) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"a"}), false));
  ASSERT_TRUE(t.TryLock(2, Names({"x"}), false));
  std::vector<int> order;
  ASSERT_FALSE(t.TryLock(3, Names({"a", "x"}), false));
  t.ParkTx(3, Names({"a", "x"}), false, [&] { order.push_back(3); });  // behind 1 and 2
  ASSERT_FALSE(t.TryLock(4, Names({"a"}), false));
  t.ParkTx(4, Names({"a"}), false, [&] { order.push_back(4); });  // behind 3 (fairness)
  t.Unlock(1, Names({"a"}), false);
  EXPECT_TRUE(order.empty()) << "3 still waits for x, and 4 waits behind 3";
  t.Unlock(2, Names({"x"}), false);
  EXPECT_EQ(order, (std::vector<int>{3}));
  t.Unlock(3, Names({"a", "x"}), false);
  EXPECT_EQ(order, (std::vector<int>{3, 4}));
  t.Unlock(4, Names({"a"}), false);
  EXPECT_TRUE(t.idle());
}

// A client's later commands that wait behind its first one all run, in order, once it does,
// whatever keys they wait on (the owner chain wakes each in turn).
TEST(LockTableTest, AClientsWaitingCommandsAllRunInOrder) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"a"}), false));
  ASSERT_TRUE(t.TryLock(2, Names({"b"}), false));
  std::vector<std::string> ran;
  t.Park(Names({"a"}), 7, [&] { ran.push_back("a1"); });
  t.Park(Names({"b"}), 7, [&] { ran.push_back("b"); });
  t.Park(Names({"c"}), 7, [&] { ran.push_back("c"); });
  t.Park(Names({"a"}), 7, [&] { ran.push_back("a2"); });
  t.Unlock(1, Names({"a"}), false);
  EXPECT_EQ(ran, (std::vector<std::string>{"a1"})) << "b is still held";
  t.Unlock(2, Names({"b"}), false);
  EXPECT_EQ(ran, (std::vector<std::string>{"a1", "b", "c", "a2"}));
  EXPECT_TRUE(t.idle());
}

// A whole-shard lock waits for every transaction queued before it, and every later one waits
// for it; commands wait while it is held and run at its release.
TEST(LockTableTest, WholeShardWaiterKeepsItsPlaceInLine) {
  LockTable t;
  ASSERT_TRUE(t.TryLock(1, Names({"a"}), false));
  std::vector<std::string> ran;
  ASSERT_FALSE(t.TryLock(2, Names({"a"}), false));
  t.ParkTx(2, Names({"a"}), false, [&] { ran.push_back("tx2"); });
  ASSERT_FALSE(t.TryLock(3, {}, true));
  t.ParkTx(3, {}, true, [&] { ran.push_back("whole3"); });
  ASSERT_FALSE(t.TryLock(4, Names({"z"}), false));
  t.ParkTx(4, Names({"z"}), false, [&] { ran.push_back("tx4"); });
  t.Unlock(1, Names({"a"}), false);
  EXPECT_EQ(ran, (std::vector<std::string>{"tx2"}));
  t.Unlock(2, Names({"a"}), false);
  EXPECT_EQ(ran, (std::vector<std::string>{"tx2", "whole3"}));
  t.Park(Names({"q"}), 0, [&] { ran.push_back("cmd"); });
  EXPECT_EQ(ran.size(), 2u) << "the whole holder blocks every command";
  t.Unlock(3, {}, true);
  EXPECT_EQ(ran, (std::vector<std::string>{"tx2", "whole3", "tx4", "cmd"}));
  t.Unlock(4, Names({"z"}), false);
  EXPECT_TRUE(t.idle());
}

}  // namespace
}  // namespace deadbolt::server
