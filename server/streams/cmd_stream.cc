// Streams without consumer groups: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID XREAD (with
// BLOCK, on keys of any shards), with Redis 7.0's t_stream.c arguments, replies and errors.
// The logic is in shard/db_stream.cc, the value in shard/types/stream_value.*.

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/collections/blocking.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/streams/stream_args.h"
#include "server/txn/lock_waiters.h"
#include "shard/base/numeric.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace stream_cmds {
namespace {

using protocol::ReplyBuilder;
using shard::OpStatus;
using shard::StreamEntryOut;
using shard::StreamId;
using shard::StreamTrim;
using shard::XAddSpec;

// --- XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID ---

void XAdd(CmdArgs args, ShardCtx& ctx) {
  XAddSpec spec;
  const int at = ParseAddOrTrim(args, 2, true, &spec, ctx.rb);
  if (at < 0) return;
  const size_t field_pos = static_cast<size_t>(at) + 1;
  if (at >= static_cast<int>(args.size()) || args.size() - field_pos < 2 ||
      (args.size() - field_pos) % 2 == 1) {
    ctx.rb.Error(errors::WrongArity("xadd"));
    return;
  }
  if (spec.id_mode == XAddSpec::IdMode::kExplicit && spec.id.IsZero()) {
    ctx.rb.Error(errors::kStreamIdZero);
    return;
  }
  auto r = ctx.db.XAdd(args[1], spec, args.subspan(field_pos), ctx.now_ms);
  if (!r.ok()) {
    if (r.status() == OpStatus::kKeyNotFound) {
      ctx.rb.Null();
    } else {
      ctx.rb.Error(errors::ForStatus(r.status()));
    }
    return;
  }
  ctx.rb.Bulk(r->ToString());
  ServeWaiters(ctx, args[1]);  // XREAD BLOCK waiting on the key
}

void XLen(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.XLen(args[1], ctx.now_ms);
  if (!r.ok()) {
    ctx.rb.Error(errors::ForStatus(r.status()));
    return;
  }
  ctx.rb.Integer(*r);
}

template <bool rev>
void XRange(CmdArgs args, ShardCtx& ctx) {
  StreamId start, end;
  if (!ParseBound(rev ? args[3] : args[2], true, &start, ctx.rb)) return;
  if (!ParseBound(rev ? args[2] : args[3], false, &end, ctx.rb)) return;
  int64_t count = -1;
  for (size_t j = 4; j < args.size(); j++) {
    if (OptionIs(args[j], "count") && j + 1 < args.size()) {
      if (!StringToInt64(args[++j], &count)) {
        ctx.rb.Error(errors::kNotInteger);
        return;
      }
      if (count < 0) count = 0;
    } else {
      ctx.rb.Error(errors::kSyntax);
      return;
    }
  }
  auto r = ctx.db.XRange(args[1], start, end, count < 0 ? 0 : static_cast<size_t>(count), rev,
                         ctx.now_ms);
  if (!r.ok()) {
    ctx.rb.Error(errors::ForStatus(r.status()));
    return;
  }
  if (!r->has_value()) {
    ctx.rb.ArrayHeader(0);
  } else if (count == 0) {
    ctx.rb.NullArray();  // (Redis: COUNT 0 on a stream)
  } else {
    ReplyEntries(ctx.rb, **r);
  }
}

void XDel(CmdArgs args, ShardCtx& ctx) {
  // The key first: a missing key answers 0 whatever the IDs, as Redis.
  auto len = ctx.db.XLen(args[1], ctx.now_ms);
  if (!len.ok()) {
    ctx.rb.Error(errors::ForStatus(len.status()));
    return;
  }
  if (!ctx.db.Exists(args[1], ctx.now_ms)) {
    ctx.rb.Integer(0);
    return;
  }
  std::vector<StreamId> ids(args.size() - 2);
  for (size_t j = 2; j < args.size(); j++) {
    if (!ParseIdOrReply(args[j], true, 0, &ids[j - 2], ctx.rb)) return;
  }
  auto r = ctx.db.XDel(args[1], ids, ctx.now_ms);
  if (!r.ok()) {
    ctx.rb.Error(errors::ForStatus(r.status()));
    return;
  }
  ctx.rb.Integer(*r);
}

void XTrim(CmdArgs args, ShardCtx& ctx) {
  auto len = ctx.db.XLen(args[1], ctx.now_ms);
  if (!len.ok()) {
    ctx.rb.Error(errors::ForStatus(len.status()));
    return;
  }
  if (!ctx.db.Exists(args[1], ctx.now_ms)) {  // (Redis looks the key up first)
    ctx.rb.Integer(0);
    return;
  }
  XAddSpec spec;
  if (ParseAddOrTrim(args, 2, false, &spec, ctx.rb) < 0) return;
  auto r = ctx.db.XTrim(args[1], spec.trim, ctx.now_ms);
  if (!r.ok()) {
    ctx.rb.Error(errors::ForStatus(r.status()));
    return;
  }
  ctx.rb.Integer(*r);
}

void XSetId(CmdArgs args, ShardCtx& ctx) {
  StreamId id, max_deleted;
  int64_t entries_added = -1;
  if (!ParseIdOrReply(args[2], true, 0, &id, ctx.rb)) return;
  for (size_t i = 3; i < args.size(); i += 2) {
    const bool more = i + 1 < args.size();
    if (OptionIs(args[i], "entriesadded") && more) {
      if (!StringToInt64(args[i + 1], &entries_added)) {
        ctx.rb.Error(errors::kNotInteger);
        return;
      }
      if (entries_added < 0) {
        ctx.rb.Error(errors::kXSetIdEntriesNegative);
        return;
      }
    } else if (OptionIs(args[i], "maxdeletedid") && more) {
      if (!ParseIdOrReply(args[i + 1], true, 0, &max_deleted, ctx.rb)) return;
      if (id < max_deleted) {
        ctx.rb.Error(errors::kXSetIdMaxDeleted);
        return;
      }
    } else {
      ctx.rb.Error(errors::kSyntax);
      return;
    }
  }
  const OpStatus st = ctx.db.XSetId(args[1], id, entries_added, max_deleted, ctx.now_ms);
  if (st != OpStatus::kOk) {
    ctx.rb.Error(st == OpStatus::kNoSuchKey ? errors::kNoSuchKey : errors::ForStatus(st));
    return;
  }
  ctx.rb.Ok();
}

// --- XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ... ---

// An ID argument of XREAD: "$" (the stream's last ID, 0-0 when missing: read on this key's
// shard), ">" (refused), or a strict ID.
bool ParseReadId(std::string_view s, bool* dollar, StreamId* id, ReplyBuilder& rb) {
  *dollar = s == "$";
  if (*dollar) return true;
  if (s == ">") {
    rb.Error(errors::kXReadGreater);
    return false;
  }
  return ParseIdOrReply(s, true, 0, id, rb);
}

// What one key gives an XREAD: its entries after `after`, up to count. nullopt: none.
std::optional<std::vector<StreamEntryOut>> ReadAfter(shard::Db& db, std::string_view key,
                                                     StreamId after, size_t count, int64_t now) {
  if (!after.Incr()) return std::nullopt;
  auto r = db.XRange(key, after, StreamId::Max(), count, false, now);
  if (!r.ok() || !r->has_value() || (*r)->empty()) return std::nullopt;
  return std::move(**r);
}

// The hook of a waiter on one key: served once the key has entries past `after`.
MakeServeFn ReadServes(std::vector<std::pair<std::string, StreamId>> after, size_t count) {
  auto ids = std::make_shared<std::vector<std::pair<std::string, StreamId>>>(std::move(after));
  return [ids, count](int, std::string_view key) -> ServeFn {
    StreamId from;
    for (const auto& [k, id] : *ids) {
      if (k == key) {
        from = id;
        break;
      }
    }
    return [from, count](shard::Db& d, std::string_view key, int64_t now, BlockedReply& reply) {
      auto got = ReadAfter(d, key, from, count, now);
      if (!got) return false;  // nothing new (or another type: Redis waits on)
      if (!reply.Claim()) return true;
      std::string bytes;
      ReplyBuilder rb(&bytes, reply.resp());
      ReplyRead(rb, {{key, std::move(*got)}});
      reply.Finish(std::move(bytes));
      return true;
    };
  };
}

// All keys on this shard: read now, or wait.
void XRead(CmdArgs args, ShardCtx& ctx) {
  XReadArgs x;
  if (!ParseXRead(args, false, &x, &ctx.rb)) return;
  std::vector<StreamId> ids(x.n);
  for (size_t i = 0; i < x.n; i++) {
    const std::string_view key = args[x.streams + i];
    auto last = ctx.db.XLastId(key, ctx.now_ms);
    if (!last.ok()) {
      ctx.rb.Error(errors::ForStatus(last.status()));
      return;
    }
    bool dollar;
    if (!ParseReadId(args[x.streams + x.n + i], &dollar, &ids[i], ctx.rb)) return;
    if (dollar) ids[i] = last->value_or(StreamId{});
  }
  std::vector<std::pair<std::string_view, std::vector<StreamEntryOut>>> got;
  for (size_t i = 0; i < x.n; i++) {
    const std::string_view key = args[x.streams + i];
    auto r = ReadAfter(ctx.db, key, ids[i], static_cast<size_t>(x.count), ctx.now_ms);
    if (r) got.emplace_back(key, std::move(*r));
  }
  if (!got.empty()) {
    ReplyRead(ctx.rb, got);
    return;
  }
  if (x.block_ms < 0 || !(ctx.block && *ctx.block)) {
    ctx.rb.NullArray();
    return;
  }
  std::vector<std::pair<std::string, StreamId>> after;
  for (size_t i = 0; i < x.n; i++) after.emplace_back(args[x.streams + i], ids[i]);
  const int64_t deadline = Deadline(x.block_ms, ctx.now_ms);
  WaitOnKeysWith(ctx, args.subspan(x.streams, x.n), deadline,
                 ReadServes(std::move(after), static_cast<size_t>(x.count)));
}

// Keys on several shards: every key's "$" and entries read under the keys' locks, in one
// fan-out; nothing there and BLOCK (outside MULTI): the client waits on every key.
void XReadAcross(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  XReadArgs x;
  if (!ParseXRead(args, false, &x, &rb)) return;
  struct State {
    size_t count;
    std::vector<std::string> keys;
    std::vector<int> shard;
    std::vector<bool> dollar;
    std::vector<StreamId> ids;
    std::vector<std::optional<std::vector<StreamEntryOut>>> got;
    OpStatus error = OpStatus::kOk;
  };
  auto st = std::make_shared<State>();
  st->count = static_cast<size_t>(x.count);
  const Server& server = conn.reactor().server();
  std::vector<int> shards;
  for (size_t i = 0; i < x.n; i++) {
    st->keys.emplace_back(args[x.streams + i]);
    st->shard.push_back(server.ShardOf(st->keys.back()));
    shards.push_back(st->shard.back());
    bool dollar;
    StreamId id;
    if (!ParseReadId(args[x.streams + x.n + i], &dollar, &id, rb)) return;
    st->dollar.push_back(dollar);
    st->ids.push_back(id);
  }
  st->got.resize(x.n);
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->shard[i] != ctx.shard.index()) continue;
      auto last = ctx.db.XLastId(st->keys[i], ctx.now_ms);
      if (!last.ok()) {
        st->error = last.status();
        continue;
      }
      if (st->dollar[i]) st->ids[i] = last->value_or(StreamId{});
      st->got[i] = ReadAfter(ctx.db, st->keys[i], st->ids[i], st->count, ctx.now_ms);
    }
  });
  Connection* c = &conn;
  const bool may_wait = x.block_ms >= 0 && !conn.in_exec();
  const int64_t deadline = Deadline(x.block_ms, conn.reactor().now_ms());
  conn.FanOutPhases(shards, std::move(phases),
                    [st, c, shards, may_wait, deadline](ReplyBuilder& rb) {
                      if (st->error != OpStatus::kOk) {
                        rb.Error(errors::ForStatus(st->error));
                        return;
                      }
                      if (ReplyReadOrNull(rb, st->keys, st->got, may_wait)) return;
                      std::vector<std::pair<std::string, StreamId>> after;
                      for (size_t i = 0; i < st->keys.size(); ++i) {
                        after.emplace_back(st->keys[i], st->ids[i]);
                      }
                      WaitAcross(*c, st->keys, st->shard, shards, deadline,
                                 ReadServes(std::move(after), st->count));
                    });
}

