// String commands: GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX MGET MSET MSETNX APPEND STRLEN
// GETRANGE (and its old name SUBSTR) SETRANGE INCR INCRBY DECR DECRBY INCRBYFLOAT LCS.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/config.h"
#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_lock.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/base/numeric.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;
using shard::OpStatus;
using shard::SetOptions;


// --- SET / GETEX options (Redis's parseExtendedStringArgumentsOrReply) ---

enum SetFlag : uint32_t {
  kFlagNX = 1 << 0,
  kFlagXX = 1 << 1,
  kFlagGet = 1 << 2,
  kFlagKeepTtl = 1 << 3,
  kFlagPersist = 1 << 4,
  kFlagEX = 1 << 5,
  kFlagPX = 1 << 6,
  kFlagEXAT = 1 << 7,
  kFlagPXAT = 1 << 8,
};
constexpr uint32_t kAnyExpire = kFlagEX | kFlagPX | kFlagEXAT | kFlagPXAT;

struct StringOptions {
  uint32_t flags = 0;
  std::string_view expire;  // the number after EX/PX/EXAT/PXAT (the last one given)
  SetOptions cas;           // SET's IFEQ/IFNE/IFDEQ/IFDNE: cond and cond_value only
};

enum class OptionsFor { kSet, kGetEx };

// Parses args[from..]. As Redis: an option may repeat, but one that conflicts with an earlier
// one, is unknown, is not valid for the command or lacks its number is a syntax error.
bool ParseStringOptions(CmdArgs args, size_t from, OptionsFor cmd, StringOptions* out) {
  uint32_t& f = out->flags;
  const bool set = cmd == OptionsFor::kSet;
  for (size_t j = from; j < args.size(); j++) {
    const std::string_view opt = args[j];
    const bool has_next = j + 1 < args.size();
    uint32_t expire_flag = 0;
    if (OptionIs(opt, "nx") && set && !(f & kFlagXX)) {
      f |= kFlagNX;
    } else if (OptionIs(opt, "xx") && set && !(f & kFlagNX)) {
      f |= kFlagXX;
    } else if (OptionIs(opt, "get") && set) {
      f |= kFlagGet;
    } else if (OptionIs(opt, "keepttl") && set && !(f & (kFlagPersist | kAnyExpire))) {
      f |= kFlagKeepTtl;
    } else if (OptionIs(opt, "persist") && !set && !(f & (kFlagKeepTtl | kAnyExpire))) {
      f |= kFlagPersist;
    } else if (OptionIs(opt, "ex")) {
      expire_flag = kFlagEX;
    } else if (OptionIs(opt, "px")) {
      expire_flag = kFlagPX;
    } else if (OptionIs(opt, "exat")) {
      expire_flag = kFlagEXAT;
    } else if (OptionIs(opt, "pxat")) {
      expire_flag = kFlagPXAT;
    } else if (set && has_next && ParseSetCondition(opt, args[j + 1], &out->cas)) {
      j++;  // IFEQ/IFNE/IFDEQ/IFDNE and its value (a second one is refused)
    } else {
      return false;
    }
    if (expire_flag != 0) {
      // The same unit again is fine (the last number wins); another unit, KEEPTTL or PERSIST
      // is not.
      if ((f & (kFlagKeepTtl | kFlagPersist | (kAnyExpire & ~expire_flag))) || !has_next) {
        return false;
      }
      f |= expire_flag;
      out->expire = args[++j];
    }
  }
  // An IF* condition excludes NX and XX, in either order.
  return out->cas.cond == SetOptions::Cond::kNone || !(f & (kFlagNX | kFlagXX));
}

enum class ExpireParse { kOk, kNotInteger, kInvalid };

