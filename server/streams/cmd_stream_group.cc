// Stream consumer groups: XGROUP (CREATE SETID DESTROY CREATECONSUMER DELCONSUMER HELP),
// XREADGROUP (with BLOCK, on keys of any shards), XACK, XPENDING, XCLAIM, XAUTOCLAIM and XINFO
// (STREAM GROUPS CONSUMERS HELP), with Redis 7.0's arguments, replies and errors. The logic is
// in shard/db_stream.cc.

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/collections/blocking.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/streams/stream_args.h"
#include "server/txn/lock_waiters.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace stream_cmds {
namespace {

using protocol::ReplyBuilder;
using shard::OpStatus;
using shard::StreamEntryOut;
using shard::StreamId;

// Concatenation of views (absl::StrCat does not take std::string_view in this abseil build).
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out += p;
  return out;
}

std::string NoGroupFor(std::string_view key, std::string_view group) {
  return Cat({"NOGROUP No such consumer group '", group, "' for key name '", key, "'"});
}
std::string NoKeyOrGroup(std::string_view key, std::string_view group) {
  return Cat({"NOGROUP No such key '", key, "' or consumer group '", group, "'"});
}

constexpr std::string_view kNeedsKey =
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
    "use the MKSTREAM option to create an empty stream automatically.";

// --- XGROUP ---

void XGroup(CmdArgs args, ShardCtx& ctx) {
  ReplyBuilder& rb = ctx.rb;
  const std::string_view sub = args[1];
  if (EqualsIgnoreCase(sub, "help")) {
    if (args.size() != 2) {
      rb.Error(errors::SubcommandSyntax(sub, "XGROUP"));
      return;
    }
    WriteHelp(rb, {"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                   "CREATE <key> <groupname> <id|$> [option]",
                   "    Create a new consumer group. Options are:", "    * MKSTREAM",
                   "      Create the empty stream if it does not exist.",
                   "    * ENTRIESREAD entries_read",
                   "      Set the group's entries_read counter (internal use).",
                   "CREATECONSUMER <key> <groupname> <consumer>",
                   "    Create a new consumer in the specified group.",
                   "DELCONSUMER <key> <groupname> <consumer>", "    Remove the specified consumer.",
                   "DESTROY <key> <groupname>", "    Remove the specified group.",
                   "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
                   "    Set the current group ID and entries_read counter.", "HELP",
                   "    Prints this help."});
    return;
  }
  struct Sub {
    const char* name;
    int arity;
  };
  static constexpr Sub kSubs[] = {
      {"create", -5}, {"setid", -5}, {"destroy", 4}, {"createconsumer", 5}, {"delconsumer", 5}};
  const Sub* known = nullptr;
  for (const Sub& s : kSubs) {
    if (EqualsIgnoreCase(sub, s.name)) known = &s;
  }
  if (!known) {
    rb.Error(errors::UnknownSubcommand(sub, "XGROUP"));
    return;
  }
  if (known->arity >= 0 ? args.size() != static_cast<size_t>(known->arity)
                        : args.size() < static_cast<size_t>(-known->arity)) {
    rb.Error(errors::WrongArity(Cat({"xgroup|", known->name})));
    return;
  }
  const bool create = EqualsIgnoreCase(sub, "create"), setid = EqualsIgnoreCase(sub, "setid");
  bool mkstream = false;
  int64_t entries_read = -1;
  for (size_t i = 5; i < args.size();) {
    if (create && OptionIs(args[i], "mkstream")) {
      mkstream = true;
      i++;
    } else if ((create || setid) && OptionIs(args[i], "entriesread") && i + 1 < args.size()) {
      if (!StringToInt64(args[i + 1], &entries_read)) {
        rb.Error(errors::kNotInteger);
        return;
      }
      if (entries_read < 0 && entries_read != -1) {
        rb.Error("ERR value for ENTRIESREAD must be positive or -1");
        return;
      }
      i += 2;
    } else {
      rb.Error(errors::SubcommandSyntax(sub, "XGROUP"));
      return;
    }
  }
  const std::string_view key = args[2], group = args[3];
  const shard::ValueType type = ctx.db.Type(key, ctx.now_ms);
  if (type != shard::ValueType::kNone && type != shard::ValueType::kStream) {
    rb.Error(errors::kWrongType);
    return;
  }
  if (type == shard::ValueType::kNone && !mkstream) {
    rb.Error(kNeedsKey);
    return;
  }
  if ((create && (args.size() > 8)) || (setid && args.size() != 5 && args.size() != 7)) {
    rb.Error(errors::SubcommandSyntax(sub, "XGROUP"));
    return;
  }
  auto reply_status = [&](OpStatus st) {
    if (st == OpStatus::kOk) {
      rb.Ok();
    } else if (st == OpStatus::kNoGroup) {
      rb.Error(NoGroupFor(key, group));
    } else if (st == OpStatus::kBusyGroup) {
      rb.Error("BUSYGROUP Consumer Group name already exists");
    } else if (st == OpStatus::kNoSuchKey) {
      rb.Error(kNeedsKey);
    } else {
      rb.Error(errors::ForStatus(st));
    }
  };
  auto reply_count = [&](const shard::OpResult<int64_t>& r) {
    if (r.ok()) {
      rb.Integer(*r);
    } else {
      reply_status(r.status());
    }
  };
  if (create || setid) {
    StreamId id;
    const bool dollar = args[4] == "$";
    if (!dollar && !ParseIdOrReply(args[4], create, 0, &id, rb)) return;
    reply_status(
        create ? ctx.db.XGroupCreate(key, group, dollar, id, mkstream, entries_read, ctx.now_ms)
               : ctx.db.XGroupSetId(key, group, dollar, id, entries_read, ctx.now_ms));
  } else if (EqualsIgnoreCase(sub, "destroy")) {
    reply_count(ctx.db.XGroupDestroy(key, group, ctx.now_ms));
    ServeWaiters(ctx, key);  // XREADGROUP waiters of the group: NOGROUP
  } else if (EqualsIgnoreCase(sub, "createconsumer")) {
    reply_count(ctx.db.XGroupCreateConsumer(key, group, args[4], ctx.now_ms));
  } else {
    reply_count(ctx.db.XGroupDelConsumer(key, group, args[4], ctx.now_ms));
  }
}

