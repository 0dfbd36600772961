// LockWaiters: FIFO handover on release, delete, expiry and flush; waiter timeouts and cancels;
// reentrant waiters; giving back a lock granted to a client that has gone; waiting for a
// transaction's key lock. A fake clock and fake replies; the shard is real.

#include "server/txn/lock_waiters.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server/txn/lock_table.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

// What the table did with one waiter's reply.
struct Outcome {
  bool finished = false;
  int finishes = 0;
  std::string reply;
  absl::AnyInvocable<void()> undo;
  bool cancelled = false;
};

class FakeReply : public BlockedReply {
 public:
  FakeReply(uint64_t client, std::shared_ptr<Outcome> out) : client_(client), out_(out) {}
  int resp() const override { return 2; }
  uint64_t client_id() const override { return client_; }
  bool cancelled() const override { return out_->cancelled; }
  void Finish(std::string reply, absl::AnyInvocable<void()> undo) override {
    out_->finished = true;
    out_->finishes++;
    out_->reply = std::move(reply);
    out_->undo = std::move(undo);
  }

 private:
  uint64_t client_;
  std::shared_ptr<Outcome> out_;
};

class LockWaitersTest : public ::testing::Test {
 protected:
  LockWaitersTest()
      : shard(0, 2),
        waiters(
            &shard, &locks, [this] { drain_requested = true; }, [this] { return now; }) {}

  shard::Db& db() { return shard.db(0); }

  // Takes `key` for `owner` outside the table (as LOCK.ACQUIRE does when it is free).
  uint64_t Take(std::string_view key, std::string_view owner, int64_t lease_ms) {
    auto g = db().LockAcquire(key, owner, lease_ms, false, now);
    EXPECT_TRUE(g.ok() && g->acquired);
    return g.ok() ? g->token : 0;
  }
  // Queues client `client` (owner "c<client>") for `key`.
  std::shared_ptr<Outcome> Wait(std::string_view key, uint64_t client, int64_t timeout_ms = 0,
                                bool reentrant = false, std::string owner = "") {
    auto out = std::make_shared<Outcome>();
    LockWaiters::Waiter w;
    w.owner = owner.empty() ? "c" + std::to_string(client) : owner;
    w.lease_ms = 1'000;
    w.reentrant = reentrant;
    w.deadline_ms = timeout_ms == 0 ? LockWaiters::kForever : now + timeout_ms;
    w.reply = std::make_unique<FakeReply>(client, out);
    waiters.Wait(0, key, std::move(w));
    return out;
  }
  // Runs the handover the table asked for after a change (the reactor's task).
  void Settle() {
    if (drain_requested) {
      drain_requested = false;
      waiters.Drain();
    }
  }
  // Advances the fake clock and runs the timers that are due (the reactor's loop).
  void AdvanceTo(int64_t t) {
    now = t;
    if (now >= waiters.next_deadline_ms()) waiters.OnTimer();
  }
  std::string Owner(std::string_view key) {
    auto v = db().Get(key, now);
    return v.ok() ? std::string(*v) : "";
  }
  static int64_t Token(const Outcome& o) {
    EXPECT_EQ(o.reply.substr(0, 1), ":") << o.reply;
    return o.reply.size() > 3 ? std::stoll(o.reply.substr(1, o.reply.size() - 3)) : -1;
  }

  int64_t now = 1'700'000'000'000;
  bool drain_requested = false;
  shard::Shard shard;
  LockTable locks;
  LockWaiters waiters;
};

