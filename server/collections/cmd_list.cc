// List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LINSERT LTRIM
// LPOS LMOVE RPOPLPUSH, with Redis 7.0's replies, errors and their order (t_list.c). LMOVE and
// RPOPLPUSH between keys on two shards are atomic: both keys locked, checked, then moved. And the
// blocking pops BLPOP BRPOP BLMOVE BRPOPLPUSH, waiting in the server on LockWaiters' key-ready
// hook.

#include <absl/functional/any_invocable.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/collections/blocking.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/txn/blocked_reply.h"
#include "server/txn/lock_waiters.h"
#include "shard/base/numeric.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace list_cmds {

using protocol::ReplyBuilder;
using shard::ListEnd;
using shard::OpStatus;


std::span<const std::string_view> Tail(CmdArgs args, size_t from) {
  return {args.data() + from, args.size() - from};
}

template <ListEnd end, bool only_if_exists>
void Push(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.ListPush(args[1], Tail(args, 2), end, only_if_exists, ctx.now_ms);
  if (r.ok()) {
    ctx.rb.Integer(*r);
    if (*r > 0) ServeWaiters(ctx, args[1]);
  } else {
    ReplyStatus(ctx.rb, r.status());
  }
}

// LPOP / RPOP key [count]: the count is read before the key is looked at, as Redis.
template <ListEnd end>
void Pop(CmdArgs args, ShardCtx& ctx) {
  if (args.size() > 3) {
    ctx.rb.Error(errors::WrongArity(end == ListEnd::kLeft ? "lpop" : "rpop"));
    return;
  }
  const bool has_count = args.size() == 3;
  int64_t count = 1;
  if (has_count) {
    if (!StringToInt64(args[2], &count) || count < 0) {  // one message for both, as Redis
      ctx.rb.Error(errors::kNotPositive);
      return;
    }
  }
  auto r = ctx.db.ListPop(args[1], end, static_cast<size_t>(count), ctx.now_ms);
  if (!r.ok()) {
    if (r.status() != OpStatus::kKeyNotFound) {
      ReplyStatus(ctx.rb, r.status());
    } else if (has_count) {
      ctx.rb.NullArray();
    } else {
      ctx.rb.Null();
    }
    return;
  }
  if (!has_count) {
    ctx.rb.Bulk(r->front());
    return;
  }
  ctx.rb.ArrayHeader(r->size());
  for (const std::string& v : *r) ctx.rb.Bulk(v);
}