bool XGroupMayCreate(CmdArgs args) {
  if (args.size() < 2 || !EqualsIgnoreCase(args[1], "create")) return false;
  for (size_t i = 5; i < args.size(); i++) {
    if (OptionIs(args[i], "mkstream")) return true;
  }
  return false;
}

// --- XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS key ... id ... ---

// An ID argument of XREADGROUP: ">" (new entries: Max()) or a strict ID; "$" is refused.
bool ParseGroupId(std::string_view s, StreamId* id, ReplyBuilder& rb) {
  if (s == "$") {
    rb.Error(errors::kXReadGroupDollar);
    return false;
  }
  if (s == ">") {
    *id = StreamId::Max();
    return true;
  }
  return ParseIdOrReply(s, true, 0, id, rb);
}

std::string XReadGroupNoGroup(std::string_view key, std::string_view group) {
  return Cat({"NOGROUP No such key '", key, "' or consumer group '", group,
              "' in XREADGROUP with GROUP option"});
}

struct GroupRead {
  std::string group, consumer;
  size_t count = 0;
  bool noack = false;
};

// A waiter's hook on one key for ">": served once the group has new entries; a group deleted
// meanwhile (the key still a stream) ends the wait with NOGROUP, as Redis 7.0.
MakeServeFn GroupServes(std::shared_ptr<const GroupRead> read) {
  return [read](int, std::string_view) -> ServeFn {
    return [read](shard::Db& d, std::string_view key, int64_t now, BlockedReply& reply) {
      if (d.Type(key, now) != shard::ValueType::kStream) return false;
      auto r = d.XReadGroup(key, read->group, read->consumer, StreamId::Max(), read->count,
                            read->noack, now);
      if (r.ok() && !r->has_value()) return false;
      if (!reply.Claim()) return true;
      std::string bytes;
      ReplyBuilder rb(&bytes, reply.resp());
      if (!r.ok()) {
        rb.Error("NOGROUP the consumer group this client was blocked on no longer exists");
      } else {
        ReplyRead(rb, {{key, std::move(**r)}});
      }
      reply.Finish(std::move(bytes));
      return true;
    };
  };
}

