#pragma once
// WATCH: which connections watch which keys of this shard, told when a key changes.

#include <absl/container/flat_hash_map.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shard/db.h"

namespace deadbolt::shard {
class Shard;
}

namespace deadbolt::server {

// Shared by one connection (which reads it at EXEC) and the shards holding its watched keys
// (which set it when one changes). Set once, never cleared: UNWATCH makes a new one.
struct WatchFlag {
  std::atomic<bool> dirty{false};
};

// Owned by one reactor thread. Observes a Db only while someone watches one of its keys, so an
// unwatched keyspace pays nothing.
class WatchTable {
 public:
  explicit WatchTable(shard::Shard* shard) : shard_(shard) {}
  ~WatchTable();
  void Add(int db, std::string key, std::shared_ptr<WatchFlag> flag);
  void Remove(int db, std::string_view key, const WatchFlag* flag);
  size_t size() const;

 private:
  struct DbWatch : shard::KeyObserver {
    void OnKeyChanged(std::string_view key) override;
    absl::flat_hash_map<std::string, std::vector<std::shared_ptr<WatchFlag>>> keys;
  };
  DbWatch& For(int db);

  shard::Shard* shard_;
  std::vector<std::unique_ptr<DbWatch>> dbs_;
};

}  // namespace deadbolt::server
