#include "server/core/transaction.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>

#include "server/base/error_strings.h"
#include "server/core/journal.h"
#include "server/core/reactor.h"
#include "server/txn/lock_table.h"
#include "server/txn/pass_plan.h"

namespace deadbolt::server {
namespace {
std::atomic<uint64_t> next_tx_id{1};
}  // namespace

Transaction::Transaction(Reactor* origin, std::vector<Part> parts) : origin_(origin) {
  std::sort(parts.begin(), parts.end(),
            [](const Part& a, const Part& b) { return a.shard < b.shard; });
  std::vector<Part> merged;
  for (auto& p : parts) {
    if (!merged.empty() && merged.back().shard == p.shard) {
      Part& m = merged.back();
      m.whole = m.whole || p.whole;
      m.names.insert(m.names.end(), p.names.begin(), p.names.end());
    } else {
      merged.push_back(std::move(p));
    }
  }
  for (auto& m : merged) {
    std::sort(m.names.begin(), m.names.end());
    m.names.erase(std::unique(m.names.begin(), m.names.end()), m.names.end());
    if (m.whole) m.names.clear();
  }
  auto plan = std::make_shared<Plan>();
  plan->id = next_tx_id.fetch_add(1, std::memory_order_relaxed);
  plan->origin = origin->id();
  plan->parts = std::move(merged);
  plan->journal_id = plan->id;
  for (const Part& p : plan->parts) plan->participants.push_back(static_cast<uint32_t>(p.shard));
  plan_ = std::move(plan);
}

// Every transaction with locks is tagged, even on one shard: an EXEC whose keys sit on one
// other shard runs there one hop (one turn) per command, and its part must still be one frame.
// Only on a participant: that is where the part is committed (a hop elsewhere, which takes no
// lock, is journalled as usual).
uint64_t Transaction::Enter(Reactor& r, const Plan& plan) {
  Journal* j = r.journal();
  if (!j) return 0;
  auto me = static_cast<uint32_t>(r.id());
  if (std::find(plan.participants.begin(), plan.participants.end(), me) ==
      plan.participants.end()) {
    return j->current_tx();
  }
  return j->EnterTx(plan.journal_id);
}

void Transaction::Leave(Reactor& r, const Plan&, uint64_t prev) {
  if (Journal* j = r.journal()) j->LeaveTx(prev);
}

void Transaction::Commit(Reactor& r, const Plan& plan) {
  // Only the transaction that owns the journal id commits it (not a fan-out inside EXEC).
  if (plan.participants.empty() || plan.journal_id != plan.id || !r.journal()) return;
  r.journal()->CommitTx(plan.journal_id, plan.participants, plan.commit_ns, plan.writes);
}

void Transaction::Settle(Reactor& r, const Plan& plan) {
  if (plan.participants.empty() || plan.journal_id != plan.id || !r.journal()) return;
  r.journal()->SettleTx(plan.journal_id);
}

uint64_t Transaction::EnterJournal(Reactor& r) const { return Enter(r, *plan_); }

void Transaction::LeaveJournal(Reactor& r, uint64_t prev) const { Leave(r, *plan_, prev); }

std::vector<int> Transaction::Shards() const {
  std::vector<int> s;
  for (const auto& p : plan_->parts) s.push_back(p.shard);
  return s;
}

namespace {
int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The pass's visit of part i going up (i < last) or at the top (i == last), or going down.
size_t UpVisit(size_t i) { return i; }
size_t DownVisit(size_t i, size_t parts) { return 2 * parts - 2 - i; }
}  // namespace

void Transaction::RunSteps(Reactor& r, const Plan& plan, size_t visit) {
  for (uint8_t k : plan.steps[visit]) plan.run(r, k);
}

bool Transaction::PassJournalled(Reactor& r, const Plan& plan) {
  return r.journal() != nullptr && plan.journal_id == plan.id;
}

void Transaction::NotePassFailure(const Plan& plan) {
  if (const std::string* e = Reactor::FailedReplyError()) plan.failed = *e;
}

// LockRunPhases, going up: the steps of part i's first visit, its locks just taken.
void Transaction::UpSteps(Reactor& r, const Plan& plan, size_t i) {
  uint64_t prev = Enter(r, plan);
  RunSteps(r, plan, UpVisit(i));
  Leave(r, plan, prev);
}

// A journalled pass, on a part below the top: its phases all ran on the way up; its part is
// committed now, at once with the others.
struct Transaction::CommitPart {
  std::shared_ptr<const Plan> plan;
  Transaction* tx;  // dereferenced only on the coordinator