// One key's part of an XREADGROUP: read (">" or history) into *got, or the error's status.
OpStatus ReadGroupKey(shard::Db& db, std::string_view key, const XReadArgs& x, StreamId id,
                      int64_t now, std::optional<std::vector<StreamEntryOut>>* got) {
  auto r = db.XReadGroup(key, x.group, x.consumer, id, static_cast<size_t>(x.count), x.noack, now);
  if (!r.ok()) return r.status();
  *got = std::move(*r);
  return OpStatus::kOk;
}

void XReadGroup(CmdArgs args, ShardCtx& ctx) {
  XReadArgs x;
  if (!ParseXRead(args, true, &x, &ctx.rb)) return;
  std::vector<StreamId> ids(x.n);
  // Every key and group first (NOGROUP, WRONGTYPE), then the IDs, as Redis.
  for (size_t i = 0; i < x.n; i++) {
    const std::string_view key = args[x.streams + i];
    auto has = ctx.db.XHasGroup(key, x.group, ctx.now_ms);
    if (!has.ok() || !*has) {
      ctx.rb.Error(has.ok() ? XReadGroupNoGroup(key, x.group)
                            : std::string(errors::ForStatus(has.status())));
      return;
    }
    if (!ParseGroupId(args[x.streams + x.n + i], &ids[i], ctx.rb)) return;
  }
  std::vector<std::pair<std::string_view, std::vector<StreamEntryOut>>> got;
  for (size_t i = 0; i < x.n; i++) {
    std::optional<std::vector<StreamEntryOut>> one;
    ReadGroupKey(ctx.db, args[x.streams + i], x, ids[i], ctx.now_ms, &one);
    if (one) got.emplace_back(args[x.streams + i], std::move(*one));
  }
  if (!got.empty()) {
    ReplyRead(ctx.rb, got);
    return;
  }
  if (x.block_ms < 0 || !(ctx.block && *ctx.block)) {
    ctx.rb.NullArray();
    return;
  }
  auto read = std::make_shared<GroupRead>(GroupRead{std::string(x.group), std::string(x.consumer),
                                                    static_cast<size_t>(x.count), x.noack});
  WaitOnKeysWith(ctx, args.subspan(x.streams, x.n), Deadline(x.block_ms, ctx.now_ms),
                 GroupServes(std::move(read)));
}