// Redis's getExpireMillisecondsOrReply: the absolute unix ms of an EX/PX/EXAT/PXAT argument.
// Values <= 0, and values that overflow once converted to ms or made absolute, are invalid.
ExpireParse ParseExpire(std::string_view text, uint32_t unit_flag, int64_t now_ms, int64_t* at_ms) {
  int64_t v;
  if (!StringToInt64(text, &v)) return ExpireParse::kNotInteger;
  if (v <= 0) return ExpireParse::kInvalid;
  const bool seconds = unit_flag & (kFlagEX | kFlagEXAT);
  if (seconds) {
    if (v > INT64_MAX / 1000) return ExpireParse::kInvalid;
    v *= 1000;
  }
  if (unit_flag & (kFlagEX | kFlagPX)) {
    if (__builtin_add_overflow(v, now_ms, &v)) return ExpireParse::kInvalid;
  }
  *at_ms = v;
  return ExpireParse::kOk;
}

// Writes the error for a failed ParseExpire.
void ReplyExpireError(ReplyBuilder& rb, ExpireParse e, std::string_view command) {
  if (e == ExpireParse::kNotInteger) {
    rb.Error(errors::kNotInteger);
  } else {
    rb.Error(errors::InvalidExpire(command));
  }
}

// The reply of a SET-like write: the old value with GET, else OK (or nil when NX/XX skipped it).
void ReplySetResult(ReplyBuilder& rb, shard::OpResult<shard::SetResult>& r, bool get) {
  if (!r.ok()) {
    if (r.status() == OpStatus::kSkipped) {
      rb.Null();
    } else {
      ReplyStatus(rb, r.status());
    }
    return;
  }
  if (get) {
    if (r->old_value) {
      rb.Bulk(*r->old_value);
    } else {
      rb.Null();
    }
  } else if (r->written) {
    rb.Ok();
  } else {
    rb.Null();
  }
}

// --- handlers ---

void Get(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.Get(args[1], ctx.now_ms);
  ReplyBulkOrNil(ctx.rb, r);
}

void Set(CmdArgs args, ShardCtx& ctx) {
  SetOptions opts;
  if (args.size() > 3) {
    StringOptions so;
    if (!ParseStringOptions(args, 3, OptionsFor::kSet, &so)) {
      ctx.rb.Error(errors::kSyntax);
      return;
    }
    if (so.cas.cond != SetOptions::Cond::kNone) {
      opts.cond = so.cas.cond;
      opts.cond_value = so.cas.cond_value;
      if (std::string_view e = SetConditionError(opts); !e.empty()) {
        ctx.rb.Error(e);
        return;
      }
    }
    if (so.flags & kFlagNX) opts.cond = SetOptions::Cond::kNX;
    if (so.flags & kFlagXX) opts.cond = SetOptions::Cond::kXX;
    opts.get = so.flags & kFlagGet;
    if (so.flags & kFlagKeepTtl) opts.expire = SetOptions::Expire::kKeep;
    if (uint32_t unit = so.flags & kAnyExpire) {
      ExpireParse e = ParseExpire(so.expire, unit, ctx.now_ms, &opts.expire_at_ms);
      if (e != ExpireParse::kOk) {
        ReplyExpireError(ctx.rb, e, "set");
        return;
      }
      opts.expire = SetOptions::Expire::kAt;
    }
  }
  auto r = ctx.db.Set(args[1], args[2], opts, ctx.now_ms);
  ReplySetResult(ctx.rb, r, opts.get);
}

void SetNx(CmdArgs args, ShardCtx& ctx) {
  SetOptions opts;
  opts.cond = SetOptions::Cond::kNX;
  auto r = ctx.db.Set(args[1], args[2], opts, ctx.now_ms);
  if (r.ok() || r.status() == OpStatus::kSkipped) {
    ctx.rb.Integer(r.ok() && r->written ? 1 : 0);
  } else {
    ReplyStatus(ctx.rb, r.status());
  }
}

// SETEX key seconds value / PSETEX key ms value.
void SetExGeneric(CmdArgs args, ShardCtx& ctx, uint32_t unit, std::string_view command) {
  SetOptions opts;
  opts.expire = SetOptions::Expire::kAt;
  ExpireParse e = ParseExpire(args[2], unit, ctx.now_ms, &opts.expire_at_ms);
  if (e != ExpireParse::kOk) {
    ReplyExpireError(ctx.rb, e, command);
    return;
  }
  auto r = ctx.db.Set(args[1], args[3], opts, ctx.now_ms);
  ReplySetResult(ctx.rb, r, false);
}

