// The pops from the first non-empty of several keys (Redis 7.0): LMPOP and ZMPOP, and their
// blocking forms BLMPOP and BZMPOP, which wait as BLPOP does (blocking.h). Their keys may span
// shards: the attempt is then atomic under the keys' locks (PopAcross).
//
//   LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
//   BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
//   ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
//   BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
//
// The reply: [key, [element ...]] (a sorted set's: [key, [[member, score] ...]]), or a null
// array when nothing can be taken (or the wait timed out).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/collections/blocking.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "shard/db.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;
using shard::ListEnd;

void ReplyListMPop(ReplyBuilder& rb, std::string_view key, const std::vector<Popped>& got) {
  rb.ArrayHeader(2);
  rb.Bulk(key);
  rb.ArrayHeader(got.size());
  for (const Popped& p : got) rb.Bulk(p.value);
}

void ReplyZMPop(ReplyBuilder& rb, std::string_view key, const std::vector<Popped>& got) {
  rb.ArrayHeader(2);
  rb.Bulk(key);
  rb.ArrayHeader(got.size());
  for (const Popped& p : got) {
    rb.ArrayHeader(2);
    rb.Bulk(p.value);
    ReplyScore(rb, p.score);
  }
}

template <ListEnd end>
constexpr PopFns kListMPopFns = ListPopFns<end>(ReplyListMPop);
template <bool max>
constexpr PopFns kZMPopFns = ZPopFns<max>(ReplyZMPop);

// A call's arguments, parsed in Redis's order: the timeout (blocking forms), numkeys, the end,
// then the options.
struct MPopCall {
  CmdArgs keys;
  const PopFns* fns = nullptr;
  size_t count = 1;
  int64_t deadline = 0;
};

template <bool kBlocking, bool kZSet>
bool ParseMPop(CmdArgs args, int64_t now_ms, MPopCall* c, ReplyBuilder& rb) {
  const size_t numkeys_at = kBlocking ? 2 : 1;
  if (kBlocking && !ParseBlockTimeout(args[1], now_ms, &c->deadline, rb)) return false;
  int64_t n;
  if (!StringToInt64(args[numkeys_at], &n) || n < 1) {
    rb.Error(errors::kNumKeysNotPositive);
    return false;
  }
  const size_t where_at = numkeys_at + 1 + static_cast<size_t>(n);
  if (static_cast<uint64_t>(n) >= args.size() || where_at >= args.size()) {
    rb.Error(errors::kSyntax);
    return false;
  }
  const std::string_view where = args[where_at];
  if (kZSet) {
    if (OptionIs(where, "min")) {
      c->fns = &kZMPopFns<false>;
    } else if (OptionIs(where, "max")) {
      c->fns = &kZMPopFns<true>;
    }
  } else if (OptionIs(where, "left")) {
    c->fns = &kListMPopFns<ListEnd::kLeft>;
  } else if (OptionIs(where, "right")) {
    c->fns = &kListMPopFns<ListEnd::kRight>;
  }
  if (c->fns == nullptr) {
    rb.Error(errors::kSyntax);
    return false;
  }
  bool counted = false;
  for (size_t j = where_at + 1; j < args.size(); j++) {
    if (!counted && OptionIs(args[j], "count") && j + 1 < args.size()) {
      int64_t count;
      if (!StringToInt64(args[++j], &count) || count < 1) {
        rb.Error(errors::kCountNotPositive);
        return false;
      }
      c->count = static_cast<size_t>(count);
      counted = true;
    } else {
      rb.Error(errors::kSyntax);
      return false;
    }
  }
  c->keys = args.subspan(numkeys_at + 1, static_cast<size_t>(n));
  return true;
}

// Keys all on this shard: the first non-empty one in order gives up to COUNT. Else a null array,
// or (a blocking form, outside MULTI) the client waits on its keys.
template <bool kBlocking, bool kZSet>
void MPopOnShard(CmdArgs args, ShardCtx& ctx) {
  MPopCall c;
  if (!ParseMPop<kBlocking, kZSet>(args, ctx.now_ms, &c, ctx.rb)) return;
  if (PopFirstReady(ctx, c.keys, c.count, *c.fns)) return;
  if (!kBlocking || !(ctx.block && *ctx.block)) {
    ctx.rb.NullArray();
    return;
  }
  WaitOnKeys(ctx, c.keys, c.deadline, *c.fns, c.count);
}

// Keys on several shards.
template <bool kBlocking, bool kZSet>
void MPopAcross(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  MPopCall c;
  if (!ParseMPop<kBlocking, kZSet>(args, conn.reactor().now_ms(), &c, rb)) return;
  PopAcross(c.keys, c.deadline, c.count, kBlocking, conn, rb, *c.fns);
}

// The keys: numkeys of them after numkeys (args[first - 1]). Malformed: none (the handler
// replies the error).
template <int kFirst>
bool MPopKeys(CmdArgs args, int* first, int* last) {
  int64_t n;
  if (args.size() <= kFirst || !StringToInt64(args[kFirst - 1], &n) || n < 1 ||
      static_cast<uint64_t>(n) >= args.size() - kFirst) {
    return false;
  }
  *first = kFirst;
  *last = static_cast<int>(kFirst - 1 + n);
  return true;
}

}  // namespace

void RegisterMPopCommands(CommandTable* t) {
  auto add = [&](std::string name, int arity, uint32_t flags, ConnHandler across,
                 ShardHandler one_shard, std::vector<std::string> acl, KeyRangeFn keys) {
    CommandSpec s =
        MultiKeyCommand(std::move(name), arity, flags, across, one_shard, std::move(acl), 0, 0, 0);
    s.key_range = keys;
    if (flags & kBlocking) s.blocks = AlwaysMayBlock;
    t->Add(std::move(s));
  };
  add("lmpop", -4, kWrite, MPopAcross<false, false>, MPopOnShard<false, false>,
      {"@write", "@list", "@slow"}, MPopKeys<2>);
  add("blmpop", -5, kWrite | kBlocking, MPopAcross<true, false>, MPopOnShard<true, false>,
      {"@write", "@list", "@slow", "@blocking"}, MPopKeys<3>);
  add("zmpop", -4, kWrite, MPopAcross<false, true>, MPopOnShard<false, true>,
      {"@write", "@sortedset", "@slow"}, MPopKeys<2>);
  add("bzmpop", -5, kWrite | kBlocking, MPopAcross<true, true>, MPopOnShard<true, true>,
      {"@write", "@sortedset", "@slow", "@blocking"}, MPopKeys<3>);
}

}  // namespace deadbolt::server