void XReadGroupAcross(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  XReadArgs x;
  if (!ParseXRead(args, true, &x, &rb)) return;
  struct State {
    XReadArgs x;
    std::string group, consumer;
    std::vector<std::string> keys;
    std::vector<int> shard;
    std::vector<StreamId> ids;
    std::vector<std::optional<std::vector<StreamEntryOut>>> got;
    std::vector<OpStatus> status;
    std::vector<char> id_ok;
  };
  auto st = std::make_shared<State>();
  st->group = std::string(x.group);
  st->consumer = std::string(x.consumer);
  st->x = x;
  st->x.group = st->group;
  st->x.consumer = st->consumer;
  const Server& server = conn.reactor().server();
  std::vector<int> shards;
  for (size_t i = 0; i < x.n; i++) {
    st->keys.emplace_back(args[x.streams + i]);
    st->shard.push_back(server.ShardOf(st->keys.back()));
    shards.push_back(st->shard.back());
    StreamId id;
    std::string ignored;
    ReplyBuilder quiet(&ignored, 2);
    st->id_ok.push_back(ParseGroupId(args[x.streams + x.n + i], &id, quiet) ? 1 : 0);
    st->ids.push_back(id);
  }
  st->got.resize(x.n);
  st->status.assign(x.n, OpStatus::kOk);
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  // Phase 1: every key and group checked; phase 2 reads, only if all of them passed (the error
  // a key met first is the reply, and nothing is read).
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->shard[i] != ctx.shard.index()) continue;
      auto has = ctx.db.XHasGroup(st->keys[i], st->group, ctx.now_ms);
      if (!has.ok()) {
        st->status[i] = has.status();
      } else if (!*has) {
        st->status[i] = OpStatus::kNoGroup;
      }
    }
  });
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->status[i] != OpStatus::kOk || !st->id_ok[i]) return;
    }
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->shard[i] != ctx.shard.index()) continue;
      ReadGroupKey(ctx.db, st->keys[i], st->x, st->ids[i], ctx.now_ms, &st->got[i]);
    }
  });
  Connection* c = &conn;
  const bool may_wait = x.block_ms >= 0 && !conn.in_exec();
  const int64_t deadline = Deadline(x.block_ms, conn.reactor().now_ms());
  std::vector<std::string> id_args;
  for (size_t i = 0; i < x.n; i++) id_args.emplace_back(args[x.streams + x.n + i]);
  conn.FanOutPhases(
      shards, std::move(phases),
      [st, c, shards, may_wait, deadline, id_args = std::move(id_args)](ReplyBuilder& rb) {
        for (size_t i = 0; i < st->keys.size(); ++i) {
          if (st->status[i] == OpStatus::kNoGroup) {
            rb.Error(XReadGroupNoGroup(st->keys[i], st->group));
            return;
          }
          if (st->status[i] != OpStatus::kOk) {
            rb.Error(errors::ForStatus(st->status[i]));
            return;
          }
          if (!st->id_ok[i]) {
            StreamId ignored;
            ParseGroupId(id_args[i], &ignored, rb);  // its error
            return;
          }
        }
        if (ReplyReadOrNull(rb, st->keys, st->got, may_wait)) return;
        auto read = std::make_shared<GroupRead>(
            GroupRead{st->group, st->consumer, static_cast<size_t>(st->x.count), st->x.noack});
        WaitAcross(*c, st->keys, st->shard, shards, deadline, GroupServes(std::move(read)));
      });
}

// --- XACK XPENDING XCLAIM XAUTOCLAIM ---

void XAck(CmdArgs args, ShardCtx& ctx) {
  const shard::ValueType type = ctx.db.Type(args[1], ctx.now_ms);
  if (type != shard::ValueType::kNone && type != shard::ValueType::kStream) {
    ctx.rb.Error(errors::kWrongType);
    return;
  }
  std::vector<StreamId> ids(args.size() - 3);
  // Redis answers 0 for a missing key or group before it reads the IDs.
  auto has = ctx.db.XHasGroup(args[1], args[2], ctx.now_ms);
  if (!has.ok() || !*has) {
    ctx.rb.Integer(0);
    return;
  }
  for (size_t j = 3; j < args.size(); j++) {
    if (!ParseIdOrReply(args[j], true, 0, &ids[j - 3], ctx.rb)) return;
  }
  auto r = ctx.db.XAck(args[1], args[2], ids, ctx.now_ms);
  if (!r.ok()) {
    ctx.rb.Error(errors::ForStatus(r.status()));
    return;
  }
  ctx.rb.Integer(*r);
}

