#include "server/txn/lock_waiters.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "protocol/reply_builder.h"
#include "server/txn/lock_table.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace {

// RESP of a waiter's reply.
std::string TokenReply(int resp, uint64_t token) {
  std::string out;
  protocol::ReplyBuilder rb(&out, resp);
  rb.Integer(static_cast<int64_t>(token));
  return out;
}

std::string NilReply(int resp, bool null_array) {
  std::string out;
  protocol::ReplyBuilder rb(&out, resp);
  if (null_array) {
    rb.NullArray();
  } else {
    rb.Null();
  }
  return out;
}

}  // namespace

LockWaiters::LockWaiters(shard::Shard* shard, LockTable* locks,
                         absl::AnyInvocable<void()> schedule_drain,
                         absl::AnyInvocable<int64_t() const> clock)
    : shard_(shard),
      locks_(locks),
      schedule_drain_(std::move(schedule_drain)),
      clock_(std::move(clock)) {}

LockWaiters::~LockWaiters() {
  for (size_t db = 0; db < observers_.size(); db++) {
    if (observers_[db] && observers_[db]->queues > 0) {
      shard_->db(static_cast<int>(db)).RemoveObserver(observers_[db].get());
    }
  }
  // Unfinished replies are dropped: this happens only at shutdown.
}

LockWaiters::Queue* LockWaiters::Find(int db, std::string_view key) const {
  if (queues_.empty()) return nullptr;
  char buf[256];
  absl::string_view name;
  std::string long_name;
  if (key.size() + 2 <= sizeof(buf)) {
    buf[0] = static_cast<char>(db & 0xff);
    buf[1] = static_cast<char>((db >> 8) & 0xff);
    key.copy(buf + 2, key.size());
    name = absl::string_view(buf, key.size() + 2);
  } else {
    long_name = LockTable::Name(db, key);
    name = absl::string_view(long_name.data(), long_name.size());
  }
  auto it = queues_.find(name);
  return it == queues_.end() ? nullptr : it->second.get();
}

bool LockWaiters::HasWaiters(int db, std::string_view key) const {
  return Find(db, key) != nullptr;
}

size_t LockWaiters::Waiters(int db, std::string_view key) const {
  const Queue* q = Find(db, key);
  return q ? q->waiters.size() : 0;
}

void LockWaiters::Wait(int db, std::string_view key, Waiter w) {
  std::string name = LockTable::Name(db, key);
  auto& slot = queues_[name];
  if (!slot) {
    slot = std::make_unique<Queue>();
    slot->db = db;
    slot->key = std::string(key);
    slot->name = name;
    if (observers_.size() <= static_cast<size_t>(db)) observers_.resize(db + 1);
    auto& obs = observers_[db];
    if (!obs) {
      obs = std::make_unique<DbObserver>();
      obs->table = this;
      obs->db = db;
    }
    if (obs->queues++ == 0) shard_->db(db).AddObserver(obs.get());
  }
  Queue& q = *slot;
  w.seq = ++next_seq_;
  const uint64_t client = w.reply->client_id();
  by_seq_[w.seq] = Waiting{std::move(name), client};
  by_client_[client].push_back(w.seq);
  if (w.counts) counted_++;
  if (w.deadline_ms != kForever) {
    timed_waiters_++;
    PushTimer(Timer{w.deadline_ms, true, w.seq, {}});
  }
  q.waiters.push_back(std::move(w));
  ArmLeaseTimer(q);
}

void LockWaiters::HandOver(int db, std::string_view key) {
  if (Queue* q = Find(db, key)) Serve(*q);
}

