// Keyspace commands: DEL UNLINK EXISTS TOUCH TYPE EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL
// EXPIRETIME PEXPIRETIME PERSIST KEYS SCAN RANDOMKEY DBSIZE FLUSHDB FLUSHALL RENAME RENAMENX COPY
// MOVE DUMP RESTORE.

#include <bit>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/db.h"
#include "shard/dump_format/dump_payload.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;
using shard::ExpireCond;
using shard::ValueType;

// --- DEL UNLINK EXISTS TOUCH: a count over the keys, which may span shards ---

using KeyOp = bool (*)(shard::Db& db, std::string_view key, int64_t now_ms);

bool DelKey(shard::Db& db, std::string_view key, int64_t now_ms) { return db.Del(key, now_ms); }
bool KeyExists(shard::Db& db, std::string_view key, int64_t now_ms) {
  return db.Exists(key, now_ms);
}
bool KeyTouch(shard::Db& db, std::string_view key, int64_t now_ms) {
  return db.Touch(key, now_ms);
}

// All keys on the shard running this: the count, in one step.
template <KeyOp op>
void CountKeysOnShard(CmdArgs args, ShardCtx& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < args.size(); i++) n += op(ctx.db, args[i], ctx.now_ms);
  ctx.rb.Integer(n);
}

// Keys on several shards: replies with the number of keys (duplicates included) for which op
// returned true, counted on every shard under the command's locks.
void CountKeys(CmdArgs args, Connection& conn, ReplyBuilder& rb, KeyOp op) {
  Server& server = conn.reactor().server();
  struct Count {
    int64_t n = 0;
    size_t cursor = 0;  // the shard's keys done so far
  };
  struct State {
    State(CmdArgs args, const Server& server)
        : keys(args, 1, 1, server), counts(server.num_shards()) {}
    ShardedKeys keys;
    std::vector<PerShard<Count>> counts;
  };
  auto st = std::make_shared<State>(args, server);
  std::vector<Connection::ChunkFn> phases;
  phases.push_back([st, op](ShardCtx& ctx) {
    const int me = ctx.shard.index();
    Count& c = st->counts[me].v;
    return st->keys.ForEachChunkOn(
        me, &c.cursor, [&](size_t i) { c.n += op(ctx.db, st->keys.key(i), ctx.now_ms); });
  });
  conn.FanOutChunked(
      st->keys.shards(), std::move(phases),
      [st](ReplyBuilder& rb) {
        int64_t n = 0;
        for (const auto& c : st->counts) n += c.v.n;
        rb.Integer(n);
      });
}

void Del(CmdArgs args, Connection& conn, ReplyBuilder& rb) { CountKeys(args, conn, rb, DelKey); }
void Exists(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  CountKeys(args, conn, rb, KeyExists);
}
void Touch(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  CountKeys(args, conn, rb, KeyTouch);
}

// --- single-key commands ---

void Type(CmdArgs args, ShardCtx& ctx) {
  ctx.rb.SimpleString(shard::TypeName(ctx.db.Type(args[1], ctx.now_ms)));
}