void XPending(CmdArgs args, ShardCtx& ctx) {
  ReplyBuilder& rb = ctx.rb;
  if (args.size() != 3 && (args.size() < 6 || args.size() > 9)) {
    rb.Error(errors::kSyntax);
    return;
  }
  int64_t min_idle = 0, count = 0;
  StreamId start, end;
  std::optional<std::string_view> consumer;
  if (args.size() >= 6) {
    size_t at = 3;
    if (EqualsIgnoreCase(args[3], "idle")) {
      if (!StringToInt64(args[4], &min_idle)) {
        rb.Error(errors::kNotInteger);
        return;
      }
      if (args.size() < 8) {
        rb.Error(errors::kSyntax);
        return;
      }
      at += 2;
    }
    if (!StringToInt64(args[at + 2], &count)) {
      rb.Error(errors::kNotInteger);
      return;
    }
    if (count < 0) count = 0;
    if (!ParseBound(args[at], true, &start, rb) || !ParseBound(args[at + 1], false, &end, rb)) {
      return;
    }
    if (at + 3 < args.size()) consumer = args[at + 3];
  }
  if (args.size() == 3) {
    auto r = ctx.db.XPending(args[1], args[2], ctx.now_ms);
    if (!r.ok()) {
      rb.Error(r.status() == OpStatus::kNoGroup ? NoKeyOrGroup(args[1], args[2])
                                                : std::string(errors::ForStatus(r.status())));
      return;
    }
    rb.ArrayHeader(4);
    rb.Integer(static_cast<int64_t>(r->count));
    if (r->count == 0) {
      rb.Null();
      rb.Null();
      rb.NullArray();
      return;
    }
    rb.Bulk(r->first.ToString());
    rb.Bulk(r->last.ToString());
    rb.ArrayHeader(r->consumers.size());
    for (const auto& [name, n] : r->consumers) {
      rb.ArrayHeader(2);
      rb.Bulk(name);
      rb.Bulk(std::to_string(n));  // (a bulk string, as Redis)
    }
    return;
  }
  auto r = ctx.db.XPendingRange(args[1], args[2], start, end, static_cast<size_t>(count), min_idle,
                                consumer, ctx.now_ms);
  if (!r.ok()) {
    rb.Error(r.status() == OpStatus::kNoGroup ? NoKeyOrGroup(args[1], args[2])
                                              : std::string(errors::ForStatus(r.status())));
    return;
  }
  rb.ArrayHeader(r->size());
  for (const shard::XPendingEntry& e : *r) {
    rb.ArrayHeader(4);
    rb.Bulk(e.id.ToString());
    rb.Bulk(e.consumer);
    rb.Integer(e.idle_ms);
    rb.Integer(static_cast<int64_t>(e.deliveries));
  }
}

void ReplyClaimed(ReplyBuilder& rb, const std::vector<StreamEntryOut>& got, bool justid) {
  rb.ArrayHeader(got.size());
  for (const StreamEntryOut& e : got) {
    if (justid) {
      rb.Bulk(e.id.ToString());
    } else {
      ReplyEntry(rb, e);
    }
  }
}

