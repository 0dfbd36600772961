// Hash commands: HSET HMSET HSETNX HGET HMGET HDEL HEXISTS HINCRBY HINCRBYFLOAT HLEN HSTRLEN
// HKEYS HVALS HGETALL HSCAN, with Redis 7.0's replies and errors (t_hash.c).

#include <charconv>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "shard/base/numeric.h"
#include "shard/db.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;
using shard::OpStatus;


// args[from..] as the span the Db operations take.
std::span<const std::string_view> Tail(CmdArgs args, size_t from) {
  return {args.data() + from, args.size() - from};
}

// HSET key field value [field value ...] / HMSET (the same, replying +OK).
void HSetGeneric(CmdArgs args, ShardCtx& ctx, bool hmset) {
  if (args.size() % 2 == 1) {
    ctx.rb.Error(errors::WrongArity(hmset ? "hmset" : "hset"));
    return;
  }
  auto r = ctx.db.HSet(args[1], Tail(args, 2), ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
  } else if (hmset) {
    ctx.rb.Ok();
  } else {
    ctx.rb.Integer(*r);
  }
}

void HSet(CmdArgs args, ShardCtx& ctx) { HSetGeneric(args, ctx, false); }
void HMSet(CmdArgs args, ShardCtx& ctx) { HSetGeneric(args, ctx, true); }

