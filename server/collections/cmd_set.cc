// Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SSCAN SMOVE SINTER
// SINTERCARD SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE, with Redis 7.0's replies (a RESP3
// set where Redis sends one), errors and their order (t_set.c). The multi-key ones are atomic
// when their keys span shards: every key locked, the members read, then the destination written.

#include <absl/functional/any_invocable.h>

#include <algorithm>
#include <cmath>
#include <charconv>
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

namespace set_cmds {

using protocol::ReplyBuilder;
using shard::OpStatus;


std::span<const std::string_view> Tail(CmdArgs args, size_t from) {
  return {args.data() + from, args.size() - from};
}

void SAdd(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.SetAdd(args[1], Tail(args, 2), ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void SRem(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.SetRem(args[1], Tail(args, 2), ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void ReplySet(const std::vector<std::string>& members, ReplyBuilder& rb) {
  rb.SetHeader(members.size());
  for (const std::string& m : members) rb.Bulk(m);
}

void SMembers(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.SetMembers(args[1], ctx.now_ms);
  if (r.ok()) {
    ReplySet(*r, ctx.rb);
  } else {
    ReplyStatus(ctx.rb, r.status());
  }
}

void SIsMember(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.SetIsMember(args[1], args[2], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void SMIsMember(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.SetMIsMember(args[1], Tail(args, 2), ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.ArrayHeader(r->size());
  for (bool b : *r) ctx.rb.Integer(b ? 1 : 0);
}

void SCard(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.SetCard(args[1], ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

// SPOP key [count]: the count is read first; with a count the reply is a set (RESP3).
void SPop(CmdArgs args, ShardCtx& ctx) {
  if (args.size() > 3) {
    ctx.rb.Error(errors::kSyntax);
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
  auto r = ctx.db.SetPop(args[1], static_cast<size_t>(count), ctx.now_ms);
  if (!r.ok() && r.status() != OpStatus::kKeyNotFound) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  if (!has_count) {
    if (r.ok()) {
      ctx.rb.Bulk(r->front());
    } else {
      ctx.rb.Null();
    }
    return;
  }
  ReplySet(r.ok() ? *r : std::vector<std::string>{}, ctx.rb);
}

// SRANDMEMBER key [count]: an array with a count.
void SRandMember(CmdArgs args, ShardCtx& ctx) {
  if (args.size() > 3) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  const bool has_count = args.size() == 3;
  int64_t count = 1;
  bool unused;
  if (has_count && !ParseRandCount(args, "", &count, &unused, ctx.rb)) return;
  auto r = ctx.db.SetRandMember(args[1], count, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  if (!has_count) {
    if (r->empty()) {
      ctx.rb.Null();
    } else {
      ctx.rb.Bulk(r->front());
    }
    return;
  }
  ctx.rb.ArrayHeader(r->size());
  for (const std::string& m : *r) ctx.rb.Bulk(m);
}

// SSCAN key cursor [MATCH pattern] [COUNT count], in HSCAN's order of checks.
void SScan(CmdArgs args, ShardCtx& ctx) {
  ElementScanArgs sa;
  if (!ParseElementScan(args, ctx, shard::ValueType::kSet, &sa)) return;
  auto r = ctx.db.SetScan(args[1], sa.cursor, sa.pattern, sa.count, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.ArrayHeader(2);
  ReplyScanCursor(ctx.rb, r->cursor);
  ctx.rb.ArrayHeader(r->members.size());
  for (const std::string& m : r->members) ctx.rb.Bulk(m);
}

// --- SMOVE ---

// SMOVE with both keys on this shard. As Redis: a missing source is 0 before the destination's
// type is looked at.
void SMoveOnShard(CmdArgs args, ShardCtx& ctx) {
  const shard::ValueType src = ctx.db.Type(args[1], ctx.now_ms);
  if (src == shard::ValueType::kNone) {
    ctx.rb.Integer(0);
    return;
  }
  const shard::ValueType dst = ctx.db.Type(args[2], ctx.now_ms);
  if (src != shard::ValueType::kSet ||
      (dst != shard::ValueType::kNone && dst != shard::ValueType::kSet)) {
    ctx.rb.Error(errors::kWrongType);
    return;
  }
  if (args[1] == args[2]) {
    ctx.rb.Integer(*ctx.db.SetIsMember(args[1], args[3], ctx.now_ms) ? 1 : 0);
    return;
  }
  const std::string_view one[1] = {args[3]};
  if (*ctx.db.SetRem(args[1], one, ctx.now_ms) == 0) {
    ctx.rb.Integer(0);
    return;
  }
  ctx.db.SetAdd(args[2], one, ctx.now_ms);
  ctx.rb.Integer(1);
}

// Across two shards, in three phases, each on its key's shard only (Connection::FanOutPhasesOn).
// With the destination on the lower shard: (1) the destination's type checked, (2) the source's,
// and it removes if both are sets (or the destination is missing), (3) the destination adds.
// With the source on the lower shard: (1) the source's type checked and whether it holds the
// member, (2) the destination's, and it adds if the move goes ahead, (3) the source removes.
// Either way lower, higher, lower: one pass along the shards (Transaction::LockRunPhases).
void SMove(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  const Server& server = conn.reactor().server();
  struct State {
    std::string src, dst, member;
    int src_shard, dst_shard;
    shard::ValueType src_type = shard::ValueType::kNone, dst_type = shard::ValueType::kNone;
    bool moved = false;
  };
  auto st = std::make_shared<State>();
  st->src = std::string(args[1]);
  st->dst = std::string(args[2]);
  st->member = std::string(args[3]);
  st->src_shard = server.ShardOf(args[1]);
  st->dst_shard = server.ShardOf(args[2]);
  auto ok = [](const State& s) {
    return s.src_type == shard::ValueType::kSet &&
           (s.dst_type == shard::ValueType::kNone || s.dst_type == shard::ValueType::kSet);
  };
  std::vector<Connection::ShardFn> phases;
  auto add = [st](ShardCtx& ctx) {
    const std::string_view one[1] = {st->member};
    ctx.db.SetAdd(st->dst, one, ctx.now_ms);
  };
  auto rem = [st](ShardCtx& ctx) {
    const std::string_view one[1] = {st->member};
    return *ctx.db.SetRem(st->src, one, ctx.now_ms) == 1;
  };
  std::vector<int> on;
  if (st->dst_shard < st->src_shard) {
    phases.push_back([st](ShardCtx& ctx) { st->dst_type = ctx.db.Type(st->dst, ctx.now_ms); });
    phases.push_back([st, ok, rem](ShardCtx& ctx) {
      st->src_type = ctx.db.Type(st->src, ctx.now_ms);
      if (ok(*st)) st->moved = rem(ctx);
    });
    phases.push_back([st, add](ShardCtx& ctx) {
      if (st->moved) add(ctx);
    });
    on = {st->dst_shard, st->src_shard, st->dst_shard};
  } else {
    phases.push_back([st](ShardCtx& ctx) {
      st->src_type = ctx.db.Type(st->src, ctx.now_ms);
      if (st->src_type != shard::ValueType::kSet) return;
      auto is = ctx.db.SetIsMember(st->src, st->member, ctx.now_ms);
      st->moved = is.ok() && *is;
    });
    phases.push_back([st, ok, add](ShardCtx& ctx) {
      st->dst_type = ctx.db.Type(st->dst, ctx.now_ms);
      if (!ok(*st)) st->moved = false;
      if (st->moved) add(ctx);
    });
    phases.push_back([st, rem](ShardCtx& ctx) {
      if (st->moved) rem(ctx);
    });
    on = {st->src_shard, st->dst_shard, st->src_shard};
  }
  conn.FanOutPhasesOn(
      {std::min(st->src_shard, st->dst_shard), std::max(st->src_shard, st->dst_shard)},
      std::move(phases), std::move(on), [st, ok](ReplyBuilder& rb) {
        if (st->src_type == shard::ValueType::kNone) {
          rb.Integer(0);
        } else if (!ok(*st)) {
          rb.Error(errors::kWrongType);
        } else {
          rb.Integer(st->moved ? 1 : 0);
        }
      });
}

// --- SINTER SUNION SDIFF SINTERCARD and the STORE forms ---

enum class SetOp { kInter, kUnion, kDiff };

// The sets read from the keys: nullopt for a missing key.
using SetInputs = std::vector<std::optional<std::vector<std::string>>>;

// The result of `op` over `in` (every key read, none of the wrong type). Integers come out in
// ascending order, as from Redis's intset, when every member is one; else in the order found.
// `limit` (SINTERCARD): stop once that many are found (0: no limit).
std::vector<std::string> Compute(SetOp op, const SetInputs& in, size_t limit = 0) {
  std::vector<std::string> out;
  auto members = [&](size_t i) -> const std::vector<std::string>& {
    static const std::vector<std::string> kEmpty;
    return in[i] ? *in[i] : kEmpty;
  };
  if (op == SetOp::kInter) {
    for (const auto& s : in) {
      if (!s) return out;
    }
    size_t smallest = 0;
    for (size_t i = 1; i < in.size(); ++i) {
      if (in[i]->size() < in[smallest]->size()) smallest = i;
    }
    std::vector<std::unordered_set<std::string_view>> others;
    for (size_t i = 0; i < in.size(); ++i) {
      if (i != smallest) others.emplace_back(in[i]->begin(), in[i]->end());
    }
    for (const std::string& m : *in[smallest]) {
      bool all = true;
      for (const auto& o : others) all = all && o.count(m) == 1;
      if (!all) continue;
      out.push_back(m);
      if (limit != 0 && out.size() >= limit) break;
    }
  } else if (op == SetOp::kUnion) {
    std::unordered_set<std::string_view> seen;
    for (size_t i = 0; i < in.size(); ++i) {
      for (const std::string& m : members(i)) {
        if (seen.insert(m).second) out.push_back(m);
      }
    }
  } else {
    std::unordered_set<std::string_view> drop;
    for (size_t i = 1; i < in.size(); ++i) drop.insert(members(i).begin(), members(i).end());
    for (const std::string& m : members(0)) {
      if (drop.count(m) == 0) out.push_back(m);
    }
  }
  std::vector<int64_t> ints;
  ints.reserve(out.size());
  for (const std::string& m : out) {
    int64_t v;
    if (!shard::ParseInt64(m, &v) || shard::FormatInt64(v) != m) return out;
    ints.push_back(v);
  }
  std::sort(ints.begin(), ints.end());
  for (size_t i = 0; i < ints.size(); ++i) out[i] = shard::FormatInt64(ints[i]);
  return out;
}

// Reads keys[i] into (*in)[i]; false (and nothing more read) on a key of another type.
bool ReadSets(shard::Db& db, std::span<const std::string_view> keys, int64_t now_ms,
              SetInputs* in) {
  in->assign(keys.size(), std::nullopt);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto r = db.SetMembers(keys[i], now_ms);
    if (!r.ok()) return false;
    if (!r->empty()) (*in)[i] = std::move(*r);
  }
  return true;
}

// One command of the family: where its source keys and destination are in args.
struct AlgebraCall {
  SetOp op;
  bool store;           // *STORE: args[1] is the destination, sources from args[2]
  bool card = false;    // SINTERCARD: numkeys, keys, [LIMIT n]
  size_t first = 1;     // first source key
  size_t count = 0;     // source keys
  int64_t limit = 0;    // SINTERCARD's LIMIT
};

// SINTERCARD's numkeys and LIMIT; false after replying the error.
bool ParseInterCard(CmdArgs args, AlgebraCall* c, ReplyBuilder& rb) {
  int64_t numkeys;
  if (!StringToInt64(args[1], &numkeys) || numkeys <= 0) {
    rb.Error(errors::kNumKeysNotPositive);
    return false;
  }
  if (numkeys > static_cast<int64_t>(args.size()) - 2) {
    rb.Error(errors::kNumKeysTooBig);
    return false;
  }
  c->first = 2;
  c->count = static_cast<size_t>(numkeys);
  for (size_t i = 2 + c->count; i < args.size(); i += 2) {
    if (OptionIs(args[i], "limit") && i + 1 < args.size()) {
      if (!StringToInt64(args[i + 1], &c->limit) || c->limit < 0) {
        rb.Error(errors::kLimitNegative);
        return false;
      }
    } else {
      rb.Error(errors::kSyntax);
      return false;
    }
  }
  return true;
}

bool ParseAlgebra(CmdArgs args, AlgebraCall* c, ReplyBuilder& rb) {
  if (c->card) return ParseInterCard(args, c, rb);
  c->first = c->store ? 2 : 1;
  c->count = args.size() - c->first;
  return true;
}

void ReplyAlgebra(const AlgebraCall& c, const std::vector<std::string>& result, ReplyBuilder& rb) {
  if (c.card || c.store) {
    rb.Integer(static_cast<int64_t>(result.size()));
  } else {
    ReplySet(result, rb);
  }
}

template <SetOp op, bool store, bool card>
void AlgebraOnShard(CmdArgs args, ShardCtx& ctx) {
  AlgebraCall c{op, store, card};
  if (!ParseAlgebra(args, &c, ctx.rb)) return;
  SetInputs in;
  if (!ReadSets(ctx.db, {args.data() + c.first, c.count}, ctx.now_ms, &in)) {
    ctx.rb.Error(errors::kWrongType);
    return;
  }
  std::vector<std::string> result = Compute(op, in, static_cast<size_t>(c.limit));
  if (store) ctx.db.SetStore(args[1], result, ctx.now_ms);
  ReplyAlgebra(c, result, ctx.rb);
}

// Across shards, under every key's lock: (1) each shard reads its source keys, (2) the
// destination's shard computes the result and stores it; the reply is built from the result.
template <SetOp op, bool store, bool card>
void Algebra(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  AlgebraCall c{op, store, card};
  if (!ParseAlgebra(args, &c, rb)) return;
  const Server& server = conn.reactor().server();
  struct State {
    AlgebraCall call;
    std::vector<std::string> keys;
    std::vector<int> key_shard;
    std::string dst;
    int dst_shard = -1;
    SetInputs in;  // slot i written only by keys[i]'s shard
    std::vector<char> wrong;  // likewise
    std::vector<std::string> result;
  };
  auto st = std::make_shared<State>();
  st->call = c;
  std::vector<int> shards;
  for (size_t i = 0; i < c.count; ++i) {
    st->keys.emplace_back(args[c.first + i]);
    st->key_shard.push_back(server.ShardOf(args[c.first + i]));
    shards.push_back(st->key_shard.back());
  }
  if (store) {
    st->dst = std::string(args[1]);
    st->dst_shard = server.ShardOf(args[1]);
    shards.push_back(st->dst_shard);
  }
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  st->in.assign(c.count, std::nullopt);
  st->wrong.assign(c.count, 0);
  auto any_wrong = [](const State& s) {
    return std::find(s.wrong.begin(), s.wrong.end(), 1) != s.wrong.end();
  };
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->key_shard[i] != ctx.shard.index()) continue;
      auto r = ctx.db.SetMembers(st->keys[i], ctx.now_ms);
      if (!r.ok()) {
        st->wrong[i] = 1;
      } else if (!r->empty()) {
        st->in[i] = std::move(*r);
      }
    }
  });
  if (store) {
    phases.push_back([st, any_wrong](ShardCtx& ctx) {
      if (ctx.shard.index() != st->dst_shard || any_wrong(*st)) return;
      st->result = Compute(op, st->in);
      ctx.db.SetStore(st->dst, st->result, ctx.now_ms);
    });
  }
  conn.FanOutPhases(shards, std::move(phases), [st, any_wrong](ReplyBuilder& rb) {
    if (any_wrong(*st)) {
      rb.Error(errors::kWrongType);
      return;
    }
    if (!store) st->result = Compute(op, st->in, static_cast<size_t>(st->call.limit));
    ReplyAlgebra(st->call, st->result, rb);
  });
}

// SINTERCARD's keys: numkeys of them after numkeys.
bool InterCardKeys(CmdArgs args, int* first, int* last) {
  int64_t n;
  if (args.size() < 3 || !StringToInt64(args[1], &n) || n <= 0 ||
      n > static_cast<int64_t>(args.size()) - 2) {
    return false;
  }
  *first = 2;
  *last = static_cast<int>(1 + n);
  return true;
}

void Register(CommandTable* t) {
  const std::vector<std::string> kReadFast = {"@read", "@set", "@fast"};
  const std::vector<std::string> kReadSlow = {"@read", "@set", "@slow"};
  const std::vector<std::string> kWriteFast = {"@write", "@set", "@fast"};
  const std::vector<std::string> kWriteSlow = {"@write", "@set", "@slow"};
  t->Add(Key1("sadd", -3, kWrite | kDenyOom | kFast, SAdd, kWriteFast));
  t->Add(Key1("srem", -3, kWrite | kFast, SRem, kWriteFast));
  t->Add(Key1("smembers", 2, kReadOnly, SMembers, kReadSlow));
  t->Add(Key1("sismember", 3, kReadOnly | kFast, SIsMember, kReadFast));
  t->Add(Key1("smismember", -3, kReadOnly | kFast, SMIsMember, kReadFast));
  t->Add(Key1("scard", 2, kReadOnly | kFast, SCard, kReadFast));
  t->Add(Key1("spop", -2, kWrite | kFast, SPop, kWriteFast));
  t->Add(Key1("srandmember", -2, kReadOnly, SRandMember, kReadSlow));
  t->Add(Key1("sscan", -3, kReadOnly, SScan, kReadSlow));
  t->Add(MultiKeyCommand("smove", 4, kWrite | kFast | kMayCreate, SMove, SMoveOnShard, kWriteFast, 1, 2, 1));
  t->Add(MultiKeyCommand("sinter", -2, kReadOnly, Algebra<SetOp::kInter, false, false>,
                         AlgebraOnShard<SetOp::kInter, false, false>, kReadSlow, 1, -1, 1));
  t->Add(MultiKeyCommand("sunion", -2, kReadOnly, Algebra<SetOp::kUnion, false, false>,
                         AlgebraOnShard<SetOp::kUnion, false, false>, kReadSlow, 1, -1, 1));
  t->Add(MultiKeyCommand("sdiff", -2, kReadOnly, Algebra<SetOp::kDiff, false, false>,
                         AlgebraOnShard<SetOp::kDiff, false, false>, kReadSlow, 1, -1, 1));
  t->Add(MultiKeyCommand("sinterstore", -3, kWrite | kDenyOom,
                         Algebra<SetOp::kInter, true, false>,
                         AlgebraOnShard<SetOp::kInter, true, false>, kWriteSlow, 1, -1, 1));
  t->Add(MultiKeyCommand("sunionstore", -3, kWrite | kDenyOom,
                         Algebra<SetOp::kUnion, true, false>,
                         AlgebraOnShard<SetOp::kUnion, true, false>, kWriteSlow, 1, -1, 1));
  t->Add(MultiKeyCommand("sdiffstore", -3, kWrite | kDenyOom, Algebra<SetOp::kDiff, true, false>,
                         AlgebraOnShard<SetOp::kDiff, true, false>, kWriteSlow, 1, -1, 1));
  CommandSpec card = MultiKeyCommand("sintercard", -3, kReadOnly,
                                     Algebra<SetOp::kInter, false, true>,
                                     AlgebraOnShard<SetOp::kInter, false, true>, kReadSlow, 0, 0,
                                     0);
  card.key_range = InterCardKeys;
  t->Add(std::move(card));
}

}  // namespace set_cmds

void RegisterSetCommands(CommandTable* t) { set_cmds::Register(t); }

}  // namespace deadbolt::server
