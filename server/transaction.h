#pragma once
// Cross-shard atomicity: a transaction takes exclusive locks on its keys on every shard it
// touches, runs its steps, then releases them.

#include <absl/functional/any_invocable.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace deadbolt::server {

class Reactor;

// Owned by the coordinating reactor (the one whose connection issued the command); only that
// thread calls its methods. What the shards need (the lock plan) is immutable and shared with
// the messages sent to them; nothing of the coordinator's travels except a pointer that comes
// back to it.
//
// Life: Lock() -> any number of Hop()s -> Release(). Locks are taken one shard at a time in
// ascending shard order (each shard forwards the lock request to the next one directly), which
// is what makes waiting deadlock-free (see LockTable). A transaction whose only shard is the
// coordinator's own takes its locks inline with no message at all.
class Transaction {
 public:
  struct Part {
    int shard;
    std::vector<std::string> names;  // LockTable::Name(db, key)
    bool whole = false;              // lock the whole shard (keyspace-wide commands)
  };

  // `parts` may come in any order and may repeat a shard; they are merged and sorted.
  Transaction(Reactor* origin, std::vector<Part> parts);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  uint64_t id() const { return plan_->id; }
  // The shards this transaction holds locks on, ascending.
  std::vector<int> Shards() const;

  // Takes every lock, then runs on_locked on the coordinator.
  void Lock(absl::AnyInvocable<void()> on_locked);
  // Runs fn on each of `shards` (inline on the coordinator's own), then `then` on the
  // coordinator once all are done. fn may write only to state set aside for its shard.
  void Hop(const std::vector<int>& shards, std::function<void(Reactor&)> fn,
           absl::AnyInvocable<void()> then);
  // Releases every lock (inline on the coordinator's shard, by message elsewhere). Messages the
  // coordinator sends to a shard after this run after the release there.
  void Release();

 private:
  struct Plan {
    uint64_t id;
    int origin;
    std::vector<Part> parts;  // ascending shard, one per shard
  };
  struct LockStep;
  void OnLocked();
  void HopDone();

  Reactor* origin_;
  std::shared_ptr<const Plan> plan_;
  absl::AnyInvocable<void()> on_locked_;
  size_t hop_remaining_ = 0;
  absl::AnyInvocable<void()> hop_then_;
  bool released_ = false;
};

}  // namespace deadbolt::server