void HSetNx(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.HSetNx(args[1], args[2], args[3], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void HGet(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.HGet(args[1], args[2], ctx.now_ms);
  ReplyBulkOrNil(ctx.rb, r);
}

void HMGet(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.HMGet(args[1], Tail(args, 2), ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.ArrayHeader(r->size());
  for (const auto& v : *r) {
    if (v) {
      ctx.rb.Bulk(*v);
    } else {
      ctx.rb.Null();
    }
  }
}

void HDel(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.HDel(args[1], Tail(args, 2), ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void HExists(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.HExists(args[1], args[2], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void HIncrBy(CmdArgs args, ShardCtx& ctx) {
  int64_t delta;
  if (!StringToInt64(args[3], &delta)) {  // read before the key is looked at, as Redis
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  auto r = ctx.db.HIncrBy(args[1], args[2], delta, ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void HIncrByFloat(CmdArgs args, ShardCtx& ctx) {
  long double delta;
  if (!shard::ParseLongDouble(args[3], &delta)) {  // also refuses "nan"
    ctx.rb.Error(errors::kNotFloat);
    return;
  }
  if (std::isinf(delta)) {
    ctx.rb.Error(errors::kNanOrInfIncrement);
    return;
  }
  auto r = ctx.db.HIncrByFloat(args[1], args[2], delta, ctx.now_ms);
  if (r.ok()) {
    ctx.rb.Bulk(*r);
  } else {
    ReplyStatus(ctx.rb, r.status());
  }
}

void HLen(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.HLen(args[1], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void HStrLen(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.HStrLen(args[1], args[2], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

// HKEYS, HVALS, HGETALL: one read of all pairs; `what` picks the reply.
enum class PairsReply { kKeys, kValues, kAll };

void ReplyPairs(CmdArgs args, ShardCtx& ctx, PairsReply what) {
  auto r = ctx.db.HGetAll(args[1], ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  if (what == PairsReply::kAll) {
    ctx.rb.MapHeader(r->size());  // RESP3: a map; RESP2: a flat array
  } else {
    ctx.rb.ArrayHeader(r->size());
  }
  for (const auto& [field, value] : *r) {
    if (what != PairsReply::kValues) ctx.rb.Bulk(field);
    if (what != PairsReply::kKeys) ctx.rb.Bulk(value);
  }
}

void HKeys(CmdArgs args, ShardCtx& ctx) { ReplyPairs(args, ctx, PairsReply::kKeys); }
void HVals(CmdArgs args, ShardCtx& ctx) { ReplyPairs(args, ctx, PairsReply::kValues); }
void HGetAll(CmdArgs args, ShardCtx& ctx) { ReplyPairs(args, ctx, PairsReply::kAll); }

// HRANDFIELD key [count [WITHVALUES]], checked in Redis 7.0's order (as ZRANDMEMBER). Without
// a count: one field, or nil. WITHVALUES: field-value pairs, flat in RESP2, as pairs in RESP3.
void HRandField(CmdArgs args, ShardCtx& ctx) {
  if (args.size() == 2) {
    ReplyFirstPicked(ctx.rb, ctx.db.HRandField(args[1], 1, ctx.now_ms));
    return;
  }
  int64_t count;
  bool withvalues;
  if (!ParseRandCount(args, "withvalues", &count, &withvalues, ctx.rb)) return;
  auto r = ctx.db.HRandField(args[1], count, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  const bool pairs = withvalues && ctx.rb.resp() >= 3;
  ctx.rb.ArrayHeader(withvalues && !pairs ? 2 * r->size() : r->size());
  for (const auto& [field, value] : *r) {
    if (pairs) ctx.rb.ArrayHeader(2);
    ctx.rb.Bulk(field);
    if (withvalues) ctx.rb.Bulk(value);
  }
}

// HSCAN key cursor [MATCH pattern] [COUNT count]. As Redis 7.0: the cursor is read first, then
// the key is looked up (missing: an empty, finished scan; another type: WRONGTYPE), and only
// then the options. (NOVALUES came with 7.4 and is a syntax error here, as in 7.0.)
void HScan(CmdArgs args, ShardCtx& ctx) {
  ElementScanArgs sa;
  if (!ParseElementScan(args, ctx, shard::ValueType::kHash, &sa)) return;
  auto r = ctx.db.HScan(args[1], sa.cursor, sa.pattern, sa.count, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.ArrayHeader(2);
  ReplyScanCursor(ctx.rb, r->cursor);
  ctx.rb.ArrayHeader(2 * r->pairs.size());
  for (const auto& [field, value] : r->pairs) {
    ctx.rb.Bulk(field);
    ctx.rb.Bulk(value);
  }
}

}  // namespace

void RegisterHashCommands(CommandTable* t) {
  const std::vector<std::string> kReadFast = {"@read", "@hash", "@fast"};
  const std::vector<std::string> kReadSlow = {"@read", "@hash", "@slow"};
  const std::vector<std::string> kWriteFast = {"@write", "@hash", "@fast"};
  t->Add(Key1("hset", -4, kWrite | kDenyOom | kFast, HSet, kWriteFast));
  t->Add(Key1("hmset", -4, kWrite | kDenyOom | kFast, HMSet, kWriteFast));
  t->Add(Key1("hsetnx", 4, kWrite | kDenyOom | kFast, HSetNx, kWriteFast));
  t->Add(Key1("hget", 3, kReadOnly | kFast, HGet, kReadFast));
  t->Add(Key1("hmget", -3, kReadOnly | kFast, HMGet, kReadFast));
  t->Add(Key1("hdel", -3, kWrite | kFast, HDel, kWriteFast));
  t->Add(Key1("hexists", 3, kReadOnly | kFast, HExists, kReadFast));
  t->Add(Key1("hincrby", 4, kWrite | kDenyOom | kFast, HIncrBy, kWriteFast));
  t->Add(Key1("hincrbyfloat", 4, kWrite | kDenyOom | kFast, HIncrByFloat, kWriteFast));
  t->Add(Key1("hlen", 2, kReadOnly | kFast, HLen, kReadFast));
  t->Add(Key1("hstrlen", 3, kReadOnly | kFast, HStrLen, kReadFast));
  t->Add(Key1("hkeys", 2, kReadOnly, HKeys, kReadSlow));
  t->Add(Key1("hvals", 2, kReadOnly, HVals, kReadSlow));
  t->Add(Key1("hgetall", 2, kReadOnly, HGetAll, kReadSlow));
  t->Add(Key1("hscan", -3, kReadOnly, HScan, kReadSlow));
  t->Add(Key1("hrandfield", -2, kReadOnly, HRandField, kReadSlow));
}

}  // namespace deadbolt::server
