// Lock commands: DELIFEQ (Valkey 9.0), DELEX and DIGEST (Redis 8.4), and the parsing of SET's
// IFEQ/IFNE/IFDEQ/IFDNE options (cmd_lock.h).
//
// DELIFEQ and SET ... IFEQ are the release and extend of every lock: one Db lookup, no
// allocation.

#include "server/commands/cmd_lock.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "shard/db.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;
using shard::OpStatus;
using Cond = shard::SetOptions::Cond;

constexpr size_t kDigestLen = 16;  // hex digits of a 64-bit digest

// The condition an IF* word names; kNone for any other word.
Cond ConditionNamed(std::string_view word) {
  if (word.size() < 4 || (word[0] | 0x20) != 'i' || (word[1] | 0x20) != 'f') return Cond::kNone;
  if (OptionIs(word, "ifeq")) return Cond::kIfEq;
  if (OptionIs(word, "ifne")) return Cond::kIfNe;
  if (OptionIs(word, "ifdeq")) return Cond::kIfDeq;
  if (OptionIs(word, "ifdne")) return Cond::kIfDne;
  return Cond::kNone;
}

bool IsDigestCond(Cond c) { return c == Cond::kIfDeq || c == Cond::kIfDne; }

// --- DELIFEQ key value ---

void DelIfEq(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.DelEx(args[1], Cond::kIfEq, args[2], ctx.now_ms);
  if (r.ok()) {
    ctx.rb.Integer(*r ? 1 : 0);
  } else {
    ctx.rb.Error(errors::ForStatus(r.status()));
  }
}

// --- DELEX key [IFEQ v | IFNE v | IFDEQ digest | IFDNE digest] ---

void DelEx(CmdArgs args, ShardCtx& ctx) {
  // Redis 8.4 checks the argument count first, then looks the key up: a missing key is 0 and a
  // key of another type is an error, before the condition word and the digest are read.
  if (args.size() == 3 || args.size() > 4) {
    ctx.rb.Error(errors::WrongArity("delex"));
    return;
  }
  Cond cond = Cond::kNone;
  std::string_view value;
  if (args.size() == 4) {
    cond = ConditionNamed(args[2]);
    value = args[3];
    std::string_view error;
    if (cond == Cond::kNone) {
      error = errors::kDelexCondition;
    } else if (IsDigestCond(cond) && value.size() != kDigestLen) {
      error = errors::kDigestLength;
    }
    if (!error.empty()) {
      switch (ctx.db.Type(args[1], ctx.now_ms)) {
        case shard::ValueType::kNone:
          ctx.rb.Integer(0);
          break;
        case shard::ValueType::kString:
          ctx.rb.Error(error);
          break;
        default:
          ctx.rb.Error(errors::kDelexNotString);
          break;
      }
      return;
    }
  }
  auto r = ctx.db.DelEx(args[1], cond, value, ctx.now_ms);
  if (r.ok()) {
    ctx.rb.Integer(*r ? 1 : 0);
  } else if (r.status() == OpStatus::kWrongType) {
    ctx.rb.Error(errors::kDelexNotString);
  } else {
    ctx.rb.Error(errors::ForStatus(r.status()));
  }
}

// --- DIGEST key ---

void Digest(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.Digest(args[1], ctx.now_ms);
  if (!r.ok()) {
    if (r.status() == OpStatus::kKeyNotFound) {
      ctx.rb.Null();
    } else {
      ctx.rb.Error(errors::ForStatus(r.status()));
    }
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  char text[kDigestLen];
  for (size_t i = 0; i < kDigestLen; ++i) text[i] = kHex[(*r >> (60 - 4 * i)) & 0xf];
  ctx.rb.Bulk(std::string_view(text, kDigestLen));
}

}  // namespace

bool ParseSetCondition(std::string_view opt, std::string_view val, shard::SetOptions* opts) {
  const Cond cond = ConditionNamed(opt);
  if (cond == Cond::kNone || opts->cond != Cond::kNone) return false;
  opts->cond = cond;
  opts->cond_value = val;
  return true;
}

std::string_view SetConditionError(const shard::SetOptions& opts) {
  if (IsDigestCond(opts.cond) && opts.cond_value.size() != kDigestLen) return errors::kDigestLength;
  return {};
}

void RegisterLockCommands(CommandTable* t) {
  const std::vector<std::string> kWriteFast = {"@write", "@string", "@fast"};
  t->Add(Key1("delifeq", 3, kWrite | kFast, DelIfEq, kWriteFast));
  t->Add(Key1("delex", -2, kWrite | kFast, DelEx, kWriteFast));
  t->Add(Key1("digest", 2, kReadOnly | kFast, Digest, {"@read", "@string", "@fast"}));
}

}  // namespace deadbolt::server