void SetEx(CmdArgs args, ShardCtx& ctx) { SetExGeneric(args, ctx, kFlagEX, "setex"); }
void PSetEx(CmdArgs args, ShardCtx& ctx) { SetExGeneric(args, ctx, kFlagPX, "psetex"); }

void GetSet(CmdArgs args, ShardCtx& ctx) {
  SetOptions opts;
  opts.get = true;
  auto r = ctx.db.Set(args[1], args[2], opts, ctx.now_ms);
  ReplySetResult(ctx.rb, r, true);
}

void GetDel(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.GetDel(args[1], ctx.now_ms);
  ReplyBulkOrNil(ctx.rb, r);
}

void GetEx(CmdArgs args, ShardCtx& ctx) {
  StringOptions so;
  if (!ParseStringOptions(args, 2, OptionsFor::kGetEx, &so)) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  shard::ExpireChange change;
  if (uint32_t unit = so.flags & kAnyExpire) {
    ExpireParse e = ParseExpire(so.expire, unit, ctx.now_ms, &change.at_ms);
    if (e != ExpireParse::kOk) {
      // Redis 7.0 looks the key up before it reads the number: a missing key replies nil and a
      // key of another type WRONGTYPE, whatever the number.
      switch (ctx.db.Type(args[1], ctx.now_ms)) {
        case shard::ValueType::kNone:
          ctx.rb.Null();
          break;
        case shard::ValueType::kString:
          ReplyExpireError(ctx.rb, e, "getex");
          break;
        default:
          ctx.rb.Error(errors::kWrongType);
          break;
      }
      return;
    }
    change.kind = shard::ExpireChange::Kind::kAt;
  } else if (so.flags & kFlagPersist) {
    change.kind = shard::ExpireChange::Kind::kPersist;
  }
  auto r = ctx.db.GetEx(args[1], change, ctx.now_ms);
  ReplyBulkOrNil(ctx.rb, r);
}

void Append(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.Append(args[1], args[2], ctx.now_ms, ctx.config.proto_max_bulk_len);
  ReplyInteger(ctx.rb, r);
}

void StrLen(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.StrLen(args[1], ctx.now_ms);
  if (r.ok()) {
    ctx.rb.Integer(*r);
  } else if (r.status() == OpStatus::kKeyNotFound) {
    ctx.rb.Integer(0);
  } else {
    ReplyStatus(ctx.rb, r.status());
  }
}

