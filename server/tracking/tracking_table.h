#pragma once
// Client-side caching (CLIENT TRACKING): which clients may hold which keys of one shard in their
// caches, the clients that asked for every change under a prefix (BCAST), and the invalidations
// the shard's changes owe them.

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shard/db.h"

namespace deadbolt::shard {
class Shard;
}

namespace deadbolt::server {

// A tracking client: its id and the reactor that owns its connection (where its invalidations
// are delivered).
struct Tracker {
  uint64_t client = 0;
  int reactor = 0;
};

// Keys a shard's changes invalidated for one client in default mode, and for each the client
// whose command changed it (0: none, an expiry or an eviction), for NOLOOP.
struct KeyInvalidation {
  Tracker to;
  std::vector<std::pair<std::string, uint64_t>> keys;
};

// Keys changed under a BCAST prefix since the last delivery, sorted, each with its last writer,
// for every client that registered the prefix.
struct PrefixInvalidation {
  std::string prefix;
  std::vector<Tracker> to;
  std::vector<std::pair<std::string, uint64_t>> keys;
};

// Owned by one reactor thread, the shard's. Observes the shard's databases only while it tracks
// a key or a prefix, so a server where no client tracks pays nothing. As Redis, a key is tracked
// by name whatever its database, and an entry is dropped once its invalidation is owed (the
// client reads the key again to be told again). A client that turns tracking off or goes away
// keeps its entries until they fire: its reactor drops what reaches it then.
class TrackingTable {
 public:
  explicit TrackingTable(shard::Shard* shard);
  ~TrackingTable();
  TrackingTable(const TrackingTable&) = delete;
  TrackingTable& operator=(const TrackingTable&) = delete;

  // Default mode: `t` read `key` and may cache it.
  void Remember(std::string_view key, Tracker t);
  // BCAST: `t` hears of every change to a key starting with `prefix` ("" for all keys).
  void AddPrefix(std::string_view prefix, Tracker t);
  // BCAST off for `client`: its prefixes here are forgotten (all, or one).
  void RemovePrefixes(uint64_t client);
  void RemovePrefix(uint64_t client, std::string_view prefix);
  // The client whose command runs now (0 when none): a change is noted as its (NOLOOP).
  void set_writer(uint64_t client) { writer_ = client; }
  // Over `max_keys` keys (0: no limit), forgets keys as if they changed until under it again,
  // at most `effort` of them, as Redis's tracking-table-max-keys.
  void Limit(size_t max_keys, size_t effort = 100);

  // What the changes so far owe, taken by the reactor to deliver.
  bool owes() const { return !owed_keys_.empty() || prefixes_owe_ || recheck_; }
  std::vector<KeyInvalidation> TakeKeyInvalidations();
  std::vector<PrefixInvalidation> TakePrefixInvalidations();

  size_t keys() const { return keys_.size(); }  // INFO's tracking_total_keys
  size_t items() const { return items_; }       // INFO's tracking_total_items (key, client pairs)
  size_t prefixes() const { return prefixes_.size(); }  // INFO's tracking_total_prefixes

 private:
  struct DbObserver : shard::KeyObserver {
    explicit DbObserver(TrackingTable* t) : table(t) {}
    void OnKeyChanged(std::string_view key) override { table->Changed(key); }
    // A flush forgets every key (FLUSHALL and FLUSHDB tell every tracking client that all its
    // keys are invalid instead), and is not told key by key.
    bool OnFlush() override {
      table->ForgetKeys();
      return false;
    }
    TrackingTable* table;
  };
  // A BCAST prefix: who registered it, and what changed under it since the last delivery.
  struct Prefix {
    std::vector<Tracker> clients;
    absl::flat_hash_map<std::string, uint64_t> changed;  // key -> its last writer
  };
  // A key changed (or is forgotten as if it had): what it owes.
  void Changed(std::string_view key);
  void Invalidate(std::string_view key, uint64_t writer);
  // Every key is forgotten without an invalidation (a flush: FLUSHALL and FLUSHDB tell every
  // tracking client that all its keys are invalid instead). Called from an observer, so the
  // observers are updated only when what is owed is taken.
  void ForgetKeys();
  // Observes every database while anything is tracked; stops once nothing is (never from inside
  // an observer's call).
  void UpdateObserving();

  shard::Shard* shard_;
  std::vector<std::unique_ptr<DbObserver>> observers_;  // one per database, while observing
  absl::flat_hash_map<std::string, std::vector<Tracker>> keys_;
  size_t items_ = 0;
  // Limit's order: keys in the order they were first remembered; entries of keys forgotten since
  // are skipped (and dropped when they outnumber the live ones).
  std::deque<std::string> order_;
  absl::flat_hash_map<std::string, Prefix> prefixes_;
  bool prefixes_owe_ = false;  // some prefix has a change to deliver
  uint64_t writer_ = 0;
  bool recheck_ = false;  // ForgetKeys ran: whether to go on observing is decided at the take
  // Owed, by client.
  absl::flat_hash_map<uint64_t, KeyInvalidation> owed_keys_;
};

}  // namespace deadbolt::server
