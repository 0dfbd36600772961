#include "server/collections/blocking.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/txn/lock_waiters.h"
#include "shard/base/numeric.h"

namespace deadbolt::server {

bool ParseBlockTimeout(std::string_view s, int64_t now_ms, int64_t* deadline,
                       protocol::ReplyBuilder& rb) {
  long double secs;
  if (!shard::ParseLongDouble(s, &secs)) {
    rb.Error(errors::kTimeoutNotFloat);
    return false;
  }
  if (secs < 0 || std::isinf(secs) || secs * 1000 > static_cast<long double>(INT64_MAX / 2)) {
    rb.Error(errors::kTimeoutNegative);
    return false;
  }
  const auto ms = static_cast<int64_t>(secs * 1000);  // truncated, as Redis: 0.0001 waits forever
  *deadline = ms == 0 || ms > LockWaiters::kForever - now_ms ? LockWaiters::kForever : now_ms + ms;
  return true;
}

std::string RespOf(int resp, const std::string_view* items, size_t n, bool bulk_only) {
  std::string out;
  protocol::ReplyBuilder rb(&out, resp);
  if (bulk_only) {
    rb.Bulk(items[0]);
  } else {
    rb.BulkArray(items, n);
  }
  return out;
}

std::string ErrorOf(int resp, std::string_view msg) {
  std::string out;
  protocol::ReplyBuilder rb(&out, resp);
  rb.Error(msg);
  return out;
}

bool OthersWait(ShardCtx& ctx, std::string_view key) {
  Reactor* r = Reactor::Current();
  if (r == nullptr) return false;  // no reactor (a unit test): nobody waits
  LockWaiters& waiters = r->lock_waiters();
  if (!waiters.HasWaiters(ctx.db_index, key)) return false;
  waiters.HandOver(ctx.db_index, key);
  return waiters.HasWaiters(ctx.db_index, key);
}

void ServeWaiters(ShardCtx& ctx, std::string_view key) {
  // No reactor (a handler run by a unit test, or by a script's redis.call there): nobody waits.
  Reactor* r = Reactor::Current();
  if (r == nullptr) return;
  LockWaiters& waiters = r->lock_waiters();
  if (waiters.HasWaiters(ctx.db_index, key)) waiters.HandOver(ctx.db_index, key);
}

bool AlwaysMayBlock(CmdArgs) { return true; }

void BlockingPopAcross(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb,
                       const PopAcrossFns& fns) {
  int64_t deadline;
  if (!ParseBlockTimeout(args.back(), 0, &deadline, rb)) return;
  const Server& server = conn.reactor().server();
  struct State {
    PopAcrossFns fns;
    std::vector<std::string> keys;
    std::vector<int> shard;
    std::vector<int64_t> len;  // per key: its size, -1 for another type (slot i: its shard)
    size_t pick = SIZE_MAX;
    Popped popped;
    bool in_exec;
  };
  auto st = std::make_shared<State>();
  st->fns = fns;
  std::vector<int> shards;
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    st->keys.emplace_back(args[i]);
    st->shard.push_back(server.ShardOf(args[i]));
    shards.push_back(st->shard.back());
  }
  st->len.assign(st->keys.size(), 0);
  st->in_exec = conn.in_exec();
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->shard[i] == ctx.shard.index()) st->len[i] = st->fns.size(ctx, st->keys[i]);
    }
  });
  phases.push_back([st](ShardCtx& ctx) {
    size_t pick = SIZE_MAX;
    for (size_t i = 0; i < st->keys.size() && pick == SIZE_MAX; ++i) {
      if (st->len[i] != 0) pick = i;
    }
    if (pick == SIZE_MAX || st->len[pick] < 0 || st->shard[pick] != ctx.shard.index()) return;
    if (st->fns.pop(ctx, st->keys[pick], &st->popped)) st->pick = pick;
  });
  conn.FanOutPhases(shards, std::move(phases), [st](protocol::ReplyBuilder& rb) {
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->len[i] < 0) {
        rb.Error(errors::kWrongType);
        return;
      }
      if (st->len[i] > 0) break;
    }
    if (st->pick != SIZE_MAX) {
      st->fns.reply(rb, st->keys[st->pick], st->popped);
    } else if (st->in_exec) {
      rb.NullArray();
    } else {
      rb.Error(errors::kBlockOnOneKey);
    }
  });
}

}  // namespace deadbolt::server
