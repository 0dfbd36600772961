// The set algebra of sorted sets (Redis 7.0's zunionInterDiffGenericCommand): ZUNION ZINTER ZDIFF
// and their stores ZUNIONSTORE ZINTERSTORE ZDIFFSTORE, and ZINTERCARD. Their sources may be plain
// sets (each member scoring 1). Checked in Redis's order: numkeys first, then the sources' types
// (WRONGTYPE), then the options. Keys on several shards: every shard reads the sources it owns
// (phase 1), then the destination's shard combines and stores (phase 2), under all the keys'
// locks; a reply is combined on the connection's reactor.

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/collections/blocking.h"
#include "server/collections/zset_common.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/db.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;
using shard::ZRangeSpec;

enum class ZOp : uint8_t { kUnion, kInter, kDiff };
enum class Aggregate : uint8_t { kSum, kMin, kMax };

constexpr std::string_view kNames[3][2] = {
    {"zunion", "zunionstore"}, {"zinter", "zinterstore"}, {"zdiff", "zdiffstore"}};

// A source set read for a store (a sorted set, or a plain set for ZUNIONSTORE / ZINTERSTORE):
// nullopt when the key is missing.
struct Source {
  bool wrong_type = false;
  std::optional<shard::ZOwnedMembers> members;
};

Source ReadWhole(shard::Db& db, std::string_view key, int64_t now_ms) {
  Source src;
  ZRangeSpec all;
  auto r = db.ZRange(key, all, now_ms);
  if (!r.ok()) {
    // A plain set counts as a sorted set whose members all score 1, as Redis's
    // zunionInterDiffGenericCommand reads it.
    auto set = db.SetMembers(key, now_ms);
    if (!set.ok()) {
      src.wrong_type = true;
      return src;
    }
    if (set->empty()) return src;
    src.members.emplace();
    src.members->reserve(set->size());
    for (std::string& m : *set) src.members->emplace_back(std::move(m), 1.0);
    return src;
  }
  if (r->empty()) return src;
  src.members.emplace();
  src.members->reserve(r->size());
  for (const auto& [m, s] : *r) src.members->emplace_back(std::string(m), s);
  return src;
}

// [dst] numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
struct SetOpArgs {
  size_t first = 0;  // the first source's index
  size_t numkeys = 0;
  std::vector<double> weights;
  Aggregate aggregate = Aggregate::kSum;
  bool withscores = false;
  int64_t limit = 0;              // ZINTERCARD's (0: none)
  std::string_view option_error;  // replied once the sources' types are known good
};

// numkeys, at args[first - 1]: its errors are replied at once (false).
bool ParseNumKeys(CmdArgs args, std::string_view name, SetOpArgs* out, ReplyBuilder& rb) {
  int64_t setnum;
  if (!StringToInt64(args[out->first - 1], &setnum)) {
    rb.Error(errors::kNotInteger);
    return false;
  }
  if (setnum < 1) {
    rb.Error(errors::ZNeedsInputKey(name));
    return false;
  }
  if (static_cast<uint64_t>(setnum) > args.size() - out->first) {
    rb.Error(errors::kSyntax);
    return false;
  }
  out->numkeys = static_cast<size_t>(setnum);
  out->weights.assign(out->numkeys, 1.0);
  return true;
}

