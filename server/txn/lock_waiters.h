#pragma once
// Clients waiting in the server for a key of one shard to become ready, each key's served first
// come first served: LOCK.ACQUIRE ... WAIT (handed the lock the moment it is free) and the
// blocking pops BLPOP/BRPOP/BLMOVE/BRPOPLPUSH/BZPOPMIN/BZPOPMAX (served the moment the key has an
// element).

#include <absl/container/flat_hash_map.h>
#include <absl/functional/any_invocable.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/txn/blocked_reply.h"
#include "shard/db.h"

namespace deadbolt::shard {
class Shard;
}

namespace deadbolt::server {

class LockTable;

// Owned by one reactor thread (the shard's); the waiting connections may live on any reactor
// (their replies travel as BlockedReply). Holds coordination only: the lock itself, its token
// and hold count are keyspace data in the shard's Db (Db::LockAcquire).
//
// A lock is free when its key is missing. It becomes free by LOCK.RELEASE, by DEL / DELIFEQ /
// any delete, by a lease (TTL) running out, or by FLUSHDB; an overwrite hands it to someone
// else. The table hears of all of them by observing the Db (only while one of its keys has
// waiters) and hands over after the change (Drain: a Db must not be changed from inside its
// own change report), or at once where the caller knows (HandOver). A lease that runs out is
// caught by a timer, not by whoever touches the key next: for a key with waiters the table
// keeps the key's expire time in its timer heap, and the reactor wakes up for it (OnTimer).
//
// The "key became ready" hook: a waiter with a `try_serve` function is served by it instead of by
// LockAcquire. Whenever the key may be ready (any change to it, its TTL running out, the waiter
// ahead leaving), the head waiter's try_serve runs on the shard's thread; it either serves the
// waiter (finishes its reply, returns true: the next waiter is tried) or leaves everything as it
// was (returns false: the queue waits on, first come first served). The blocking pops use it
// (server/collections/cmd_list.cc) and BZPOPMIN/BZPOPMAX (cmd_zset.cc, a try_serve that pops from
// the sorted set). A client waiting on several keys (BLPOP k1 k2 ...) has one waiter per key,
// on each key's shard, all sharing one reply that only the first to Claim() may finish
// (server/collections/blocking.h); the others are withdrawn (Withdraw).
//
// Every waiter ends exactly once, through its BlockedReply: served (the token), timed out
// (nil), or cancelled (its connection closed: it leaves the queue at once). Waiters whose
// connection has closed are also skipped when met at the head of a queue, so a cancel that
// arrives late never holds others up.
//
// A handover changes the key, so it respects the shard's transaction locks: while a cross-shard
// transaction holds the key, the handover waits in the LockTable and runs when it is released.
class LockWaiters {
 public:
  static constexpr int64_t kForever = INT64_MAX;  // a waiter without a timeout

  struct Waiter {
    std::string owner;
    int64_t lease_ms = 0;
    bool reentrant = false;
    int64_t deadline_ms = kForever;  // when it gives up (unix ms)
    std::unique_ptr<BlockedReply> reply;
    uint64_t seq = 0;  // set by Wait()
    // The key-ready hook (see the class comment): called with the key's Db, the key and the
    // time; serves the waiter through `reply` and returns true, or changes nothing and returns
    // false. Without it the waiter waits for a lock (owner, lease_ms, reentrant).
    absl::AnyInvocable<bool(shard::Db& db, std::string_view key, int64_t now_ms,
                            BlockedReply& reply)>
        try_serve;
    bool timeout_null_array = false;  // its timeout replies a null array (BLPOP), else nil
    // One of a client's waiters on several keys: Withdraw() names them by this.
    const void* group = nullptr;
    // Counted in size() (a client waiting on several keys counts once, by one of its waiters).
    bool counts = true;
  };

  // `schedule_drain` asks the reactor to call Drain() soon, after the current command (it is
  // called from inside a Db change). `clock` gives the current unix ms (the reactor's loop time;
  // tests inject their own).
  LockWaiters(shard::Shard* shard, LockTable* locks, absl::AnyInvocable<void()> schedule_drain,
              absl::AnyInvocable<int64_t() const> clock);
  ~LockWaiters();
  LockWaiters(const LockWaiters&) = delete;
  LockWaiters& operator=(const LockWaiters&) = delete;

  bool HasWaiters(int db, std::string_view key) const;
  size_t Waiters(int db, std::string_view key) const;
  size_t size() const { return counted_; }  // waiting clients, over every key

