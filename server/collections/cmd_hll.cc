// HyperLogLog commands: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST, on string values in Redis's
// HLL format (shard/base/hyperloglog.h; their logic is in shard/db_hll.cc). PFCOUNT of several
// keys and PFMERGE gather the registers of keys on several shards under every key's lock, so
// they are atomic as in Redis.

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/server.h"
#include "shard/base/hyperloglog.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace {

using shard::OpStatus;
namespace hll = shard::hll;
using Registers = std::array<uint8_t, hll::kRegisters>;

void PfAdd(CmdArgs args, ShardCtx& ctx) {
  ReplyInteger(ctx.rb, ctx.db.PfAdd(args[1], args.data() + 2, args.size() - 2, ctx.now_ms));
}

// The registers of keys args[first..]: raised into *regs; the first key (in argument order)
// that is not an HLL gives the error, as in Redis.
struct Gathered {
  Registers regs{};
  bool dense = false;
  size_t bad_at = SIZE_MAX;  // the first bad key's argument index
  OpStatus bad = OpStatus::kOk;
  void Note(size_t at, OpStatus s) {
    if (s != OpStatus::kOk && at < bad_at) {
      bad_at = at;
      bad = s;
    }
  }
  void Merge(const Gathered& o) {
    for (int i = 0; i < hll::kRegisters; i++) regs[i] = std::max(regs[i], o.regs[i]);
    dense = dense || o.dense;
    Note(o.bad_at, o.bad);
  }
};

void GatherOnShard(CmdArgs args, size_t first, ShardCtx& ctx, const Server* server, Gathered* out) {
  for (size_t i = first; i < args.size(); i++) {
    if (server != nullptr && server->ShardOf(args[i]) != ctx.shard.index()) continue;
    out->Note(i, ctx.db.PfMaxInto(args[i], ctx.now_ms, out->regs.data(), &out->dense));
  }
}

// PFCOUNT with every key on one shard.
void PfCountOnShard(CmdArgs args, ShardCtx& ctx) {
  if (args.size() == 2) {
    ReplyInteger(ctx.rb, ctx.db.PfCount(args[1], ctx.now_ms));
    return;
  }
  auto g = std::make_unique<Gathered>();
  GatherOnShard(args, 1, ctx, nullptr, g.get());
  if (g->bad != OpStatus::kOk) {
    ReplyStatus(ctx.rb, g->bad);
    return;
  }
  ctx.rb.Integer(static_cast<int64_t>(hll::CountRegisters(g->regs.data())));
}

// The shards of args[first..], and a copy of the keys that travels to them.
struct Gather {
  std::vector<std::string> args;
  std::vector<int> shards;
  std::vector<std::unique_ptr<Gathered>> parts;  // by shard index, written by that shard only
};
std::shared_ptr<Gather> MakeGather(CmdArgs args, const Server& server) {
  auto st = std::make_shared<Gather>();
  st->args.assign(args.begin(), args.end());
  for (size_t i = 1; i < args.size(); i++) st->shards.push_back(server.ShardOf(args[i]));
  std::sort(st->shards.begin(), st->shards.end());
  st->shards.erase(std::unique(st->shards.begin(), st->shards.end()), st->shards.end());
  st->parts.resize(static_cast<size_t>(server.num_shards()));
  return st;
}
Connection::ShardFn GatherPhase(std::shared_ptr<Gather> st, size_t first, const Server* server) {
  return [st, first, server](ShardCtx& ctx) {
    std::vector<std::string_view> views(st->args.begin(), st->args.end());
    auto g = std::make_unique<Gathered>();
    GatherOnShard(CmdArgs(views.data(), views.size()), first, ctx, server, g.get());
    st->parts[static_cast<size_t>(ctx.shard.index())] = std::move(g);
  };
}
std::unique_ptr<Gathered> Combine(Gather& st) {
  auto all = std::make_unique<Gathered>();
  for (auto& p : st.parts) {
    if (p) all->Merge(*p);
  }
  return all;
}

// PFCOUNT with keys on several shards: the registers of each, merged here.
void PfCount(CmdArgs args, Connection& conn, protocol::ReplyBuilder&) {
  const Server& server = conn.reactor().server();
  auto st = MakeGather(args, server);
  conn.FanOut(st->shards, GatherPhase(st, 1, &server), [st](protocol::ReplyBuilder& rb) {
    std::unique_ptr<Gathered> all = Combine(*st);
    if (all->bad != OpStatus::kOk) {
      ReplyStatus(rb, all->bad);
    } else {
      rb.Integer(static_cast<int64_t>(hll::CountRegisters(all->regs.data())));
    }
  });
}

void PfMergeOnShard(CmdArgs args, ShardCtx& ctx) {
  auto g = std::make_unique<Gathered>();
  GatherOnShard(args, 1, ctx, nullptr, g.get());  // the destination's registers count too
  if (g->bad != OpStatus::kOk) {
    ReplyStatus(ctx.rb, g->bad);
    return;
  }
  const OpStatus s = ctx.db.PfStore(args[1], g->regs.data(), g->dense, ctx.now_ms);
  if (s != OpStatus::kOk) {
    ReplyStatus(ctx.rb, s);
  } else {
    ctx.rb.Ok();
  }
}