// XCLAIM key group consumer min-idle-time id ... [IDLE ms] [TIME unix-ms] [RETRYCOUNT n] [FORCE]
// [JUSTID] [LASTID id], checked in Redis's order.
void XClaim(CmdArgs args, ShardCtx& ctx) {
  ReplyBuilder& rb = ctx.rb;
  const shard::ValueType type = ctx.db.Type(args[1], ctx.now_ms);
  if (type != shard::ValueType::kNone && type != shard::ValueType::kStream) {
    rb.Error(errors::kWrongType);
    return;
  }
  if (auto has = ctx.db.XHasGroup(args[1], args[2], ctx.now_ms); !has.ok() || !*has) {
    rb.Error(NoKeyOrGroup(args[1], args[2]));
    return;
  }
  shard::XClaimOptions opts;
  if (!StringToInt64(args[4], &opts.min_idle_ms)) {
    rb.Error("ERR Invalid min-idle-time argument for XCLAIM");
    return;
  }
  if (opts.min_idle_ms < 0) opts.min_idle_ms = 0;
  std::vector<StreamId> ids;
  size_t j = 5;
  for (; j < args.size(); j++) {
    StreamId id;
    if (!ParseId(args[j], true, 0, &id)) break;
    ids.push_back(id);
  }
  const int64_t now = ctx.now_ms;
  for (; j < args.size(); j++) {
    const bool more = j + 1 < args.size();
    const std::string_view opt = args[j];
    auto number = [&](int64_t* v, const char* what) {
      if (StringToInt64(args[++j], v)) return true;
      rb.Error(Cat({"ERR Invalid ", what, " option argument for XCLAIM"}));
      return false;
    };
    if (OptionIs(opt, "force")) {
      opts.force = true;
    } else if (OptionIs(opt, "justid")) {
      opts.justid = true;
    } else if (OptionIs(opt, "idle") && more) {
      int64_t idle;
      if (!number(&idle, "IDLE")) return;
      opts.delivery_ms = now - idle;
    } else if (OptionIs(opt, "time") && more) {
      if (!number(&opts.delivery_ms, "TIME")) return;
    } else if (OptionIs(opt, "retrycount") && more) {
      if (!number(&opts.retry_count, "RETRYCOUNT")) return;
    } else if (OptionIs(opt, "lastid") && more) {
      if (!ParseIdOrReply(args[++j], true, 0, &opts.last_id, rb)) return;
    } else {
      rb.Error(Cat({"ERR Unrecognized XCLAIM option '", opt, "'"}));
      return;
    }
  }
  auto r = ctx.db.XClaim(args[1], args[2], args[3], ids, opts, now);
  if (!r.ok()) {
    rb.Error(errors::ForStatus(r.status()));
    return;
  }
  ReplyClaimed(rb, *r, opts.justid);
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT n] [JUSTID]
void XAutoClaim(CmdArgs args, ShardCtx& ctx) {
  ReplyBuilder& rb = ctx.rb;
  int64_t min_idle;
  if (!StringToInt64(args[4], &min_idle)) {
    rb.Error("ERR Invalid min-idle-time argument for XAUTOCLAIM");
    return;
  }
  if (min_idle < 0) min_idle = 0;
  StreamId start;
  if (!ParseBound(args[5], true, &start, rb)) return;
  int64_t count = 100;
  bool justid = false;
  for (size_t j = 6; j < args.size(); j++) {
    if (OptionIs(args[j], "count") && j + 1 < args.size()) {
      // Redis's bound: LONG_MAX / 10, so that count * 10 attempts cannot overflow.
      if (!StringToInt64(args[j + 1], &count) || count < 1 || count > INT64_MAX / 10) {
        rb.Error("ERR COUNT must be > 0");
        return;
      }
      j++;
    } else if (OptionIs(args[j], "justid")) {
      justid = true;
    } else {
      rb.Error(errors::kSyntax);
      return;
    }
  }
  auto r = ctx.db.XAutoClaim(args[1], args[2], args[3], min_idle, start, static_cast<size_t>(count),
                             justid, ctx.now_ms);
  if (!r.ok()) {
    rb.Error(r.status() == OpStatus::kNoGroup ? NoKeyOrGroup(args[1], args[2])
                                              : std::string(errors::ForStatus(r.status())));
    return;
  }
  rb.ArrayHeader(3);
  rb.Bulk(r->cursor.ToString());
  ReplyClaimed(rb, r->claimed, justid);
  rb.ArrayHeader(r->deleted.size());
  for (StreamId id : r->deleted) rb.Bulk(id.ToString());
}

// --- XINFO ---

void ReplyNullableInt(ReplyBuilder& rb, std::optional<int64_t> v) {
  if (v) {
    rb.Integer(*v);
  } else {
    rb.Null();
  }
}

// XINFO STREAM FULL's last two fields: the entries and the groups, each with its PEL and
// consumers (Redis 7.0's xinfoReplyWithStreamInfo).
void ReplyFull(ReplyBuilder& rb, const shard::XStreamFull& f) {
  rb.Bulk("entries");
  ReplyEntries(rb, f.entries);
  rb.Bulk("groups");
  rb.ArrayHeader(f.groups.size());
  for (const shard::XStreamFull::Group& g : f.groups) {
    rb.MapHeader(7);
    rb.Bulk("name");
    rb.Bulk(g.info.name);
    rb.Bulk("last-delivered-id");
    rb.Bulk(g.info.last_id.ToString());
    rb.Bulk("entries-read");
    ReplyNullableInt(
        rb, g.info.entries_read != -1 ? std::optional<int64_t>(g.info.entries_read) : std::nullopt);
    rb.Bulk("lag");
    ReplyNullableInt(rb, g.info.lag);
    rb.Bulk("pel-count");
    rb.Integer(static_cast<int64_t>(g.info.pending));
    rb.Bulk("pending");
    rb.ArrayHeader(g.pending.size());
    for (const auto& [id, nack] : g.pending) {
      rb.ArrayHeader(4);
      rb.Bulk(id.ToString());
      rb.Bulk(nack.consumer);
      rb.Integer(nack.delivery_ms);
      rb.Integer(static_cast<int64_t>(nack.delivery_count));
    }
    rb.Bulk("consumers");
    rb.ArrayHeader(g.consumers.size());
    for (const shard::XStreamFull::Group::Consumer& c : g.consumers) {
      rb.MapHeader(4);
      rb.Bulk("name");
      rb.Bulk(c.name);
      rb.Bulk("seen-time");
      rb.Integer(c.seen_ms);
      rb.Bulk("pel-count");
      rb.Integer(static_cast<int64_t>(c.pel_count));
      rb.Bulk("pending");
      rb.ArrayHeader(c.pending.size());
      for (const auto& [id, nack] : c.pending) {
        rb.ArrayHeader(3);
        rb.Bulk(id.ToString());
        rb.Integer(nack.delivery_ms);
        rb.Integer(static_cast<int64_t>(nack.delivery_count));
      }
    }
  }
}