  // Queues `w` behind the waiters of (db, key). The caller has found the lock held.
  void Wait(int db, std::string_view key, Waiter w);
  // While the lock (db, key) is free, gives it to the waiter at the head of its queue (and to
  // the ones after it that re-enter it as the same owner).
  void HandOver(int db, std::string_view key);
  // The connection `client_id` closed: its waiters leave their queues.
  void Cancel(uint64_t client_id);
  // CLIENT UNBLOCK: the waiters of `client_id` end now, each with its timeout's reply, or with
  // `error` (a whole RESP error line) when it is not empty.
  void Unblock(uint64_t client_id, std::string_view error);
  // The waiters of `client_id` that belong to `group` leave their queues (their wait was ended
  // through another of the group's waiters: their reply is not finished again).
  void Withdraw(uint64_t client_id, const void* group);
  // Hands over the locks whose keys changed since the last call.
  void Drain();

  // The earliest timer (a lease ending on a key with waiters, a waiter's timeout), kForever for
  // none; OnTimer() runs those that are due.
  int64_t next_deadline_ms() const { return timers_.empty() ? kForever : timers_.front().at; }
  void OnTimer();
  // Timers in the heap, including stale ones (for tests: they stay bounded).
  size_t timer_count() const { return timers_.size(); }

 private:
  struct Queue {
    int db;
    std::string key;
    std::string name;  // LockTable::Name(db, key), its key in queues_
    std::deque<Waiter> waiters;
    int64_t lease_timer = kForever;  // the lease timer armed for it: when, and its seq
    uint64_t lease_timer_seq = 0;
    bool dirty = false;   // in dirty_
    bool parked = false;  // a handover waits for a transaction lock
  };
  struct Timer {
    int64_t at;
    bool waiter;       // a waiter's timeout (else a lease)
    uint64_t seq;      // of the waiter, or of the lease timer
    std::string name;  // a lease's queue
    bool operator>(const Timer& o) const { return at > o.at; }
  };
  struct Waiting {
    std::string name;  // the queue's
    uint64_t client;
  };
  // Tells the table of changes to one Db's keys (registered while the Db has a queue).
  struct DbObserver : shard::KeyObserver {
    LockWaiters* table = nullptr;
    int db = 0;
    int queues = 0;
    void OnKeyChanged(std::string_view key) override { table->OnKeyChanged(db, key); }
  };

  Queue* Find(int db, std::string_view key) const;
  void OnKeyChanged(int db, std::string_view key);
  void Serve(Queue& q);
  // Drops q from queues_ if it has no waiters left (q is destroyed).
  void MaybeErase(Queue& q);
  void ArmLeaseTimer(Queue& q);
  void PushTimer(Timer t);
  // Whether a timer still stands for a waiter or a queue's lease (else it is skipped).
  bool Live(const Timer& t) const;
  // Timers of waiters served long before their timeout would pile up: drops the stale ones once
  // they outnumber the live ones.
  void MaybeCompactTimers();
  // Ends the waiter `seq` (if it still waits) with `reply`, and serves the next one if it was
  // at the head of its queue.
  void End(uint64_t seq, std::string reply, bool timed_out);
  // Removes the waiter at `it` (finished by the caller) from q.
  void Remove(Queue& q, std::deque<Waiter>::iterator it);
  // A lock granted to a client whose connection had closed: give it back.
  void Undo(int db, const std::string& key, const std::string& owner, uint64_t token);

  shard::Shard* shard_;
  LockTable* locks_;
  absl::AnyInvocable<void()> schedule_drain_;
  absl::AnyInvocable<int64_t() const> clock_;
  absl::flat_hash_map<std::string, std::unique_ptr<Queue>> queues_;
  absl::flat_hash_map<uint64_t, Waiting> by_seq_;                  // waiter -> where
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> by_client_;  // client -> its waiters
  size_t counted_ = 0;                                              // waiters that count
  std::vector<Timer> timers_;  // a min-heap on `at` (std::push_heap with std::greater)
  size_t timed_waiters_ = 0;   // waiters with a timeout: each has one live timer
  std::vector<std::string> dirty_;
  std::vector<std::unique_ptr<DbObserver>> observers_;  // by db
  uint64_t next_seq_ = 0;
  bool drain_scheduled_ = false;
  // The queue Serve() is serving: changes to its own key are not news (a try_serve that moves
  // an element to another key of this shard reports that key's change as usual).
  const Queue* serving_ = nullptr;
};

}  // namespace deadbolt::server
