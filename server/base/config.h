#pragma once
// Server settings: command-line flags, CONFIG GET and CONFIG SET.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/output_limit.h"

namespace deadbolt::server {

// A plain value. The main thread parses it from the command line; every reactor then keeps its
// own copy, and CONFIG SET sends the change to every reactor as a message, so no thread ever
// reads a Config that another thread writes.
struct Config {
  int port = 6379;
  std::string bind = "127.0.0.1";
  int threads = 0;  // 0: one per core
  std::string requirepass;
  // --aclfile: users loaded at start and by ACL LOAD, written by ACL SAVE (server/acl/).
  std::string aclfile;
  // protected-mode, as Redis: with no password, clients not on the loopback interface are
  // refused at accept with Redis's DENIED text (ProtectedModeRefuses, server/cmdtable/peer_policy.h).
  bool protected_mode = true;
  int databases = 16;
  int64_t proto_max_bulk_len = 512LL * 1024 * 1024;
  int64_t max_multibulk_len = 1024 * 1024;
  int64_t client_query_buffer_limit = 1024LL * 1024 * 1024;
  int64_t maxclients = 10000;
  // maxmemory (0: none): over it, with the noeviction policy, commands that may grow the data
  // are refused with OOM; with another policy, every command first evicts keys from the shard
  // of the reactor that runs it (volatile-ttl: keys with a TTL, soonest-to-expire first;
  // volatile-lru / allkeys-lru: the least recently used keys with a TTL / of all;
  // volatile-random / allkeys-random: random ones), and is refused only when no shard has one
  // the policy may evict left (server/cmdtable/memory_limit.h).
  int64_t maxmemory = 0;
  enum class MaxmemoryPolicy : uint8_t {
    kNoEviction,
    kVolatileTtl,
    kVolatileLru,
    kAllkeysLru,
    kVolatileRandom,
    kAllkeysRandom,
  };
  MaxmemoryPolicy maxmemory_policy = MaxmemoryPolicy::kNoEviction;
  int maxmemory_samples = 5;  // keys sampled per db and eviction (Redis's default)
  // client-output-buffer-limit: unread replies a client may leave, per class (output_limit.h).
  OutputBufferLimits client_output_buffer_limit;
  // maxmemory-clients, as Redis: bytes (> 0), a percentage of maxmemory (stored negated: -10 is
  // "10%") or 0 (off). Over it, clients are evicted, biggest first (ClientEvictionLimit,
  // ClientMemoryBoard in output_limit.h; Reactor::CheckClientMemory).
  int64_t maxmemory_clients = 0;
  int hz = 100;          // active-expiry ticks per second, per reactor
  int64_t timeout = 0;   // idle client timeout in seconds (0: never)
  // busy-reply-threshold (alias lua-time-limit): a Lua script running longer than this makes
  // other clients get BUSY for its shard, and SCRIPT KILL may stop it (server/cmdtable/script_busy.h).
  int64_t busy_reply_threshold_ms = 5000;
  // lua-memory-limit: the most a reactor's Lua interpreter may hold while running scripts (0: no
  // limit); a script that needs more fails with "ERR not enough memory" (server/lua/README.md).
  int64_t lua_memory_limit = 512LL * 1024 * 1024;
  std::string loglevel = "notice";
  // --pin: whether reactor i runs only on the i-th CPU the process may use. kAuto pins only
  // when the reactors leave one of those CPUs free: when every CPU has a reactor, anything
  // else busy on the machine (the application, a load generator) must share a core with one,
  // and a pinned reactor cannot move to the core that has just gone idle. On this 2-core
  // machine shared with redis-benchmark, pinned reactors lost 40% of its throughput at P1
  // (bench/RESULTS.md); with a core left free, pinning won.
  enum class Pin : uint8_t { kAuto, kYes, kNo };
  Pin pin = Pin::kAuto;
  // A reactor that exchanged cross-reactor messages in a turn polls its inbox for this long
  // before it sleeps: a message that comes within the window costs no wake-up. Off by default:
  // on a 2-core machine shared with the load it cost more CPU per op than the wake-ups it
  // saved, at P1 and P16 alike (bench/RESULTS.md).
  int spin_us = 0;
  // tracking-table-max-keys: at most this many keys remembered for CLIENT TRACKING over the
  // shards (each holds its share); past it keys are invalidated as if changed. 0: no limit.
  int64_t tracking_table_max_keys = 1000000;
  // What a pipeline's order promises (docs/ARCHITECTURE.md). kSent, the default, as Redis:
  // others see its effects in the order sent. kKey: only commands on the same key keep their
  // order, so commands for different shards run at once; replies still leave in order.
  enum class PipelineOrder : uint8_t { kSent, kKey };
  PipelineOrder pipeline_order = PipelineOrder::kSent;
  // --move-connections: a connection whose keys keep landing on another reactor's shard moves
  // to that reactor (Connection::NotePlace), so a client that uses one hash tag, or one
  // tenant's keys, runs every command locally wherever it was accepted.
  bool move_connections = true;
  // --restart-delay: lock acquisitions are refused for this many ms after start
  // (server/cmdtable/restart_delay.h).
  int64_t restart_delay_ms = 0;

