#pragma once
// The whole server: its reactors and the facts they share.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/acl/acl.h"
#include "server/base/config.h"
#include "server/cmdtable/journal_health.h"
#include "server/cmdtable/restart_delay.h"
#include "shard/base/slot.h"

namespace deadbolt::server {

class Reactor;
class CommandTable;
class TlsContext;  // server/tls/tls.h

inline constexpr const char* kVersion = "7.2.0";  // the Redis version deadbolt speaks as
inline constexpr const char* kDeadboltVersion = "0.1.0";

// Created and started by the main thread; after Start() its fields are read-only except the
// atomics, so every reactor may read it without locks.
class Server {
 public:
  explicit Server(const Config& config);
  ~Server();

  // Main thread. Returns an error message when the server cannot start.
  std::optional<std::string> Start();
  // --aclfile (or the default user alone) into initial_users(); an error stops the start.
  std::optional<std::string> LoadUsers();
  // Main thread: blocks until every reactor has stopped.
  void Wait();
  // Any thread, async-signal-safe.
  void RequestShutdown();

  int num_shards() const { return static_cast<int>(reactors_.size()); }
  Reactor& reactor(int i) { return *reactors_[i]; }
  // One shard owns everything: no need to hash the key (13% of a P64 acquire's CPU).
  int ShardOf(std::string_view key) const {
    return single_shard_ ? 0 : ShardOfSlot(shard::KeySlot(key));
  }
  // Arithmetic rather than a table: a 32 KB slot -> shard table missed the cache on every
  // command with keys spread over the slots (the hash table's misses evict it).
  int ShardOfSlot(uint16_t slot) const { return OwnerOfSlot(slot, shards_); }
  // The shard owning a key when there are num_shards (slots split into contiguous ranges, as a
  // cluster splits them over nodes). The journal's loader uses it for another layout.
  static int SlotOwner(std::string_view key, int num_shards) {
    return num_shards == 1 ? 0 : OwnerOfSlot(shard::KeySlot(key), num_shards);
  }
  static int OwnerOfSlot(int slot, int num_shards) {
    static_assert((shard::kNumSlots & (shard::kNumSlots - 1)) == 0);
    return static_cast<int>((uint32_t(slot) * uint32_t(num_shards)) / shard::kNumSlots);
  }
  // One reactor: every key is on shard 0.
  bool single_shard() const { return single_shard_; }
  const Config& initial_config() const { return config_; }

  uint64_t NextClientId() { return next_client_id_.fetch_add(1, std::memory_order_relaxed); }
  std::atomic<int64_t>& connected_clients() { return connected_clients_; }
  // Any thread: the id of a new SLOWLOG entry (increasing across all reactors' slow logs).
  // MONITOR clients on all reactors (Reactor::SetMonitor keeps each reactor's copy of "any").
  std::atomic<int>& monitors() { return monitors_; }
  uint64_t NextSlowlogId() { return next_slowlog_id_.fetch_add(1, std::memory_order_relaxed); }
  int64_t start_time_ms() const { return start_time_ms_; }
  // LASTSAVE: the unix time (s) of the oldest of the shards' last snapshots, a journal rewrite
  // that replaced the journal (or the start, whose load writes each shard a fresh journal).
  // Each entry is written by its shard's reactor only.
  void NoteSaved(int shard, int64_t unix_s) {
    last_save_s_[shard].store(unix_s, std::memory_order_relaxed);
  }
  int64_t LastSave() const;
  const std::string& run_id() const { return run_id_; }
  // --restart-delay, counted from when Start() began serving.
  const RestartDelay& restart_delay() const { return restart_delay_; }
  // The users at start (the default user from --requirepass, then --aclfile); each reactor
  // starts with a copy. Main thread, before the reactors start.
  const acl::Users& initial_users() const { return initial_users_; }
  // Whether every shard's journal can be written (MISCONF refusals otherwise).
  JournalHealth& journal_health() { return *journal_health_; }
  // --tls-port's settings as loaded by Start; null without a TLS port. Each reactor copies the
  // pointer when built and from then on uses its own copy (CONFIG SET tls-* replaces a reactor's
  // copy by a message, Reactor::set_tls_context); this one is never changed once reactors run.
  const std::shared_ptr<const TlsContext>& tls_context() const { return tls_context_; }

 private:
  Config config_;
  std::vector<std::unique_ptr<Reactor>> reactors_;
  std::vector<int> allowed_cpus_;  // the CPUs the process may use, at start
  int shards_ = 1;                 // config_.threads, once known
  bool single_shard_ = false;
  std::atomic<uint64_t> next_client_id_{1};
  std::atomic<int64_t> connected_clients_{0};
  std::atomic<uint64_t> next_slowlog_id_{0};
  std::atomic<int> monitors_{0};
  int64_t start_time_ms_ = 0;
  std::unique_ptr<std::atomic<int64_t>[]> last_save_s_;  // per shard
  std::string run_id_;
  RestartDelay restart_delay_;
  acl::Users initial_users_;
  std::unique_ptr<JournalHealth> journal_health_;
  std::shared_ptr<const TlsContext> tls_context_;
};

}  // namespace deadbolt::server
