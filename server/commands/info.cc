#include "server/commands/info.h"

#include <absl/strings/ascii.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>

#include "server/base/str_util.h"
#include "server/cmdtable/memory_limit.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/journal.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/pubsub/registry.h"

extern "C" void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs,
                                size_t* current_rss, size_t* peak_rss, size_t* current_commit,
                                size_t* peak_commit, size_t* page_faults) __attribute__((weak));

namespace deadbolt::server {
namespace {

struct Snapshot {
  ReactorStats stats;
  PubSubInfoPart pubsub;
  std::vector<std::pair<size_t, size_t>> dbs;  // keys, expires
  size_t clients = 0;
  size_t blocked_clients = 0;  // waiting in LOCK.ACQUIRE ... WAIT, counted where they wait
  // CLIENT TRACKING: clients that track, keys and (key, client) pairs remembered, and the
  // BCAST prefixes (every shard has all of them).
  size_t tracking_clients = 0;
  size_t tracking_keys = 0;
  size_t tracking_items = 0;
  size_t tracking_prefixes = 0;
  PubSubInfoTotals pubsub_totals;
  std::vector<JournalStats> journals;     // one per shard with the journal on
  std::vector<ReactorStats> per_reactor;  // INFO stats' reactor<i> lines
};

std::string Human(size_t bytes) {
  char buf[32];
  if (bytes < 1024) {
    snprintf(buf, sizeof(buf), "%zuB", bytes);
  } else if (bytes < 1024 * 1024) {
    snprintf(buf, sizeof(buf), "%.2fK", bytes / 1024.0);
  } else if (bytes < 1024ULL * 1024 * 1024) {
    snprintf(buf, sizeof(buf), "%.2fM", bytes / (1024.0 * 1024));
  } else {
    snprintf(buf, sizeof(buf), "%.2fG", bytes / (1024.0 * 1024 * 1024));
  }
  return buf;
}

bool Wants(const std::vector<std::string>& sections, std::string_view name, bool in_default) {
  if (sections.empty()) return in_default;
  for (auto& s : sections) {
    if (s == name || s == "all" || s == "everything" || (s == "default" && in_default)) {
      return true;
    }
  }
  return false;
}

std::string Format(const std::vector<std::string>& sections, Server& server, const Snapshot& snap,
                   const Config& config) {
  std::string out;
  auto section = [&](std::string_view name) {
    if (!out.empty()) out += "\r\n";
    absl::StrAppend(&out, "# ", AV(name), "\r\n");
  };
  int64_t now_ms = Reactor::Current()->now_ms();
  int64_t uptime = (now_ms - server.start_time_ms()) / 1000;
  if (Wants(sections, "server", true)) {
    utsname u;
    uname(&u);
    section("Server");
    absl::StrAppend(&out, "redis_version:", kVersion, "\r\n", "deadbolt_version:", kDeadboltVersion,
                    "\r\n", "redis_git_sha1:00000000\r\n", "redis_git_dirty:0\r\n",
                    "redis_mode:standalone\r\n", "os:", u.sysname, " ", u.release, " ", u.machine,
                    "\r\n", "arch_bits:64\r\n", "multiplexing_api:io_uring\r\n",
                    "process_id:", getpid(), "\r\n", "run_id:", server.run_id(), "\r\n",
                    "tcp_port:", config.port, "\r\n", "uptime_in_seconds:", uptime, "\r\n",
                    "uptime_in_days:", uptime / 86400, "\r\n", "hz:", config.hz, "\r\n",
                    "io_threads_active:0\r\n", "reactor_threads:", server.num_shards(), "\r\n");
    // --restart-delay, and how long lock acquisitions are still refused (0: not any more).
    absl::StrAppend(&out, "restart_delay_ms:", server.restart_delay().delay_ms, "\r\n",
                    "restart_delay_remaining_ms:", server.restart_delay().RemainingMs(now_ms),
                    "\r\n");
  }
  if (Wants(sections, "clients", true)) {
    section("Clients");
    absl::StrAppend(&out, "connected_clients:", snap.clients, "\r\n",
                    "maxclients:", config.maxclients, "\r\n",
                    "blocked_clients:", snap.blocked_clients, "\r\n",
                    "tracking_clients:", snap.tracking_clients, "\r\n",
                    "pubsub_clients:", snap.pubsub_totals.clients, "\r\n");
  }
  if (Wants(sections, "memory", true)) {
    size_t used = UsedMemoryBytes(), rss = RssBytes();
    section("Memory");
    absl::StrAppend(&out, "used_memory:", used, "\r\n", "used_memory_human:", Human(used), "\r\n",
                    "used_memory_rss:", rss, "\r\n", "used_memory_rss_human:", Human(rss), "\r\n",
                    "maxmemory:", config.maxmemory, "\r\n",
                    "maxmemory_human:", Human(static_cast<size_t>(config.maxmemory)), "\r\n",
                    "maxmemory_policy:", MaxmemoryPolicyName(config.maxmemory_policy), "\r\n",
                    "mem_allocator:", mi_process_info ? "mimalloc" : "libc", "\r\n");
  }
  if (Wants(sections, "persistence", true)) {
    section("Persistence");
    // The journal's figures, summed over the shards' files.
    JournalStats j;
    bool rewriting = false, write_ok = true, rewrite_ok = true;
    int64_t rewrite_started_ms = INT64_MAX;  // the earliest running rewrite's start (monotonic)
    for (const JournalStats& s : snap.journals) {
      j.current_size += s.current_size;
      j.base_size += s.base_size;
      j.buffer_length += s.buffer_length;
      j.rewrites += s.rewrites;
      j.fsyncs += s.fsyncs;
      j.batches += s.batches;
      j.edit_records += s.edit_records;
      j.pending_fsync += s.pending_fsync;
      j.last_rewrite_ms = std::max(j.last_rewrite_ms, s.last_rewrite_ms);
      rewriting = rewriting || s.rewrite_in_progress;
      if (s.rewrite_in_progress) {
        rewrite_started_ms = std::min(rewrite_started_ms, s.rewrite_started_ms);
      }
      write_ok = write_ok && s.last_write_ok;
      rewrite_ok = rewrite_ok && s.last_rewrite_ok;
    }
    int64_t current_rewrite_sec = -1;
    if (rewriting) {
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of JournalStats::rewrite_started_ms
      int64_t now_ms = int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
      current_rewrite_sec = std::max<int64_t>(0, now_ms - rewrite_started_ms) / 1000;
    }
    absl::StrAppend(
        &out, "loading:0\r\n", "async_loading:0\r\n", "rdb_changes_since_last_save:0\r\n",
        // deadbolt's snapshot is the journal's rewrite (SAVE, BGSAVE): the rdb_ fields tell of it.
        "rdb_bgsave_in_progress:", rewriting ? 1 : 0, "\r\n",
        "rdb_last_save_time:", server.LastSave(), "\r\n",
        "rdb_last_bgsave_status:", rewrite_ok ? "ok" : "err", "\r\n",
        "aof_enabled:", config.appendonly ? 1 : 0, "\r\n",
        "aof_rewrite_in_progress:", rewriting ? 1 : 0, "\r\n", "aof_rewrite_scheduled:0\r\n",
        "aof_rewrites:", j.rewrites, "\r\n",
        "aof_last_rewrite_time_sec:", j.last_rewrite_ms < 0 ? -1 : (j.last_rewrite_ms + 999) / 1000,
        "\r\n", "aof_current_rewrite_time_sec:", current_rewrite_sec, "\r\n",
        "aof_last_bgrewrite_status:", rewrite_ok ? "ok" : "err", "\r\n",
        "aof_last_write_status:", write_ok ? "ok" : "err", "\r\n");
    if (config.appendonly) {
      absl::StrAppend(&out, "aof_current_size:", j.current_size, "\r\n",
                      "aof_base_size:", j.base_size, "\r\n", "aof_buffer_length:", j.buffer_length,
                      "\r\n", "aof_pending_bio_fsync:0\r\n", "aof_delayed_fsync:0\r\n",
                      "aof_fsync_policy:", FsyncName(config.appendfsync), "\r\n",
                      "aof_dir:", config.dir, "\r\n", "aof_files:", snap.journals.size(), "\r\n",
                      "aof_batches:", j.batches, "\r\n", "aof_fsyncs:", j.fsyncs, "\r\n",
                      "aof_batches_not_on_disk:", j.pending_fsync, "\r\n",
                      "aof_edit_records:", j.edit_records, "\r\n");
    }
  }
  if (Wants(sections, "stats", true)) {
    const ReactorStats& s = snap.stats;
    section("Stats");
    absl::StrAppend(
        &out, "total_connections_received:", s.connections_received, "\r\n",
        "total_commands_processed:", s.commands_processed, "\r\n",
        "total_net_input_bytes:", s.net_input_bytes, "\r\n",
        "total_net_output_bytes:", s.net_output_bytes, "\r\n",
        "rejected_connections:", s.rejected_connections, "\r\n", "expired_keys:", s.expired_keys,
        "\r\n", "scripts_native_runs:", s.script_native_runs, "\r\n",
        "scripts_lua_runs:", s.script_lua_runs, "\r\n",
        "expire_cycle_cpu_milliseconds:", s.expire_cycle_us / 1000, "\r\n",
        "evicted_keys:", s.evicted_keys, "\r\n", "evicted_clients:", s.evicted_clients, "\r\n",
        "keyspace_hits:", s.keyspace_hits, "\r\n", "keyspace_misses:", s.keyspace_misses, "\r\n",
        "pubsub_channels:", snap.pubsub_totals.channels, "\r\n",
        "pubsub_patterns:", snap.pubsub_totals.patterns, "\r\n",
        "pubsubshard_channels:", snap.pubsub_totals.shard_channels, "\r\n",
        "tracking_total_keys:", snap.tracking_keys, "\r\n",
        "tracking_total_items:", snap.tracking_items, "\r\n",
        "tracking_total_prefixes:", snap.tracking_prefixes, "\r\n",
        "total_error_replies:", s.total_error_replies, "\r\n",
        "cross_shard_messages:", s.messages_sent, "\r\n", "eventloop_cycles:", s.eventloop_cycles,
        "\r\n", "eventloop_duration_sum:", s.eventloop_duration_us, "\r\n",
        "eventloop_duration_max:", s.eventloop_duration_max_us, "\r\n",
        "tx_locked_keys:", s.tx_locked_keys, "\r\n", "tx_waiting:", s.tx_waiting, "\r\n",
        "cross_shard_messages_received:", s.messages_received, "\r\n",
        "cross_shard_batches:", s.batches_sent, "\r\n", "cross_shard_wakeups_sent:", s.wakeups_sent,
        "\r\n", "cross_shard_wakeups_received:", s.wakeups_received, "\r\n",
        "cross_shard_spins:", s.spins, "\r\n", "cross_shard_spin_hits:", s.spin_hits, "\r\n",
        "pipeline_cmds_run_ahead:", s.relay_cmds_ahead, "\r\n",
        "pipeline_replies_from_shard:", s.relay_replies_from_shard, "\r\n",
        "pipeline_relay_pauses:", s.relay_pauses, "\r\n",
        "pipeline_ahead_stops:", s.relay_ahead_stops, "\r\n",
        "pipeline_journal_transactions:", s.relay_tagged, "\r\n",
        "pipeline_journal_in_order:", s.relay_tagged_backoffs, "\r\n",
        "connections_moved:", s.connections_moved_in, "\r\n");
    // Per reactor: what it sent to the others (messages, in how many chains), what it ran for
    // them, the wake-ups it caused and got, and how often its spin caught a message.
    for (size_t i = 0; i < snap.per_reactor.size(); i++) {
      const ReactorStats& r = snap.per_reactor[i];
      char mean[32];
      snprintf(mean, sizeof(mean), "%.2f",
               r.batches_sent ? static_cast<double>(r.messages_sent) / r.batches_sent : 0.0);
      absl::StrAppend(
          &out, "reactor", i, ":commands=", r.commands_processed,
          ",messages_sent=", r.messages_sent, ",messages_received=", r.messages_received,
          ",batches_sent=", r.batches_sent, ",mean_batch=", mean, ",wakeups_sent=", r.wakeups_sent,
          ",wakeups_received=", r.wakeups_received, ",spins=", r.spins, ",spin_hits=", r.spin_hits,
          ",moved_in=", r.connections_moved_in, ",eventloop_cycles=", r.eventloop_cycles, "\r\n");
    }
    // Redis 7.2's name for wrong passwords; the clients closed before AUTH are deadbolt's own.
    absl::StrAppend(&out, "acl_access_denied_auth:", s.acl_access_denied_auth, "\r\n",
                    "acl_access_denied_cmd:", s.acl_access_denied[0], "\r\n",
                    "acl_access_denied_key:", s.acl_access_denied[1], "\r\n",
                    "acl_access_denied_channel:", s.acl_access_denied[2], "\r\n",
                    "unauthenticated_clients_closed:", s.unauth_clients_closed, "\r\n",
                    "client_output_buffer_limit_disconnections:", s.output_limit_disconnections,
                    "\r\n");
  }
  if (Wants(sections, "replication", true)) {
    section("Replication");
    absl::StrAppend(&out, "role:master\r\n", "connected_slaves:0\r\n", "master_repl_offset:0\r\n");
  }
  if (Wants(sections, "cpu", true)) {
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char buf[128];
    snprintf(buf, sizeof(buf), "used_cpu_sys:%ld.%06ld\r\nused_cpu_user:%ld.%06ld\r\n",
             static_cast<long>(ru.ru_stime.tv_sec), static_cast<long>(ru.ru_stime.tv_usec),
             static_cast<long>(ru.ru_utime.tv_sec), static_cast<long>(ru.ru_utime.tv_usec));
    section("CPU");
    out += buf;
  }
  bool want_cmdstats = false;
  for (auto& s : sections) {
    if (s == "commandstats" || s == "all" || s == "everything") want_cmdstats = true;
  }
  if (want_cmdstats) {
    section("Commandstats");
    const auto& all = CommandTable::Get().StatsSpecs();  // subcommands apart, as Redis 7
    for (size_t i = 0; i < all.size() && i < snap.stats.commands.size(); i++) {
      const CommandStats& c = snap.stats.commands[i];
      if (c.calls == 0 && c.rejected_calls == 0 && c.failed_calls == 0) continue;
      char per[32];
      const uint64_t usec = TickClock::ToUsec(c.ticks);
      snprintf(per, sizeof(per), "%.2f",
               c.calls ? static_cast<double>(c.ticks) / TickClock::TicksPerUsec() / c.calls : 0.0);
      absl::StrAppend(&out, "cmdstat_", all[i]->name, ":calls=", c.calls, ",usec=", usec,
                      ",usec_per_call=", per, ",rejected_calls=", c.rejected_calls,
                      ",failed_calls=", c.failed_calls, "\r\n");
    }
  }
  if (Wants(sections, "latencystats", false) && config.latency_tracking) {
    // Per command, the percentiles latency-tracking-info-percentiles asks for, in microseconds
    // (each the upper bound of its histogram bucket, within 6.25%).
    section("Latencystats");
    const auto& all = CommandTable::Get().StatsSpecs();
    for (size_t i = 0; i < all.size() && i < snap.stats.commands.size(); i++) {
      const LatencyHistogram& h = snap.stats.commands[i].latency;
      if (h.total() == 0) continue;
      absl::StrAppend(&out, "latency_percentiles_usec_", all[i]->name, ":");
      bool first = true;
      for (double p : config.latency_tracking_info_percentiles) {
        char buf[64];
        snprintf(buf, sizeof(buf), "%sp%g=%.3f", first ? "" : ",", p,
                 static_cast<double>(h.Percentile(p)) / TickClock::TicksPerUsec());
        out += buf;
        first = false;
      }
      out += "\r\n";
    }
  }
  if (Wants(sections, "keyspace", true)) {
    section("Keyspace");
    for (size_t i = 0; i < snap.dbs.size(); i++) {
      if (snap.dbs[i].first == 0) continue;
      absl::StrAppend(&out, "db", i, ":keys=", snap.dbs[i].first, ",expires=", snap.dbs[i].second,
                      ",avg_ttl=0\r\n");
    }
  }
  return out;
}

}  // namespace

void Info(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb) {
  std::vector<std::string> sections;
  for (size_t i = 1; i < args.size(); i++) sections.push_back(AsciiLower(args[i]));
  int n = conn.reactor().server().num_shards();
  auto snaps = std::make_shared<std::vector<Snapshot>>(n);
  conn.FanOut(
      AllShards(conn.reactor().server()),
      [snaps](ShardCtx& ctx) {
        Reactor* r = Reactor::Current();
        Snapshot& s = (*snaps)[r->id()];
        s.stats = r->stats();
        s.stats.tx_locked_keys = r->locks().held();
        s.stats.tx_waiting = r->locks().parked();
        s.blocked_clients = r->lock_waiters().size();
        s.tracking_keys = r->tracking().keys();
        s.tracking_items = r->tracking().items();
        s.tracking_prefixes = r->tracking().prefixes();
        for (const auto& [id, c] : r->connections()) {
          if (c->tracking() && c->tracking()->on) s.tracking_clients++;
        }
        s.pubsub = CollectPubSubInfo(r->pubsub());
        if (r->journal()) s.journals.push_back(r->journal()->Stats());
        for (int d = 0; d < ctx.shard.num_dbs(); d++) {
          s.dbs.emplace_back(ctx.shard.db(d).Size(), ctx.shard.db(d).ExpiresSize());
        }
      },
      [snaps, sections, &server = conn.reactor().server()](protocol::ReplyBuilder& rb) {
        Snapshot total;
        std::vector<PubSubInfoPart> pubsub_parts;
        for (auto& s : *snaps) pubsub_parts.push_back(s.pubsub);
        total.pubsub_totals = MergePubSubInfo(pubsub_parts);
        for (auto& s : *snaps) {
          total.stats.Add(s.stats);
          total.per_reactor.push_back(s.stats);
          for (auto& j : s.journals) total.journals.push_back(j);
          total.blocked_clients += s.blocked_clients;
          total.tracking_clients += s.tracking_clients;
          total.tracking_keys += s.tracking_keys;
          total.tracking_items += s.tracking_items;
          total.tracking_prefixes = std::max(total.tracking_prefixes, s.tracking_prefixes);
          if (total.dbs.size() < s.dbs.size()) total.dbs.resize(s.dbs.size());
          for (size_t d = 0; d < s.dbs.size(); d++) {
            total.dbs[d].first += s.dbs[d].first;
            total.dbs[d].second += s.dbs[d].second;
          }
        }
        total.clients = server.connected_clients().load(std::memory_order_relaxed);
        rb.Verbatim(Format(sections, server, total, Reactor::Current()->config()));
      });
}

}  // namespace deadbolt::server