void XInfo(CmdArgs args, ShardCtx& ctx) {
  ReplyBuilder& rb = ctx.rb;
  const std::string_view sub = args[1];
  if (EqualsIgnoreCase(sub, "help")) {
    if (args.size() != 2) {
      rb.Error(errors::SubcommandSyntax(sub, "XINFO"));
      return;
    }
    WriteHelp(rb,
              {"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
               "CONSUMERS <key> <groupname>", "    Show consumers of <groupname>.", "GROUPS <key>",
               "    Show the stream consumer groups.", "STREAM <key> [FULL [COUNT <count>]",
               "    Show information about the stream.", "HELP", "    Prints this help."});
    return;
  }
  struct Sub {
    const char* name;
    int arity;
  };
  static constexpr Sub kSubs[] = {{"consumers", 4}, {"groups", 3}, {"stream", -3}};
  const Sub* known = nullptr;
  for (const Sub& s : kSubs) {
    if (EqualsIgnoreCase(sub, s.name)) known = &s;
  }
  if (!known) {
    rb.Error(errors::UnknownSubcommand(sub, "XINFO"));
    return;
  }
  if (known->arity >= 0 ? args.size() != static_cast<size_t>(known->arity)
                        : args.size() < static_cast<size_t>(-known->arity)) {
    rb.Error(errors::WrongArity(Cat({"xinfo|", known->name})));
    return;
  }
  const std::string_view key = args[2];
  auto info = ctx.db.XInfoStream(key, ctx.now_ms);
  if (!info.ok()) {
    rb.Error(info.status() == OpStatus::kNoSuchKey ? errors::kNoSuchKey
                                                   : errors::ForStatus(info.status()));
    return;
  }
  if (EqualsIgnoreCase(sub, "consumers")) {
    auto r = ctx.db.XInfoConsumers(key, args[3], ctx.now_ms);
    if (!r.ok()) {
      rb.Error(NoGroupFor(key, args[3]));
      return;
    }
    rb.ArrayHeader(r->size());
    for (const shard::XConsumerInfo& c : *r) {
      rb.MapHeader(3);
      rb.Bulk("name");
      rb.Bulk(c.name);
      rb.Bulk("pending");
      rb.Integer(static_cast<int64_t>(c.pending));
      rb.Bulk("idle");
      rb.Integer(c.idle_ms);
    }
    return;
  }
  if (EqualsIgnoreCase(sub, "groups")) {
    auto r = ctx.db.XInfoGroups(key, ctx.now_ms);
    rb.ArrayHeader(r->size());
    for (const shard::XGroupInfo& g : *r) {
      rb.MapHeader(6);
      rb.Bulk("name");
      rb.Bulk(g.name);
      rb.Bulk("consumers");
      rb.Integer(static_cast<int64_t>(g.consumers));
      rb.Bulk("pending");
      rb.Integer(static_cast<int64_t>(g.pending));
      rb.Bulk("last-delivered-id");
      rb.Bulk(g.last_id.ToString());
      rb.Bulk("entries-read");
      ReplyNullableInt(
          rb, g.entries_read != -1 ? std::optional<int64_t>(g.entries_read) : std::nullopt);
      rb.Bulk("lag");
      ReplyNullableInt(rb, g.lag);
    }
    return;
  }
  // STREAM key [FULL [COUNT n]]
  int64_t count = 10;  // FULL's default: so that the reply stays bounded
  const bool full = args.size() != 3;
  if (full) {
    if ((args.size() != 4 && args.size() != 6) || !EqualsIgnoreCase(args[3], "full") ||
        (args.size() == 6 && !EqualsIgnoreCase(args[4], "count"))) {
      rb.Error(errors::SubcommandSyntax(sub, "XINFO"));
      return;
    }
    if (args.size() == 6) {
      if (!StringToInt64(args[5], &count)) {
        rb.Error(errors::kNotInteger);
        return;
      }
      if (count < 0) count = 10;
    }
  }
  const shard::XStreamInfo& s = *info;
  rb.MapHeader(full ? 9 : 10);
  rb.Bulk("length");
  rb.Integer(static_cast<int64_t>(s.length));
  // Redis's radix tree of nodes of about 100 entries: its size estimated, not kept.
  const auto nodes = static_cast<int64_t>((s.length + 99) / 100);
  rb.Bulk("radix-tree-keys");
  rb.Integer(nodes);
  rb.Bulk("radix-tree-nodes");
  rb.Integer(nodes + 1);
  rb.Bulk("last-generated-id");
  rb.Bulk(s.last_id.ToString());
  rb.Bulk("max-deleted-entry-id");
  rb.Bulk(s.max_deleted.ToString());
  rb.Bulk("entries-added");
  rb.Integer(static_cast<int64_t>(s.entries_added));
  rb.Bulk("recorded-first-entry-id");
  rb.Bulk(s.first_recorded.ToString());
  if (full) {
    ReplyFull(rb, *ctx.db.XInfoFull(key, static_cast<size_t>(count), ctx.now_ms));
    return;
  }
  rb.Bulk("groups");
  rb.Integer(static_cast<int64_t>(s.groups));
  rb.Bulk("first-entry");
  if (s.first) {
    ReplyEntry(rb, *s.first);
  } else {
    rb.Null();
  }
  rb.Bulk("last-entry");
  if (s.last) {
    ReplyEntry(rb, *s.last);
  } else {
    rb.Null();
  }
}