// The options after the sources; an error is kept in option_error (Redis reads the sources
// first). ZINTERCARD (`card`) takes LIMIT alone.
void ParseOptions(CmdArgs args, ZOp kind, bool store, bool card, SetOpArgs* out) {
  size_t j = out->first + out->numkeys;
  const bool weighs = kind != ZOp::kDiff && !card;
  while (j < args.size()) {
    const size_t remaining = args.size() - j;
    if (card && remaining >= 2 && OptionIs(args[j], "limit")) {
      if (!StringToInt64(args[j + 1], &out->limit) || out->limit < 0) {
        out->option_error = errors::kLimitNegative;
        return;
      }
      j += 2;
    } else if (weighs && remaining >= out->numkeys + 1 && OptionIs(args[j], "weights")) {
      ++j;
      for (size_t i = 0; i < out->numkeys; ++i, ++j) {
        if (!ParseScore(args[j], &out->weights[i])) {
          out->option_error = errors::kZWeightNotFloat;
          return;
        }
      }
    } else if (weighs && remaining >= 2 && OptionIs(args[j], "aggregate")) {
      const std::string_view a = args[j + 1];
      if (OptionIs(a, "sum")) {
        out->aggregate = Aggregate::kSum;
      } else if (OptionIs(a, "min")) {
        out->aggregate = Aggregate::kMin;
      } else if (OptionIs(a, "max")) {
        out->aggregate = Aggregate::kMax;
      } else {
        out->option_error = errors::kSyntax;
        return;
      }
      j += 2;
    } else if (!store && !card && OptionIs(args[j], "withscores")) {
      out->withscores = true;
      ++j;
    } else {
      out->option_error = errors::kSyntax;
      return;
    }
  }
}

void AggregateInto(double* target, double val, Aggregate a) {
  switch (a) {
    case Aggregate::kSum:
      *target = *target + val;
      if (std::isnan(*target)) *target = 0.0;  // inf + -inf: Redis's convention
      break;
    case Aggregate::kMin:
      *target = val < *target ? val : *target;
      break;
    case Aggregate::kMax:
      *target = val > *target ? val : *target;
      break;
  }
}

// The union, intersection or difference of `sources` (missing ones empty), as
// zunionInterDiffGenericCommand: sources taken from the smallest, weights applied (a NaN product
// counts as 0); a difference keeps the first source's members that no other has, with their
// scores.
shard::ZOwnedMembers Combine(const std::vector<Source>& sources, const SetOpArgs& op, ZOp kind) {
  shard::ZOwnedMembers out;
  if (kind == ZOp::kDiff) {
    if (!sources[0].members) return out;
    absl::flat_hash_set<std::string_view> others;
    for (size_t i = 1; i < sources.size(); ++i) {
      if (!sources[i].members) continue;
      for (const auto& [m, s] : *sources[i].members) others.insert(m);
    }
    for (const auto& [m, s] : *sources[0].members) {
      if (!others.contains(m)) out.emplace_back(m, s);
    }
    return out;
  }
  const bool inter = kind == ZOp::kInter;
  std::vector<size_t> order(sources.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto size_of = [&](size_t i) { return sources[i].members ? sources[i].members->size() : 0; };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return size_of(a) < size_of(b); });
  if (inter) {
    if (size_of(order[0]) == 0) return out;
    std::vector<absl::flat_hash_map<std::string_view, double>> index(sources.size());
    for (size_t k = 1; k < order.size(); ++k) {
      for (const auto& [m, s] : *sources[order[k]].members) index[order[k]][m] = s;
    }
    for (const auto& [m, s0] : *sources[order[0]].members) {
      double score = op.weights[order[0]] * s0;
      if (std::isnan(score)) score = 0;
      bool everywhere = true;
      for (size_t k = 1; k < order.size() && everywhere; ++k) {
        auto it = index[order[k]].find(m);
        if (it == index[order[k]].end()) {
          everywhere = false;
        } else {
          AggregateInto(&score, it->second * op.weights[order[k]], op.aggregate);
        }
      }
      if (everywhere) out.emplace_back(m, score);
    }
    return out;
  }
  absl::flat_hash_map<std::string_view, size_t> at;  // member -> index in out
  std::vector<std::pair<std::string_view, double>> acc;
  for (size_t i : order) {
    if (!sources[i].members) continue;
    for (const auto& [m, s] : *sources[i].members) {
      double score = op.weights[i] * s;
      if (std::isnan(score)) score = 0;
      auto [it, inserted] = at.try_emplace(m, acc.size());
      if (inserted) {
        acc.emplace_back(m, score);
      } else {
        AggregateInto(&acc[it->second].second, score, op.aggregate);
      }
    }
  }
  out.reserve(acc.size());
  for (const auto& [m, s] : acc) out.emplace_back(std::string(m), s);
  return out;
}