void GetRange(CmdArgs args, ShardCtx& ctx) {
  int64_t start, end;
  if (!StringToInt64(args[2], &start) || !StringToInt64(args[3], &end)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  auto r = ctx.db.GetRange(args[1], start, end, ctx.now_ms);
  if (r.ok()) {
    ctx.rb.Bulk(*r);
  } else if (r.status() == OpStatus::kKeyNotFound) {
    ctx.rb.Bulk("");
  } else {
    ReplyStatus(ctx.rb, r.status());
  }
}

void SetRange(CmdArgs args, ShardCtx& ctx) {
  int64_t offset;
  if (!StringToInt64(args[2], &offset)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  if (offset < 0) {
    ctx.rb.Error(errors::kOffsetOutOfRange);
    return;
  }
  auto r = ctx.db.SetRange(args[1], offset, args[3], ctx.now_ms, ctx.config.proto_max_bulk_len);
  ReplyInteger(ctx.rb, r);
}

void IncrByGeneric(ShardCtx& ctx, std::string_view key, int64_t delta) {
  auto r = ctx.db.IncrBy(key, delta, ctx.now_ms);
  ReplyInteger(ctx.rb, r);
}

void Incr(CmdArgs args, ShardCtx& ctx) { IncrByGeneric(ctx, args[1], 1); }
void Decr(CmdArgs args, ShardCtx& ctx) { IncrByGeneric(ctx, args[1], -1); }

void IncrBy(CmdArgs args, ShardCtx& ctx) {
  int64_t delta;
  if (!StringToInt64(args[2], &delta)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  IncrByGeneric(ctx, args[1], delta);
}

void DecrBy(CmdArgs args, ShardCtx& ctx) {
  int64_t delta;
  if (!StringToInt64(args[2], &delta)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  if (delta == INT64_MIN) {
    ctx.rb.Error(errors::kDecrOverflow);
    return;
  }
  IncrByGeneric(ctx, args[1], -delta);
}

void IncrByFloat(CmdArgs args, ShardCtx& ctx) {
  long double delta;
  if (!shard::ParseLongDouble(args[2], &delta)) {
    // Redis checks the key's type before it reads the increment.
    const shard::ValueType type = ctx.db.Type(args[1], ctx.now_ms);
    if (type != shard::ValueType::kNone && type != shard::ValueType::kString) {
      ctx.rb.Error(errors::kWrongType);
    } else {
      ctx.rb.Error(errors::kNotFloat);
    }
    return;
  }
  auto r = ctx.db.IncrByFloat(args[1], delta, ctx.now_ms);
  if (r.ok()) {
    ctx.rb.Bulk(*r);
  } else {
    ReplyStatus(ctx.rb, r.status());
  }
}

// --- multi-key commands ---

// MGET: a WRONGTYPE or missing key reads as nil.
void WriteMGetValue(ShardCtx& ctx, ReplyBuilder& rb, std::string_view key) {
  auto r = ctx.db.Get(key, ctx.now_ms);
  if (r.ok()) {
    rb.Bulk(*r);
  } else {
    rb.Null();
  }
}

// All keys on the shard running this.
void MGetOnShard(CmdArgs args, ShardCtx& ctx) {
  ctx.rb.ArrayHeader(args.size() - 1);
  for (size_t i = 1; i < args.size(); i++) WriteMGetValue(ctx, ctx.rb, args[i]);
}

// Keys on several shards: read under the command's locks, so no MSET is seen half done.
void MGet(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  Server& server = conn.reactor().server();
  // Each shard encodes the replies for its keys, in argument order, into its own buffer; finish
  // interleaves them back into the order of the keys.
  struct Out {
    std::string data;
    std::vector<size_t> ends;  // end offset in data of each of the shard's replies
    size_t cursor = 0;         // the shard's keys done so far
  };
  struct State {
    State(CmdArgs args, const Server& server, int resp)
        : keys(args, 1, 1, server), out(server.num_shards()), resp(resp) {}
    ShardedKeys keys;
    std::vector<PerShard<Out>> out;
    int resp;
  };
  auto st = std::make_shared<State>(args, server, conn.resp());
  std::vector<Connection::ChunkFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    const int me = ctx.shard.index();
    Out& out = st->out[me].v;
    ReplyBuilder local(&out.data, st->resp);
    return st->keys.ForEachChunkOn(me, &out.cursor, [&](size_t i) {
      WriteMGetValue(ctx, local, st->keys.key(i));
      out.ends.push_back(out.data.size());
    });
  });
  conn.FanOutChunked(
      st->keys.shards(), std::move(phases),
      [st](ReplyBuilder& rb) {
        const size_t n = st->keys.size();
        rb.ArrayHeader(n);
        std::string* dst = rb.out();
        if (st->keys.shards().size() == 1) {
          dst->append(st->out[st->keys.shards()[0]].v.data);
          return;
        }
        std::vector<size_t> next(st->out.size(), 0);  // per shard: index of its next reply
        for (size_t i = 0; i < n; i++) {
          const Out& out = st->out[st->keys.owner(i)].v;
          size_t& k = next[st->keys.owner(i)];
          const size_t begin = k == 0 ? 0 : out.ends[k - 1];
          dst->append(out.data, begin, out.ends[k] - begin);
          k++;
        }
      });
}

// All keys on the shard running this.
void MSetOnShard(CmdArgs args, ShardCtx& ctx) {
  if (args.size() % 2 == 0) {
    ctx.rb.Error(errors::WrongArity("mset"));
    return;
  }
  const SetOptions plain;  // a plain SET: drops any TTL
  for (size_t i = 1; i < args.size(); i += 2) ctx.db.Set(args[i], args[i + 1], plain, ctx.now_ms);
  ctx.rb.Ok();
}

// Keys on several shards: written under the command's locks.
void MSet(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() % 2 == 0) {
    rb.Error(errors::WrongArity("mset"));
    return;
  }
  Server& server = conn.reactor().server();
  struct State {
    State(CmdArgs args, const Server& server) : keys(args, 1, 2, server), cursor(server.num_shards()) {}
    ShardedKeys keys;
    std::vector<PerShard<size_t>> cursor;  // per shard: its keys done so far
  };
  auto st = std::make_shared<State>(args, server);
  std::vector<Connection::ChunkFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    const SetOptions plain;
    const int me = ctx.shard.index();
    return st->keys.ForEachChunkOn(me, &st->cursor[me].v, [&](size_t i) {
      ctx.db.Set(st->keys.key(i), st->keys.arg(i, 1), plain, ctx.now_ms);
    });
  });
  conn.FanOutChunked(st->keys.shards(), std::move(phases), [st](ReplyBuilder& rb) { rb.Ok(); });
}

