// Sorted set commands: ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZCARD ZCOUNT ZLEXCOUNT ZRANGE
// ZRANGEBYSCORE ZREVRANGE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZRANK ZREVRANK
// ZREMRANGEBYSCORE ZREMRANGEBYRANK ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZRANDMEMBER ZSCAN ZRANGESTORE,
// with Redis 7.0's replies and errors (t_zset.c): arguments are checked
// in Redis's order, scores print as its addReplyDouble does (%.17g; RESP3 a double), and RESP3
// WITHSCORES replies are [member, score] pairs. And the blocking pops BZPOPMIN BZPOPMAX, waiting
// in the server on LockWaiters' key-ready hook as BLPOP does.

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/collections/blocking.h"
#include "server/collections/zset_common.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/txn/blocked_reply.h"
#include "server/txn/lock_waiters.h"
#include "shard/base/numeric.h"
#include "shard/db.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;
using shard::OpStatus;
using shard::ZRangeSpec;


std::span<const std::string_view> Tail(CmdArgs args, size_t from) {
  return {args.data() + from, args.size() - from};
}

// --- numbers as Redis reads and prints them ---

// One end of a score range, as zslParseRange: "(" makes it exclusive; the rest goes to strtod,
// which must reach the end of the C string; NaN is refused (the empty string reads as 0).
bool ParseScoreBound(std::string_view arg, double* value, bool* exclusive) {
  std::string s(arg);
  const char* p = s.c_str();
  *exclusive = p[0] == '(';
  if (*exclusive) ++p;
  char* end;
  *value = std::strtod(p, &end);
  return end[0] == '\0' && !std::isnan(*value);
}

// One end of a lex range, as zslParseLexRangeItem.
bool ParseLexBound(std::string_view arg, ZRangeSpec::LexBound* out) {
  using Kind = ZRangeSpec::LexBound::Kind;
  if (arg.empty()) return false;
  switch (arg[0]) {
    case '+':
    case '-':
      if (arg.size() > 1 && arg[1] != '\0') return false;
      out->kind = arg[0] == '+' ? Kind::kPlusInf : Kind::kMinusInf;
      return true;
    case '(':
    case '[':
      out->kind = arg[0] == '(' ? Kind::kExclusive : Kind::kInclusive;
      out->member = arg.substr(1);
      return true;
    default:
      return false;
  }
}

void ReplyOptionalScore(ReplyBuilder& rb, const std::optional<double>& d) {
  if (d) {
    ReplyScore(rb, *d);
  } else {
    rb.Null();
  }
}

// A score as Redis 7.0's d2string writes it into a listpack (ZSCAN of a small set): integers
// within +-LLONG_MAX/2 as integers, else %.17g.
std::string PackedScoreText(double v) {
  char buf[40];
  int n;
  if (std::isinf(v)) {
    n = std::snprintf(buf, sizeof(buf), "%s", v < 0 ? "-inf" : "inf");
  } else if (v >= static_cast<double>(-INT64_MAX / 2) && v <= static_cast<double>(INT64_MAX / 2) &&
             v == static_cast<double>(static_cast<long long>(v))) {  // double2ll, -0 included
    n = std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v));
  } else {
    n = std::snprintf(buf, sizeof(buf), "%.17g", v);
  }
  return std::string(buf, static_cast<size_t>(n));
}

// --- ZADD ZINCRBY ---