void Register(CommandTable* t) {
  const std::vector<std::string> kWriteFast = {"@write", "@stream", "@fast"};
  CommandSpec xgroup = KeyContainer("xgroup", kWrite, XGroup, {"@write", "@stream", "@slow"},
                                    {{"create", -5, kWrite | kDenyOom},
                                     {"setid", -5, kWrite},
                                     {"destroy", 4, kWrite},
                                     {"createconsumer", 5, kWrite | kDenyOom},
                                     {"delconsumer", 5, kWrite},
                                     {"help", 2, kLoading | kStale}});
  xgroup.flags |= kMayCreate;  // CREATE ... MKSTREAM
  xgroup.may_create = XGroupMayCreate;
  t->Add(std::move(xgroup));
  t->Add(KeyContainer("xinfo", kReadOnly, XInfo, {"@read", "@stream", "@slow"},
                      {{"consumers", 4, kReadOnly},
                       {"groups", 3, kReadOnly},
                       {"stream", -3, kReadOnly},
                       {"help", 2, kLoading | kStale}}));
  CommandSpec xreadgroup =
      MultiKeyCommand("xreadgroup", -7, kWrite | kBlocking, XReadGroupAcross, XReadGroup,
                      {"@write", "@stream", "@slow", "@blocking"}, 0, 0, 0);
  xreadgroup.key_range = XReadKeyRange<true>;
  xreadgroup.blocks = XReadMayBlock<true>;
  t->Add(std::move(xreadgroup));
  t->Add(Key1("xack", -4, kWrite | kFast, XAck, kWriteFast));
  t->Add(Key1("xpending", -3, kReadOnly, XPending, {"@read", "@stream", "@slow"}));
  t->Add(Key1("xclaim", -6, kWrite | kFast, XClaim, kWriteFast));
  t->Add(Key1("xautoclaim", -6, kWrite | kFast, XAutoClaim, kWriteFast));
}

}  // namespace
}  // namespace stream_cmds

void RegisterStreamGroupCommands(CommandTable* t) { stream_cmds::Register(t); }

}  // namespace deadbolt::server