void Register(CommandTable* t) {
  const std::vector<std::string> kWriteFast = {"@write", "@stream", "@fast"};
  const std::vector<std::string> kReadFast = {"@read", "@stream", "@fast"};
  const std::vector<std::string> kReadSlow = {"@read", "@stream", "@slow"};
  t->Add(Key1("xadd", -5, kWrite | kDenyOom | kFast, XAdd, kWriteFast));
  t->Add(Key1("xlen", 2, kReadOnly | kFast, XLen, kReadFast));
  t->Add(Key1("xrange", -4, kReadOnly, XRange<false>, kReadSlow));
  t->Add(Key1("xrevrange", -4, kReadOnly, XRange<true>, kReadSlow));
  t->Add(Key1("xdel", -3, kWrite | kFast, XDel, kWriteFast));
  t->Add(Key1("xtrim", -4, kWrite, XTrim, {"@write", "@stream", "@slow"}));
  t->Add(Key1("xsetid", -3, kWrite | kDenyOom | kFast, XSetId, kWriteFast));
  CommandSpec xread = MultiKeyCommand("xread", -4, kReadOnly | kBlocking, XReadAcross, XRead,
                                      {"@read", "@stream", "@slow", "@blocking"}, 0, 0, 0);
  xread.key_range = XReadKeyRange<false>;
  xread.blocks = XReadMayBlock<false>;
  t->Add(std::move(xread));
}

}  // namespace
}  // namespace stream_cmds

void RegisterStreamCommands(CommandTable* t) { stream_cmds::Register(t); }

}  // namespace deadbolt::server
