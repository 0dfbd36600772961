// Db: native locks (LOCK.ACQUIRE, LOCK.RELEASE, LOCK.EXTEND, LOCK.INFO).
//
// A lock is an ordinary string key whose value is the owner and whose TTL is the lease, so
// GET, PTTL, DEL, DELIFEQ, SET ... IFEQ and the lock scripts all see and act on it. What a plain
// key cannot hold, the holding's fencing token and hold count, sits beside it in
// Impl::locks, keyed by the key. A record lives exactly as long as the key keeps holding the
// same owner: OnChange drops it when the key is deleted, expires, or is given another value (a
// write of the same value, or a TTL change, keeps it). So a record never outlives its key, and
// the table holds one record per lock currently held through LockAcquire.
//
// Fencing tokens come from one counter per Db (Impl::last_token), never from the key: a key
// that is released, expires or is flushed and taken again gets a larger token than it ever had.

#include <algorithm>
#include <cstdint>
#include <string>

#include "shard/db.h"
#include "shard/db_impl.h"

namespace deadbolt::shard {

namespace {

absl::string_view Abs(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// The end of a lease starting now (saturating: a waiter's lease, checked when it asked, starts
// later).
int64_t LeaseEnd(int64_t now_ms, int64_t lease_ms) {
  return lease_ms > INT64_MAX - now_ms ? INT64_MAX : now_ms + lease_ms;
}

}  // namespace

void Db::Impl::LockKeyChanged(std::string_view key, Change change) {
  auto it = locks.find(Abs(key));
  if (it == locks.end()) return;
  if (change == Change::kOverwritten || change == Change::kModified) {
    // Still the same holding if the key still holds the owner (a TTL change, or a write of the
    // same value such as SET k owner IFEQ owner PX n).
    const Entry* e = dict.Find(key, Dict::Hash(key));
    if (e && e->is_string() && StringDigest(e->string_value()) == it->second.owner_digest) return;
  }
  locks.erase(it);
}

OpResult<LockGrant> Db::LockAcquire(std::string_view key, std::string_view owner, int64_t lease_ms,
                                    bool reentrant, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  const int64_t at = LeaseEnd(now_ms, lease_ms);
  LockGrant g;
  if (!pos) {
    impl_->Add(Entry::MakeString(key, owner, at), hash);
    g.acquired = true;
    g.token = ++impl_->last_token;
    g.holds = 1;
    impl_->locks.insert_or_assign(std::string(key),
                                  Impl::LockRecord{g.token, 1, StringDigest(owner)});
    return g;
  }
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  if (!reentrant || e->string_value() != owner) return g;  // busy
  // The same value, a new TTL: OnChange keeps the record.
  impl_->SetExpire(pos, at);
  auto it = impl_->locks.find(Abs(key));
  if (it == impl_->locks.end()) {
    // Held by the owner but not taken through LockAcquire (SET NX PX): that counts as one hold,
    // and this holding gets its token now.
    it = impl_->locks
             .emplace(std::string(key),
                      Impl::LockRecord{++impl_->last_token, 1, StringDigest(owner)})
             .first;
  }
  it->second.holds++;
  g.acquired = true;
  g.reentered = true;
  g.token = it->second.token;
  g.holds = it->second.holds;
  return g;
}

OpResult<int64_t> Db::LockRelease(std::string_view key, std::string_view owner, int64_t now_ms,
                                  uint64_t token) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return -1;
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  if (e->string_value() != owner) return -1;
  auto it = impl_->locks.find(Abs(key));
  if (token != 0 && (it == impl_->locks.end() || it->second.token != token)) return -1;
  if (it != impl_->locks.end() && it->second.holds > 1) {
    int64_t left = --it->second.holds;
    // The key is unchanged, but its holding is not: tell the observers (the journal keeps the
    // hold count) directly: nothing about the key itself changed.
    for (KeyObserver* o : impl_->observers) o->OnKeyChanged(key);
    return left;
  }
  impl_->Remove(pos, Impl::Change::kDeleted);  // drops the record
  impl_->dict.MaybeShrink();
  return 0;
}

OpResult<bool> Db::LockExtend(std::string_view key, std::string_view owner, int64_t lease_ms,
                              int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return false;
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  if (e->string_value() != owner) return false;
  impl_->SetExpire(pos, LeaseEnd(now_ms, lease_ms));
  return true;
}

OpResult<LockState> Db::LockInfo(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  LockState s;
  if (!pos) return s;
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  s.held = true;
  s.owner = e->string_value();
  s.pttl_ms = e->has_expire() ? std::max<int64_t>(0, e->expire_at() - now_ms) : -1;
  auto it = impl_->locks.find(Abs(key));
  if (it != impl_->locks.end()) {
    s.token = it->second.token;
    s.holds = it->second.holds;
  } else {
    s.holds = 1;
  }
  return s;
}

uint64_t Db::last_fencing_token() const { return impl_->last_token; }

void Db::AdvanceFencingToken(uint64_t at_least) {
  impl_->last_token = std::max(impl_->last_token, at_least);
}

size_t Db::LockRecords() const { return impl_->locks.size(); }

bool Db::LockRecordOf(std::string_view key, uint64_t* token, int64_t* holds) const {
  auto it = impl_->locks.find(Abs(key));
  if (it == impl_->locks.end()) return false;
  *token = it->second.token;
  *holds = it->second.holds;
  return true;
}

void Db::SetLockRecord(std::string_view key, uint64_t token, int64_t holds) {
  const Entry* e = impl_->dict.Find(key, Dict::Hash(key));
  if (!e || !e->is_string() || token == 0 || holds <= 0) return;
  impl_->locks.insert_or_assign(std::string(key),
                                Impl::LockRecord{token, holds, StringDigest(e->string_value())});
  impl_->last_token = std::max(impl_->last_token, token);
}

}  // namespace deadbolt::shard
