#pragma once
// Counters for INFO. Each reactor has its own; INFO sums them through messages.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "server/observe/introspect.h"

namespace deadbolt::server {

struct CommandStats {
  uint64_t calls = 0;
  uint64_t ticks = 0;  // time spent running it (TickClock); INFO shows microseconds
  uint64_t rejected_calls = 0;
  uint64_t failed_calls = 0;
  LatencyHistogram latency;  // each call's duration (latency-tracking yes)
};

// Owned by one reactor thread. Read by others only as a copy made on that thread.
struct ReactorStats {
  uint64_t connections_received = 0;
  uint64_t rejected_connections = 0;
  uint64_t connections_moved_in = 0;  // placement: clients that moved here from another reactor
  uint64_t commands_processed = 0;
  uint64_t net_input_bytes = 0;
  uint64_t net_output_bytes = 0;
  uint64_t expired_keys = 0;
  uint64_t evicted_keys = 0;  // maxmemory-policy volatile-ttl
  // EVAL/EVALSHA calls run natively (the catalogue) and in the embedded Lua.
  uint64_t script_native_runs = 0;
  uint64_t script_lua_runs = 0;
  uint64_t expire_cycle_us = 0;  // time spent in active expiry
  uint64_t keyspace_hits = 0;
  uint64_t keyspace_misses = 0;
  // Cross-reactor messages: sent, and run here; the chains they travelled in (one per target
  // per loop turn at most), the eventfd writes that woke a sleeping target, the wake-ups this
  // reactor got, and the waits the spin (--spin-us) saved.
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t batches_sent = 0;
  uint64_t wakeups_sent = 0;
  uint64_t wakeups_received = 0;
  uint64_t spins = 0;
  uint64_t spin_hits = 0;
  // Pipelined commands run before an earlier one of their pipeline on a higher shard, their
  // keys locked until it had run (server/core/relay.cc).
  uint64_t relay_cmds_ahead = 0;
  // Relays whose replies their last shard sent to the client itself, not from home.
  uint64_t relay_replies_from_shard = 0;
  uint64_t relay_pauses = 0;  // relays home early, their replies unread (Connection::OnRelayPaused)
  uint64_t relay_ahead_stops = 0;  // shards that stopped running a relay's commands ahead there
  // appendfsync always: relays whose commands from the first one run ahead on were journalled
  // as one transaction (server/core/relay.cc), counted on their last shard.
  uint64_t relay_tagged = 0;
  uint64_t relay_tagged_backoffs = 0;  // relays sent in order instead, their keys being contended
  uint64_t total_error_replies = 0;
  uint64_t acl_access_denied_auth = 0;  // wrong passwords (AUTH, HELLO ... AUTH)
  // ACL refusals by reason: command, key, channel (acl::Denial::Reason's order).
  uint64_t acl_access_denied[3] = {0, 0, 0};
  uint64_t unauth_clients_closed = 0;   // closed before AUTH for output piling up
  uint64_t output_limit_disconnections = 0;  // client-output-buffer-limit
  uint64_t evicted_clients = 0;              // maxmemory-clients
  // Loop turns and the time they spent working (not waiting for events), in microseconds; the
  // longest turn shows a reactor that stalled (INFO: the maximum over reactors).
  uint64_t eventloop_cycles = 0;
  uint64_t eventloop_duration_us = 0;
  uint64_t eventloop_duration_max_us = 0;
  // Gauges filled in when INFO takes its copy: keys locked by cross-shard transactions, and the
  // work waiting for them (server/txn/lock_table.h).
  uint64_t tx_locked_keys = 0;
  uint64_t tx_waiting = 0;
  std::vector<CommandStats> commands;  // indexed by CommandTable::IndexOf

  void Add(const ReactorStats& o) {
    connections_received += o.connections_received;
    rejected_connections += o.rejected_connections;
    connections_moved_in += o.connections_moved_in;
    commands_processed += o.commands_processed;
    net_input_bytes += o.net_input_bytes;
    net_output_bytes += o.net_output_bytes;
    expired_keys += o.expired_keys;
    evicted_keys += o.evicted_keys;
    script_native_runs += o.script_native_runs;
    script_lua_runs += o.script_lua_runs;
    expire_cycle_us += o.expire_cycle_us;
    keyspace_hits += o.keyspace_hits;
    keyspace_misses += o.keyspace_misses;
    messages_sent += o.messages_sent;
    messages_received += o.messages_received;
    batches_sent += o.batches_sent;
    wakeups_sent += o.wakeups_sent;
    wakeups_received += o.wakeups_received;
    spins += o.spins;
    spin_hits += o.spin_hits;
    relay_cmds_ahead += o.relay_cmds_ahead;
    relay_tagged += o.relay_tagged;
    relay_tagged_backoffs += o.relay_tagged_backoffs;
    relay_replies_from_shard += o.relay_replies_from_shard;
    relay_pauses += o.relay_pauses;
    relay_ahead_stops += o.relay_ahead_stops;
    total_error_replies += o.total_error_replies;
    acl_access_denied_auth += o.acl_access_denied_auth;
    for (int i = 0; i < 3; i++) acl_access_denied[i] += o.acl_access_denied[i];
    unauth_clients_closed += o.unauth_clients_closed;
    output_limit_disconnections += o.output_limit_disconnections;
    evicted_clients += o.evicted_clients;
    eventloop_cycles += o.eventloop_cycles;
    eventloop_duration_us += o.eventloop_duration_us;
    eventloop_duration_max_us = std::max(eventloop_duration_max_us, o.eventloop_duration_max_us);
    tx_locked_keys += o.tx_locked_keys;
    tx_waiting += o.tx_waiting;
    if (commands.size() < o.commands.size()) commands.resize(o.commands.size());
    for (size_t i = 0; i < o.commands.size(); i++) {
      commands[i].calls += o.commands[i].calls;
      commands[i].ticks += o.commands[i].ticks;
      commands[i].latency.Merge(o.commands[i].latency);
      commands[i].rejected_calls += o.commands[i].rejected_calls;
      commands[i].failed_calls += o.commands[i].failed_calls;
    }
  }
};

}  // namespace deadbolt::server
