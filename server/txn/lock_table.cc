#include "server/txn/lock_table.h"

#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>

#include <cstdio>
#include <cstdlib>

namespace deadbolt::server {

std::string LockTable::Name(int db, std::string_view key) {
  std::string n;
  n.reserve(key.size() + 2);
  n.push_back(static_cast<char>(db & 0xff));
  n.push_back(static_cast<char>((db >> 8) & 0xff));
  n.append(key);
  return n;
}

bool LockTable::AnyHeldByMask(const std::vector<std::string>& names, uint64_t mask) const {
  if (whole_holder_ && (whole_holder_ & mask) == mask) return true;
  for (const std::string& n : names) {
    auto it = held_.find(n);
    if (it != held_.end() && (it->second & mask) == mask) return true;
  }
  return false;
}

bool LockTable::Blocked(int db, std::string_view key) const {
  if (whole_holder_) return true;
  if (held_.empty()) return false;
  char buf[256];
  if (key.size() + 2 <= sizeof(buf)) {
    buf[0] = static_cast<char>(db & 0xff);
    buf[1] = static_cast<char>((db >> 8) & 0xff);
    key.copy(buf + 2, key.size());
    return held_.contains(absl::string_view(buf, key.size() + 2));
  }
  return held_.contains(Name(db, key));
}

bool LockTable::TryLock(uint64_t tx, const std::vector<std::string>& names, bool whole) {
  if (whole_holder_ == tx && tx != 0) return true;  // holds every key of the shard already
  if (whole_holder_) return false;
  if (whole) {
    for (auto& [name, holder] : held_) {
      if (holder != tx) return false;
    }
    if (!tx_waiting_.empty()) return false;  // every waiting transaction goes first
    whole_holder_ = tx;
    return true;
  }
  if (tx_queue_.empty() && whole_waiting_.empty()) {
    // Nobody waits for a lock (the usual case): a name is either free, held by `tx` already, or
    // held by another transaction, which fails the call. One lookup per name.
    thread_local std::vector<const std::string*> taken;
    taken.clear();
    for (const auto& n : names) {
      auto [it, inserted] = held_.try_emplace(n, tx);
      if (inserted) {
        taken.push_back(&n);
      } else if (it->second != tx) {
        for (const std::string* t : taken) held_.erase(*t);
        return false;
      }
    }
    return true;
  }
  bool all_mine = true;
  for (const auto& n : names) {
    auto it = held_.find(n);
    if (it == held_.end() || it->second != tx) {
      all_mine = false;
      break;
    }
  }
  if (all_mine) return true;  // asked again (a granted waiter confirming)
  // Fairness: a newcomer gives way to every transaction already waiting for one of its locks.
  if (!whole_waiting_.empty()) return false;
  for (const auto& n : names) {
    auto it = held_.find(n);
    if (it != held_.end() && it->second != tx) return false;
    if (tx_queue_.contains(n)) return false;
  }
  for (const auto& n : names) held_[n] = tx;
  return true;
}

void LockTable::Unlock(uint64_t tx, const std::vector<std::string>& names, bool whole) {
  // With nothing waiting, a release wakes nobody: no names to look at again.
  const bool wake = !waiters_.empty();
  if (whole && whole_holder_ == tx) {
    whole_holder_ = 0;
    woken_all_ = woken_all_ || wake;
  }
  for (const auto& n : names) {
    auto it = held_.find(n);
    if (it != held_.end() && it->second == tx) {
      held_.erase(it);
      if (wake) woken_names_.push_back(n);
    }
  }
  if (wake) Drain();
}

void LockTable::Park(std::vector<std::string> names, uint64_t owner,
                     absl::AnyInvocable<void()> retry) {
  const uint64_t seq = next_seq_++;
  Waiter& w = waiters_[seq];
  w.names = std::move(names);
  w.owner = owner;
  w.run = std::move(retry);
  if (owner) owners_[owner].push_back(seq);
  PlaceCmd(seq);
  Drain();
}

void LockTable::ParkTx(uint64_t tx, const std::vector<std::string>& names, bool whole,
                       absl::AnyInvocable<void()> granted) {
  const uint64_t seq = next_seq_++;
  Waiter& w = waiters_[seq];
  w.tx = tx;
  w.whole = whole;
  if (!whole) w.names = names;
  w.run = std::move(granted);
  for (const auto& n : w.names) tx_queue_[n].push_back(seq);
  tx_waiting_.insert(seq);
  if (whole) whole_waiting_.insert(seq);
  if (Grantable(seq, w)) candidates_.insert(seq);
  Drain();
}

bool LockTable::Grantable(uint64_t seq, const Waiter& w) const {
  examined_++;
  if (whole_holder_ && whole_holder_ != w.tx) return false;
  if (w.whole) {
    for (auto& [name, holder] : held_) {
      if (holder != w.tx) return false;
    }
    return *tx_waiting_.begin() == seq;  // no transaction waited longer
  }
  if (!whole_waiting_.empty() && *whole_waiting_.begin() < seq) return false;
  for (const auto& n : w.names) {
    auto h = held_.find(n);
    if (h != held_.end() && h->second != w.tx) return false;
    auto q = tx_queue_.find(n);
    if (q == tx_queue_.end() || q->second.front() != seq) return false;
  }
  return true;
}

LockTable::CmdBlock LockTable::CmdBlockedBy(uint64_t seq, const Waiter& w,
                                            const std::string** name) const {
  examined_++;
  if (w.owner) {
    auto o = owners_.find(w.owner);
    if (o != owners_.end() && o->second.front() != seq) return CmdBlock::kOwner;
  }
  if (whole_holder_) return CmdBlock::kWhole;
  for (const auto& n : w.names) {
    if (held_.contains(n)) {
      *name = &n;
      return CmdBlock::kName;
    }
  }
  return CmdBlock::kNone;
}

void LockTable::PlaceCmd(uint64_t seq) {
  Waiter& w = waiters_.at(seq);
  const std::string* name = nullptr;
  switch (CmdBlockedBy(seq, w, &name)) {
    case CmdBlock::kOwner:
      break;  // looked at again when it is its client's first (WakeOwner)
    case CmdBlock::kWhole:
      w.filed = true;
      cmd_on_whole_.push_back(seq);
      break;
    case CmdBlock::kName:
      w.filed = true;
      cmd_on_name_[*name].insert(seq);
      break;
    case CmdBlock::kNone:
      candidates_.insert(seq);
      break;
  }
}

void LockTable::WakeName(const std::string& name) {
  if (held_.contains(name)) return;  // taken again meanwhile: its next release wakes it
  // The first transaction in line for the name takes it next; the commands that arrived before
  // it run first, the later ones wait for its release.
  uint64_t next_tx = UINT64_MAX;
  if (auto q = tx_queue_.find(name); q != tx_queue_.end()) {
    uint64_t front = q->second.front();
    if (Grantable(front, waiters_.at(front))) {
      candidates_.insert(front);
      next_tx = front;
    }
  }
  if (auto c = cmd_on_name_.find(name); c != cmd_on_name_.end()) {
    auto& cmds = c->second;
    while (!cmds.empty() && *cmds.begin() < next_tx) {
      uint64_t seq = *cmds.begin();
      cmds.erase(cmds.begin());
      waiters_.at(seq).filed = false;
      candidates_.insert(seq);
    }
    if (cmds.empty()) cmd_on_name_.erase(c);
  }
}

void LockTable::WakeOwner(uint64_t owner) {
  auto o = owners_.find(owner);
  if (o == owners_.end()) return;
  // Its client's first now: unless it waits for a key or the whole holder already (whose release
  // wakes it), file it or make it a candidate.
  if (!waiters_.at(o->second.front()).filed) PlaceCmd(o->second.front());
}

void LockTable::WakeAll() {
  std::vector<uint64_t> cmds;
  cmds.swap(cmd_on_whole_);
  for (uint64_t seq : cmds) {
    waiters_.at(seq).filed = false;
    candidates_.insert(seq);
  }
  for (auto& [name, q] : tx_queue_) {
    uint64_t front = q.front();
    if (Grantable(front, waiters_.at(front))) candidates_.insert(front);
  }
}

void LockTable::Grant(uint64_t seq) {
  auto it = waiters_.find(seq);
  Waiter w = std::move(it->second);
  waiters_.erase(it);
  for (const auto& n : w.names) {
    auto q = tx_queue_.find(n);
    q->second.pop_front();  // it was at the front (Grantable)
    if (q->second.empty()) tx_queue_.erase(q);
    held_[n] = w.tx;
  }
  if (w.whole) {
    whole_holder_ = w.tx;
    whole_waiting_.erase(seq);
  }
  tx_waiting_.erase(seq);
  w.run();
}

void LockTable::RunCmd(uint64_t seq) {
  auto it = waiters_.find(seq);
  Waiter w = std::move(it->second);
  waiters_.erase(it);
  if (w.owner) {
    auto o = owners_.find(w.owner);
    o->second.pop_front();  // it was its client's first (CmdBlockedBy)
    if (o->second.empty()) {
      owners_.erase(o);
    } else {
      woken_owners_.push_back(w.owner);
    }
  }
  w.run();
}

void LockTable::Drain() {
  if (draining_) return;  // called from work run below: the loop picks up what it changed
  draining_ = true;
  for (;;) {
    if (woken_all_) {
      woken_all_ = false;
      WakeAll();
    }
    while (!woken_names_.empty()) {
      std::string n = std::move(woken_names_.back());
      woken_names_.pop_back();
      WakeName(n);
    }
    while (!woken_owners_.empty()) {
      uint64_t o = woken_owners_.back();
      woken_owners_.pop_back();
      WakeOwner(o);
    }
    // A whole-shard waiter may be next once keys were released or earlier waiters went.
    if (!whole_waiting_.empty()) {
      uint64_t w = *whole_waiting_.begin();
      if (*tx_waiting_.begin() == w && Grantable(w, waiters_.at(w))) candidates_.insert(w);
    }
    if (candidates_.empty()) break;
    // The earliest arrival first, and looked at again now: what ran before it may have taken a
    // lock it needs (it is then filed under that lock, whose release wakes it).
    uint64_t seq = *candidates_.begin();
    candidates_.erase(candidates_.begin());
    auto it = waiters_.find(seq);
    if (it == waiters_.end()) continue;
    if (it->second.tx) {
      if (Grantable(seq, it->second)) {
        Grant(seq);
      } else {
        // Something that ran before it took a lock it needs. The commands on its free names
        // that were left waiting for it to take them can go now.
        for (const auto& n : it->second.names) woken_names_.push_back(n);
      }
      continue;
    }
    if (it->second.filed) continue;  // waits for a key or the whole holder again: woken there
    const std::string* name = nullptr;
    if (CmdBlockedBy(seq, it->second, &name) == CmdBlock::kNone) {
      RunCmd(seq);
    } else {
      PlaceCmd(seq);
    }
  }
  draining_ = false;
#ifndef NDEBUG
  // Every drain while few wait; with a crowd, every 64th (a wake-up lost stays lost, so the
  // check still finds it), keeping debug builds linear too.
  if (waiters_.size() <= 64 || ++drains_ % 64 == 0) CheckInvariants();
#endif
}

// After a drain nothing that can run may still wait: waiting work that nothing will wake is a
// shard wedged for good. Checked in debug builds (and so the ASan build), at a cost proportional
// to the names and clients waited on; a broken invariant aborts with the table's state.
void LockTable::CheckInvariants() const {
  const uint64_t examined = examined_;  // these looks are not the table's work
  std::string why;
  for (auto& [name, q] : tx_queue_) {
    if (q.empty())
      why = "an empty transaction queue";
    else if (Grantable(q.front(), waiters_.at(q.front())))
      why = absl::StrCat("transaction waiter ", q.front(), " can be granted but was not woken");
  }
  for (auto& [name, cmds] : cmd_on_name_) {
    if (!cmds.empty() && !held_.contains(name) && !whole_holder_) {
      why = absl::StrCat("commands wait for '", absl::CEscape(name), "', which nobody holds");
    }
  }
  if (!cmd_on_whole_.empty() && !whole_holder_) why = "commands wait for a whole-shard holder";
  for (auto& [owner, q] : owners_) {
    const std::string* name = nullptr;
    if (q.empty()) {
      why = "an empty client queue";
    } else if (CmdBlockedBy(q.front(), waiters_.at(q.front()), &name) == CmdBlock::kNone) {
      why = absl::StrCat("client ", owner, "'s first waiting command can run but was not woken");
    }
  }
  if (!whole_waiting_.empty()) {
    uint64_t w = *whole_waiting_.begin();
    if (*tx_waiting_.begin() == w && Grantable(w, waiters_.at(w))) {
      why = "a whole-shard waiter can be granted but was not woken";
    }
  }
  examined_ = examined;
  if (why.empty()) return;
  std::fprintf(stderr, "LockTable invariant broken: %s\n%s\n", why.c_str(), DebugString().c_str());
  std::abort();
}

std::string LockTable::DebugString() const {
  std::string s = absl::StrCat("held ", held_.size(), ", whole holder ", whole_holder_,
                               ", waiters ", waiters_.size(), "\n");
  size_t shown = 0;
  for (auto& [name, tx] : held_) {
    if (shown++ == 32) break;
    absl::StrAppend(&s, "  held '", absl::CEscape(name), "' by tx ", tx, "\n");
  }
  shown = 0;
  for (auto& [seq, w] : waiters_) {
    if (shown++ == 32) break;
    absl::StrAppend(&s, "  waiter ", seq, ": tx ", w.tx, w.whole ? " whole" : "", " owner ",
                    w.owner, " names");
    for (auto& n : w.names) absl::StrAppend(&s, " '", absl::CEscape(n), "'");
    absl::StrAppend(&s, "\n");
  }
  return s;
}

}  // namespace deadbolt::server
