// Bitmap commands: GETBIT SETBIT BITCOUNT BITPOS, on string values read as bits (Redis 7.2's
// bitops.c: arguments are checked before the key is looked up). Their logic is in
// shard/db_bitmap.cc.

#include <cstdint>
#include <string>
#include <vector>

#include "server/base/config.h"
#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "shard/db.h"

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

}  // namespace

void RegisterBitmapCommands(CommandTable* t) {
  t->Add(Key1("getbit", 3, kReadOnly | kFast, GetBit, {"@read", "@bitmap", "@fast"}));
  t->Add(Key1("setbit", 4, kWrite | kDenyOom, SetBit, {"@write", "@bitmap", "@slow"}));
  t->Add(Key1("bitcount", -2, kReadOnly, BitCount, {"@read", "@bitmap", "@slow"}));
  t->Add(Key1("bitpos", -3, kReadOnly, BitPos, {"@read", "@bitmap", "@slow"}));
}

}  // namespace deadbolt::server