void LockWaiters::Serve(Queue& q) {
  if (!locks_->idle() && locks_->Blocked(q.db, q.key)) {
    // A transaction holds the key: hand over once it lets go.
    if (!q.parked) {
      q.parked = true;
      int db = q.db;
      std::string key = q.key;
      locks_->Park({q.name}, 0, [this, db, key] {
        if (Queue* again = Find(db, key)) {
          again->parked = false;
          Serve(*again);
        }
      });
    }
    return;
  }
  shard::Db& d = shard_->db(q.db);
  const int64_t now = clock_();
  serving_ = &q;
  while (!q.waiters.empty()) {
    Waiter& w = q.waiters.front();
    if (w.reply->cancelled()) {  // its connection closed; the cancel message is on its way
      w.reply->Finish({});
      Remove(q, q.waiters.begin());
      continue;
    }
    if (w.try_serve) {  // the key-ready hook
      if (!w.try_serve(d, q.key, now, *w.reply)) break;
      Remove(q, q.waiters.begin());
      continue;
    }
    auto g = d.LockAcquire(q.key, w.owner, w.lease_ms, w.reentrant, now);
    if (!g.ok() || !g->acquired) break;  // held (or no longer a string): wait on
    const uint64_t token = g->token;
    w.reply->Finish(
        TokenReply(w.reply->resp(), token),
        [this, db = q.db, key = q.key, owner = w.owner, token] { Undo(db, key, owner, token); });
    Remove(q, q.waiters.begin());
  }
  serving_ = nullptr;
  if (q.waiters.empty()) {
    MaybeErase(q);
  } else {
    ArmLeaseTimer(q);
  }
}

void LockWaiters::Remove(Queue& q, std::deque<Waiter>::iterator it) {
  by_seq_.erase(it->seq);
  auto c = by_client_.find(it->reply->client_id());
  if (c != by_client_.end()) {
    std::erase(c->second, it->seq);
    if (c->second.empty()) by_client_.erase(c);
  }
  if (it->counts) counted_--;
  if (it->deadline_ms != kForever) timed_waiters_--;
  q.waiters.erase(it);
  MaybeCompactTimers();
}

void LockWaiters::MaybeErase(Queue& q) {
  if (!q.waiters.empty()) return;
  DbObserver& obs = *observers_[q.db];
  if (--obs.queues == 0) shard_->db(q.db).RemoveObserver(&obs);
  // Its timers and dirty_ entry find no queue by that name and are skipped.
  queues_.erase(q.name);
}

void LockWaiters::ArmLeaseTimer(Queue& q) {
  const int64_t at = shard_->db(q.db).ExpireTime(q.key, clock_());
  if (at < 0) return;  // missing (a change report is on its way) or no TTL (no timer)
  // Redis's rule: the key is expired once now is past its expire time.
  const int64_t due = at + 1;
  if (due >= q.lease_timer) return;  // a timer at or before it is armed; it re-arms when it fires
  q.lease_timer = due;
  q.lease_timer_seq = ++next_seq_;
  PushTimer(Timer{due, false, q.lease_timer_seq, q.name});
}

void LockWaiters::PushTimer(Timer t) {
  timers_.push_back(std::move(t));
  std::push_heap(timers_.begin(), timers_.end(), std::greater<Timer>());
}

bool LockWaiters::Live(const Timer& t) const {
  if (t.waiter) return by_seq_.contains(t.seq);
  auto it = queues_.find(t.name);
  return it != queues_.end() && it->second->lease_timer_seq == t.seq;
}

void LockWaiters::MaybeCompactTimers() {
  // At most one live lease timer per queue and one timer per waiter with a timeout.
  const size_t live = timed_waiters_ + queues_.size();
  if (timers_.size() <= 64 || timers_.size() <= 2 * live) return;
  timers_.erase(
      std::remove_if(timers_.begin(), timers_.end(), [this](const Timer& t) { return !Live(t); }),
      timers_.end());
  std::make_heap(timers_.begin(), timers_.end(), std::greater<Timer>());
}

void LockWaiters::OnKeyChanged(int db, std::string_view key) {
  Queue* q = Find(db, key);
  if (!q || q == serving_) return;
  if (!q->dirty) {
    q->dirty = true;
    dirty_.push_back(q->name);
  }
  if (!drain_scheduled_) {
    drain_scheduled_ = true;
    schedule_drain_();
  }
}