// PFMERGE across shards: (1) every shard gathers its keys' registers, (2) the destination's
// shard writes the merge, unless a key was not an HLL.
void PfMerge(CmdArgs args, Connection& conn, protocol::ReplyBuilder&) {
  const Server& server = conn.reactor().server();
  auto st = MakeGather(args, server);
  auto merged = std::make_shared<std::unique_ptr<Gathered>>();
  const int dst_shard = server.ShardOf(args[1]);
  std::vector<Connection::ShardFn> phases;
  phases.push_back(GatherPhase(st, 1, &server));
  phases.push_back([st, merged, dst_shard](ShardCtx& ctx) {
    if (ctx.shard.index() != dst_shard) return;
    *merged = Combine(*st);
    if ((*merged)->bad != OpStatus::kOk) return;
    ctx.db.PfStore(st->args[1], (*merged)->regs.data(), (*merged)->dense, ctx.now_ms);
  });
  conn.FanOutPhases(st->shards, std::move(phases), [merged](protocol::ReplyBuilder& rb) {
    if (*merged && (*merged)->bad != OpStatus::kOk) {
      ReplyStatus(rb, (*merged)->bad);
    } else {
      rb.Ok();
    }
  });
}

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key (Redis's own test hooks).
void PfDebug(CmdArgs args, ShardCtx& ctx) {
  const std::string_view sub = args[1];
  const bool getreg = EqualsIgnoreCase(sub, "getreg");
  const bool todense = EqualsIgnoreCase(sub, "todense");
  bool converted = false;
  auto v = ctx.db.PfDebugValue(args[2], getreg || todense, &converted, ctx.now_ms);
  if (v.status() == OpStatus::kKeyNotFound) {
    ctx.rb.Error(errors::kPfDebugNoKey);
    return;
  }
  if (!v.ok()) {
    ReplyStatus(ctx.rb, v.status());
    return;
  }
  if (getreg) {
    ctx.rb.ArrayHeader(hll::kRegisters);
    for (int i = 0; i < hll::kRegisters; i++) ctx.rb.Integer(hll::Register(*v, i));
  } else if (todense) {
    ctx.rb.Integer(converted ? 1 : 0);
  } else if (EqualsIgnoreCase(sub, "encoding")) {
    ctx.rb.SimpleString(hll::IsDense(*v) ? "dense" : "sparse");
  } else if (EqualsIgnoreCase(sub, "decode")) {
    if (hll::IsDense(*v)) {
      ctx.rb.Error(errors::kPfDebugNotSparse);
      return;
    }
    ctx.rb.Bulk(hll::DecodeSparse(*v));
  } else {
    ctx.rb.Error(errors::PfDebugUnknown(sub));
  }
}

// PFSELFTEST: the same elements added to a sparse and a dense value give the same registers,
// and the estimate of 100,000 elements is within the error HyperLogLog promises.
void PfSelfTest(CmdArgs, Connection&, protocol::ReplyBuilder& rb) {
  std::mt19937_64 rng(0x5eed);
  std::string sparse = hll::Empty(), dense = hll::Empty();
  hll::ToDense(&dense);
  for (int i = 0; i < 100000; i++) {
    const std::string e = std::to_string(rng());
    hll::Add(&sparse, e, SIZE_MAX);
    hll::Add(&dense, e);
    if (i % 10000 != 9999) continue;
    for (int r = 0; r < hll::kRegisters; r++) {
      if (hll::Register(sparse, r) != hll::Register(dense, r)) {
        rb.Error(errors::PfSelfTestFailed("Register error at " + std::to_string(r)));
        return;
      }
    }
    const double n = i + 1, count = static_cast<double>(hll::Count(dense));
    if (std::abs(count - n) > n * 5 * 1.04 / 128) {  // five standard errors, 1.04 / sqrt(m)
      rb.Error(errors::PfSelfTestFailed("Approximation error at " + std::to_string(i + 1)));
      return;
    }
  }
  rb.Ok();
}

}  // namespace

void RegisterHllCommands(CommandTable* t) {
  t->Add(Key1("pfadd", -2, kWrite | kDenyOom | kFast, PfAdd, {"@write", "@hyperloglog", "@fast"}));
  // A read in Redis's table, though it writes the cached count back.
  t->Add(MultiKeyCommand("pfcount", -2, kReadOnly, PfCount, PfCountOnShard,
                         {"@read", "@hyperloglog", "@slow"}, 1, -1, 1));
  t->Add(MultiKeyCommand("pfmerge", -2, kWrite | kDenyOom, PfMerge, PfMergeOnShard,
                         {"@write", "@hyperloglog", "@slow"}, 1, -1, 1));
  CommandSpec debug = Key1("pfdebug", 3, kWrite | kDenyOom | kAdmin, PfDebug,
                           {"@write", "@hyperloglog", "@admin", "@slow", "@dangerous"});
  debug.first_key = debug.last_key = 2;
  t->Add(std::move(debug));
  t->Add(ConnCommand("pfselftest", 1, kAdmin, PfSelfTest,
                     {"@hyperloglog", "@admin", "@slow", "@dangerous"}));
}

}  // namespace deadbolt::server