// MSETNX's work on the shard that owns all its keys: sets every pair if none of the keys exists.
// pair(i) is the i-th (key, value). Returns 1 if set.
template <typename Pair>
int64_t MSetNxOn(ShardCtx& ctx, size_t n, Pair pair) {
  for (size_t i = 0; i < n; i++) {
    if (ctx.db.Exists(pair(i).first, ctx.now_ms)) return 0;
  }
  const SetOptions plain;
  for (size_t i = 0; i < n; i++) {
    auto [key, value] = pair(i);
    ctx.db.Set(key, value, plain, ctx.now_ms);
  }
  return 1;
}

// All keys on the shard running this.
void MSetNxOnShard(CmdArgs args, ShardCtx& ctx) {
  using KV = std::pair<std::string_view, std::string_view>;
  if (args.size() % 2 == 0) {
    ctx.rb.Error(errors::WrongArity("msetnx"));
    return;
  }
  const size_t n = (args.size() - 1) / 2;
  ctx.rb.Integer(MSetNxOn(ctx, n, [&](size_t i) { return KV(args[1 + 2 * i], args[2 + 2 * i]); }));
}

// Keys on several shards: two phases under the command's locks on every shard — each shard says
// whether any of its keys exists, then, if none does anywhere, each sets its keys. Racing
// MSETNXs on overlapping keys are serialised by the locks, so exactly one wins.
void MSetNx(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() % 2 == 0) {
    rb.Error(errors::WrongArity("msetnx"));
    return;
  }
  Server& server = conn.reactor().server();
  struct Progress {
    bool exists = false;
    size_t checked = 0;  // the shard's keys checked so far
    size_t set = 0;      // and set
  };
  struct State {
    State(CmdArgs args, const Server& server)
        : keys(args, 1, 2, server), shard(server.num_shards()) {}
    ShardedKeys keys;
    std::vector<PerShard<Progress>> shard;
    bool AnyExists() const {
      for (const auto& p : shard) {
        if (p.v.exists) return true;
      }
      return false;
    }
  };
  auto st = std::make_shared<State>(args, server);
  std::vector<Connection::ChunkFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    Progress& p = st->shard[ctx.shard.index()].v;
    bool more = st->keys.ForEachChunkOn(ctx.shard.index(), &p.checked, [&](size_t i) {
      p.exists = p.exists || ctx.db.Exists(st->keys.key(i), ctx.now_ms);
    });
    return more && !p.exists;
  });
  phases.push_back([st](ShardCtx& ctx) {
    if (st->AnyExists()) return false;
    const SetOptions plain;
    Progress& p = st->shard[ctx.shard.index()].v;
    return st->keys.ForEachChunkOn(ctx.shard.index(), &p.set, [&](size_t i) {
      ctx.db.Set(st->keys.key(i), st->keys.arg(i, 1), plain, ctx.now_ms);
    });
  });
  conn.FanOutChunked(st->keys.shards(), std::move(phases),
                     [st](ReplyBuilder& rb) { rb.Integer(st->AnyExists() ? 0 : 1); });
}

