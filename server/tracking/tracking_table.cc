#include "server/tracking/tracking_table.h"

#include <algorithm>

#include "shard/shard.h"

namespace deadbolt::server {

TrackingTable::TrackingTable(shard::Shard* shard) : shard_(shard) {}

TrackingTable::~TrackingTable() {
  for (size_t i = 0; i < observers_.size(); i++) {
    shard_->db(static_cast<int>(i)).RemoveObserver(observers_[i].get());
  }
}

void TrackingTable::UpdateObserving() {
  const bool want = !keys_.empty() || !prefixes_.empty();
  if (want == !observers_.empty()) return;
  if (want) {
    for (int i = 0; i < shard_->num_dbs(); i++) {
      observers_.push_back(std::make_unique<DbObserver>(this));
      shard_->db(i).AddObserver(observers_.back().get());
    }
  } else {
    for (size_t i = 0; i < observers_.size(); i++) {
      shard_->db(static_cast<int>(i)).RemoveObserver(observers_[i].get());
    }
    observers_.clear();
  }
}

namespace {
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }
}  // namespace

void TrackingTable::Remember(std::string_view key, Tracker t) {
  auto [it, added] = keys_.try_emplace(AV(key));
  std::vector<Tracker>& v = it->second;
  for (Tracker& x : v) {
    if (x.client == t.client) {
      x.reactor = t.reactor;
      return;
    }
  }
  v.push_back(t);
  items_++;
  if (added) {
    order_.emplace_back(key);
    UpdateObserving();
  }
}

void TrackingTable::AddPrefix(std::string_view prefix, Tracker t) {
  std::vector<Tracker>& clients = prefixes_[AV(prefix)].clients;
  for (const Tracker& x : clients) {
    if (x.client == t.client) return;
  }
  clients.push_back(t);
  UpdateObserving();
}

void TrackingTable::RemovePrefixes(uint64_t client) {
  for (auto it = prefixes_.begin(); it != prefixes_.end();) {
    std::erase_if(it->second.clients, [&](const Tracker& t) { return t.client == client; });
    if (it->second.clients.empty()) {
      prefixes_.erase(it++);
    } else {
      ++it;
    }
  }
  UpdateObserving();
}

void TrackingTable::RemovePrefix(uint64_t client, std::string_view prefix) {
  auto it = prefixes_.find(AV(prefix));
  if (it == prefixes_.end()) return;
  std::erase_if(it->second.clients, [&](const Tracker& t) { return t.client == client; });
  if (it->second.clients.empty()) prefixes_.erase(it);
  UpdateObserving();
}

void TrackingTable::ForgetKeys() {
  items_ = 0;
  keys_.clear();
  order_.clear();
  recheck_ = true;
}

void TrackingTable::Changed(std::string_view key) {
  // As Redis, every prefix is looked at (a client's own never overlap; others' may).
  for (auto& [prefix, state] : prefixes_) {
    if (!key.starts_with(std::string_view(prefix.data(), prefix.size()))) continue;
    state.changed[AV(key)] = writer_;
    prefixes_owe_ = true;
  }
  Invalidate(key, writer_);
}

void TrackingTable::Invalidate(std::string_view key, uint64_t writer) {
  auto it = keys_.find(AV(key));
  if (it == keys_.end()) return;
  for (const Tracker& t : it->second) {
    KeyInvalidation& k = owed_keys_[t.client];
    k.to = t;
    k.keys.emplace_back(std::string(key), writer);
  }
  items_ -= it->second.size();
  keys_.erase(it);
  // Its entry in order_ stays until Limit meets it. Observers stay until the reactor takes what
  // is owed (never removed from inside one's call).
}

void TrackingTable::Limit(size_t max_keys, size_t effort) {
  while (max_keys != 0 && keys_.size() > max_keys && effort > 0 && !order_.empty()) {
    const std::string key = std::move(order_.front());
    order_.pop_front();
    if (keys_.contains(AV(key))) {
      Invalidate(key, 0);
      effort--;
    }
  }
  // Entries of keys forgotten since they were remembered: dropped once they are most of it.
  if (order_.size() > 2 * keys_.size() + 1024) {
    std::erase_if(order_, [&](const std::string& k) { return !keys_.contains(AV(k)); });
  }
  UpdateObserving();
}

std::vector<KeyInvalidation> TrackingTable::TakeKeyInvalidations() {
  std::vector<KeyInvalidation> out;
  out.reserve(owed_keys_.size());
  for (auto& [client, k] : owed_keys_) out.push_back(std::move(k));
  owed_keys_.clear();
  recheck_ = false;
  UpdateObserving();
  return out;
}

std::vector<PrefixInvalidation> TrackingTable::TakePrefixInvalidations() {
  std::vector<PrefixInvalidation> out;
  if (!prefixes_owe_) return out;
  for (auto& [prefix, state] : prefixes_) {
    if (state.changed.empty()) continue;
    PrefixInvalidation p{prefix, state.clients, {}};
    p.keys.assign(state.changed.begin(), state.changed.end());
    std::sort(p.keys.begin(), p.keys.end());
    state.changed.clear();
    out.push_back(std::move(p));
  }
  prefixes_owe_ = false;
  return out;
}

}  // namespace deadbolt::server
