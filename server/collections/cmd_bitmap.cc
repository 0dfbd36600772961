// Bitmap commands: GETBIT SETBIT BITCOUNT BITPOS BITFIELD BITFIELD_RO BITOP, on string values read
// as bits (Redis 7.2's bitops.c: arguments are checked before the key is looked up). Their logic is
// in shard/db_bitmap.cc.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/base/config.h"
#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/server.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {

namespace {

using shard::Db;

// A bit offset (GETBIT, SETBIT): a non-negative integer whose byte is under proto-max-bulk-len.
bool ParseBitOffset(std::string_view arg, const ShardCtx& ctx, uint64_t* offset) {
  int64_t v;
  if (!StringToInt64(arg, &v) || v < 0 || (v >> 3) >= ctx.config.proto_max_bulk_len) {
    ctx.rb.Error(errors::kBitOffset);
    return false;
  }
  *offset = static_cast<uint64_t>(v);
  return true;
}

// BYTE or BIT, the unit of a range.
bool ParseUnit(std::string_view arg, Db::BitRange* range, const ShardCtx& ctx) {
  if (OptionIs(arg, "bit")) {
    range->bits = true;
  } else if (!OptionIs(arg, "byte")) {
    ctx.rb.Error(errors::kSyntax);
    return false;
  }
  return true;
}

bool ParseRangeBound(std::string_view arg, int64_t* v, const ShardCtx& ctx) {
  if (!StringToInt64(arg, v)) {
    ctx.rb.Error(errors::kNotInteger);
    return false;
  }
  return true;
}

void GetBit(CmdArgs args, ShardCtx& ctx) {
  uint64_t offset;
  if (!ParseBitOffset(args[2], ctx, &offset)) return;
  ReplyInteger(ctx.rb, ctx.db.GetBit(args[1], offset, ctx.now_ms));
}

void SetBit(CmdArgs args, ShardCtx& ctx) {
  uint64_t offset;
  if (!ParseBitOffset(args[2], ctx, &offset)) return;
  int64_t on;
  if (!StringToInt64(args[3], &on) || (on != 0 && on != 1)) {
    ctx.rb.Error(errors::kBitValue);
    return;
  }
  ReplyInteger(ctx.rb, ctx.db.SetBit(args[1], offset, on == 1, ctx.now_ms));
}

// BITCOUNT key [start end [BYTE|BIT]]
void BitCount(CmdArgs args, ShardCtx& ctx) {
  Db::BitRange range;
  if (args.size() == 4 || args.size() == 5) {
    range.given = range.end_given = true;
    if (!ParseRangeBound(args[2], &range.start, ctx) ||
        !ParseRangeBound(args[3], &range.end, ctx)) {
      return;
    }
    if (args.size() == 5 && !ParseUnit(args[4], &range, ctx)) return;
  } else if (args.size() != 2) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  ReplyInteger(ctx.rb, ctx.db.BitCount(args[1], range, ctx.now_ms));
}

// BITPOS key bit [start [end [BYTE|BIT]]]
void BitPos(CmdArgs args, ShardCtx& ctx) {
  int64_t bit;
  if (!ParseRangeBound(args[2], &bit, ctx)) return;
  if (bit != 0 && bit != 1) {
    ctx.rb.Error(errors::kBitArgument);
    return;
  }
  Db::BitRange range;
  if (args.size() > 6) {
    ctx.rb.Error(errors::kSyntax);
    return;
  }
  if (args.size() >= 4) {
    range.given = true;
    if (!ParseRangeBound(args[3], &range.start, ctx)) return;
    if (args.size() == 6 && !ParseUnit(args[5], &range, ctx)) return;  // (before the end, as Redis)
    if (args.size() >= 5) {
      range.end_given = true;
      if (!ParseRangeBound(args[4], &range.end, ctx)) return;
    }
  }
  ReplyInteger(ctx.rb, ctx.db.BitPos(args[1], static_cast<int>(bit), range, ctx.now_ms));
}

// A BITFIELD type: i1..i64 or u1..u63 (the letter in lower case only, as Redis).
bool ParseFieldType(std::string_view arg, Db::BitFieldOp* op, const ShardCtx& ctx) {
  int64_t bits = 0;
  const bool sign = !arg.empty() && arg[0] == 'i';
  if (arg.empty() || (arg[0] != 'i' && arg[0] != 'u') || !StringToInt64(arg.substr(1), &bits) ||
      bits < 1 || bits > (sign ? 64 : 63)) {
    ctx.rb.Error(errors::kBitFieldType);
    return false;
  }
  op->is_signed = sign;
  op->bits = static_cast<int>(bits);
  return true;
}

// A BITFIELD offset: bits, or "#n", n fields of the type's width. Its byte must be under
// proto-max-bulk-len.
bool ParseFieldOffset(std::string_view arg, Db::BitFieldOp* op, const ShardCtx& ctx) {
  const bool fields = !arg.empty() && arg[0] == '#';
  int64_t v;
  if (!StringToInt64(fields ? arg.substr(1) : arg, &v) || v < 0 ||
      (fields && v > INT64_MAX / op->bits)) {
    ctx.rb.Error(errors::kBitOffset);
    return false;
  }
  if (fields) v *= op->bits;
  if ((v >> 3) >= ctx.config.proto_max_bulk_len) {
    ctx.rb.Error(errors::kBitOffset);
    return false;
  }
  op->offset = static_cast<uint64_t>(v);
  return true;
}

// BITFIELD key [GET type offset | [OVERFLOW WRAP|SAT|FAIL] SET type offset value |
// INCRBY type offset increment ...]; BITFIELD_RO takes GET alone. Every operation is parsed
// before any runs.
template <bool kReadOnlyForm>
void BitField(CmdArgs args, ShardCtx& ctx) {
  using Op = Db::BitFieldOp;
  thread_local std::vector<Op> ops;
  ops.clear();
  Op::Overflow overflow = Op::Overflow::kWrap;
  bool writes = false;
  for (size_t j = 2; j < args.size();) {
    const std::string_view sub = args[j];
    const size_t left = args.size() - j - 1;
    if (OptionIs(sub, "overflow") && left >= 1) {
      const std::string_view how = args[j + 1];
      if (OptionIs(how, "wrap")) {
        overflow = Op::Overflow::kWrap;
      } else if (OptionIs(how, "sat")) {
        overflow = Op::Overflow::kSat;
      } else if (OptionIs(how, "fail")) {
        overflow = Op::Overflow::kFail;
      } else {
        ctx.rb.Error(errors::kBitFieldOverflow);
        return;
      }
      j += 2;
      continue;
    }
    Op op;
    op.overflow = overflow;
    if (OptionIs(sub, "get") && left >= 2) {
      op.kind = Op::Kind::kGet;
    } else if (OptionIs(sub, "set") && left >= 3) {
      op.kind = Op::Kind::kSet;
    } else if (OptionIs(sub, "incrby") && left >= 3) {
      op.kind = Op::Kind::kIncrBy;
    } else {
      ctx.rb.Error(errors::kSyntax);
      return;
    }
    if (!ParseFieldType(args[j + 1], &op, ctx) || !ParseFieldOffset(args[j + 2], &op, ctx)) {
      return;
    }
    if (op.kind != Op::Kind::kGet) {
      writes = true;
      if (!ParseRangeBound(args[j + 3], &op.value, ctx)) return;
    }
    ops.push_back(op);
    j += op.kind == Op::Kind::kGet ? 3 : 4;
  }
  if (kReadOnlyForm && writes) {
    ctx.rb.Error(errors::kBitFieldReadOnly);
    return;
  }
  auto r = ctx.db.BitField(args[1], ops, ctx.now_ms);
  if (!r.ok()) {
    ReplyStatus(ctx.rb, r.status());
    return;
  }
  ctx.rb.ArrayHeader(r->size());
  for (const std::optional<int64_t>& v : *r) {
    if (v) {
      ctx.rb.Integer(*v);
    } else {
      ctx.rb.Null();
    }
  }
}

// BITOP AND|OR|XOR|NOT destkey key [key ...]: the operation, checked before any key.
bool ParseBitOp(CmdArgs args, Db::BitOp* op, protocol::ReplyBuilder& rb) {
  const std::string_view name = args[1];
  if (OptionIs(name, "and")) {
    *op = Db::BitOp::kAnd;
  } else if (OptionIs(name, "or")) {
    *op = Db::BitOp::kOr;
  } else if (OptionIs(name, "xor")) {
    *op = Db::BitOp::kXor;
  } else if (OptionIs(name, "not")) {
    *op = Db::BitOp::kNot;
    if (args.size() != 4) {
      rb.Error(errors::kBitOpNot);
      return false;
    }
  } else {
    rb.Error(errors::kSyntax);
    return false;
  }
  return true;
}

// The result goes to the destination, replacing whatever it held (and its TTL); an empty
// result deletes it. The reply is the result's length.
void StoreBitOp(Db& db, std::string_view dst, const std::string& result, int64_t now_ms) {
  if (result.empty()) {
    db.Del(dst, now_ms);
  } else {
    db.Set(dst, result, shard::SetOptions{}, now_ms);
  }
}

void BitOpOnShard(CmdArgs args, ShardCtx& ctx) {
  Db::BitOp op;
  if (!ParseBitOp(args, &op, ctx.rb)) return;
  std::vector<std::string_view> sources;
  for (size_t i = 3; i < args.size(); i++) {
    auto r = ctx.db.Get(args[i], ctx.now_ms);
    if (r.status() == shard::OpStatus::kWrongType) {
      ctx.rb.Error(errors::kWrongType);
      return;
    }
    sources.push_back(r.ok() ? *r : std::string_view());
  }
  const std::string result = Db::BitOpResult(op, sources);  // (before the store moves values)
  StoreBitOp(ctx.db, args[2], result, ctx.now_ms);
  ctx.rb.Integer(static_cast<int64_t>(result.size()));
}

// Across shards, under every key's lock: (1) each shard copies out its sources, (2) the
// destination's shard computes the result and stores it, unless a source was of another type.
void BitOp(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb) {
  Db::BitOp op;
  if (!ParseBitOp(args, &op, rb)) return;
  const Server& server = conn.reactor().server();
  struct State {
    Db::BitOp op;
    std::vector<std::string> keys;
    std::vector<int> key_shard;
    std::vector<std::string> values;  // slot i written only by keys[i]'s shard
    std::vector<char> wrong;          // likewise
    std::string dst;
    int dst_shard = -1;
    size_t len = 0;
    bool AnyWrong() const { return std::find(wrong.begin(), wrong.end(), 1) != wrong.end(); }
  };
  auto st = std::make_shared<State>();
  st->op = op;
  st->dst = std::string(args[2]);
  st->dst_shard = server.ShardOf(args[2]);
  std::vector<int> shards = {st->dst_shard};
  for (size_t i = 3; i < args.size(); i++) {
    st->keys.emplace_back(args[i]);
    st->key_shard.push_back(server.ShardOf(args[i]));
    shards.push_back(st->key_shard.back());
  }
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  st->values.resize(st->keys.size());
  st->wrong.assign(st->keys.size(), 0);
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); i++) {
      if (st->key_shard[i] != ctx.shard.index()) continue;
      auto r = ctx.db.Get(st->keys[i], ctx.now_ms);
      if (r.status() == shard::OpStatus::kWrongType) {
        st->wrong[i] = 1;
      } else if (r.ok()) {
        st->values[i] = std::string(*r);
      }
    }
  });
  phases.push_back([st](ShardCtx& ctx) {
    if (ctx.shard.index() != st->dst_shard || st->AnyWrong()) return;
    const std::vector<std::string_view> sources(st->values.begin(), st->values.end());
    const std::string result = Db::BitOpResult(st->op, sources);
    StoreBitOp(ctx.db, st->dst, result, ctx.now_ms);
    st->len = result.size();
  });
  conn.FanOutPhases(shards, std::move(phases), [st](protocol::ReplyBuilder& rb) {
    if (st->AnyWrong()) {
      rb.Error(errors::kWrongType);
    } else {
      rb.Integer(static_cast<int64_t>(st->len));
    }
  });
}

}  // namespace

void RegisterBitmapCommands(CommandTable* t) {
  t->Add(Key1("getbit", 3, kReadOnly | kFast, GetBit, {"@read", "@bitmap", "@fast"}));
  t->Add(Key1("setbit", 4, kWrite | kDenyOom, SetBit, {"@write", "@bitmap", "@slow"}));
  t->Add(Key1("bitcount", -2, kReadOnly, BitCount, {"@read", "@bitmap", "@slow"}));
  t->Add(Key1("bitpos", -3, kReadOnly, BitPos, {"@read", "@bitmap", "@slow"}));
  t->Add(Key1("bitfield", -2, kWrite | kDenyOom, BitField<false>, {"@write", "@bitmap", "@slow"}));
  t->Add(Key1("bitfield_ro", -2, kReadOnly | kFast, BitField<true>, {"@read", "@bitmap", "@fast"}));
  t->Add(MultiKeyCommand("bitop", -4, kWrite | kDenyOom, BitOp, BitOpOnShard,
                         {"@write", "@bitmap", "@slow"}, 2, -1, 1));
}

}  // namespace deadbolt::server
