#include "server/tracking/tracking_table.h"

#include <absl/container/flat_hash_set.h>

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

void TrackingTable::Remember(std::string_view key, Tracker t) {
  auto [it, added] = keys_.try_emplace(absl::string_view(key.data(), key.size()));
  std::vector<Tracker>& v = it->second;
  for (const Tracker& x : v) {
    if (x.client == t.client) {
      if (x.reactor == t.reactor) return;
    }
  }
  v.push_back(t);
  items_++;
  if (added) UpdateObserving();
}

void TrackingTable::AddPrefix(std::string_view prefix, Tracker t) {
  for (const Prefix& p : prefixes_) {
    if (p.to.client == t.client && p.prefix == prefix) return;
  }
  prefixes_.push_back({std::string(prefix), t});
  UpdateObserving();
}

void TrackingTable::RemovePrefixes(uint64_t client) {
  std::erase_if(prefixes_, [&](const Prefix& p) { return p.to.client == client; });
  UpdateObserving();
}

void TrackingTable::RemovePrefix(uint64_t client, std::string_view prefix) {
  std::erase_if(prefixes_,
                [&](const Prefix& p) { return p.to.client == client && p.prefix == prefix; });
  UpdateObserving();
}

size_t TrackingTable::prefixes() const {
  absl::flat_hash_set<absl::string_view> distinct;
  for (const Prefix& p : prefixes_) distinct.insert(absl::string_view(p.prefix));
  return distinct.size();
}

void TrackingTable::Clear() {
  ForgetKeys();
  UpdateObserving();
}

void TrackingTable::ForgetKeys() {
  items_ = 0;
  keys_.clear();
  recheck_ = true;
}

void TrackingTable::Changed(std::string_view key) {
  for (const Prefix& p : prefixes_) {
    if (!key.starts_with(p.prefix)) continue;
    Owed* o = nullptr;
    for (Owed& x : owed_prefixes_) {
      if (x.to.client == p.to.client && x.prefix == p.prefix) o = &x;
    }
    if (o == nullptr) {
      owed_prefixes_.push_back({p.to, p.prefix, {}});
      o = &owed_prefixes_.back();
    }
    o->keys[absl::string_view(key.data(), key.size())] = writer_;
  }
  Invalidate(key, writer_);
}

void TrackingTable::Invalidate(std::string_view key, uint64_t writer) {
  auto it = keys_.find(absl::string_view(key.data(), key.size()));
  if (it == keys_.end()) return;
  for (const Tracker& t : it->second) {
    KeyInvalidation& k = owed_keys_[t.client];
    k.to = t;
    k.keys.emplace_back(std::string(key), writer);
  }
  items_ -= it->second.size();
  keys_.erase(it);
  // Observers stay until the reactor takes what is owed (never removed from inside one's call).
}

void TrackingTable::Limit(size_t max_keys, size_t effort) {
  while (max_keys != 0 && keys_.size() > max_keys && effort-- > 0) {
    const std::string key = keys_.begin()->first;
    Invalidate(key, 0);
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
  out.reserve(owed_prefixes_.size());
  for (Owed& o : owed_prefixes_) {
    PrefixInvalidation p{o.to, std::move(o.prefix), {}};
    p.keys.assign(o.keys.begin(), o.keys.end());
    std::sort(p.keys.begin(), p.keys.end());
    out.push_back(std::move(p));
  }
  owed_prefixes_.clear();
  return out;
}

}  // namespace deadbolt::server