void LockWaiters::Drain() {
  drain_scheduled_ = false;
  std::vector<std::string> names;
  names.swap(dirty_);
  for (const std::string& name : names) {
    auto it = queues_.find(name);
    if (it == queues_.end()) continue;
    Queue& q = *it->second;
    q.dirty = false;
    Serve(q);  // also re-arms the lease timer, which a TTL change may have moved
  }
}

void LockWaiters::Cancel(uint64_t client_id) {
  auto c = by_client_.find(client_id);
  if (c == by_client_.end()) return;             // already served or timed out
  const std::vector<uint64_t> seqs = c->second;  // End() changes it
  for (uint64_t seq : seqs) End(seq, {}, false);
}

void LockWaiters::Unblock(uint64_t client_id, std::string_view error) {
  auto c = by_client_.find(client_id);
  if (c == by_client_.end()) return;             // served or timed out meanwhile
  const std::vector<uint64_t> seqs = c->second;  // End() changes it
  // A client waiting on several keys has a waiter on each, sharing one reply: the first End()
  // finishes it, the others' Finish() does nothing.
  for (uint64_t seq : seqs) End(seq, std::string(error), error.empty());
}

void LockWaiters::Withdraw(uint64_t client_id, const void* group) {
  auto c = by_client_.find(client_id);
  if (c == by_client_.end()) return;
  std::vector<uint64_t> seqs;
  for (uint64_t seq : c->second) {
    const Queue& q = *queues_.find(by_seq_.find(seq)->second.name)->second;
    for (const Waiter& w : q.waiters) {
      if (w.seq == seq && w.group == group) seqs.push_back(seq);
    }
  }
  // Their reply was finished through another waiter of the group: Finish() here is a no-op.
  for (uint64_t seq : seqs) End(seq, {}, false);
}

void LockWaiters::End(uint64_t seq, std::string reply, bool timed_out) {
  auto at = by_seq_.find(seq);
  if (at == by_seq_.end()) return;  // served, timed out or withdrawn meanwhile
  Queue& q = *queues_.find(at->second.name)->second;
  for (auto w = q.waiters.begin(); w != q.waiters.end(); ++w) {
    if (w->seq != seq) continue;
    if (timed_out) reply = NilReply(w->reply->resp(), w->timeout_null_array);
    w->reply->Finish(std::move(reply));
    const bool head = w == q.waiters.begin();
    Remove(q, w);
    if (q.waiters.empty()) {
      MaybeErase(q);
    } else if (head) {
      Serve(q);  // in case the key was ready and its handover still to come
    }
    return;
  }
}

void LockWaiters::OnTimer() {
  const int64_t now = clock_();
  while (!timers_.empty() && timers_.front().at <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<Timer>());
    Timer t = std::move(timers_.back());
    timers_.pop_back();
    if (t.waiter) {
      End(t.seq, {}, true);
      continue;
    }
    auto it = queues_.find(t.name);
    if (it == queues_.end()) continue;
    Queue& q = *it->second;
    if (q.lease_timer_seq != t.seq) continue;  // replaced by an earlier one
    q.lease_timer = kForever;
    Serve(q);  // the acquire meets the expired key, removes it and takes the lock
  }
}

void LockWaiters::Undo(int db, const std::string& key, const std::string& owner, uint64_t token) {
  if (!locks_->idle() && locks_->Blocked(db, key)) {
    locks_->Park({LockTable::Name(db, key)}, 0,
                 [this, db, key, owner, token] { Undo(db, key, owner, token); });
    return;
  }
  // Only that holding, one hold: if it was re-entered meanwhile, the others stay. A release to
  // zero deletes the key, and the change report hands the lock to the next waiter.
  shard_->db(db).LockRelease(key, owner, clock_(), token);
}

}  // namespace deadbolt::server