TEST_F(LockWaitersTest, ReleaseHandsOverFirstComeFirstServedWithGrowingTokens) {
  const uint64_t t0 = Take("k", "holder", 10'000);
  auto a = Wait("k", 1), b = Wait("k", 2), c = Wait("k", 3);
  EXPECT_EQ(waiters.Waiters(0, "k"), 3u);
  EXPECT_FALSE(a->finished);
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  EXPECT_TRUE(drain_requested);  // heard of the delete; hands over after the command
  EXPECT_FALSE(a->finished);
  Settle();
  ASSERT_TRUE(a->finished);
  EXPECT_FALSE(b->finished);
  EXPECT_EQ(Owner("k"), "c1");
  EXPECT_EQ(db().Pttl("k", now), 1'000);  // the waiter's own lease
  EXPECT_GT(Token(*a), static_cast<int64_t>(t0));
  // The holder now is c1: a release by anyone else frees nothing.
  EXPECT_EQ(*db().LockRelease("k", "c2", now), -1);
  Settle();
  EXPECT_FALSE(b->finished);
  ASSERT_EQ(*db().LockRelease("k", "c1", now), 0);
  waiters.HandOver(0, "k");  // LOCK.RELEASE hands over at once
  ASSERT_TRUE(b->finished);
  EXPECT_GT(Token(*b), Token(*a));
  EXPECT_FALSE(c->finished);
  ASSERT_EQ(*db().LockRelease("k", "c2", now), 0);
  Settle();
  ASSERT_TRUE(c->finished);
  EXPECT_GT(Token(*c), Token(*b));
  EXPECT_FALSE(waiters.HasWaiters(0, "k"));
  EXPECT_EQ(waiters.size(), 0u);
  EXPECT_EQ(a->finishes + b->finishes + c->finishes, 3);
}

TEST_F(LockWaitersTest, DeleteOverwriteAndFlushAreSeen) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1), b = Wait("k", 2), c = Wait("k", 3);
  // An overwrite hands the lock to someone else: still taken.
  ASSERT_TRUE(db().Set("k", "intruder", shard::SetOptions{}, now)->written);
  Settle();
  EXPECT_FALSE(a->finished);
  EXPECT_TRUE(db().Del("k", now));  // DEL (or DELIFEQ, UNLINK, ...)
  Settle();
  EXPECT_TRUE(a->finished);
  EXPECT_FALSE(b->finished);
  db().Flush();  // FLUSHDB
  Settle();
  EXPECT_TRUE(b->finished);
  EXPECT_EQ(Owner("k"), "c2");
  EXPECT_FALSE(c->finished);
}

TEST_F(LockWaitersTest, ALeaseThatRunsOutHandsOverOnTheTimer) {
  Take("k", "holder", 500);
  const int64_t expire_at = now + 500;
  auto a = Wait("k", 1);
  // The table wakes the reactor just after the lease ends (the key expires once now > TTL).
  EXPECT_EQ(waiters.next_deadline_ms(), expire_at + 1);
  AdvanceTo(expire_at);
  EXPECT_FALSE(a->finished);
  EXPECT_EQ(Owner("k"), "holder");
  AdvanceTo(expire_at + 1);
  ASSERT_TRUE(a->finished);
  EXPECT_EQ(Owner("k"), "c1");
  EXPECT_EQ(waiters.next_deadline_ms(), LockWaiters::kForever);  // nobody waits now
}