// A result as Redis replies it: in the order of a sorted set (score, then member bytes).
void ReplySorted(shard::ZOwnedMembers result, bool withscores, ReplyBuilder& rb) {
  std::sort(result.begin(), result.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  ReplyMembers(rb, result, withscores);
}

// What a call does once it has its sources: stores (a destination), counts (ZINTERCARD), or
// replies the result.
enum class Form : uint8_t { kReply, kStore, kCard };

template <ZOp kind, Form form>
bool Parse(CmdArgs args, SetOpArgs* op, ReplyBuilder& rb) {
  op->first = form == Form::kStore ? 3 : 2;
  const std::string_view name =
      form == Form::kCard ? "zintercard" : kNames[static_cast<int>(kind)][form == Form::kStore];
  if (!ParseNumKeys(args, name, op, rb)) return false;
  ParseOptions(args, kind, form == Form::kStore, form == Form::kCard, op);
  return true;
}

template <ZOp kind, Form form>
void Finish(const std::vector<Source>& sources, const SetOpArgs& op, ReplyBuilder& rb) {
  shard::ZOwnedMembers result = Combine(sources, op, kind);
  if constexpr (form == Form::kCard) {
    const size_t n = result.size();
    rb.Integer(static_cast<int64_t>(op.limit > 0 ? std::min<size_t>(n, op.limit) : n));
  } else {
    ReplySorted(std::move(result), op.withscores, rb);
  }
}

template <ZOp kind, Form form>
void OnShard(CmdArgs args, ShardCtx& ctx) {
  SetOpArgs op;
  if (!Parse<kind, form>(args, &op, ctx.rb)) return;
  std::vector<Source> sources;
  sources.reserve(op.numkeys);
  for (size_t i = 0; i < op.numkeys; ++i) {
    sources.push_back(ReadWhole(ctx.db, args[op.first + i], ctx.now_ms));
    if (sources.back().wrong_type) {
      ctx.rb.Error(errors::kWrongType);
      return;
    }
  }
  if (!op.option_error.empty()) {
    ctx.rb.Error(op.option_error);
    return;
  }
  if constexpr (form == Form::kStore) {
    ctx.rb.Integer(ctx.db.ZStore(args[1], Combine(sources, op, kind), ctx.now_ms));
    ServeWaiters(ctx, args[1]);
  } else {
    Finish<kind, form>(sources, op, ctx.rb);
  }
}

template <ZOp kind, Form form>
void Across(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  auto op = std::make_shared<SetOpArgs>();
  if (!Parse<kind, form>(args, op.get(), rb)) return;
  const Server& server = conn.reactor().server();
  struct State {
    SetOpArgs op;
    std::string dst;
    int dst_shard = -1;
    std::vector<std::string> keys;
    std::vector<int> owners;
    std::vector<Source> sources;
    bool wrong_type = false;
    int64_t stored = 0;
  };
  auto st = std::make_shared<State>();
  st->op = *op;
  std::vector<int> shards;
  if constexpr (form == Form::kStore) {
    st->dst = std::string(args[1]);
    st->dst_shard = server.ShardOf(args[1]);
    shards.push_back(st->dst_shard);
  }
  for (size_t i = 0; i < op->numkeys; ++i) {
    st->keys.emplace_back(args[op->first + i]);
    st->owners.push_back(server.ShardOf(args[op->first + i]));
    shards.push_back(st->owners.back());
  }
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  st->sources.resize(op->numkeys);
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->owners[i] == ctx.shard.index()) {
        st->sources[i] = ReadWhole(ctx.db, st->keys[i], ctx.now_ms);
      }
    }
  });
  if constexpr (form == Form::kStore) {
    phases.push_back([st](ShardCtx& ctx) {
      if (ctx.shard.index() != st->dst_shard) return;
      for (const Source& s : st->sources) st->wrong_type = st->wrong_type || s.wrong_type;
      if (st->wrong_type || !st->op.option_error.empty()) return;
      st->stored = ctx.db.ZStore(st->dst, Combine(st->sources, st->op, kind), ctx.now_ms);
      ServeWaiters(ctx, st->dst);
    });
  }
  conn.FanOutPhases(shards, std::move(phases), [st](ReplyBuilder& rb) {
    for (const Source& s : st->sources) st->wrong_type = st->wrong_type || s.wrong_type;
    if (st->wrong_type) {
      rb.Error(errors::kWrongType);
    } else if (!st->op.option_error.empty()) {
      rb.Error(st->op.option_error);
    } else if constexpr (form == Form::kStore) {
      rb.Integer(st->stored);
    } else {
      Finish<kind, form>(st->sources, st->op, rb);
    }
  });
}