void ZAddGeneric(CmdArgs args, ShardCtx& ctx, bool zincrby) {
  shard::ZAddOptions opts;
  bool ch = false;
  size_t scoreidx = 2;
  if (zincrby) {
    opts.incr = true;
  } else {
    for (; scoreidx < args.size(); ++scoreidx) {
      const std::string_view o = args[scoreidx];
      if (OptionIs(o, "nx")) {
        opts.nx = true;
      } else if (OptionIs(o, "xx")) {
        opts.xx = true;
      } else if (OptionIs(o, "ch")) {
        ch = true;
      } else if (OptionIs(o, "incr")) {
        opts.incr = true;
      } else if (OptionIs(o, "gt")) {
        opts.gt = true;
      } else if (OptionIs(o, "lt")) {
        opts.lt = true;
      } else {
        break;
      }
    }
  }
  const size_t elements = args.size() - scoreidx;
  if (elements % 2 != 0 || elements == 0) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  if (opts.nx && opts.xx) {
    ctx.rb.Error(errors::kZAddXxNx);
    return;
  }
  if ((opts.gt && opts.nx) || (opts.lt && opts.nx) || (opts.gt && opts.lt)) {
    ctx.rb.Error(errors::kZAddGtLtNx);
    return;
  }
  if (opts.incr && elements > 2) {
    ctx.rb.Error(errors::kZAddIncrPairs);
    return;
  }
  std::vector<std::pair<double, std::string_view>> items(elements / 2);
  for (size_t j = 0; j < items.size(); ++j) {
    if (!ParseScore(args[scoreidx + 2 * j], &items[j].first)) {
      ctx.rb.Error(errors::kNotFloat);
      return;
    }
    items[j].second = args[scoreidx + 2 * j + 1];
  }
  auto r = ctx.db.ZAdd(args[1], opts, items, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
  } else if (opts.incr) {
    ReplyOptionalScore(ctx.rb, r->score);
  } else {
    ctx.rb.Integer(ch ? r->added + r->updated : r->added);
  }
  if (r.ok()) ServeWaiters(ctx, args[1]);  // BZPOPMIN / BZPOPMAX waiting on it
}

void ZAdd(CmdArgs args, ShardCtx& ctx) { ZAddGeneric(args, ctx, false); }
void ZIncrBy(CmdArgs args, ShardCtx& ctx) { ZAddGeneric(args, ctx, true); }