  void operator()() {
    Reactor* r = Reactor::Current();
    Commit(*r, *plan);
    AckPart(*r, *plan, tx);
  }
};

// LockRunPhases: runs on parts[i]'s shard once every part's locks are held and every later
// part has run; runs this part's last phases and passes on down (or home). Without a journal
// each part lets go here. With one, every change was made by the top (the phases took their
// earliest visits), so it never comes down: the top stamps commit_ns after every change of the
// transaction, as Release() does after the hops, commits its part and has every other part
// committed at once (CommitPart, in messages that need not wait for its journal); each part
// acks to the coordinator once it is on disk (AckPart), and the coordinator, once every ack is
// in, lets every part go and answers (PassAck). So no key of the transaction is seen before
// every part is on disk, as with Release(), and the parts' fsyncs overlap rather than follow
// each other down the shards.
struct Transaction::RunStep {
  std::shared_ptr<const Plan> plan;
  size_t i;
  Transaction* tx;  // dereferenced only on the coordinator

  void operator()() {
    Reactor* r = Reactor::Current();
    const Part& p = plan->parts[i];
    const size_t n = plan->parts.size();
    uint64_t prev = Enter(*r, *plan);
    RunSteps(*r, *plan, DownVisit(i, n));
    Leave(*r, *plan, prev);
    if (PassJournalled(*r, *plan)) {  // (at the top: see above)
      plan->commit_ns = NowNs();
      Commit(*r, *plan);
      for (size_t j = 0; j + 1 < n; j++) {
        r->SendUnheld(plan->parts[j].shard, CommitPart{plan, tx});
      }
      AckPart(*r, *plan, tx);
      return;
    }
    r->locks().Unlock(plan->id, p.names, p.whole);
    if (i > 0) {
      r->Send(plan->parts[i - 1].shard, RunStep{plan, i - 1, tx});
    } else if (plan->origin == r->id()) {
      tx->OnLocked();
    } else {
      Transaction* t = tx;
      r->Send(plan->origin, [t] { t->OnLocked(); });
    }
  }
};

// A pass's part was just committed here: the coordinator hears once it is on disk. A message
// from here waits for this journal (Reactor::FlushOutboxes); one to this reactor itself does
// not, so there the journal says when.
void Transaction::AckPart(Reactor& r, const Plan& plan, Transaction* tx) {
  if (plan.origin != r.id()) {
    r.Send(plan.origin, [tx] { tx->PassAck(false); });
    return;
  }
  Journal* j = r.journal();
  j->WhenDurable(j->TurnBatch(), [tx](bool failed) {
    Reactor* here = Reactor::Current();
    here->Send(here->id(), [tx, failed] { tx->PassAck(failed); });
  });
}

void Transaction::PassAck(bool failed) {
  NoteFailedReply();
  if (failed && failed_error_.empty()) {
    Journal* j = origin_->journal();
    failed_error_ = errors::AofWriteError(j->error() ? j->error() : EIO);
  }
  if (++pass_acks_ < plan_->parts.size()) return;
  // Every part is on disk: the locks go (nothing here need wait for the journal), then the
  // answer.
  const int origin = origin_->id();
  for (size_t k = 0; k < plan_->parts.size(); k++) {
    const Part& p = plan_->parts[k];
    if (p.shard == origin) {
      Settle(*origin_, *plan_);
      origin_->locks().Unlock(plan_->id, p.names, p.whole);
      continue;
    }
    origin_->SendUnheld(p.shard, [plan = std::shared_ptr<const Plan>(plan_), k] {
      const Part& part = plan->parts[k];
      Reactor* r = Reactor::Current();
      Settle(*r, *plan);
      r->locks().Unlock(plan->id, part.names, part.whole);
    });
  }
  OnLocked();
}

// Runs on parts[i]'s shard: takes its locks (or waits for them), then passes on to the next
// shard, or tells the coordinator that every lock is held.
struct Transaction::LockStep {
  std::shared_ptr<const Plan> plan;
  size_t i;
  Transaction* tx;  // dereferenced only on the coordinator

