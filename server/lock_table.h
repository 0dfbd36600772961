#pragma once
// Key locks held by cross-shard transactions on one shard, and the work waiting for them.

#include <absl/container/flat_hash_map.h>
#include <absl/functional/any_invocable.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace deadbolt::server {

// Owned by one reactor thread (the shard's). A transaction that spans shards takes exclusive
// locks on its keys here, one shard at a time in ascending shard order; single-key commands and
// other transactions that touch a locked key wait (parked closures, first come first served)
// until it is released. Commands on other keys never wait. A shard with no locks pays one
// emptiness check per command.
//
// Why this cannot deadlock: a transaction waits on shard i only while holding locks on shards
// below i, and only for locks held on shard i, whose holders are running or waiting on shards
// above i. Within one shard a transaction may also wait for an earlier-queued one (fairness),
// which points backwards in a FIFO. Every wait edge goes up in shard index or back in one
// shard's queue, so the wait-for graph has no cycle.
class LockTable {
 public:
  // One lock name: the database and the key.
  static std::string Name(int db, std::string_view key);

  bool idle() const { return held_.empty() && whole_holder_ == 0 && parked_.empty(); }
  // Whether a command on (db, key) must wait.
  bool Blocked(int db, std::string_view key) const;
  // Whether a command that reads or writes the whole keyspace of the shard must wait.
  bool BlockedWhole() const { return !held_.empty() || whole_holder_ != 0; }

  // Takes every lock in `names` (or the whole shard) for transaction `tx`, or none of them.
  // Fails when any is held, or when an earlier waiting transaction wants one of them.
  bool TryLock(uint64_t tx, const std::vector<std::string>& names, bool whole);
  // Releases what `tx` holds here and reruns parked work in arrival order.
  void Unlock(uint64_t tx, const std::vector<std::string>& names, bool whole);

  // Queues work to retry after the next Unlock that frees all of `names` (the locks it needs). A
  // waiting transaction (ParkTx) also reserves its locks so later transactions do not overtake
  // it.
  // `owner` (a client id, or 0) keeps one client's commands in order: while one of its commands
  // waits here, its later ones wait behind it even if their keys are free.
  void Park(std::vector<std::string> names, uint64_t owner, absl::AnyInvocable<void()> retry);
  // Whether a command of this client is waiting here.
  bool HasParked(uint64_t owner) const { return owner && parked_owners_.contains(owner); }
  void ParkTx(uint64_t tx, const std::vector<std::string>& names, bool whole,
              absl::AnyInvocable<void()> retry);

  size_t held() const { return held_.size(); }
  size_t parked() const { return parked_.size(); }

 private:
  struct Parked {
    absl::AnyInvocable<void()> retry;
    uint64_t tx = 0;  // 0: not a transaction
    std::vector<std::string> names;
    bool whole = false;
    uint64_t owner = 0;
  };
  void RunParked();
  void RunParkedRound();
  bool StillBlocked(const Parked& p) const;

  absl::flat_hash_map<std::string, uint64_t> held_;    // lock name -> holding transaction
  absl::flat_hash_map<std::string, int> wanted_;       // lock names wanted by waiting txs
  int whole_wanted_ = 0;
  uint64_t whole_holder_ = 0;
  std::deque<Parked> parked_;
  bool running_parked_ = false;
  bool unlocked_in_round_ = false;
  bool in_round_ = false;
  bool retrying_ = false;  // TryLock is called by a parked transaction being retried
  absl::flat_hash_map<std::string, int> round_wanted_;  // wanted by those re-parked this round
  int round_whole_wanted_ = 0;
  absl::flat_hash_map<uint64_t, int> parked_owners_;         // client id -> commands waiting
  absl::flat_hash_map<uint64_t, bool> round_blocked_owners_;  // clients still waiting this round
};

}  // namespace deadbolt::server