void LLen(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.ListLen(args[1], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void LRange(CmdArgs args, ShardCtx& ctx) {
  int64_t start, stop;
  if (!StringToInt64(args[2], &start) || !StringToInt64(args[3], &stop)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  auto r = ctx.db.ListRange(args[1], start, stop, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.ArrayHeader(r->size());
  for (const std::string& v : *r) ctx.rb.Bulk(v);
}

// The reply for an index argument that is not an integer, which Redis reads only after the key:
// nothing for a missing key (`missing` is replied), WRONGTYPE, then the integer error.
void BadIndex(ShardCtx& ctx, std::string_view key, bool nil_when_missing) {
  switch (ctx.db.Type(key, ctx.now_ms)) {
    case shard::ValueType::kNone:
      if (nil_when_missing) {
        ctx.rb.Null();
      } else {
        ctx.rb.Error(errors::kNoSuchKey);
      }
      return;
    case shard::ValueType::kList:
      ctx.rb.Error(errors::kNotInteger);
      return;
    default:
      ctx.rb.Error(errors::kWrongType);
      return;
  }
}

void LIndex(CmdArgs args, ShardCtx& ctx) {
  int64_t index;
  if (!StringToInt64(args[2], &index)) {
    BadIndex(ctx, args[1], true);
    return;
  }
  auto r = ctx.db.ListIndex(args[1], index, ctx.now_ms);
  ReplyBulkOrNil(ctx.rb, r);
}

void LSet(CmdArgs args, ShardCtx& ctx) {
  int64_t index;
  if (!StringToInt64(args[2], &index)) {
    BadIndex(ctx, args[1], false);
    return;
  }
  OpStatus s = ctx.db.ListSet(args[1], index, args[3], ctx.now_ms);
  if (s == OpStatus::kOk) {
    ctx.rb.Ok();
  } else if (s == OpStatus::kOutOfRange) {
    ctx.rb.Error(errors::kIndexOutOfRange);
  } else {
    ReplyStatus(ctx.rb, s);
  }
}

void LRem(CmdArgs args, ShardCtx& ctx) {
  int64_t count;
  if (!StringToInt64(args[2], &count)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  auto r = ctx.db.ListRem(args[1], count, args[3], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void LInsert(CmdArgs args, ShardCtx& ctx) {
  bool before;
  if (OptionIs(args[2], "before")) {
    before = true;
  } else if (OptionIs(args[2], "after")) {
    before = false;
  } else {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  auto r = ctx.db.ListInsert(args[1], before, args[3], args[4], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void LTrim(CmdArgs args, ShardCtx& ctx) {
  int64_t start, stop;
  if (!StringToInt64(args[2], &start) || !StringToInt64(args[3], &stop)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  OpStatus s = ctx.db.ListTrim(args[1], start, stop, ctx.now_ms);
  if (s == OpStatus::kOk) {
    ctx.rb.Ok();
  } else {
    ReplyStatus(ctx.rb, s);
  }
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]: options first, as Redis.
void LPos(CmdArgs args, ShardCtx& ctx) {
  int64_t rank = 1, count = 1, maxlen = 0;
  bool has_count = false;
  for (size_t i = 3; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) {
      ctx.rb.Error(errors::kSyntax);
      return;
    }
    int64_t v = 0;
    const bool is_int = StringToInt64(args[i + 1], &v);
    if (OptionIs(args[i], "rank")) {
      if (!is_int) {
        ctx.rb.Error(errors::kNotInteger);
        return;
      }
      if (v == 0 || v == INT64_MIN) {
        ctx.rb.Error(errors::kRankZero);
        return;
      }
      rank = v;
    } else if (OptionIs(args[i], "count") || OptionIs(args[i], "maxlen")) {
      const bool is_count = OptionIs(args[i], "count");
      if (!is_int || v < 0) {  // one message for both, as Redis
        ctx.rb.Error(is_count ? errors::kCountNegative : errors::kMaxLenNegative);
        return;
      }
      if (is_count) {
        count = v;
        has_count = true;
      } else {
        maxlen = v;
      }
    } else {
      ctx.rb.Error(errors::kSyntax);
      return;
    }
  }
  auto r = ctx.db.ListPos(args[1], args[2], rank, count, maxlen, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  if (!has_count) {
    if (r->empty()) {
      ctx.rb.Null();
    } else {
      ctx.rb.Integer(r->front());
    }
    return;
  }
  ctx.rb.ArrayHeader(r->size());
  for (int64_t i : *r) ctx.rb.Integer(i);
}

// LMOVE's LEFT | RIGHT.
bool ParseEnd(std::string_view s, ListEnd* out) {
  if (OptionIs(s, "left")) {
    *out = ListEnd::kLeft;
  } else if (OptionIs(s, "right")) {
    *out = ListEnd::kRight;
  } else {
    return false;
  }
  return true;
}

// The directions of LMOVE (args 3, 4) or RPOPLPUSH (right to left). False after replying.
bool MoveEnds(CmdArgs args, ListEnd* from, ListEnd* to, ReplyBuilder& rb) {
  if (args.size() == 3) {  // RPOPLPUSH
    *from = ListEnd::kRight;
    *to = ListEnd::kLeft;
    return true;
  }
  if (!ParseEnd(args[3], from) || !ParseEnd(args[4], to)) {
    rb.Error(errors::kSyntax);
    return false;
  }
  return true;
}

void ReplyMoved(const shard::OpResult<std::string>& r, ReplyBuilder& rb) {
  if (r.ok()) {
    rb.Bulk(*r);
  } else if (r.status() == OpStatus::kKeyNotFound) {
    rb.Null();
  } else {
    ReplyStatus(rb, r.status());
  }
}

// Both keys on this shard: one step.
void MoveOnShard(CmdArgs args, ShardCtx& ctx) {
  ListEnd from, to;
  if (!MoveEnds(args, &from, &to, ctx.rb)) return;
  auto r = ctx.db.ListMove(args[1], args[2], from, to, ctx.now_ms);
  ReplyMoved(r, ctx.rb);
  if (r.ok()) ServeWaiters(ctx, args[2]);
}

// Source and destination on two shards, under both keys' locks, in three phases, each on its
// key's shard only (the one on this reactor's shard costs no message). With the destination on
// the lower shard: (1) the destination checks its key (a list, or missing), (2) the source
// checks its key and pops if both are lists, (3) the destination pushes. With the source on the
// lower shard: (1) the source checks its key and reads the element it would pop, (2) the
// destination checks its key and pushes that element if both are lists, (3) the source pops it.
// Either way the phases visit the lower shard, the higher, then the lower again, so they run in
// one pass along the shards when they can (Transaction::LockRunPhases). Nobody sees the
// element in both lists or in neither: each key stays locked from before its first phase to
// after its last.
// `deadline`: a BLMOVE / BRPOPLPUSH outside MULTI, which waits when the source is empty (or has
// earlier waiters) until then (WaitToMoveAcross); -1 for LMOVE / RPOPLPUSH.
void MoveAcross(CmdArgs args, Connection& conn, ReplyBuilder& rb, int64_t deadline) {
  ListEnd from, to;
  if (!MoveEnds(args, &from, &to, rb)) return;
  const Server& server = conn.reactor().server();
  struct State {
    std::string src, dst;
    int src_shard, dst_shard;
    ListEnd from, to;
    OpStatus src_status = OpStatus::kOk;  // kKeyNotFound, kWrongType
    OpStatus dst_status = OpStatus::kOk;
    std::optional<std::string> value;
  };
  auto st = std::make_shared<State>();
  st->src = std::string(args[1]);
  st->dst = std::string(args[2]);
  st->src_shard = server.ShardOf(args[1]);
  st->dst_shard = server.ShardOf(args[2]);
  st->from = from;
  st->to = to;
  std::vector<Connection::ShardFn> phases;
  const bool may_wait = deadline >= 0;
  // The source's state (the element at `from` in `value`, not popped yet).
  auto check_src = [st, may_wait](ShardCtx& ctx) {
    if (may_wait && OthersWait(ctx, st->src)) {  // behind the waiters already there
      st->src_status = OpStatus::kKeyNotFound;
      return;
    }
    auto len = ctx.db.ListLen(st->src, ctx.now_ms);
    st->src_status = !len.ok() ? len.status() : *len == 0 ? OpStatus::kKeyNotFound : OpStatus::kOk;
  };
  auto push = [st](ShardCtx& ctx) {
    const std::string_view one[1] = {*st->value};
    ctx.db.ListPush(st->dst, one, st->to, false, ctx.now_ms);
    ServeWaiters(ctx, st->dst);
  };
  if (st->dst_shard < st->src_shard) {
    phases.push_back(
        [st](ShardCtx& ctx) { st->dst_status = ctx.db.ListCheckType(st->dst, ctx.now_ms); });
    phases.push_back([st, check_src](ShardCtx& ctx) {
      check_src(ctx);
      if (st->src_status != OpStatus::kOk || st->dst_status != OpStatus::kOk) return;
      auto r = ctx.db.ListPop(st->src, st->from, 1, ctx.now_ms);
      if (r.ok() && !r->empty()) st->value = std::move(r->front());
    });
    phases.push_back([st, push](ShardCtx& ctx) {
      if (st->value) push(ctx);
    });
  } else {
    phases.push_back([st, check_src](ShardCtx& ctx) {
      check_src(ctx);
      if (st->src_status != OpStatus::kOk) return;
      auto r = ctx.db.ListIndex(st->src, st->from == ListEnd::kLeft ? 0 : -1, ctx.now_ms);
      if (r.ok()) st->value = std::move(*r);
    });
    phases.push_back([st, push](ShardCtx& ctx) {
      st->dst_status = ctx.db.ListCheckType(st->dst, ctx.now_ms);
      if (st->dst_status != OpStatus::kOk) st->value.reset();
      if (st->value) push(ctx);
    });
    phases.push_back([st](ShardCtx& ctx) {
      if (st->value) ctx.db.ListPop(st->src, st->from, 1, ctx.now_ms);
    });
  }
  std::vector<int> on = {st->dst_shard, st->src_shard, st->dst_shard};
  if (st->src_shard < st->dst_shard) on = {st->src_shard, st->dst_shard, st->src_shard};
  conn.FanOutPhasesOn(
      {std::min(st->src_shard, st->dst_shard), std::max(st->src_shard, st->dst_shard)},
      std::move(phases), std::move(on), [st, deadline, c = &conn](ReplyBuilder& rb) {
        if (deadline >= 0 && st->src_status == OpStatus::kKeyNotFound) {
          // Redis blocks on an empty source whatever the destination is.
          WaitToMoveAcross(*c, MoveAcrossWait{st->src, st->dst, st->src_shard, st->dst_shard,
                                              st->from, st->to, deadline});
        } else if (st->src_status != OpStatus::kOk) {
          ReplyMoved(st->src_status, rb);
        } else if (st->dst_status != OpStatus::kOk) {
          ReplyStatus(rb, st->dst_status);
        } else if (st->value) {
          rb.Bulk(*st->value);
        } else {
          rb.Null();
        }
      });
}

// --- BLPOP BRPOP BLMOVE BRPOPLPUSH: waiting in the server (LockWaiters' key-ready hook) ---

void Move(CmdArgs args, Connection& conn, ReplyBuilder& rb) { MoveAcross(args, conn, rb, -1); }

// BLMOVE / BRPOPLPUSH with keys on two shards: LMOVE / RPOPLPUSH's atomic move, or (the source
// empty, outside MULTI) a wait on the source that moves across when it is ready.
void BMoveAcross(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  ListEnd from, to;
  if (args.size() == 6 && (!ParseEnd(args[3], &from) || !ParseEnd(args[4], &to))) {
    rb.Error(errors::kSyntax);
    return;
  }
  int64_t deadline;
  if (!ParseBlockTimeout(args.back(), conn.reactor().now_ms(), &deadline, rb)) return;
  MoveAcross(args.subspan(0, args.size() - 1), conn, rb, conn.in_exec() ? -1 : deadline);
}

// How BLPOP / BRPOP take an element (blocking.h).
void ReplyKeyValue(ReplyBuilder& rb, std::string_view key, const std::vector<Popped>& got) {
  const std::string_view kv[2] = {key, got.front().value};
  rb.BulkArray(kv, 2);
}
template <ListEnd end>
constexpr PopFns kListPopFns = ListPopFns<end>(ReplyKeyValue);

// BLPOP / BRPOP key [key ...] timeout, all keys on this shard: the first key in order that has
// an element is popped (a key of another type first is WRONGTYPE, as Redis; a key whose earlier
// waiters take what it has is passed over). Else the client waits on its keys (WaitOnKeys);
// inside MULTI it does not wait (a null array).
template <ListEnd end>
void BPop(CmdArgs args, ShardCtx& ctx) {
  int64_t deadline;
  if (!ParseBlockTimeout(args.back(), ctx.now_ms, &deadline, ctx.rb)) return;
  const CmdArgs keys = args.subspan(1, args.size() - 2);
  if (PopFirstReady(ctx, keys, 1, kListPopFns<end>)) return;
  if (!(ctx.block && *ctx.block)) {
    ctx.rb.NullArray();
    return;
  }
  WaitOnKeys(ctx, keys, deadline, kListPopFns<end>);
}

// BLMOVE src dst LEFT|RIGHT LEFT|RIGHT timeout / BRPOPLPUSH src dst timeout, both keys here.
void BMoveOnShard(CmdArgs args, ShardCtx& ctx) {
  ListEnd from = ListEnd::kRight, to = ListEnd::kLeft;
  if (args.size() == 6 && (!ParseEnd(args[3], &from) || !ParseEnd(args[4], &to))) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  int64_t deadline;
  if (!ParseBlockTimeout(args.back(), ctx.now_ms, &deadline, ctx.rb)) return;
  if (!OthersWait(ctx, args[1])) {
    auto r = ctx.db.ListMove(args[1], args[2], from, to, ctx.now_ms);
    if (r.ok() || r.status() != OpStatus::kKeyNotFound) {
      ReplyMoved(r, ctx.rb);
      if (r.ok()) ServeWaiters(ctx, args[2]);
      return;
    }
  }
  if (!(ctx.block && *ctx.block)) {
    ctx.rb.Null();
    return;
  }
  LockWaiters::Waiter w;
  w.deadline_ms = deadline;
  w.timeout_null_array = true;  // as Redis: a timed-out BLMOVE replies a null array
  w.reply = std::move(*ctx.block);
  const int db = ctx.db_index;
  w.try_serve = [db, dst = std::string(args[2]), from, to](shard::Db& d, std::string_view key,
                                                           int64_t now, BlockedReply& reply) {
    // Missing, empty or of another type (Redis keeps such a waiter waiting): wait on.
    auto len = d.ListLen(key, now);
    if (!len.ok() || *len == 0) return false;
    // A destination of another type: WRONGTYPE, nothing moved (Redis re-runs the command).
    auto r = d.ListMove(key, dst, from, to, now);
    if (!r.ok()) {
      reply.Finish(ErrorOf(reply.resp(), errors::ForStatus(r.status())));
      return true;
    }
    const std::string_view one[1] = {*r};
    std::string bytes = RespOf(reply.resp(), one, 1, true);  // before the value moves below
    reply.Finish(std::move(bytes), [db, src = std::string(key), dst, from, to, v = std::move(*r)] {
      // The client has gone: the element goes back, if it is still where it went.
      shard::Db& d = Reactor::Current()->shard().db(db);
      const int64_t now = Reactor::Current()->now_ms();
      auto back = d.ListPop(dst, to, 1, now);
      if (!back.ok() || back->empty()) return;
      const std::string_view one[1] = {back->front()};
      if (back->front() == v) {
        d.ListPush(src, one, from, false, now);
      } else {
        d.ListPush(dst, one, to, false, now);
      }
    });
    return true;
  };
  Reactor::Current()->lock_waiters().Wait(ctx.db_index, args[1], std::move(w));
}

// Keys on several shards (BLPOP k1 k2 ...): blocking.h's BlockingPopAcross.
template <ListEnd end>
void BPopAcross(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  int64_t deadline;
  if (!ParseBlockTimeout(args.back(), conn.reactor().now_ms(), &deadline, rb)) return;
  PopAcross(args.subspan(1, args.size() - 2), deadline, 1, true, conn, rb, kListPopFns<end>);
}

void Register(CommandTable* t) {
  const std::vector<std::string> kReadFast = {"@read", "@list", "@fast"};
  const std::vector<std::string> kReadSlow = {"@read", "@list", "@slow"};
  const std::vector<std::string> kWriteFast = {"@write", "@list", "@fast"};
  const std::vector<std::string> kWriteSlow = {"@write", "@list", "@slow"};
  t->Add(Key1("lpush", -3, kWrite | kDenyOom | kFast, Push<ListEnd::kLeft, false>, kWriteFast));
  t->Add(Key1("rpush", -3, kWrite | kDenyOom | kFast, Push<ListEnd::kRight, false>, kWriteFast));
  t->Add(Key1("lpushx", -3, kWrite | kDenyOom | kFast, Push<ListEnd::kLeft, true>, kWriteFast));
  t->Add(Key1("rpushx", -3, kWrite | kDenyOom | kFast, Push<ListEnd::kRight, true>, kWriteFast));
  t->Add(Key1("lpop", -2, kWrite | kFast, Pop<ListEnd::kLeft>, kWriteFast));
  t->Add(Key1("rpop", -2, kWrite | kFast, Pop<ListEnd::kRight>, kWriteFast));
  t->Add(Key1("llen", 2, kReadOnly | kFast, LLen, kReadFast));
  t->Add(Key1("lrange", 4, kReadOnly, LRange, kReadSlow));
  t->Add(Key1("lindex", 3, kReadOnly, LIndex, kReadSlow));
  t->Add(Key1("lset", 4, kWrite | kDenyOom, LSet, kWriteSlow));
  t->Add(Key1("lrem", 4, kWrite, LRem, kWriteSlow));
  t->Add(Key1("linsert", 5, kWrite | kDenyOom, LInsert, kWriteSlow));
  t->Add(Key1("ltrim", 4, kWrite, LTrim, kWriteSlow));
  t->Add(Key1("lpos", -3, kReadOnly, LPos, kReadSlow));
  t->Add(MultiKeyCommand("lmove", 5, kWrite | kDenyOom, Move, MoveOnShard, kWriteSlow, 1, 2, 1));
  t->Add(
      MultiKeyCommand("rpoplpush", 3, kWrite | kDenyOom, Move, MoveOnShard, kWriteSlow, 1, 2, 1));
  const std::vector<std::string> kBlockingAcl = {"@write", "@list", "@slow", "@blocking"};
  auto blocking = [&](std::string name, int arity, uint32_t flags, ConnHandler across,
                      ShardHandler one_shard, int last_key) {
    CommandSpec s = MultiKeyCommand(std::move(name), arity, flags | kNoScript | kBlocking, across,
                                    one_shard, kBlockingAcl, 1, last_key, 1);
    s.blocks = AlwaysMayBlock;
    t->Add(std::move(s));
  };
  blocking("blpop", -3, kWrite, BPopAcross<ListEnd::kLeft>, BPop<ListEnd::kLeft>, -2);
  blocking("brpop", -3, kWrite, BPopAcross<ListEnd::kRight>, BPop<ListEnd::kRight>, -2);
  blocking("blmove", 6, kWrite | kDenyOom, BMoveAcross, BMoveOnShard, 2);
  blocking("brpoplpush", 4, kWrite | kDenyOom, BMoveAcross, BMoveOnShard, 2);
}

}  // namespace list_cmds

void RegisterListCommands(CommandTable* t) { list_cmds::Register(t); }

}  // namespace deadbolt::server