// EXPIRE key n [NX|XX|GT|LT ...], as Redis's expireGenericCommand: the options are checked
// first, then the number, then overflow of the conversion to absolute unix ms.
void ExpireGeneric(CmdArgs args, ShardCtx& ctx, bool in_ms, bool absolute,
                   std::string_view command) {
  bool nx = false, xx = false, gt = false, lt = false;
  for (size_t j = 3; j < args.size(); j++) {
    const std::string_view opt = args[j];
    if (OptionIs(opt, "nx")) {
      nx = true;
    } else if (OptionIs(opt, "xx")) {
      xx = true;
    } else if (OptionIs(opt, "gt")) {
      gt = true;
    } else if (OptionIs(opt, "lt")) {
      lt = true;
    } else {
      ctx.rb.Error(errors::UnsupportedOption(opt));
      return;
    }
  }
  if (nx && (xx || gt || lt)) {
    ctx.rb.Error(errors::kNxXx);
    return;
  }
  if (gt && lt) {
    ctx.rb.Error(errors::kGtAndLt);
    return;
  }
  int64_t when;
  if (!StringToInt64(args[2], &when)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  if (!in_ms) {
    if (when > INT64_MAX / 1000 || when < INT64_MIN / 1000) {
      ctx.rb.Error(errors::InvalidExpire(command));
      return;
    }
    when *= 1000;
  }
  const int64_t base = absolute ? 0 : ctx.now_ms;
  if (when > INT64_MAX - base) {
    ctx.rb.Error(errors::InvalidExpire(command));
    return;
  }
  when += base;

  ExpireCond cond = ExpireCond::kNone;
  if (nx) {
    cond = ExpireCond::kNX;
  } else if (gt) {
    cond = ExpireCond::kGT;  // GT already fails without a TTL, so XX adds nothing
  } else if (lt) {
    cond = ExpireCond::kLT;
    // LT passes without a TTL (an infinite one) but XX does not: both need a TTL to be there.
    if (xx && ctx.db.ExpireTime(args[1], ctx.now_ms) < 0) {
      ctx.rb.Integer(0);
      return;
    }
  } else if (xx) {
    cond = ExpireCond::kXX;
  }
  ctx.rb.Integer(ctx.db.ExpireAt(args[1], when, cond, ctx.now_ms));
}

void Expire(CmdArgs args, ShardCtx& ctx) { ExpireGeneric(args, ctx, false, false, "expire"); }
void PExpire(CmdArgs args, ShardCtx& ctx) { ExpireGeneric(args, ctx, true, false, "pexpire"); }
void ExpireAt(CmdArgs args, ShardCtx& ctx) { ExpireGeneric(args, ctx, false, true, "expireat"); }
void PExpireAt(CmdArgs args, ShardCtx& ctx) { ExpireGeneric(args, ctx, true, true, "pexpireat"); }

// Milliseconds to seconds as Redis's ttlGenericCommand does, (ms + 500) / 1000, without its
// overflow near INT64_MAX.
int64_t RoundMsToSeconds(int64_t ms) { return ms / 1000 + (ms % 1000 >= 500 ? 1 : 0); }

void Ttl(CmdArgs args, ShardCtx& ctx) {
  const int64_t ms = ctx.db.Pttl(args[1], ctx.now_ms);
  ctx.rb.Integer(ms < 0 ? ms : RoundMsToSeconds(ms));
}

void PTtl(CmdArgs args, ShardCtx& ctx) { ctx.rb.Integer(ctx.db.Pttl(args[1], ctx.now_ms)); }

void ExpireTime(CmdArgs args, ShardCtx& ctx) {
  const int64_t at = ctx.db.ExpireTime(args[1], ctx.now_ms);
  ctx.rb.Integer(at < 0 ? at : RoundMsToSeconds(at));
}

void PExpireTime(CmdArgs args, ShardCtx& ctx) {
  ctx.rb.Integer(ctx.db.ExpireTime(args[1], ctx.now_ms));
}

void Persist(CmdArgs args, ShardCtx& ctx) {
  ctx.rb.Integer(ctx.db.Persist(args[1], ctx.now_ms) ? 1 : 0);
}

// --- whole-keyspace commands: fan out to every shard ---

void Keys(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  struct Out {
    std::string data;  // the shard's keys, encoded as bulk strings
    size_t n = 0;
  };
  struct State {
    State(std::string_view p, int shards) : pattern(p), out(shards) {}
    std::string pattern;
    std::vector<PerShard<Out>> out;
  };
  Server& server = conn.reactor().server();
  auto st = std::make_shared<State>(args[1], server.num_shards());
  conn.FanOut(
      AllShards(server),
      [st](ShardCtx& ctx) {
        Out& out = st->out[ctx.shard.index()].v;
        ReplyBuilder b(&out.data);
        ctx.db.Keys(st->pattern, ctx.now_ms, [&](std::string_view key) {
          b.Bulk(key);
          out.n++;
        });
      },
      [st](ReplyBuilder& rb) {
        size_t n = 0;
        for (const auto& o : st->out) n += o.v.n;
        rb.ArrayHeader(n);
        for (const auto& o : st->out) rb.out()->append(o.v.data);
      });
}

// SCAN cursors name a shard and a position in it: cursor = (local << bits) | shard, where bits
// is the number of bits needed for the highest shard index (0 with one shard, so a
// single-shard server's cursors are exactly the shard's own). Shards are scanned in order; the
// local cursor 0 of shard s > 0 is the cursor s, which is never 0, so "0" only ever means the
// start or the end. The shard's Db::Scan cursor (Redis's reverse-binary bucket cursor) stays
// below the shard's bucket count, far below 2^(64 - bits).
int ScanShardBits(int num_shards) {
  return num_shards <= 1 ? 0 : std::bit_width(static_cast<unsigned>(num_shards - 1));
}

// The filter a SCAN TYPE name maps to. Redis compares the name case-insensitively with the type
// of each key, so a type deadbolt has no keys of (list, set, ...) or an unknown name matches none.
enum class TypeFilter { kAny, kString, kHash, kZSet, kList, kSet, kStream, kNothing };

void Scan(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  uint64_t cursor;
  if (!ParseScanCursor(args[1], &cursor)) {
    rb.Error(errors::kInvalidCursor);
    return;
  }
  std::string_view pattern = "*";
  bool has_pattern = false;
  int64_t count = 10;
  TypeFilter type = TypeFilter::kAny;
  for (size_t i = 2; i < args.size(); i += 2) {
    const bool has_value = i + 1 < args.size();
    if (OptionIs(args[i], "count") && has_value) {
      if (!StringToInt64(args[i + 1], &count)) {
        rb.Error(errors::kNotInteger);
        return;
      }
      if (count < 1) {
        rb.Error(errors::kSyntax);
        return;
      }
    } else if (OptionIs(args[i], "match") && has_value) {
      pattern = args[i + 1];
      has_pattern = true;
    } else if (OptionIs(args[i], "type") && has_value) {
      const std::string_view name = args[i + 1];
      type = OptionIs(name, "string")   ? TypeFilter::kString
             : OptionIs(name, "hash")   ? TypeFilter::kHash
             : OptionIs(name, "zset")   ? TypeFilter::kZSet
             : OptionIs(name, "list")   ? TypeFilter::kList
             : OptionIs(name, "set")    ? TypeFilter::kSet
             : OptionIs(name, "stream") ? TypeFilter::kStream
                                        : TypeFilter::kNothing;
    } else {
      rb.Error(errors::kSyntax);
      return;
    }
  }

  Server& server = conn.reactor().server();
  const int num_shards = server.num_shards();
  const int bits = ScanShardBits(num_shards);
  const uint64_t shard_mask = (uint64_t{1} << bits) - 1;
  const uint64_t shard = cursor & shard_mask;
  if (shard >= static_cast<uint64_t>(num_shards)) {  // not a cursor we handed out
    rb.ArrayHeader(2);
    rb.Bulk("0");
    rb.ArrayHeader(0);
    return;
  }

  struct Step {
    size_t size = 0;       // keys in the shard (expired ones included)
    bool scanned = false;  // `result` holds a scan step
    shard::ScanResult result;
  };
  struct State {
    int shard;
    uint64_t local;
    std::string pattern;
    bool only_empty_key;  // MATCH "": Db::Scan reads an empty pattern as "*"
    size_t count;
    TypeFilter type;
    int bits;
    std::vector<PerShard<Step>> steps;
  };
  auto st = std::make_shared<State>();
  st->shard = static_cast<int>(shard);
  st->local = cursor >> bits;
  st->only_empty_key = has_pattern && pattern.empty();
  st->pattern = st->only_empty_key ? "*" : pattern;
  st->count = static_cast<size_t>(count);
  st->type = type;
  st->bits = bits;
  st->steps.resize(num_shards);
  // The shard under the cursor does one step. The shards after it say how many keys they hold
  // and, when that is at most COUNT, also do their first step (cheap), so that the call that
  // finishes a shard can go on through empty and small shards: a small keyspace comes back in
  // one call, and an empty one answers "0" at once.
  std::vector<int> shards;
  for (int s = st->shard; s < num_shards; s++) shards.push_back(s);
  conn.FanOut(
      shards,
      [st](ShardCtx& ctx) {
        const int me = ctx.shard.index();
        Step& step = st->steps[me].v;
        step.size = ctx.db.Size();
        if (me != st->shard && (step.size == 0 || step.size > st->count)) return;
        const ValueType vt = st->type == TypeFilter::kString   ? ValueType::kString
                             : st->type == TypeFilter::kHash   ? ValueType::kHash
                             : st->type == TypeFilter::kZSet   ? ValueType::kZSet
                             : st->type == TypeFilter::kList   ? ValueType::kList
                             : st->type == TypeFilter::kSet    ? ValueType::kSet
                             : st->type == TypeFilter::kStream ? ValueType::kStream
                                                               : ValueType::kNone;
        step.result =
            ctx.db.Scan(me == st->shard ? st->local : 0, st->pattern, st->count, vt, ctx.now_ms);
        step.scanned = true;
        auto& keys = step.result.keys;
        if (st->type == TypeFilter::kNothing) {
          keys.clear();
        } else if (st->only_empty_key) {
          std::erase_if(keys, [](const std::string& k) { return !k.empty(); });
        }
      },
      [st](ReplyBuilder& rb) {
        // Keys from the shard under the cursor, then from the following shards while each one
        // before was finished and COUNT is not reached yet.
        std::vector<const std::string*> keys;
        uint64_t next = 0;
        for (size_t s = st->shard; s < st->steps.size(); s++) {
          const Step& step = st->steps[s].v;
          if (s != static_cast<size_t>(st->shard)) {
            if (step.size == 0) continue;
            if (!step.scanned || keys.size() >= st->count) {
              next = s;  // local cursor 0 of shard s
              break;
            }
          }
          for (const auto& k : step.result.keys) keys.push_back(&k);
          if (step.result.cursor != 0) {
            next = (step.result.cursor << st->bits) | static_cast<uint64_t>(s);
            break;
          }
        }
        char buf[24];
        auto res = std::to_chars(buf, buf + sizeof(buf), next);
        rb.ArrayHeader(2);
        rb.Bulk(std::string_view(buf, res.ptr - buf));
        rb.ArrayHeader(keys.size());
        for (const std::string* k : keys) rb.Bulk(*k);
      });
}

// A random number for this thread (splitmix64).
uint64_t NextRandom() {
  thread_local uint64_t state = std::random_device{}() * 0x9E3779B97F4A7C15ull + 1;
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Every shard draws a key; the reply is one of them, chosen with a weight of the shard's size so
// that every key is about as likely as with a single table.
void RandomKey(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  struct Draw {
    std::optional<std::string> key;
    size_t size = 0;
  };
  Server& server = conn.reactor().server();
  auto draws = std::make_shared<std::vector<PerShard<Draw>>>(server.num_shards());
  conn.FanOut(
      AllShards(server),
      [draws](ShardCtx& ctx) {
        Draw& d = (*draws)[ctx.shard.index()].v;
        d.size = ctx.db.Size();
        if (d.size > 0) d.key = ctx.db.RandomKey(ctx.now_ms);
      },
      [draws](ReplyBuilder& rb) {
        uint64_t total = 0;
        for (const auto& d : *draws) {
          if (d.v.key) total += d.v.size;
        }
        if (total == 0) {
          rb.Null();
          return;
        }
        uint64_t pick = NextRandom() % total;
        for (const auto& d : *draws) {
          if (!d.v.key) continue;
          if (pick < d.v.size) {
            rb.Bulk(*d.v.key);
            return;
          }
          pick -= d.v.size;
        }
      });
}

void DbSize(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  Server& server = conn.reactor().server();
  auto sizes = std::make_shared<std::vector<PerShard<size_t>>>(server.num_shards());
  conn.FanOut(
      AllShards(server), [sizes](ShardCtx& ctx) { (*sizes)[ctx.shard.index()].v = ctx.db.Size(); },
      [sizes](ReplyBuilder& rb) {
        size_t n = 0;
        for (const auto& s : *sizes) n += s.v;
        rb.Integer(static_cast<int64_t>(n));
      });
}

// FLUSHDB/FLUSHALL [ASYNC|SYNC]. Both flush synchronously.
bool FlushArgsOk(CmdArgs args) {
  return args.size() == 1 ||
         (args.size() == 2 && (OptionIs(args[1], "sync") || OptionIs(args[1], "async")));
}

void FlushDb(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (!FlushArgsOk(args)) {
    rb.Error(errors::kSyntax);
    return;
  }
  conn.FanOut(
      AllShards(conn.reactor().server()),
      [](ShardCtx& ctx) { Reactor::FreeingMuch([&] { ctx.db.Flush(); }); },
      [r = &conn.reactor()](ReplyBuilder& rb) {
        TellFlushToTrackers(*r);
        rb.Ok();
      });
}

void FlushAll(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (!FlushArgsOk(args)) {
    rb.Error(errors::kSyntax);
    return;
  }
  conn.FanOut(
      AllShards(conn.reactor().server()),
      [](ShardCtx& ctx) {
        Reactor::FreeingMuch([&] {
          for (int i = 0; i < ctx.shard.num_dbs(); i++) ctx.shard.db(i).Flush();
        });
      },
      [r = &conn.reactor()](ReplyBuilder& rb) {
        TellFlushToTrackers(*r);
        rb.Ok();
      });
}

CommandSpec MultiKey(std::string name, int arity, uint32_t flags, ConnHandler h,
                     ShardHandler one_shard, std::vector<std::string> acl) {
  return MultiKeyCommand(std::move(name), arity, flags, h, one_shard, std::move(acl), 1, -1, 1);
}

CommandSpec Keyless(std::string name, int arity, uint32_t flags, ConnHandler h,
                    std::vector<std::string> acl) {
  return ConnCommand(std::move(name), arity, flags, h, std::move(acl));
}

// --- RENAME RENAMENX COPY ---

enum class MoveKind { kRename, kRenameNx, kCopy };

struct MoveArgs {
  bool replace = false;  // COPY ... REPLACE
  int dst_db = -1;       // COPY ... DB n (-1: the connection's)
};

// COPY's options; false after replying the error.
bool ParseCopyArgs(CmdArgs args, int databases, ReplyBuilder& rb, MoveArgs* out) {
  for (size_t i = 3; i < args.size(); i++) {
    if (OptionIs(args[i], "replace")) {
      out->replace = true;
    } else if (OptionIs(args[i], "db") && i + 1 < args.size()) {
      int64_t db;
      if (!StringToInt64(args[++i], &db)) {
        rb.Error(errors::kNotInteger);
        return false;
      }
      if (db < INT32_MIN || db > INT32_MAX) {
        rb.Error(errors::kIntRange);
        return false;
      }
      if (db < 0 || db >= databases) {
        rb.Error(errors::kDbIndexOutOfRange);
        return false;
      }
      out->dst_db = static_cast<int>(db);
    } else {
      rb.Error(errors::kSyntax);
      return false;
    }
  }
  return true;
}

// The reply for a move whose source snapshot is `found` and whose destination `dst_existed`.
void ReplyMove(MoveKind kind, bool found, bool done, ReplyBuilder& rb) {
  if (kind == MoveKind::kCopy) {
    rb.Integer(done ? 1 : 0);
  } else if (!found) {
    rb.Error(errors::kNoSuchKey);
  } else if (kind == MoveKind::kRenameNx) {
    rb.Integer(done ? 1 : 0);
  } else {
    rb.Ok();
  }
}

// Both keys on the shard running this: one step.
template <MoveKind kind>
void MoveOnShard(CmdArgs args, ShardCtx& ctx) {
  MoveArgs m;
  if (kind == MoveKind::kCopy && !ParseCopyArgs(args, ctx.config.databases, ctx.rb, &m)) return;
  if (kind != MoveKind::kCopy && args.size() != 3) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  shard::Db& dst_db = m.dst_db >= 0 ? ctx.shard.db(m.dst_db) : ctx.db;
  const bool same_key = args[1] == args[2] && &dst_db == &ctx.db;
  if (kind == MoveKind::kCopy && same_key) {
    ctx.rb.Error(errors::kCopySameObject);
    return;
  }
  std::optional<shard::KeySnapshot> snap = ctx.db.Snapshot(args[1], ctx.now_ms);
  if (!snap || same_key) {
    // RENAME k k: OK when k exists; RENAMENX k k: 0.
    ReplyMove(kind, snap.has_value(), false, ctx.rb);
    return;
  }
  bool replace = kind == MoveKind::kRename || m.replace;
  bool done = dst_db.Restore(args[2], *snap, replace, ctx.now_ms);
  if (done && kind != MoveKind::kCopy) ctx.db.Del(args[1], ctx.now_ms);
  ReplyMove(kind, true, done, ctx.rb);
}

// Source and destination on different shards: under both keys' locks, the source shard copies
// the value out (phase 1), then the destination shard writes it (phase 2) and, for RENAME, the
// source shard deletes it (phase 3). A RENAME whose destination is on the lower shard goes
// the other way round: the destination checks whether it may be written (phase 1), the source
// copies the value out and deletes it (phase 2), the destination writes it (phase 3). Every
// phase runs on its key's shard only, and the order is lower, higher, lower: one pass along the
// shards (Transaction::LockRunPhases). No client sees the key in both places or in neither.
template <MoveKind kind>
void Move(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  MoveArgs m;
  if (kind == MoveKind::kCopy && !ParseCopyArgs(args, conn.reactor().config().databases, rb, &m)) {
    return;
  }
  if (kind != MoveKind::kCopy && args.size() != 3) {
    rb.Error(errors::kSyntax);
    return;
  }
  const Server& server = conn.reactor().server();
  struct State {
    std::string src, dst;
    int src_shard, dst_shard, dst_db;
    bool replace;
    std::optional<shard::KeySnapshot> snap;
    bool dst_exists = false;
    bool done = false;
  };
  auto st = std::make_shared<State>();
  st->src = std::string(args[1]);
  st->dst = std::string(args[2]);
  st->src_shard = server.ShardOf(args[1]);
  st->dst_shard = server.ShardOf(args[2]);
  st->dst_db = m.dst_db >= 0 ? m.dst_db : conn.db_index();
  st->replace = kind == MoveKind::kRename || m.replace;
  // Each phase on its key's shard only: the ones on this reactor's shard cost no message.
  std::vector<Connection::ShardFn> phases;
  std::vector<int> on;
  if (kind != MoveKind::kCopy && st->dst_shard < st->src_shard) {
    phases.push_back([st](ShardCtx& ctx) {
      st->dst_exists = ctx.shard.db(st->dst_db).Exists(st->dst, ctx.now_ms);
    });
    phases.push_back([st](ShardCtx& ctx) {
      st->snap = ctx.db.Snapshot(st->src, ctx.now_ms);
      st->done = st->snap && (st->replace || !st->dst_exists);
      if (st->done) ctx.db.Del(st->src, ctx.now_ms);
    });
    phases.push_back([st](ShardCtx& ctx) {
      if (st->done) ctx.shard.db(st->dst_db).Restore(st->dst, *st->snap, st->replace, ctx.now_ms);
    });
    on = {st->dst_shard, st->src_shard, st->dst_shard};
  } else {
    phases.push_back([st](ShardCtx& ctx) { st->snap = ctx.db.Snapshot(st->src, ctx.now_ms); });
    phases.push_back([st](ShardCtx& ctx) {
      if (!st->snap) return;
      st->done = ctx.shard.db(st->dst_db).Restore(st->dst, *st->snap, st->replace, ctx.now_ms);
    });
    on = {st->src_shard, st->dst_shard};
    if (kind != MoveKind::kCopy) {
      // A third step: the source goes only once the destination is written.
      phases.push_back([st](ShardCtx& ctx) {
        if (st->done) ctx.db.Del(st->src, ctx.now_ms);
      });
      on.push_back(st->src_shard);
    }
  }
  conn.FanOutPhasesOn(
      {std::min(st->src_shard, st->dst_shard), std::max(st->src_shard, st->dst_shard)},
      std::move(phases), std::move(on),
      [st](ReplyBuilder& rb) { ReplyMove(kind, st->snap.has_value(), st->done, rb); });
}

// MOVE key db: the key and its TTL to another database. A key's shard does not depend on its
// database, so both sides are here: one step. 0 when the key is missing or db already has it.
void MoveToDb(CmdArgs args, ShardCtx& ctx) {
  int64_t db;
  if (!StringToInt64(args[2], &db)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  if (db < INT32_MIN || db > INT32_MAX) {
    ctx.rb.Error(errors::kIntRange);
    return;
  }
  if (db < 0 || db >= ctx.config.databases) {
    ctx.rb.Error(errors::kDbIndexOutOfRange);
    return;
  }
  if (db == ctx.db_index) {
    ctx.rb.Error(errors::kCopySameObject);
    return;
  }
  std::optional<shard::KeySnapshot> snap = ctx.db.Snapshot(args[1], ctx.now_ms);
  if (!snap || !ctx.shard.db(static_cast<int>(db)).Restore(args[1], *snap, false, ctx.now_ms)) {
    ctx.rb.Integer(0);
    return;
  }
  ctx.db.Del(args[1], ctx.now_ms);
  ctx.rb.Integer(1);
}

// --- DUMP RESTORE: a key's value as the bytes of Redis's RDB format (shard/dump_format/) ---

void Dump(CmdArgs args, ShardCtx& ctx) {
  std::optional<shard::KeySnapshot> snap = ctx.db.Snapshot(args[1], ctx.now_ms);
  if (!snap) {
    ctx.rb.Null();
    return;
  }
  if (snap->type == ValueType::kStream) {  // (Redis's stream encoding is not written yet)
    ctx.rb.Error(errors::kDumpStream);
    return;
  }
  ctx.rb.Bulk(shard::dump::EncodePayload(*snap));
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], checked in Redis's order:
// the options, an existing key, the TTL, the payload's footer, then its value.
void Restore(CmdArgs args, ShardCtx& ctx) {
  bool replace = false, absttl = false;
  int64_t idle = -1, freq = -1;
  for (size_t j = 4; j < args.size(); j++) {
    const bool more = j + 1 < args.size();
    if (OptionIs(args[j], "replace")) {
      replace = true;
    } else if (OptionIs(args[j], "absttl")) {
      absttl = true;
    } else if (OptionIs(args[j], "idletime") && more && freq == -1) {
      if (!StringToInt64(args[++j], &idle)) {
        ctx.rb.Error(errors::kNotInteger);
        return;
      }
      if (idle < 0) {
        ctx.rb.Error(errors::kRestoreIdle);
        return;
      }
    } else if (OptionIs(args[j], "freq") && more && idle == -1) {
      // Counted only under an LFU policy, which deadbolt does not have: checked, then unused.
      if (!StringToInt64(args[++j], &freq)) {
        ctx.rb.Error(errors::kNotInteger);
        return;
      }
      if (freq < 0 || freq > 255) {
        ctx.rb.Error(errors::kRestoreFreq);
        return;
      }
    } else {
      ctx.rb.Error(errors::kSyntax);
      return;
    }
  }
  if (!replace && ctx.db.Exists(args[1], ctx.now_ms)) {
    ctx.rb.Error(errors::kBusyKey);
    return;
  }
  int64_t ttl;
  if (!StringToInt64(args[2], &ttl)) {
    ctx.rb.Error(errors::kNotInteger);
    return;
  }
  if (ttl < 0) {
    ctx.rb.Error(errors::kRestoreTtl);
    return;
  }
  if (shard::OpStatus st = shard::dump::CheckFooter(args[3]); st != shard::OpStatus::kOk) {
    ctx.rb.Error(errors::ForStatus(st));
    return;
  }
  shard::OpResult<shard::KeySnapshot> snap =
      shard::dump::DecodePayload(args[3], static_cast<size_t>(ctx.config.proto_max_bulk_len));
  if (!snap.ok()) {
    ctx.rb.Error(errors::ForStatus(snap.status()));
    return;
  }
  // A relative TTL counts from now; one past the end of time never comes (Redis would wrap).
  if (ttl > 0 && !absttl) ttl = ttl > INT64_MAX - ctx.now_ms ? INT64_MAX : ttl + ctx.now_ms;
  snap->expire_at_ms = ttl > 0 ? ttl : -1;
  // With REPLACE the old key goes even when the new one has expired already (it is not made).
  ctx.db.Restore(args[1], *snap, true, ctx.now_ms);
  if (idle >= 0) ctx.db.SetIdle(args[1], idle, ctx.now_ms);
  ctx.rb.Ok();
}

CommandSpec TwoKeys(std::string name, int arity, uint32_t flags, ConnHandler h,
                    ShardHandler one_shard, std::vector<std::string> acl) {
  return MultiKeyCommand(std::move(name), arity, flags, h, one_shard, std::move(acl), 1, 2, 1);
}

}  // namespace

void RegisterKeyCommands(CommandTable* t) {
  // RENAME / RENAMENX are not denyoom in Redis, but create the destination key.
  t->Add(TwoKeys("rename", 3, kWrite | kMayCreate, Move<MoveKind::kRename>,
                 MoveOnShard<MoveKind::kRename>, {"@keyspace", "@write", "@slow"}));
  t->Add(TwoKeys("renamenx", 3, kWrite | kFast | kMayCreate, Move<MoveKind::kRenameNx>,
                 MoveOnShard<MoveKind::kRenameNx>, {"@keyspace", "@write", "@fast"}));
  t->Add(Key1("move", 3, kWrite | kFast | kMayCreate, MoveToDb, {"@keyspace", "@write", "@fast"}));
  t->Add(Key1("dump", 2, kReadOnly, Dump, {"@keyspace", "@read", "@slow"}));
  // RESTORE-ASKING is RESTORE marked for a slot being imported (Redis Cluster's MIGRATE); with no
  // cluster it is RESTORE, as in standalone Redis.
  for (const char* name : {"restore", "restore-asking"}) {
    const uint32_t asking = std::string_view(name) == "restore" ? 0u : uint32_t{kAsking};
    t->Add(Key1(name, -4, kWrite | kDenyOom | asking, Restore,
                {"@keyspace", "@write", "@slow", "@dangerous"}));
  }
  t->Add(TwoKeys("copy", -3, kWrite | kDenyOom, Move<MoveKind::kCopy>, MoveOnShard<MoveKind::kCopy>,
                 {"@keyspace", "@write", "@slow"}));
  const std::vector<std::string> kReadFast = {"@keyspace", "@read", "@fast"};
  const std::vector<std::string> kReadSlow = {"@keyspace", "@read", "@slow"};
  const std::vector<std::string> kWriteFast = {"@keyspace", "@write", "@fast"};
  const std::vector<std::string> kWriteSlow = {"@keyspace", "@write", "@slow"};
  const std::vector<std::string> kWriteDangerous = {"@keyspace", "@write", "@slow", "@dangerous"};
  t->Add(MultiKey("del", -2, kWrite, Del, CountKeysOnShard<DelKey>, kWriteSlow));
  t->Add(MultiKey("unlink", -2, kWrite | kFast, Del, CountKeysOnShard<DelKey>, kWriteFast));
  t->Add(MultiKey("exists", -2, kReadOnly | kFast, Exists, CountKeysOnShard<KeyExists>, kReadFast));
  t->Add(MultiKey("touch", -2, kReadOnly | kFast, Touch, CountKeysOnShard<KeyTouch>, kReadFast));
  t->Add(Key1("type", 2, kReadOnly | kFast, Type, kReadFast));
  t->Add(Key1("expire", -3, kWrite | kFast, Expire, kWriteFast));
  t->Add(Key1("pexpire", -3, kWrite | kFast, PExpire, kWriteFast));
  t->Add(Key1("expireat", -3, kWrite | kFast, ExpireAt, kWriteFast));
  t->Add(Key1("pexpireat", -3, kWrite | kFast, PExpireAt, kWriteFast));
  t->Add(Key1("ttl", 2, kReadOnly | kFast, Ttl, kReadFast));
  t->Add(Key1("pttl", 2, kReadOnly | kFast, PTtl, kReadFast));
  t->Add(Key1("expiretime", 2, kReadOnly | kFast, ExpireTime, kReadFast));
  t->Add(Key1("pexpiretime", 2, kReadOnly | kFast, PExpireTime, kReadFast));
  t->Add(Key1("persist", 2, kWrite | kFast, Persist, kWriteFast));
  t->Add(Keyless("keys", 2, kReadOnly, Keys, {"@keyspace", "@read", "@slow", "@dangerous"}));
  t->Add(Keyless("scan", -2, kReadOnly, Scan, kReadSlow));
  t->Add(Keyless("randomkey", 1, kReadOnly, RandomKey, kReadSlow));
  t->Add(Keyless("dbsize", 1, kReadOnly | kFast, DbSize, kReadFast));
  t->Add(Keyless("flushdb", -1, kWrite, FlushDb, kWriteDangerous));
  t->Add(Keyless("flushall", -1, kWrite, FlushAll, kWriteDangerous));
}

}  // namespace deadbolt::server