// The keys: numkeys (args[kAt]) of them after it; a store's destination (args[1]) before it,
// the range then covering numkeys too, which the spec's key_range_gap leaves out. Malformed
// counts: no keys (the handler replies the error).
template <int kAt, bool kDest>
bool NumKeysRange(CmdArgs args, int* first, int* last) {
  int64_t n;
  if (args.size() <= kAt + 1 || !StringToInt64(args[kAt], &n) || n < 1 ||
      static_cast<uint64_t>(n) > args.size() - kAt - 1) {
    return false;
  }
  *first = kDest ? 1 : kAt + 1;
  *last = static_cast<int>(kAt + n);
  return true;
}

}  // namespace

void RegisterZSetAlgebraCommands(CommandTable* t) {
  const std::vector<std::string> kReadAcl = {"@read", "@sortedset", "@slow"};
  const std::vector<std::string> kWriteAcl = {"@write", "@sortedset", "@slow"};
  auto add = [&](CommandSpec s, KeyRangeFn keys, int gap) {
    s.key_range = keys;
    s.key_range_gap = gap;
    t->Add(std::move(s));
  };
  // (COMMAND shows a store's destination as its fixed key, as Redis; NumKeysRange finds them all)
  add(MultiKeyCommand("zunionstore", -4, kWrite | kDenyOom, Across<ZOp::kUnion, Form::kStore>,
                      OnShard<ZOp::kUnion, Form::kStore>, kWriteAcl, 1, 1, 1),
      NumKeysRange<2, true>, 2);
  add(MultiKeyCommand("zinterstore", -4, kWrite | kDenyOom, Across<ZOp::kInter, Form::kStore>,
                      OnShard<ZOp::kInter, Form::kStore>, kWriteAcl, 1, 1, 1),
      NumKeysRange<2, true>, 2);
  add(MultiKeyCommand("zdiffstore", -4, kWrite | kDenyOom, Across<ZOp::kDiff, Form::kStore>,
                      OnShard<ZOp::kDiff, Form::kStore>, kWriteAcl, 1, 1, 1),
      NumKeysRange<2, true>, 2);
  add(MultiKeyCommand("zunion", -3, kReadOnly, Across<ZOp::kUnion, Form::kReply>,
                      OnShard<ZOp::kUnion, Form::kReply>, kReadAcl, 0, 0, 0),
      NumKeysRange<1, false>, 0);
  add(MultiKeyCommand("zinter", -3, kReadOnly, Across<ZOp::kInter, Form::kReply>,
                      OnShard<ZOp::kInter, Form::kReply>, kReadAcl, 0, 0, 0),
      NumKeysRange<1, false>, 0);
  add(MultiKeyCommand("zdiff", -3, kReadOnly, Across<ZOp::kDiff, Form::kReply>,
                      OnShard<ZOp::kDiff, Form::kReply>, kReadAcl, 0, 0, 0),
      NumKeysRange<1, false>, 0);
  add(MultiKeyCommand("zintercard", -3, kReadOnly, Across<ZOp::kInter, Form::kCard>,
                      OnShard<ZOp::kInter, Form::kCard>, kReadAcl, 0, 0, 0),
      NumKeysRange<1, false>, 0);
}

}  // namespace deadbolt::server
