#pragma once
// Key locks held by cross-shard transactions on one shard, and the work waiting for them.

#include <absl/container/btree_map.h>
#include <absl/container/btree_set.h>
#include <absl/container/flat_hash_map.h>
#include <absl/functional/any_invocable.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace deadbolt::server {

// Owned by one reactor thread (the shard's). A transaction that spans shards takes exclusive
// locks on its keys here, one shard at a time in ascending shard order (and so does a pipeline's
// relay for the commands it runs ahead, server/core/relay.cc, with an id that has the top bit
// set so it never meets a transaction's); single-key commands and
// other transactions that touch a locked key wait until it is released. Commands on other keys
// never wait. A shard with no locks pays one emptiness check per command.
//
// Waiting work is indexed by what blocks it, so a release wakes only the work that waited for
// what was released: a transaction waits in a first-come-first-served queue per lock name (and
// is granted its locks when it is at the front of every queue it is in and nothing it needs is
// held); a command waits on one held name, or behind its client's earlier command. The cost of a
// release is the work it wakes, never the length of every queue.
//
// Why this cannot deadlock: a transaction waits on shard i only while holding locks on shards
// below i, and only for locks held on shard i, whose holders are running or waiting on shards
// above i. Within one shard a transaction may also wait for an earlier-queued one (fairness),
// which points backwards in arrival order. Every wait edge goes up in shard index or back in one
// shard's arrival order, so the wait-for graph has no cycle.
class LockTable {
 public:
  // One lock name: the database and the key.
  static std::string Name(int db, std::string_view key);

  LockTable() = default;
  LockTable(const LockTable&) = delete;
  LockTable& operator=(const LockTable&) = delete;

  bool idle() const { return held_.empty() && whole_holder_ == 0 && waiters_.empty(); }
  // Whether a command on (db, key) must wait.
  bool Blocked(int db, std::string_view key) const;
  // Whether a command that reads or writes the whole keyspace of the shard must wait.
  bool BlockedWhole() const { return !held_.empty() || whole_holder_ != 0; }

  // Takes every lock in `names` (or the whole shard) for transaction `tx`, or none of them.
  // Fails when any is held by another transaction, or when a waiting transaction wants one of
  // them. Asking again for locks `tx` already holds succeeds.
  bool TryLock(uint64_t tx, const std::vector<std::string>& names, bool whole);
  // Releases what `tx` holds here and runs the waiting work this frees, in arrival order.
  void Unlock(uint64_t tx, const std::vector<std::string>& names, bool whole);

  // A command that takes no lock but must not run while one of `names` is held: `retry` runs once
  // none of them is (at once, if none is now). `owner` (a client id, or 0) keeps one client's
  // commands in order: while one of its commands waits here, its later ones wait behind it even
  // if their keys are free.
  void Park(std::vector<std::string> names, uint64_t owner, absl::AnyInvocable<void()> retry);
  // Whether a command of this client is waiting here.
  bool HasParked(uint64_t owner) const { return owner && owners_.contains(owner); }
  // A transaction whose TryLock failed: it queues for its locks, reserving them against later
  // transactions, and `granted` runs once they are all its (TryLock for them then succeeds).
  void ParkTx(uint64_t tx, const std::vector<std::string>& names, bool whole,
              absl::AnyInvocable<void()> granted);

  size_t held() const { return held_.size(); }
  // Whether one of `names` is held by a transaction whose id has every bit of `mask` (relays'
  // lock ids have the top bit: server/core/relay.cc).
  bool AnyHeldByMask(const std::vector<std::string>& names, uint64_t mask) const;
  size_t parked() const { return waiters_.size(); }
  // How many times waiting work was looked at (tests: a release costs the work it wakes).
  uint64_t examined() const { return examined_; }
  // A description of every lock and waiter, for a bug report.
  std::string DebugString() const;

 private:
  struct Waiter {
    uint64_t tx = 0;  // 0: a command (takes no lock)
    std::vector<std::string> names;
    bool whole = false;
    uint64_t owner = 0;
    bool filed = false;  // a command: in cmd_on_name_ or cmd_on_whole_
    absl::AnyInvocable<void()> run;
  };
  // What may have unblocked waiters.
  void WakeName(const std::string& name);
  void WakeOwner(uint64_t owner);
  void WakeAll();
  void Drain();
  // A transaction waiter: whether it can be granted now.
  bool Grantable(uint64_t seq, const Waiter& w) const;
  // A command waiter: the name it waits for ("" if none), or whether it waits for its client or
  // for a whole-shard holder.
  enum class CmdBlock { kNone, kOwner, kName, kWhole };
  CmdBlock CmdBlockedBy(uint64_t seq, const Waiter& w, const std::string** name) const;
  // Files a command waiter under what blocks it, or makes it a candidate to run.
  void PlaceCmd(uint64_t seq);
  void Grant(uint64_t seq);
  void RunCmd(uint64_t seq);
  void CheckInvariants() const;

  absl::flat_hash_map<std::string, uint64_t> held_;  // lock name -> holding transaction
  uint64_t whole_holder_ = 0;

  uint64_t next_seq_ = 1;                      // arrival order of waiters
  absl::btree_map<uint64_t, Waiter> waiters_;  // every waiter, by arrival
  // Transactions waiting for a name, in arrival order (a transaction is in the queue of each of
  // its names).
  absl::flat_hash_map<std::string, std::deque<uint64_t>> tx_queue_;
  absl::btree_set<uint64_t> tx_waiting_;     // every waiting transaction
  absl::btree_set<uint64_t> whole_waiting_;  // waiting whole-shard transactions
  // Commands waiting for a held name, or for the whole-shard holder.
  absl::flat_hash_map<std::string, absl::btree_set<uint64_t>> cmd_on_name_;
  std::vector<uint64_t> cmd_on_whole_;
  // Each client's waiting commands, in arrival order: only the first may run.
  absl::flat_hash_map<uint64_t, std::deque<uint64_t>> owners_;

  // Work to look at (names released, clients whose next command may run), and waiters that may
  // run now, taken in arrival order.
  std::vector<std::string> woken_names_;
  std::vector<uint64_t> woken_owners_;
  bool woken_all_ = false;
  absl::btree_set<uint64_t> candidates_;
  bool draining_ = false;
  mutable uint64_t examined_ = 0;
  uint64_t drains_ = 0;
};

}  // namespace deadbolt::server
