#include "server/txn/watch_table.h"

#include <algorithm>

#include "shard/shard.h"

namespace deadbolt::server {

WatchTable::~WatchTable() {
  for (size_t i = 0; i < dbs_.size(); i++) {
    // Observing only while it watches a key of that db.
    if (dbs_[i] && !dbs_[i]->keys.empty()) {
      shard_->db(static_cast<int>(i)).RemoveObserver(dbs_[i].get());
    }
  }
}

WatchTable::DbWatch& WatchTable::For(int db) {
  if (dbs_.size() <= static_cast<size_t>(db)) dbs_.resize(db + 1);
  if (!dbs_[db]) dbs_[db] = std::make_unique<DbWatch>();
  return *dbs_[db];
}

void WatchTable::Add(int db, std::string key, std::shared_ptr<WatchFlag> flag) {
  DbWatch& w = For(db);
  if (w.keys.empty()) shard_->db(db).AddObserver(&w);
  w.keys[std::move(key)].push_back(std::move(flag));
}

void WatchTable::Remove(int db, std::string_view key, const WatchFlag* flag) {
  if (dbs_.size() <= static_cast<size_t>(db) || !dbs_[db]) return;
  DbWatch& w = *dbs_[db];
  auto it = w.keys.find(absl::string_view(key.data(), key.size()));
  if (it == w.keys.end()) return;
  auto& v = it->second;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& f) { return f.get() == flag; }),
          v.end());
  if (v.empty()) w.keys.erase(it);
  if (w.keys.empty()) shard_->db(db).RemoveObserver(&w);
}

size_t WatchTable::size() const {
  size_t n = 0;
  for (const auto& d : dbs_) n += d ? d->keys.size() : 0;
  return n;
}

void WatchTable::DbWatch::OnKeyChanged(std::string_view key) {
  auto it = keys.find(absl::string_view(key.data(), key.size()));
  if (it == keys.end()) return;
  for (const auto& f : it->second) f->dirty.store(true, std::memory_order_relaxed);
}

}  // namespace deadbolt::server