TEST_F(LockWaitersTest, LeaseChangesMoveTheTimer) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1);
  EXPECT_EQ(waiters.next_deadline_ms(), now + 10'001);
  // Shortened (PEXPIRE): the change report re-arms it earlier.
  ASSERT_EQ(db().ExpireAt("k", now + 2'000, shard::ExpireCond::kNone, now), 1);
  Settle();
  EXPECT_EQ(waiters.next_deadline_ms(), now + 2'001);
  // Extended (LOCK.EXTEND): the early timer fires, finds the lock held, and re-arms.
  ASSERT_TRUE(*db().LockExtend("k", "holder", 5'000, now));
  Settle();
  const int64_t start = now;
  AdvanceTo(start + 2'001);
  EXPECT_FALSE(a->finished);
  EXPECT_EQ(waiters.next_deadline_ms(), start + 5'001);
  AdvanceTo(start + 5'001);
  EXPECT_TRUE(a->finished);
}

TEST_F(LockWaitersTest, AWaiterTimesOutWithNilAndLeavesTheQueue) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1, 100);
  auto b = Wait("k", 2, 300);
  auto c = Wait("k", 3);  // no timeout
  EXPECT_EQ(waiters.next_deadline_ms(), now + 100);
  const int64_t start = now;
  AdvanceTo(start + 99);
  EXPECT_FALSE(a->finished);
  AdvanceTo(start + 100);
  ASSERT_TRUE(a->finished);
  EXPECT_EQ(a->reply, "$-1\r\n");
  EXPECT_FALSE(a->undo);
  EXPECT_EQ(waiters.Waiters(0, "k"), 2u);
  // The lock goes to the next in line, b, not to the one that gave up.
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  Settle();
  ASSERT_TRUE(b->finished);
  EXPECT_EQ(b->reply.substr(0, 1), ":");
  // b's own timer is now stale: it must not time out c or anyone.
  AdvanceTo(start + 300);
  EXPECT_FALSE(c->finished);
  EXPECT_EQ(b->finishes, 1);
  EXPECT_EQ(waiters.Waiters(0, "k"), 1u);
}

TEST_F(LockWaitersTest, AnEarlierWaitsTimerDoesNotEndALaterWaitOfTheSameClient) {
  Take("k", "holder", 10'000);
  auto first = Wait("k", 7, 100);
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  Settle();
  ASSERT_TRUE(first->finished);  // served before its timeout
  ASSERT_EQ(*db().LockRelease("k", "c7", now), 0);
  Take("k", "holder", 10'000);
  auto second = Wait("k", 7, 1'000);  // same client, waiting again
  AdvanceTo(now + 100);
  EXPECT_FALSE(second->finished);
  AdvanceTo(now + 900);
  EXPECT_TRUE(second->finished);
  EXPECT_EQ(second->reply, "$-1\r\n");
}

TEST_F(LockWaitersTest, TimersOfWaitersServedEarlyDoNotPileUp) {
  // Each waiter has an hour to wait but is served at once: its timer is stale from then on.
  for (int i = 1; i <= 10'000; i++) {
    Take("k", "holder", 10'000);
    auto w = Wait("k", i, 3'600'000);
    ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
    waiters.HandOver(0, "k");
    ASSERT_TRUE(w->finished);
    ASSERT_EQ(*db().LockRelease("k", "c" + std::to_string(i), now), 0);
    Settle();
  }
  EXPECT_LE(waiters.timer_count(), 200u);
  // Live timers are kept.
  Take("k", "holder", 10'000);
  std::vector<std::shared_ptr<Outcome>> live;
  for (int i = 0; i < 300; i++) live.push_back(Wait("k", 20'000 + i, 1'000 + i));
  EXPECT_GE(waiters.timer_count(), 300u);
  AdvanceTo(now + 1'299);
  for (const auto& w : live) EXPECT_TRUE(w->finished);
  EXPECT_EQ(waiters.size(), 0u);
}

TEST_F(LockWaitersTest, ACancelledWaiterLeavesAtOnceAndTheNextGetsTheLock) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1), b = Wait("k", 2);
  waiters.Cancel(1);
  EXPECT_TRUE(a->finished);  // its reply is finished (to nobody), which frees the connection
  EXPECT_EQ(a->reply, "");
  EXPECT_EQ(waiters.Waiters(0, "k"), 1u);
  waiters.Cancel(1);  // a late duplicate is a no-op
  EXPECT_EQ(a->finishes, 1);
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  Settle();
  EXPECT_TRUE(b->finished);
  EXPECT_EQ(Owner("k"), "c2");
  waiters.Cancel(2);  // served already: nothing to cancel
  EXPECT_EQ(b->finishes, 1);
  EXPECT_EQ(Owner("k"), "c2");
}

TEST_F(LockWaitersTest, UnblockEndsAWaitWithItsTimeoutReplyOrTheErrorAndTheNextGetsTheLock) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1), b = Wait("k", 2, 5'000), c = Wait("k", 3);
  waiters.Unblock(2, "");  // TIMEOUT: the reply its timer would have given
  ASSERT_TRUE(b->finished);
  EXPECT_EQ(b->reply, "$-1\r\n");
  waiters.Unblock(1, "-UNBLOCKED x\r\n");
  ASSERT_TRUE(a->finished);
  EXPECT_EQ(a->reply, "-UNBLOCKED x\r\n");
  EXPECT_FALSE(a->undo);
  EXPECT_EQ(waiters.Waiters(0, "k"), 1u);
  waiters.Unblock(1, "");  // a late duplicate is a no-op
  EXPECT_EQ(a->finishes, 1);
  AdvanceTo(now + 5'000);  // b's timer is stale
  EXPECT_EQ(b->finishes, 1);
  EXPECT_FALSE(c->finished);
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  Settle();
  EXPECT_TRUE(c->finished);
  EXPECT_EQ(Owner("k"), "c3");
}

TEST_F(LockWaitersTest, CancellingTheHeadOfAFreeLockServesTheNext) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1), b = Wait("k", 2);
  ASSERT_TRUE(db().Del("k", now));  // freed; its handover is still to run
  waiters.Cancel(1);
  EXPECT_TRUE(b->finished);  // at once, not at the next drain
  EXPECT_EQ(Owner("k"), "c2");
  Settle();
  EXPECT_EQ(b->finishes, 1);
}

TEST_F(LockWaitersTest, AWaiterWhoseClientHasGoneIsSkippedBeforeItsCancelArrives) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1), b = Wait("k", 2);
  a->cancelled = true;  // the connection closed; its cancel message is still travelling
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  Settle();
  EXPECT_TRUE(a->finished);
  EXPECT_EQ(a->reply, "");
  EXPECT_TRUE(b->finished);
  EXPECT_EQ(Owner("k"), "c2");
  waiters.Cancel(1);
  EXPECT_EQ(a->finishes, 1);
}

TEST_F(LockWaitersTest, ALockGrantedToAClientThatHasGoneIsGivenBack) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1), b = Wait("k", 2);
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  Settle();
  ASSERT_TRUE(a->finished);
  ASSERT_TRUE(a->undo);
  EXPECT_EQ(Owner("k"), "c1");
  // The reply reached a closed connection: the connection sends the undo back.
  a->undo();
  Settle();
  EXPECT_TRUE(b->finished);
  EXPECT_EQ(Owner("k"), "c2");
  // An undo that comes after the holding changed touches nothing.
  a->undo();
  Settle();
  EXPECT_EQ(Owner("k"), "c2");
}

TEST_F(LockWaitersTest, AnUndoGivesBackOnlyTheHoldItGranted) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1, 0, true, "svc");
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  Settle();
  ASSERT_TRUE(a->finished);
  // The same owner re-entered meanwhile (from another connection): one hold goes, one stays.
  ASSERT_TRUE(db().LockAcquire("k", "svc", 1'000, true, now)->reentered);
  a->undo();
  EXPECT_EQ(db().LockInfo("k", now)->holds, 1);
  EXPECT_EQ(Owner("k"), "svc");
  // A later holding of the same owner is not the one granted: left alone.
  ASSERT_EQ(*db().LockRelease("k", "svc", now), 0);
  Take("k", "svc", 1'000);
  a->undo();
  EXPECT_EQ(Owner("k"), "svc");
}

TEST_F(LockWaitersTest, WaitersOfTheSameOwnerReenterTogether) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1, 0, true, "svc");
  auto b = Wait("k", 2, 0, true, "svc");
  auto c = Wait("k", 3, 0, true, "other");
  auto d = Wait("k", 4, 0, true, "svc");  // behind c: waits for c, first come first served
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);
  Settle();
  ASSERT_TRUE(a->finished);
  ASSERT_TRUE(b->finished);
  EXPECT_EQ(Token(*a), Token(*b));
  EXPECT_FALSE(c->finished);
  EXPECT_FALSE(d->finished);
  EXPECT_EQ(db().LockInfo("k", now)->holds, 2);
}

TEST_F(LockWaitersTest, AHandoverWaitsForATransactionHoldingTheKey) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1);
  const std::vector<std::string> names = {LockTable::Name(0, "k")};
  ASSERT_TRUE(locks.TryLock(42, names, false));
  ASSERT_EQ(*db().LockRelease("k", "holder", now), 0);  // inside the transaction
  Settle();
  EXPECT_FALSE(a->finished);  // not while the transaction runs
  EXPECT_FALSE(db().Exists("k", now));
  locks.Unlock(42, names, false);
  EXPECT_TRUE(a->finished);
  EXPECT_EQ(Owner("k"), "c1");
}