// --- LCS ---

struct LcsOptions {
  bool idx = false, len = false, with_match_len = false;
  int64_t min_match_len = 0;
  std::string error;  // an option's error, answered after the keys' types as Redis checks them
};

LcsOptions ParseLcsOptions(CmdArgs args) {
  LcsOptions o;
  for (size_t j = 3; j < args.size(); j++) {
    if (OptionIs(args[j], "idx")) {
      o.idx = true;
    } else if (OptionIs(args[j], "len")) {
      o.len = true;
    } else if (OptionIs(args[j], "withmatchlen")) {
      o.with_match_len = true;
    } else if (OptionIs(args[j], "minmatchlen") && j + 1 < args.size()) {
      if (!StringToInt64(args[++j], &o.min_match_len)) {
        o.error = errors::kNotInteger;
        return o;
      }
      o.min_match_len = std::max<int64_t>(o.min_match_len, 0);
    } else {
      o.error = errors::kSyntax;
      return o;
    }
  }
  if (o.idx && o.len) o.error = errors::kLcsIdxAndLen;
  return o;
}

// The reply once both values are known (a missing key reads as ""). The table is bounded by
// proto-max-bulk-len: deadbolt's limit, where Redis allocates whatever it is asked for.
void ReplyLcs(std::string_view a, std::string_view b, const LcsOptions& o, int64_t max_table_bytes,
              ReplyBuilder& rb) {
  if (!o.error.empty()) {
    rb.Error(o.error);
    return;
  }
  if (shard::Db::LcsTableBytes(a, b) > static_cast<uint64_t>(max_table_bytes)) {
    rb.Error(errors::kLcsTooBig);
    return;
  }
  const shard::Db::LcsResult r = shard::Db::Lcs(a, b, o.idx || !o.len, o.min_match_len);
  if (o.len) {
    rb.Integer(r.len);
  } else if (!o.idx) {
    rb.Bulk(r.lcs);
  } else {
    rb.MapHeader(2);
    rb.Bulk("matches");
    rb.ArrayHeader(r.matches.size());
    for (const shard::Db::LcsMatch& m : r.matches) {
      rb.ArrayHeader(o.with_match_len ? 3 : 2);
      rb.ArrayHeader(2);
      rb.Integer(m.a_start);
      rb.Integer(m.a_end);
      rb.ArrayHeader(2);
      rb.Integer(m.b_start);
      rb.Integer(m.b_end);
      if (o.with_match_len) rb.Integer(int64_t{m.a_end} - m.a_start + 1);
    }
    rb.Bulk("len");
    rb.Integer(r.len);
  }
}

void LcsOnShard(CmdArgs args, ShardCtx& ctx) {
  auto a = ctx.db.Get(args[1], ctx.now_ms);
  auto b = ctx.db.Get(args[2], ctx.now_ms);
  if (a.status() == shard::OpStatus::kWrongType || b.status() == shard::OpStatus::kWrongType) {
    ctx.rb.Error(errors::kLcsNotStrings);
    return;
  }
  // Views into the table: LCS changes nothing while it runs.
  ReplyLcs(a.ok() ? *a : std::string_view(), b.ok() ? *b : std::string_view(),
           ParseLcsOptions(args), ctx.config.proto_max_bulk_len, ctx.rb);
}