  void operator()() {
    Reactor* r = Reactor::Current();
    const Part& p = plan->parts[i];
    if (plan->abandoned.load(std::memory_order_acquire)) {
      // Given up: let go of what it holds here (it was just granted, or holds nothing yet) and
      // tell the coordinator, which releases the earlier shards.
      r->locks().Unlock(plan->id, p.names, p.whole);
      Transaction* t = tx;
      size_t held = i;
      if (plan->origin == r->id()) {
        t->OnAbandoned(held);
      } else {
        r->Send(plan->origin, [t, held] { t->OnAbandoned(held); });
      }
      return;
    }
    if (!r->locks().TryLock(plan->id, p.names, p.whole)) {
      r->locks().ParkTx(plan->id, p.names, p.whole, LockStep(*this));
      return;
    }
    if (i + 1 < plan->parts.size()) {
      if (plan->run) UpSteps(*r, *plan, i);
      int next = plan->parts[i + 1].shard;
      r->Send(next, LockStep{plan, i + 1, tx});
    } else if (plan->run) {
      RunStep{plan, i, tx}();  // every lock is held: run here now, then back down
    } else if (plan->origin == r->id()) {
      tx->OnLocked();
    } else {
      Transaction* t = tx;
      r->Send(plan->origin, [t] { t->OnLocked(); });
    }
  }
};

void Transaction::LockRunRelease(std::function<void(Reactor&)> fn,
                                 absl::AnyInvocable<void()> done) {
  bool fits = LockRunPhases(
      {-1}, [fn = std::move(fn)](Reactor& r, size_t) { fn(r); }, std::move(done));
  (void)fits;  // one phase on every shard always fits
}

bool Transaction::LockRunPhases(const std::vector<int>& on,
                                std::function<void(Reactor&, size_t)> run,
                                absl::AnyInvocable<void()> done) {
  // With a journal, every change must be made before the first part is committed (a rewrite
  // that starts after commit_ns must find every key of the transaction in its part), so the
  // phases go as early as they can and none may be left for the way down.
  const bool journalled = PassJournalled(*origin_, *plan_);
  auto steps = PlanPass(Shards(), on, journalled);
  if (!steps) return false;
  const size_t n = plan_->parts.size();
  for (size_t v = n; journalled && v < steps->size(); v++) {
    if (!(*steps)[v].empty()) return false;
  }
  plan_->steps = std::move(*steps);
  plan_->run = std::move(run);
  released_ = true;  // nothing is left to release when `done` runs
  Lock(std::move(done));
  return true;
}

void Transaction::Lock(absl::AnyInvocable<void()> on_locked) {
  on_locked_ = std::move(on_locked);
  if (plan_->parts.empty()) {
    OnLocked();
    return;
  }
  LockStep first{plan_, 0, this};
  if (plan_->parts[0].shard == origin_->id()) {
    first();
  } else {
    origin_->Send(plan_->parts[0].shard, std::move(first));
  }
}

void Transaction::OnLocked() {
  if (plan_->run) {  // a pass, home after every part was committed
    NotePassFailure(*plan_);
    if (!plan_->failed.empty()) failed_error_ = plan_->failed;
  }
  if (plan_->abandoned.load(std::memory_order_relaxed)) {  // given up meanwhile
    // LockRunRelease: every part ran and let go already.
    OnAbandoned(plan_->run ? 0 : plan_->parts.size());
    return;
  }
  locked_ = true;
  auto f = std::move(on_locked_);
  f();
}

bool Transaction::Abandon(absl::AnyInvocable<void()> on_abandoned) {
  if (locked_ || plan_->parts.empty()) return false;
  on_abandoned_ = std::move(on_abandoned);
  plan_->abandoned.store(true, std::memory_order_release);
  return true;
}

void Transaction::OnAbandoned(size_t held) {
  // Nothing ran and nothing was journalled: the locks go, with no commit.
  int origin = origin_->id();
  for (size_t j = 0; j < held; j++) {
    const Part& p = plan_->parts[j];
    if (p.shard == origin) {
      origin_->locks().Unlock(plan_->id, p.names, p.whole);
    } else {
      origin_->Send(p.shard, [plan = std::shared_ptr<const Plan>(plan_), j] {
        const Part& part = plan->parts[j];
        Reactor::Current()->locks().Unlock(plan->id, part.names, part.whole);
      });
    }
  }
  auto f = std::move(on_abandoned_);
  f();  // may destroy this transaction
}

void Transaction::Hop(const std::vector<int>& shards, std::function<void(Reactor&)> fn,
                      absl::AnyInvocable<void()> then) {
  hop_then_ = std::move(then);
  hop_remaining_ = shards.size();
  if (shards.empty()) {
    hop_remaining_ = 1;
    HopDone();
    return;
  }
  bool local = false;
  int origin = origin_->id();
  for (int s : shards) {
    if (s == origin) {
      local = true;
      continue;
    }
    Transaction* t = this;
    origin_->Send(s, [fn, t, origin, plan = plan_] {
      Reactor* r = Reactor::Current();
      uint64_t prev = Enter(*r, *plan);
      fn(*r);
      Leave(*r, *plan, prev);
      r->Send(origin, [t] { t->HopDone(); });
    });
  }
  // The local part last: if it completes the hop, `then` may end this transaction.
  if (local) {
    uint64_t prev = Enter(*origin_, *plan_);
    fn(*origin_);
    Leave(*origin_, *plan_, prev);
    HopDone();
  }
}

void Transaction::HopDone() {
  NoteFailedReply();
  if (--hop_remaining_ > 0) return;
  auto f = std::move(hop_then_);
  f();
}

void Transaction::Release(absl::AnyInvocable<void()> then) {
  if (released_) {
    if (then) then();
    return;
  }
  released_ = true;
  release_then_ = std::move(then);
  // Before any part is written (read by the messages below); a fresh reading in ns, so that a
  // rewrite started on a participant after its hops there is seen as started before the commit.
  plan_->commit_ns = NowNs();
  int origin = origin_->id();
  commit_remaining_ = 1;  // the coordinator's own step, last
  // Without a journal (every reactor has one, or none) there is nothing to commit: the locks go
  // at once, with no round trip to the other shards first.
  const bool journalled = origin_->journal() != nullptr;
  for (size_t i = 0; journalled && i < plan_->parts.size(); i++) {
    const Part& p = plan_->parts[i];
    if (p.shard == origin) continue;
    commit_remaining_++;
    Transaction* t = this;
    origin_->Send(p.shard, [plan = std::shared_ptr<const Plan>(plan_), t] {
      Reactor* r = Reactor::Current();
      Commit(*r, *plan);
      // With `always` this answer waits until the part is on disk (Reactor::FlushOutboxes).
      r->Send(plan->origin, [t] { t->CommitAck(); });
    });
  }
  for (const Part& p : plan_->parts) {
    if (p.shard == origin) Commit(*origin_, *plan_);
  }
  CommitAck();
}

void Transaction::NoteFailedReply() {
  if (const std::string* e = Reactor::FailedReplyError()) failed_error_ = *e;
}

void Transaction::CommitAck() {
  NoteFailedReply();
  if (--commit_remaining_ > 0) return;
  Unlock();
  auto f = std::move(release_then_);
  if (f) f();  // may destroy this transaction
}

void Transaction::Unlock() {
  int origin = origin_->id();
  for (size_t i = 0; i < plan_->parts.size(); i++) {
    const Part& p = plan_->parts[i];
    if (p.shard == origin) continue;
    origin_->Send(p.shard, [plan = std::shared_ptr<const Plan>(plan_), i] {
      const Part& part = plan->parts[i];
      Reactor* r = Reactor::Current();
      Settle(*r, *plan);
      r->locks().Unlock(plan->id, part.names, part.whole);
    });
  }
  for (const Part& p : plan_->parts) {
    if (p.shard == origin) {
      Settle(*origin_, *plan_);
      origin_->locks().Unlock(plan_->id, p.names, p.whole);
    }
  }
}

}  // namespace deadbolt::server