  // --- persistence: the journal (server/core/journal.h) ---
  enum class Fsync : uint8_t { kAlways, kEverySec, kNo };
  bool appendonly = false;
  Fsync appendfsync = Fsync::kEverySec;
  std::string dir = ".";                           // where the journal files live
  int64_t auto_aof_rewrite_percentage = 100;       // rewrite when grown by this % since the last
  int64_t auto_aof_rewrite_min_size = 64LL << 20;  // ... and at least this big
  bool aof_load_truncated = true;  // a torn last frame: drop it with a warning (no: refuse)
  bool aof_load_damaged = false;   // damage mid-file: load what precedes it (no: refuse)

  // --- introspection: SLOWLOG, INFO latencystats, LATENCY, DEBUG ---
  int64_t slowlog_log_slower_than = 10000;  // microseconds; negative: off, 0: every command
  int64_t slowlog_max_len = 128;
  bool latency_tracking = true;  // per-command histograms (INFO latencystats)
  std::vector<double> latency_tracking_info_percentiles = {50, 99, 99.9};
  int64_t latency_monitor_threshold = 0;  // milliseconds; 0: LATENCY records nothing
  // DEBUG: "no", "local" (from loopback connections only) or "yes"; fixed at start, as Redis's.
  std::string enable_debug_command = "no";

  // --- TLS (server/tls/): a second listener on tls_port (0: none, fixed at start); the rest
  // may be changed by CONFIG SET, which builds a new context (IsTlsContextSetting) ---
  int tls_port = 0;
  std::string tls_cert_file, tls_key_file, tls_ca_cert_file;
  std::string tls_auth_clients = "yes";  // yes, no or optional
  std::string tls_protocols;             // "TLSv1.2 TLSv1.3" (empty: those two)
  std::string tls_ciphersuites;          // TLSv1.3 suites (empty: OpenSSL's default)
  std::string tls_ciphers;               // TLSv1.2 and older (empty: OpenSSL's default)

  // Values CONFIG SET gave to the parameters that have no effect here (NoEffectParams).
  std::map<std::string, std::string> no_effect;

  // Parses argv. On error returns a message for the user.
  static std::optional<std::string> ParseArgs(int argc, char** argv, Config* out);
  static std::string Usage();

  // CONFIG SET: validates and applies one setting. Returns an error text (Redis's wording) or
  // nothing.
  std::optional<std::string> Set(std::string_view name, std::string_view value);
  // CONFIG GET: every (name, value) whose name matches the glob pattern.
  std::vector<std::pair<std::string, std::string>> Get(std::string_view pattern) const;
};

const char* FsyncName(Config::Fsync f);
const char* MaxmemoryPolicyName(Config::MaxmemoryPolicy p);

// The CPU each of `threads` reactors is pinned to (-1: not pinned) under `pin`, given the CPUs
// the process may use (sched_getaffinity), in order.
std::vector<int> ReactorCpus(Config::Pin pin, int threads, const std::vector<int>& allowed);

// Redis 7.0's parameters that deadbolt accepts and reports but that change nothing, with their
// defaults (redis_params.cc; listed in README.md).
const std::vector<std::pair<const char*, const char*>>& NoEffectParams();

// Whether CONFIG SET of `name` must build a new TLS context: tls-cert-file, tls-key-file,
// tls-ca-cert-file, tls-auth-clients, tls-protocols, tls-ciphersuites, tls-ciphers.
bool IsTlsContextSetting(std::string_view name);

// "512mb", "1gb", "100k", "42" -> bytes, as Redis's memtoull. nullopt if malformed.
std::optional<int64_t> ParseMemory(std::string_view s);

}  // namespace deadbolt::server