// The two keys on two shards: each copies its value out under the locks; the LCS is computed here.
void Lcs(CmdArgs args, Connection& conn, ReplyBuilder&) {
  const Server& server = conn.reactor().server();
  struct State {
    std::string keys[2];
    int shard[2];
    std::string value[2];  // value[i] written only by shard[i]
    bool wrong[2] = {false, false};
    LcsOptions options;
    int64_t max_table_bytes;
  };
  auto st = std::make_shared<State>();
  for (int i = 0; i < 2; i++) {
    st->keys[i] = std::string(args[1 + i]);
    st->shard[i] = server.ShardOf(args[1 + i]);
  }
  st->options = ParseLcsOptions(args);
  st->max_table_bytes = conn.reactor().config().proto_max_bulk_len;
  conn.FanOut(
      {std::min(st->shard[0], st->shard[1]), std::max(st->shard[0], st->shard[1])},
      [st](ShardCtx& ctx) {
        for (int i = 0; i < 2; i++) {
          if (st->shard[i] != ctx.shard.index()) continue;
          auto v = ctx.db.Get(st->keys[i], ctx.now_ms);
          st->wrong[i] = v.status() == shard::OpStatus::kWrongType;
          if (v.ok()) st->value[i] = std::string(*v);
        }
      },
      [st](ReplyBuilder& rb) {
        if (st->wrong[0] || st->wrong[1]) {
          rb.Error(errors::kLcsNotStrings);
          return;
        }
        ReplyLcs(st->value[0], st->value[1], st->options, st->max_table_bytes, rb);
      });
}

CommandSpec MultiKey(std::string name, int arity, uint32_t flags, int step, ConnHandler h,
                     ShardHandler one_shard, std::vector<std::string> acl) {
  return MultiKeyCommand(std::move(name), arity, flags, h, one_shard, std::move(acl), 1, -1, step);
}

}  // namespace

void RegisterStringCommands(CommandTable* t) {
  const std::vector<std::string> kReadFast = {"@read", "@string", "@fast"};
  const std::vector<std::string> kReadSlow = {"@read", "@string", "@slow"};
  const std::vector<std::string> kWriteFast = {"@write", "@string", "@fast"};
  const std::vector<std::string> kWriteSlow = {"@write", "@string", "@slow"};
  t->Add(Key1("get", 2, kReadOnly | kFast, Get, kReadFast));
  t->Add(Key1("set", -3, kWrite | kDenyOom, Set, kWriteSlow));
  t->Add(Key1("setnx", 3, kWrite | kDenyOom | kFast, SetNx, kWriteFast));
  t->Add(Key1("setex", 4, kWrite | kDenyOom, SetEx, kWriteSlow));
  t->Add(Key1("psetex", 4, kWrite | kDenyOom, PSetEx, kWriteSlow));
  t->Add(Key1("getset", 3, kWrite | kDenyOom | kFast, GetSet, kWriteFast));
  t->Add(Key1("getdel", 2, kWrite | kFast, GetDel, kWriteFast));
  t->Add(Key1("getex", -2, kWrite | kFast, GetEx, kWriteFast));
  t->Add(MultiKey("mget", -2, kReadOnly | kFast, 1, MGet, MGetOnShard, kReadFast));
  t->Add(MultiKey("mset", -3, kWrite | kDenyOom, 2, MSet, MSetOnShard, kWriteSlow));
  t->Add(MultiKey("msetnx", -3, kWrite | kDenyOom, 2, MSetNx, MSetNxOnShard, kWriteSlow));
  t->Add(Key1("append", 3, kWrite | kDenyOom | kFast, Append, kWriteFast));
  t->Add(Key1("strlen", 2, kReadOnly | kFast, StrLen, kReadFast));
  t->Add(Key1("getrange", 4, kReadOnly, GetRange, kReadSlow));
  t->Add(Key1("substr", 4, kReadOnly, GetRange, kReadSlow));  // GETRANGE's old name
  t->Add(MultiKeyCommand("lcs", -3, kReadOnly, Lcs, LcsOnShard, kReadSlow, 1, 2, 1));
  t->Add(Key1("setrange", 4, kWrite | kDenyOom, SetRange, kWriteSlow));
  t->Add(Key1("incr", 2, kWrite | kDenyOom | kFast, Incr, kWriteFast));
  t->Add(Key1("decr", 2, kWrite | kDenyOom | kFast, Decr, kWriteFast));
  t->Add(Key1("incrby", 3, kWrite | kDenyOom | kFast, IncrBy, kWriteFast));
  t->Add(Key1("decrby", 3, kWrite | kDenyOom | kFast, DecrBy, kWriteFast));
  t->Add(Key1("incrbyfloat", 3, kWrite | kDenyOom | kFast, IncrByFloat, kWriteFast));
}

}  // namespace deadbolt::server