TEST_F(LockWaitersTest, TheTableObservesADbOnlyWhileItHasWaiters) {
  Take("k", "holder", 10'000);
  auto a = Wait("k", 1, 50);
  AdvanceTo(now + 50);
  ASSERT_TRUE(a->finished);
  EXPECT_FALSE(waiters.HasWaiters(0, "k"));
  // No queue: changes are not even looked at.
  EXPECT_TRUE(db().Del("k", now));
  EXPECT_FALSE(drain_requested);
  // Keys of another db are another queue.
  ASSERT_TRUE(shard.db(1).LockAcquire("k", "x", 1'000, false, now)->acquired);
  auto b = Wait("k", 2);
  EXPECT_TRUE(shard.db(1).Del("k", now));
  Settle();
  EXPECT_FALSE(b->finished);  // b waits in db 0, where k is free but nobody said so
  waiters.HandOver(0, "k");
  EXPECT_TRUE(b->finished);
}

}  // namespace
}  // namespace deadbolt::server

namespace deadbolt::server {
namespace {

// The key-ready hook (Waiter::try_serve), as the blocking pops use it: a push to a list with
// waiters serves them first come first served, one element each; a waiter the hook cannot
// serve holds the ones behind it; a change to another key served by a hook is news for that
// key's waiters; a timeout replies a null array when asked.
class KeyReadyHookTest : public LockWaitersTest {
 protected:
  std::shared_ptr<Outcome> WaitPop(std::string_view key, uint64_t client, int64_t timeout_ms = 0,
                                   std::string move_to = "") {
    auto out = std::make_shared<Outcome>();
    LockWaiters::Waiter w;
    w.deadline_ms = timeout_ms == 0 ? LockWaiters::kForever : now + timeout_ms;
    w.timeout_null_array = true;
    w.reply = std::make_unique<FakeReply>(client, out);
    w.try_serve = [move_to](shard::Db& d, std::string_view k, int64_t t, BlockedReply& reply) {
      auto r = d.ListPop(k, shard::ListEnd::kLeft, 1, t);
      if (!r.ok() || r->empty()) return false;
      if (!move_to.empty()) {
        const std::string_view one[1] = {r->front()};
        d.ListPush(move_to, one, shard::ListEnd::kRight, false, t);
      }
      reply.Finish("+" + r->front() + "\r\n");
      return true;
    };
    waiters.Wait(0, key, std::move(w));
    return out;
  }
  void Push(std::string_view key, std::vector<std::string_view> vs) {
    ASSERT_TRUE(db().ListPush(key, vs, shard::ListEnd::kRight, false, now).ok());
  }
};

TEST_F(KeyReadyHookTest, PushServesWaitersInOrder) {
  auto a = WaitPop("l", 1), b = WaitPop("l", 2), c = WaitPop("l", 3);
  Push("l", {"x"});
  EXPECT_TRUE(drain_requested);
  Settle();
  EXPECT_EQ(a->reply, "+x\r\n");
  EXPECT_FALSE(b->finished);
  Push("l", {"y", "z"});
  Settle();
  EXPECT_EQ(b->reply, "+y\r\n");
  EXPECT_EQ(c->reply, "+z\r\n");
  EXPECT_EQ(waiters.size(), 0u);
  EXPECT_FALSE(db().Exists("l", now));
}

TEST_F(KeyReadyHookTest, CancelAndTimeoutLeaveAtOnce) {
  auto a = WaitPop("l", 1), b = WaitPop("l", 2, 500), c = WaitPop("l", 3);
  waiters.Cancel(1);
  EXPECT_TRUE(a->finished);
  EXPECT_EQ(a->reply, "");
  AdvanceTo(now + 501);
  EXPECT_EQ(b->reply, "*-1\r\n");  // timeout_null_array
  Push("l", {"x"});
  Settle();
  EXPECT_EQ(c->reply, "+x\r\n");
}

TEST_F(KeyReadyHookTest, AMoveWakesTheDestinationsWaiters) {
  auto mover = WaitPop("src", 1, 0, "dst");
  auto popper = WaitPop("dst", 2);
  Push("src", {"v"});
  Settle();  // the mover takes v into dst, which is news for dst's waiter
  EXPECT_EQ(mover->reply, "+v\r\n");
  Settle();
  EXPECT_EQ(popper->reply, "+v\r\n");
  EXPECT_FALSE(db().Exists("dst", now));
}

// BZPOPMIN's hook on a sorted set: every write that makes the key non-empty is news for its
// waiters (ZADD, ZINCRBY, the STORE forms' ZStore, RENAME / COPY's Restore), and one that leaves
// it empty serves nobody.
TEST_F(KeyReadyHookTest, SortedSetWritesServeZPopWaiters) {
  auto wait_zpop = [this](uint64_t client) {
    auto out = std::make_shared<Outcome>();
    LockWaiters::Waiter w;
    w.reply = std::make_unique<FakeReply>(client, out);
    w.try_serve = [](shard::Db& d, std::string_view k, int64_t t, BlockedReply& reply) {
      auto r = d.ZPop(k, false, 1, t);
      if (!r.ok() || r->empty()) return false;
      reply.Finish("+" + r->front().first + "\r\n");
      return true;
    };
    waiters.Wait(0, "z", std::move(w));
    return out;
  };
  auto a = wait_zpop(1), b = wait_zpop(2), c = wait_zpop(3), d = wait_zpop(4), e = wait_zpop(5);
  shard::ZAddOptions xx;
  xx.xx = true;
  const std::pair<double, std::string_view> m1[1] = {{1, "m1"}};
  ASSERT_TRUE(db().ZAdd("z", xx, m1, now).ok());  // XX on a missing key: still empty
  Settle();
  EXPECT_FALSE(a->finished);
  ASSERT_TRUE(db().ZAdd("z", {}, m1, now).ok());
  Settle();
  EXPECT_EQ(a->reply, "+m1\r\n");
  shard::ZAddOptions incr;
  incr.incr = true;
  const std::pair<double, std::string_view> m2[1] = {{2, "m2"}};
  ASSERT_TRUE(db().ZAdd("z", incr, m2, now).ok());  // ZINCRBY
  Settle();
  EXPECT_EQ(b->reply, "+m2\r\n");
  EXPECT_EQ(db().ZStore("z", {{"m3", 3.0}}, now), 1);
  Settle();
  EXPECT_EQ(c->reply, "+m3\r\n");
  const std::pair<double, std::string_view> m4[1] = {{4, "m4"}};
  ASSERT_TRUE(db().ZAdd("other", {}, m4, now).ok());
  Settle();
  EXPECT_FALSE(d->finished);
  auto snap = db().Snapshot("other", now);
  ASSERT_TRUE(snap.has_value());
  ASSERT_TRUE(db().Restore("z", *snap, true, now));  // RENAME / COPY other z
  Settle();
  EXPECT_EQ(d->reply, "+m4\r\n");
  EXPECT_FALSE(e->finished);
  EXPECT_EQ(waiters.size(), 1u);
}

// A client waiting on several keys (BLPOP a b): one waiter per key, sharing one reply that only
// the first to Claim() may finish (server/collections/blocking.cc). The waiters of one client
// leave together on a cancel, a group's leave on Withdraw, the others stay; a waiter whose group
// was served elsewhere is passed over; the client counts once.
class SeveralKeysTest : public KeyReadyHookTest {
 protected:
  struct Group {
    bool claimed = false;
    std::shared_ptr<Outcome> out = std::make_shared<Outcome>();
  };
  class GroupReply : public FakeReply {
   public:
    GroupReply(uint64_t client, Group* g) : FakeReply(client, g->out), g_(g) {}
    bool cancelled() const override { return FakeReply::cancelled() || (g_->claimed && !mine_); }
    bool Claim() override {
      if (!mine_ && !g_->claimed) mine_ = g_->claimed = true;
      return mine_;
    }
    void Finish(std::string reply, absl::AnyInvocable<void()> undo) override {
      if (Claim()) FakeReply::Finish(std::move(reply), std::move(undo));
    }

   private:
    Group* g_;
    bool mine_ = false;
  };
  void WaitIn(Group* g, std::string_view key, uint64_t client, bool counts,
              int64_t timeout_ms = 0) {
    LockWaiters::Waiter w;
    w.deadline_ms = timeout_ms == 0 ? LockWaiters::kForever : now + timeout_ms;
    w.timeout_null_array = true;
    w.reply = std::make_unique<GroupReply>(client, g);
    w.group = g;
    w.counts = counts;
    w.try_serve = [](shard::Db& d, std::string_view k, int64_t t, BlockedReply& reply) {
      auto len = d.ListLen(k, t);
      if (!len.ok() || *len == 0) return false;  // another type waits on, as Redis
      if (!reply.Claim()) return true;
      auto r = d.ListPop(k, shard::ListEnd::kLeft, 1, t);
      reply.Finish("+" + r->front() + "\r\n");
      return true;
    };
    waiters.Wait(0, key, std::move(w));
  }
};

TEST_F(SeveralKeysTest, ServedOnceByTheFirstReadyKeyThenWithdrawn) {
  Group g;
  WaitIn(&g, "a", 1, true);
  WaitIn(&g, "b", 1, false);
  EXPECT_EQ(waiters.size(), 1u);  // one client
  Push("b", {"x"});
  Settle();
  EXPECT_EQ(g.out->reply, "+x\r\n");
  EXPECT_TRUE(waiters.HasWaiters(0, "a"));  // until its Withdraw comes
  EXPECT_EQ(waiters.size(), 1u);
  waiters.Withdraw(1, &g);
  EXPECT_FALSE(waiters.HasWaiters(0, "a"));
  EXPECT_EQ(waiters.size(), 0u);
  EXPECT_EQ(g.out->finishes, 1);
}

TEST_F(SeveralKeysTest, AWaiterWhoseGroupWasServedElsewhereIsPassedOver) {
  Group g, other;
  WaitIn(&g, "a", 1, true);
  WaitIn(&g, "b", 1, false);
  auto second = WaitPop("a", 2);
  g.claimed = true;  // served on another shard; its Withdraw has not arrived yet
  Push("a", {"y"});
  Settle();
  EXPECT_EQ(second->reply, "+y\r\n");
  EXPECT_FALSE(g.out->finished);
  EXPECT_FALSE(waiters.HasWaiters(0, "a"));
  // Withdraw names the group: the same client's later wait on b stays.
  WaitIn(&other, "b", 1, true);
  waiters.Withdraw(1, &g);
  EXPECT_EQ(waiters.Waiters(0, "b"), 1u);
  Push("b", {"z"});
  Settle();
  EXPECT_EQ(other.out->reply, "+z\r\n");
}

TEST_F(SeveralKeysTest, CancelAndTimeoutEndEveryKeysWait) {
  Group g, h;
  WaitIn(&g, "a", 1, true);
  WaitIn(&g, "b", 1, false);
  waiters.Cancel(1);
  EXPECT_EQ(g.out->finishes, 1);
  EXPECT_EQ(g.out->reply, "");
  EXPECT_EQ(waiters.size(), 0u);
  EXPECT_FALSE(waiters.HasWaiters(0, "a") || waiters.HasWaiters(0, "b"));
  WaitIn(&h, "a", 2, true, 500);
  WaitIn(&h, "b", 2, false, 500);
  AdvanceTo(now + 501);
  EXPECT_EQ(h.out->finishes, 1);
  EXPECT_EQ(h.out->reply, "*-1\r\n");
  EXPECT_FALSE(waiters.HasWaiters(0, "a") || waiters.HasWaiters(0, "b"));
}

TEST_F(SeveralKeysTest, UnblockEndsEveryKeysWaitOnce) {
  Group g;
  WaitIn(&g, "a", 1, true);
  WaitIn(&g, "b", 1, false);
  waiters.Unblock(1, "");
  EXPECT_EQ(g.out->finishes, 1);
  EXPECT_EQ(g.out->reply, "*-1\r\n");
  EXPECT_EQ(waiters.size(), 0u);
  EXPECT_FALSE(waiters.HasWaiters(0, "a") || waiters.HasWaiters(0, "b"));
  Push("a", {"x"});  // nobody takes it
  Settle();
  EXPECT_EQ(*db().ListLen("a", now), 1);
}

TEST_F(SeveralKeysTest, AKeyOfAnotherTypeKeepsItsWaiter) {
  Group g;
  WaitIn(&g, "a", 1, true);
  ASSERT_TRUE(db().Set("a", "str", {}, now).ok());
  Settle();
  EXPECT_FALSE(g.out->finished);
  EXPECT_TRUE(waiters.HasWaiters(0, "a"));
  db().Del("a", now);
  Push("a", {"v"});
  Settle();
  EXPECT_EQ(g.out->reply, "+v\r\n");
}

}  // namespace
}  // namespace deadbolt::server
