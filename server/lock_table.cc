#include "server/lock_table.h"

namespace deadbolt::server {

std::string LockTable::Name(int db, std::string_view key) {
  std::string n;
  n.reserve(key.size() + 2);
  n.push_back(static_cast<char>(db & 0xff));
  n.push_back(static_cast<char>((db >> 8) & 0xff));
  n.append(key);
  return n;
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
  if (whole_holder_ && whole_holder_ != tx) return false;
  // Fairness: give way to transactions that waited first. A newcomer yields to every waiting
  // one; a waiting one being retried yields only to those ahead of it in the queue, which are
  // the ones that have parked again during this round.
  const auto& ahead = retrying_ ? round_wanted_ : wanted_;
  const int whole_ahead = retrying_ ? round_whole_wanted_ : whole_wanted_;
  if (whole) {
    for (auto& [name, holder] : held_) {
      if (holder != tx) return false;
    }
    if (!ahead.empty() || whole_ahead > 0) return false;
    whole_holder_ = tx;
    return true;
  }
  if (whole_ahead > 0) return false;
  for (const auto& n : names) {
    auto it = held_.find(n);
    if (it != held_.end() && it->second != tx) return false;
    if (ahead.contains(n)) return false;
  }
  for (const auto& n : names) held_[n] = tx;
  return true;
}

void LockTable::Unlock(uint64_t tx, const std::vector<std::string>& names, bool whole) {
  if (whole && whole_holder_ == tx) whole_holder_ = 0;
  for (const auto& n : names) {
    auto it = held_.find(n);
    if (it != held_.end() && it->second == tx) held_.erase(it);
  }
  RunParked();
}

void LockTable::Park(std::vector<std::string> names, uint64_t owner,
                     absl::AnyInvocable<void()> retry) {
  if (owner) parked_owners_[owner]++;
  parked_.push_back(Parked{std::move(retry), 0, std::move(names), false, owner});
}

bool LockTable::StillBlocked(const Parked& p) const {
  if (whole_holder_ && whole_holder_ != p.tx) return true;
  if (p.owner && round_blocked_owners_.contains(p.owner)) return true;
  if (p.tx == 0) {
    for (const auto& n : p.names) {
      if (held_.contains(n)) return true;
    }
    return false;
  }
  if (round_whole_wanted_ > 0) return true;
  if (p.whole) return !held_.empty() || !round_wanted_.empty();
  for (const auto& n : p.names) {
    auto it = held_.find(n);
    if ((it != held_.end() && it->second != p.tx) || round_wanted_.contains(n)) return true;
  }
  return false;
}

void LockTable::ParkTx(uint64_t tx, const std::vector<std::string>& names, bool whole,
                       absl::AnyInvocable<void()> retry) {
  if (whole) {
    whole_wanted_++;
    if (in_round_) round_whole_wanted_++;
  } else {
    for (const auto& n : names) {
      wanted_[n]++;
      if (in_round_) round_wanted_[n]++;
    }
  }
  parked_.push_back(Parked{std::move(retry), tx, names, whole});
}

void LockTable::RunParked() {
  if (running_parked_) {  // an Unlock from inside a retry: run another round afterwards
    unlocked_in_round_ = true;
    return;
  }
  running_parked_ = true;
  do {
    unlocked_in_round_ = false;
    RunParkedRound();
  } while (unlocked_in_round_ && !parked_.empty());
  running_parked_ = false;
}

void LockTable::RunParkedRound() {
  // Each retry either runs or parks again (appending to parked_); retries that park again keep
  // their relative order. Work parked during this round is not retried in it.
  in_round_ = true;
  round_wanted_.clear();
  round_whole_wanted_ = 0;
  round_blocked_owners_.clear();
  size_t n = parked_.size();
  for (size_t i = 0; i < n && !parked_.empty(); i++) {
    Parked p = std::move(parked_.front());
    parked_.pop_front();
    if (StillBlocked(p)) {
      // Stays queued, in order; a blocked transaction keeps reserving its locks for this round.
      if (p.tx) {
        if (p.whole) {
          round_whole_wanted_++;
        } else {
          for (const auto& name : p.names) round_wanted_[name]++;
        }
      }
      if (p.owner) round_blocked_owners_[p.owner] = true;
      parked_.push_back(std::move(p));
      continue;
    }
    if (p.owner) {
      auto it = parked_owners_.find(p.owner);
      if (--it->second == 0) parked_owners_.erase(it);
    }
    if (p.tx) {
      if (p.whole) {
        whole_wanted_--;
      } else {
        for (const auto& name : p.names) {
          auto it = wanted_.find(name);
          if (--it->second == 0) wanted_.erase(it);
        }
      }
    }
    retrying_ = true;
    p.retry();
    retrying_ = false;
  }
  in_round_ = false;
  round_wanted_.clear();
  round_whole_wanted_ = 0;
  round_blocked_owners_.clear();
}

}  // namespace deadbolt::server
