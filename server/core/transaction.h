#pragma once
// Cross-shard atomicity: a transaction takes exclusive locks on its keys on every shard it
// touches, runs its steps, then releases them.

#include <absl/functional/any_invocable.h>

#include <atomic>
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

  // --- the journal (server/core/journal.h) ---
  // Before Lock(): the transaction may write (its part is written to every shard's journal at
  // release, even a shard that changed nothing, so a replay can tell a whole one from a part).
  void set_writes(bool w) { plan_->writes = w; }
  // Before Lock(): this transaction runs inside `outer` (a fan-out inside EXEC): its changes
  // belong to outer's part on each shard.
  void JournalAs(const Transaction& outer) {
    plan_->journal_id = outer.plan_->journal_id;
    plan_->participants = outer.plan_->participants;
  }
  // Shard thread: the changes the caller makes until LeaveJournal(prev) belong to this
  // transaction's part on this reactor's shard.
  uint64_t EnterJournal(Reactor& r) const;
  void LeaveJournal(Reactor& r, uint64_t prev) const;
  // The shards this transaction holds locks on, ascending.
  std::vector<int> Shards() const;

  // Takes every lock, then runs on_locked on the coordinator.
  void Lock(absl::AnyInvocable<void()> on_locked);
  // While Lock() is still taking locks: gives up. The shards let go of what it took (a waiting
  // step lets go as soon as it is granted, without a pass by the coordinator), and
  // `on_abandoned` runs on the coordinator instead of on_locked. False, and nothing changes,
  // once every lock is held. For work that has done nothing yet and whose result nobody can
  // see any more (a read for a client that has gone).
  bool Abandon(absl::AnyInvocable<void()> on_abandoned);
  // Runs fn on each of `shards` (inline on the coordinator's own), then `then` on the
  // coordinator once all are done. fn may write only to state set aside for its shard.
  void Hop(const std::vector<int>& shards, std::function<void(Reactor&)> fn,
           absl::AnyInvocable<void()> then);
  // Lock(), one Hop() over every shard it locks, and Release() in one pass along the shards,
  // for a transaction with no journal to commit to: the locks go up in shard order as in
  // Lock(); the last shard runs fn as soon as it holds its locks and lets them go, then each
  // earlier shard in turn, going back down, runs fn and lets go; the first one tells the
  // coordinator, which runs `done`. A key is held for one message there and one back, rather
  // than the four of Lock, Hop and Release, so a crowd on one hot key drains twice as fast.
  // Still atomic: every shard's lock is taken before any fn runs, and a shard lets go only
  // once every shard after it has run, while every shard before it still holds its keys — so
  // another transaction, which locks in the same order, meets it whole or not at all, and a
  // single-key command sees a shard's change only when the earlier shards' are bound to follow
  // (their keys stay locked until they have). Abandon() works as with Lock().
  void LockRunRelease(std::function<void(Reactor&)> fn, absl::AnyInvocable<void()> done);
  // The same pass for several phases that must run one after another: phase k runs on shard
  // `on[k]` (which must be one this transaction locks), or on every shard it locks (-1), after
  // every earlier phase has run wherever it runs. The pass visits the shards up in ascending order
  // taking their locks, then back down; each phase runs at the latest visit that still leaves
  // room for the phases after it, so with `on` = {-1} this is LockRunRelease. A phase may so run
  // on a shard before a later shard's locks are taken, but never after any lock has been let go
  // (every lock is held before the first is released, two-phase locking): the result is the
  // same as running the phases in order under all the locks. False, and nothing is done, when
  // the phases do not fit one pass (for two shards A < B, the visits are A, B, A: phases on
  // B, A, B do not fit); the caller then takes Lock(), Hop()s and Release().
  bool LockRunPhases(const std::vector<int>& on, std::function<void(Reactor&, size_t)> run,
                     absl::AnyInvocable<void()> done);
  // Ends the transaction in two steps. First every shard writes its part to its journal (one
  // frame tagged with the transaction, see Journal::CommitTx) and answers; with appendfsync
  // always the answer waits until that part is on disk. Then, on the coordinator, every lock
  // is released (inline on its own shard, by message elsewhere: those messages wait for the
  // coordinator's journal too) and `then` runs: a reply written there leaves only once every
  // shard's part is durable, and nobody sees the transaction's keys before that either.
  // Messages the coordinator sends to a shard after `then` run after the release there.
  void Release(absl::AnyInvocable<void()> then);
  // Empty, or the error the reply must be: a participant's answer came back held for a journal
  // batch that could not be written (Reactor::FailedReplyError).
  const std::string& failed_error() const { return failed_error_; }

 private:
  struct Plan {
    uint64_t id;
    int origin;
    std::vector<Part> parts;  // ascending shard, one per shard
    bool writes = false;
    uint64_t journal_id = 0;                // id, or an enclosing EXEC's
    std::vector<uint32_t> participants;     // that transaction's shards; empty: nothing to tag
    // Set by Release before any part is committed; by a pass (LockRunPhases) at its top, on
    // that shard, before the first part is committed (the parts below read it after).
    mutable int64_t commit_ns = 0;
    // A pass: a part's message arrived held for a journal batch that could not be written
    // (Reactor::FailedReplyError); read by the coordinator once the pass is home.
    mutable std::string failed;
    std::atomic<bool> abandoned{false};     // set by the coordinator (Abandon), read by shards
    // LockRunPhases: runs phase k on the calling reactor's shard, with its locks held.
    std::function<void(Reactor&, size_t)> run;
    // Per visit of the pass (PlanPass): the phases it runs, in order.
    std::vector<std::vector<uint8_t>> steps;
  };
  static uint64_t Enter(Reactor& r, const Plan& plan);
  static void Leave(Reactor& r, const Plan& plan, uint64_t prev);
  static void Commit(Reactor& r, const Plan& plan);
  static void Settle(Reactor& r, const Plan& plan);
  static void RunSteps(Reactor& r, const Plan& plan, size_t visit);
  static void UpSteps(Reactor& r, const Plan& plan, size_t i);
  static bool PassJournalled(Reactor& r, const Plan& plan);
  static void NotePassFailure(const Plan& plan);
  void CommitAck();
  void Unlock();
  struct LockStep;
  struct RunStep;
  struct CommitPart;
  static void AckPart(Reactor& r, const Plan& plan, Transaction* tx);
  void PassAck(bool failed);
  void OnLocked();
  // On the coordinator: an abandoned transaction's lock chain stopped, holding parts [0, held).
  void OnAbandoned(size_t held);
  void HopDone();
  void NoteFailedReply();

  Reactor* origin_;
  std::shared_ptr<Plan> plan_;  // shared read-only once Lock() has run
  absl::AnyInvocable<void()> on_locked_;
  absl::AnyInvocable<void()> on_abandoned_;
  bool locked_ = false;
  size_t hop_remaining_ = 0;
  absl::AnyInvocable<void()> hop_then_;
  bool released_ = false;
  size_t commit_remaining_ = 0;
  size_t pass_acks_ = 0;  // a journalled pass's parts on disk (PassAck)
  absl::AnyInvocable<void()> release_then_;
  std::string failed_error_;
};

}  // namespace deadbolt::server