void ZRem(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.ZRem(args[1], Tail(args, 2), ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void ZScore(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.ZScore(args[1], args[2], ctx.now_ms);
  if (r.ok()) {
    ReplyOptionalScore(ctx.rb, *r);
  } else {
    ReplyStatus(ctx.rb, r.status());
  }
}

void ZMScore(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.ZMScore(args[1], Tail(args, 2), ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.ArrayHeader(r->size());
  for (const auto& s : *r) ReplyOptionalScore(ctx.rb, s);
}

void ZCard(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.ZCard(args[1], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

// Parses a [min, max] score (by == kScore) or lex (kLex) range into `range`; false after
// replying the error.
bool ParseRangeEnds(std::string_view min, std::string_view max, ZRangeSpec* range,
                    ReplyBuilder& rb) {
  if (range->by == ZRangeSpec::By::kScore) {
    if (!ParseScoreBound(min, &range->min, &range->min_exclusive) ||
        !ParseScoreBound(max, &range->max, &range->max_exclusive)) {
      rb.Error(errors::kZMinMaxNotFloat);
      return false;
    }
  } else if (range->by == ZRangeSpec::By::kLex) {
    if (!ParseLexBound(min, &range->lex_min) || !ParseLexBound(max, &range->lex_max)) {
      rb.Error(errors::kZMinMaxNotLex);
      return false;
    }
  } else if (!StringToInt64(min, &range->start) || !StringToInt64(max, &range->stop)) {
    rb.Error(errors::kNotInteger);
    return false;
  }
  return true;
}

template <ZRangeSpec::By by>
void ZCount(CmdArgs args, ShardCtx& ctx) {
  ZRangeSpec range;
  range.by = by;
  if (!ParseRangeEnds(args[2], args[3], &range, ctx.rb)) return;
  auto r = ctx.db.ZCount(args[1], range, ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

// --- the ZRANGE family ---

// How a command of the family reads its arguments (zrangeGenericCommand's parameters).
struct RangeCommand {
  enum class Dir : uint8_t { kAuto, kForward, kReverse };
  bool by_auto = false;  // ZRANGE, ZRANGESTORE: BYSCORE / BYLEX / REV are options
  ZRangeSpec::By by = ZRangeSpec::By::kRank;
  Dir dir = Dir::kAuto;
  bool store = false;  // ZRANGESTORE: args[1] is the destination
};

// Parses a ZRANGE-family call into *range and *withscores; false after replying the error.
bool ParseRange(CmdArgs args, const RangeCommand& cmd, ZRangeSpec* range, bool* withscores,
                ReplyBuilder& rb) {
  const size_t base = cmd.store ? 2 : 1;  // the source key
  bool by_auto = cmd.by_auto;
  ZRangeSpec::By by = cmd.by;
  RangeCommand::Dir dir = cmd.dir;
  bool limit = false;
  *withscores = false;
  for (size_t j = base + 3; j < args.size(); ++j) {
    const size_t left = args.size() - j - 1;
    if (!cmd.store && OptionIs(args[j], "withscores")) {
      *withscores = true;
    } else if (OptionIs(args[j], "limit") && left >= 2) {
      if (!StringToInt64(args[j + 1], &range->offset) ||
          !StringToInt64(args[j + 2], &range->limit)) {
        rb.Error(errors::kNotInteger);
        return false;
      }
      limit = true;
      j += 2;
    } else if (dir == RangeCommand::Dir::kAuto && OptionIs(args[j], "rev")) {
      dir = RangeCommand::Dir::kReverse;
    } else if (by_auto && OptionIs(args[j], "bylex")) {
      by = ZRangeSpec::By::kLex;
      by_auto = false;
    } else if (by_auto && OptionIs(args[j], "byscore")) {
      by = ZRangeSpec::By::kScore;
      by_auto = false;
    } else {
      rb.Error(errors::kSyntax);
      return false;
    }
  }
  if (limit && by == ZRangeSpec::By::kRank) {
    rb.Error(errors::kZLimitNeedsBy);
    return false;
  }
  if (*withscores && by == ZRangeSpec::By::kLex) {
    rb.Error(errors::kZWithScoresByLex);
    return false;
  }
  range->by = by;
  range->rev = dir == RangeCommand::Dir::kReverse;
  std::string_view min = args[base + 1], max = args[base + 2];
  if (range->rev && by != ZRangeSpec::By::kRank) std::swap(min, max);  // given as max, min
  return ParseRangeEnds(min, max, range, rb);
}

template <RangeCommand const& cmd>
void ZRangeGeneric(CmdArgs args, ShardCtx& ctx) {
  ZRangeSpec range;
  bool withscores;
  if (!ParseRange(args, cmd, &range, &withscores, ctx.rb)) return;
  auto r = ctx.db.ZRange(args[1], range, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ReplyMembers(ctx.rb, *r, withscores);
}

constexpr RangeCommand kZRange{true, ZRangeSpec::By::kRank, RangeCommand::Dir::kAuto, false};
constexpr RangeCommand kZRangeByScore{false, ZRangeSpec::By::kScore, RangeCommand::Dir::kForward,
                                      false};
constexpr RangeCommand kZRevRangeByScore{false, ZRangeSpec::By::kScore, RangeCommand::Dir::kReverse,
                                         false};
constexpr RangeCommand kZRevRange{false, ZRangeSpec::By::kRank, RangeCommand::Dir::kReverse, false};
constexpr RangeCommand kZRangeByLex{false, ZRangeSpec::By::kLex, RangeCommand::Dir::kForward,
                                    false};
constexpr RangeCommand kZRevRangeByLex{false, ZRangeSpec::By::kLex, RangeCommand::Dir::kReverse,
                                       false};
constexpr RangeCommand kZRangeStore{true, ZRangeSpec::By::kRank, RangeCommand::Dir::kAuto, true};

template <bool rev>
void ZRank(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.ZRank(args[1], args[2], rev, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
  } else if (!*r) {
    ctx.rb.Null();
  } else {
    ctx.rb.Integer((*r)->first);
  }
}

template <ZRangeSpec::By by>
void ZRemRange(CmdArgs args, ShardCtx& ctx) {
  ZRangeSpec range;
  range.by = by;
  if (!ParseRangeEnds(args[2], args[3], &range, ctx.rb)) return;
  auto r = ctx.db.ZRemRange(args[1], range, ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

// ZPOPMIN / ZPOPMAX key [count] (genericZpopCommand): without a count a flat [member, score];
// with one, RESP3 gets [member, score] pairs.
template <bool max>
void ZPop(CmdArgs args, ShardCtx& ctx) {
  if (args.size() > 3) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  int64_t count = 1;
  const bool has_count = args.size() == 3;
  if (has_count) {
    if (!StringToInt64(args[2], &count) || count < 0) {
      ctx.rb.Error(errors::kNotPositive);
      return;
    }
    if (count == 0) {
      ctx.rb.ArrayHeader(0);
      return;
    }
  }
  auto r = ctx.db.ZPop(args[1], max, count, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  if (has_count) {
    ReplyMembers(ctx.rb, *r, true);
    return;
  }
  ctx.rb.ArrayHeader(r->size() * 2);  // flat, also in RESP3
  for (const auto& [m, s] : *r) {
    ctx.rb.Bulk(m);
    ReplyScore(ctx.rb, s);
  }
}

// ZRANDMEMBER key [count [WITHSCORES]]
void ZRandMember(CmdArgs args, ShardCtx& ctx) {
  if (args.size() >= 3) {
    int64_t count;
    bool withscores;
    if (!ParseRandCount(args, "withscores", &count, &withscores, ctx.rb)) return;
    auto r = ctx.db.ZRandMember(args[1], count, ctx.now_ms);
    if (!r.ok()) {
      ReplyStatus(ctx.rb, r.status());
      return;
    }
    ReplyMembers(ctx.rb, *r, withscores);
    return;
  }
  ReplyFirstPicked(ctx.rb, ctx.db.ZRandMember(args[1], 1, ctx.now_ms));
}

// ZSCAN key cursor [MATCH pattern] [COUNT count], in HSCAN's order of checks.
void ZScan(CmdArgs args, ShardCtx& ctx) {
  ElementScanArgs sa;
  if (!ParseElementScan(args, ctx, shard::ValueType::kZSet, &sa)) return;
  auto r = ctx.db.ZScan(args[1], sa.cursor, sa.pattern, sa.count, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.ArrayHeader(2);
  ReplyScanCursor(ctx.rb, r->cursor);
  ctx.rb.ArrayHeader(2 * r->members.size());
  for (const auto& [m, s] : r->members) {
    ctx.rb.Bulk(m);
    ctx.rb.Bulk(r->packed ? PackedScoreText(s)
                          : shard::FormatLongDoubleHuman(static_cast<long double>(s)));
  }
}

// --- ZRANGESTORE (the other stores, ZUNIONSTORE and the like: cmd_zset_algebra.cc) ---

// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
void ZRangeStoreOnShard(CmdArgs args, ShardCtx& ctx) {
  ZRangeSpec range;
  bool withscores;
  if (!ParseRange(args, kZRangeStore, &range, &withscores, ctx.rb)) return;
  auto r = ctx.db.ZRange(args[2], range, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  shard::ZOwnedMembers members;
  members.reserve(r->size());
  for (const auto& [m, s] : *r) members.emplace_back(std::string(m), s);
  ctx.rb.Integer(ctx.db.ZStore(args[1], members, ctx.now_ms));
  ServeWaiters(ctx, args[1]);
}

// Source and destination on different shards: the source shard reads the range (phase 1), the
// destination shard stores it (phase 2), under both keys' locks.
void ZRangeStore(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  auto range = std::make_shared<ZRangeSpec>();
  bool withscores;
  if (!ParseRange(args, kZRangeStore, range.get(), &withscores, rb)) return;
  const Server& server = conn.reactor().server();
  struct State {
    std::string dst, src;
    std::vector<std::string> bounds;  // backs the lex bounds' views
    ZRangeSpec range;
    int src_shard, dst_shard;
    bool wrong_type = false;
    shard::ZOwnedMembers members;
    int64_t stored = 0;
  };
  auto st = std::make_shared<State>();
  st->dst = std::string(args[1]);
  st->src = std::string(args[2]);
  st->range = *range;
  st->bounds = {std::string(range->lex_min.member), std::string(range->lex_max.member)};
  st->range.lex_min.member = st->bounds[0];
  st->range.lex_max.member = st->bounds[1];
  st->src_shard = server.ShardOf(args[2]);
  st->dst_shard = server.ShardOf(args[1]);
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    if (ctx.shard.index() != st->src_shard) return;
    auto r = ctx.db.ZRange(st->src, st->range, ctx.now_ms);
    if (!r.ok()) {
      st->wrong_type = true;
      return;
    }
    for (const auto& [m, s] : *r) st->members.emplace_back(std::string(m), s);
  });
  phases.push_back([st](ShardCtx& ctx) {
    if (st->wrong_type || ctx.shard.index() != st->dst_shard) return;
    st->stored = ctx.db.ZStore(st->dst, st->members, ctx.now_ms);
    ServeWaiters(ctx, st->dst);
  });
  conn.FanOutPhases(
      {std::min(st->src_shard, st->dst_shard), std::max(st->src_shard, st->dst_shard)},
      std::move(phases), [st](ReplyBuilder& rb) {
        if (st->wrong_type) {
          rb.Error(errors::kWrongType);
        } else {
          rb.Integer(st->stored);
        }
      });
}

// --- BZPOPMIN BZPOPMAX: waiting in the server (LockWaiters' key-ready hook, as BLPOP) ---

// [key, member, score], flat also in RESP3 (the score a double there), as Redis 7.0's
// genericZpopCommand with its key.
void ReplyKeyMemberScore(ReplyBuilder& rb, std::string_view key, std::string_view member,
                         double score) {
  rb.ArrayHeader(3);
  rb.Bulk(key);
  rb.Bulk(member);
  ReplyScore(rb, score);
}

// How BZPOPMIN / BZPOPMAX take a member (blocking.h).
void ReplyFirstPopped(ReplyBuilder& rb, std::string_view key, const std::vector<Popped>& got) {
  ReplyKeyMemberScore(rb, key, got.front().value, got.front().score);
}
template <bool max>
constexpr PopFns kZPopFns = ZPopFns<max>(ReplyFirstPopped);

// BZPOPMIN / BZPOPMAX key [key ...] timeout, all keys on this shard: as BLPOP (cmd_list.cc). The
// first key in order that has a member is popped (a key of another type first is WRONGTYPE, as
// Redis). Else the client waits on its keys (WaitOnKeys); inside MULTI it does not wait (a null
// array).
template <bool max>
void BZPop(CmdArgs args, ShardCtx& ctx) {
  int64_t deadline;
  if (!ParseBlockTimeout(args.back(), ctx.now_ms, &deadline, ctx.rb)) return;
  const CmdArgs keys = args.subspan(1, args.size() - 2);
  if (PopFirstReady(ctx, keys, 1, kZPopFns<max>)) return;
  if (!(ctx.block && *ctx.block)) {
    ctx.rb.NullArray();
    return;
  }
  WaitOnKeys(ctx, keys, deadline, kZPopFns<max>);
}

// Keys on several shards: blocking.h's BlockingPopAcross.
template <bool max>
void BZPopAcross(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  int64_t deadline;
  if (!ParseBlockTimeout(args.back(), conn.reactor().now_ms(), &deadline, rb)) return;
  PopAcross(args.subspan(1, args.size() - 2), deadline, 1, true, conn, rb, kZPopFns<max>);
}

}  // namespace

void RegisterZSetCommands(CommandTable* t) {
  const std::vector<std::string> kReadFast = {"@read", "@sortedset", "@fast"};
  const std::vector<std::string> kReadSlow = {"@read", "@sortedset", "@slow"};
  const std::vector<std::string> kWriteFast = {"@write", "@sortedset", "@fast"};
  const std::vector<std::string> kWriteSlow = {"@write", "@sortedset", "@slow"};
  t->Add(Key1("zadd", -4, kWrite | kDenyOom | kFast, ZAdd, kWriteFast));
  t->Add(Key1("zincrby", 4, kWrite | kDenyOom | kFast, ZIncrBy, kWriteFast));
  t->Add(Key1("zrem", -3, kWrite | kFast, ZRem, kWriteFast));
  t->Add(Key1("zscore", 3, kReadOnly | kFast, ZScore, kReadFast));
  t->Add(Key1("zmscore", -3, kReadOnly | kFast, ZMScore, kReadFast));
  t->Add(Key1("zcard", 2, kReadOnly | kFast, ZCard, kReadFast));
  t->Add(Key1("zcount", 4, kReadOnly | kFast, ZCount<ZRangeSpec::By::kScore>, kReadFast));
  t->Add(Key1("zlexcount", 4, kReadOnly | kFast, ZCount<ZRangeSpec::By::kLex>, kReadFast));
  t->Add(Key1("zrange", -4, kReadOnly, ZRangeGeneric<kZRange>, kReadSlow));
  t->Add(Key1("zrangebyscore", -4, kReadOnly, ZRangeGeneric<kZRangeByScore>, kReadSlow));
  t->Add(Key1("zrevrangebyscore", -4, kReadOnly, ZRangeGeneric<kZRevRangeByScore>, kReadSlow));
  t->Add(Key1("zrevrange", -4, kReadOnly, ZRangeGeneric<kZRevRange>, kReadSlow));
  t->Add(Key1("zrangebylex", -4, kReadOnly, ZRangeGeneric<kZRangeByLex>, kReadSlow));
  t->Add(Key1("zrevrangebylex", -4, kReadOnly, ZRangeGeneric<kZRevRangeByLex>, kReadSlow));
  t->Add(Key1("zrank", 3, kReadOnly | kFast, ZRank<false>, kReadFast));
  t->Add(Key1("zrevrank", 3, kReadOnly | kFast, ZRank<true>, kReadFast));
  t->Add(Key1("zremrangebyscore", 4, kWrite, ZRemRange<ZRangeSpec::By::kScore>, kWriteSlow));
  t->Add(Key1("zremrangebyrank", 4, kWrite, ZRemRange<ZRangeSpec::By::kRank>, kWriteSlow));
  t->Add(Key1("zremrangebylex", 4, kWrite, ZRemRange<ZRangeSpec::By::kLex>, kWriteSlow));
  t->Add(Key1("zpopmin", -2, kWrite | kFast, ZPop<false>, kWriteFast));
  t->Add(Key1("zpopmax", -2, kWrite | kFast, ZPop<true>, kWriteFast));
  t->Add(Key1("zrandmember", -2, kReadOnly, ZRandMember, kReadSlow));
  t->Add(Key1("zscan", -3, kReadOnly, ZScan, kReadSlow));
  t->Add(MultiKeyCommand("zrangestore", -5, kWrite | kDenyOom, ZRangeStore, ZRangeStoreOnShard,
                         kWriteSlow, 1, 2, 1));
  const std::vector<std::string> kBlockingAcl = {"@write", "@sortedset", "@fast", "@blocking"};
  auto blocking = [&](std::string name, ConnHandler across, ShardHandler one_shard) {
    CommandSpec s = MultiKeyCommand(std::move(name), -3, kWrite | kNoScript | kFast | kBlocking,
                                    across, one_shard, kBlockingAcl, 1, -2, 1);
    s.blocks = AlwaysMayBlock;
    t->Add(std::move(s));
  };
  blocking("bzpopmin", BZPopAcross<false>, BZPop<false>);
  blocking("bzpopmax", BZPopAcross<true>, BZPop<true>);
}

}  // namespace deadbolt::server
