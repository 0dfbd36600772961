#pragma once
// What a catalogued script (server/scripts/script_catalog.h) sees while it runs on one shard: KEYS
// and ARGV as Lua sees them (nil past the end), and the redis.call()s lock scripts make, each
// failing exactly as Redis 7.0 fails it inside a script. Also Lua 5.1's number conversions,
// which some scripts rely on (tonumber, string arithmetic, numbers passed to commands).

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/types/span.h>

#include "server/cmdtable/command.h"
#include "server/scripts/script_catalog.h"
#include "shard/db.h"

namespace deadbolt::server {

// A Lua value passed to redis.call(): a string, or nil (nullptr).
using LuaArg = const std::string_view*;

// What a redis.call() returned, as the script sees it: Redis 7.0 converts the command's RESP2
// reply to Lua (a nil bulk or nil array is false, a status reply a table with `ok`, an array a
// table). Owns its strings: a script keeps replies across later calls.
struct CallReply {
  enum class Type : uint8_t { kFalse, kInteger, kString, kStatus, kArray };
  Type type = Type::kFalse;
  int64_t integer = 0;
  std::string str;                  // kString, kStatus
  std::vector<CallReply> elements;  // kArray
  bool truthy() const { return type != Type::kFalse; }
};

// Lives on the stack of the thread running the script on one shard, for one call (or one phase of
// a call that fans out). Each redis.call() emulation returns false when the call raised an
// error; the error, with its " script: <sha>, on @user_script:<line>." suffix, is then in
// error() and the script must stop (effects already made stay, as in Redis).
class ScriptRun {
 public:
  ScriptRun(const ScriptCall& call, ShardCtx& ctx);

  const ScriptCall& call() const { return call_; }
  const ScriptInfo& script() const { return *call_.script; }
  bool read_only() const { return call_.read_only; }
  int64_t now_ms() const { return ctx_.now_ms; }
  shard::Db& db() { return *db_; }
  size_t num_keys() const { return call_.keys.size(); }
  // KEYS[i] / ARGV[i], 1-based; nullptr (nil) past the end.
  LuaArg key(size_t i) const {
    return i >= 1 && i <= call_.keys.size() ? &call_.keys[i - 1] : nullptr;
  }
  LuaArg arg(size_t i) const {
    return i >= 1 && i <= call_.argv.size() ? &call_.argv[i - 1] : nullptr;
  }

  // --- redis.call() ---
  // redis.call(args...) of any command deadbolt has, run by its own handler on this shard, with
  // Redis 7.0's checks in its order: a nil argument, an unknown command, the arity, a command
  // scripts may not call, a write in a read-only script; then the command's own error, if any,
  // fails the script. `args[0]` is the command name. False after recording the error.
  bool Call(int line, std::initializer_list<LuaArg> args, CallReply* reply = nullptr);
  bool Call(int line, absl::Span<const LuaArg> args, CallReply* reply = nullptr);
  // GET: *value is nullopt for a missing key (Lua false).
  bool Get(LuaArg key, int line, std::optional<std::string_view>* value);
  bool Exists(LuaArg key, int line, bool* exists);
  bool Pttl(LuaArg key, int line, int64_t* ms);
  // DEL of one key: *deleted is the reply (0 or 1).
  bool Del(LuaArg key, int line, int64_t* deleted);
  // PEXPIRE key ms: *result is the reply (1 if set, 0 for a missing key).
  bool PExpire(LuaArg key, LuaArg ms, int line, int64_t* result);
  // SET key value PX ms [NX]: *written false when NX was not met (Lua false).
  bool SetPx(LuaArg key, LuaArg value, LuaArg ms, bool nx, int line, bool* written);
  bool HExists(LuaArg key, LuaArg field, int line, bool* exists);
  // HINCRBY key field delta (delta is a Lua number in the scripts).
  bool HIncrBy(LuaArg key, LuaArg field, int64_t delta, int line, int64_t* value);
  // HSET key field value (one field).
  bool HSet(LuaArg key, LuaArg field, std::string_view value, int line);
  // redis.call(command, channel, message) where the script names the command in an argument
  // (Redisson: "publish" or "spublish", any case).
  bool Publish(LuaArg command, LuaArg channel, LuaArg message, int line);
  // redis.pcall("SELECT", tonumber(db)): switches the script's database when `db` reads as a
  // valid index; anything else is an error that pcall swallows.
  void PcallSelect(LuaArg db);

  // --- the script itself fails ---
  // Records `redis_error` raised at `line`; returns false.
  bool Fail(std::string_view redis_error, int line);
  bool FailArgs(int line);  // a nil passed to redis.call()
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

  // Checks that redis.call() can run a write with these arguments (no nil, not a read-only
  // script; a `denyoom` command, one that may grow the data, not over maxmemory before the
  // script's first write). False after recording the error.
  bool CheckWrite(std::initializer_list<LuaArg> args, int line, bool denyoom = false);
  // The maxmemory check alone (server/cmdtable/memory_limit.h).
  bool CheckOom(bool denyoom, int line);
  // ACL: whether the caller's user may make this call (fails the script if not).
  bool AclAllows(int line, std::initializer_list<std::string_view> args);
  // Whether the caller's user may run `command` on every KEYS[i] (fails the script if not).
  // Native scripts that work on the keyspace directly ask it before they start.
  bool AclAllowsOnEachKey(int line, std::string_view command);
  // The caller's user may not do everything: direct shortcuts must go through the checked calls.
  bool acl_checks() const { return ctx_.acl_user != nullptr; }

 private:
  const ScriptCall& call_;
  ShardCtx& ctx_;
  shard::Db* db_;
  int db_index_;
  std::string error_;
  bool wrote_ = false;    // a write command has run (Redis's SCRIPT_WRITE_DIRTY)
  std::string call_out_;  // the last Call()'s RESP2 reply, parsed into a CallReply
  std::vector<std::string_view> call_args_;
};

// Lua 5.1's string to number coercion (luaO_str2d: strtod, then hex, trailing spaces allowed),
// as used by tonumber() and string arithmetic. False when the string is not a number.
bool LuaToNumber(std::string_view s, double* out);
// A Lua number as Redis 7.0 passes it to a command ("%.17g"). `buf` holds the text.
std::string_view LuaNumberText(double v, char (&buf)[32]);
// A Lua number as Redis turns it into an integer reply ((long long) cast; values out of range,
// infinities and NaN give INT64_MIN, as on x86-64).
int64_t LuaNumberToInteger(double v);

// SET's PX argument as Redis parses it: the absolute expiry in unix ms, or false with Redis's
// error ("ERR value is not an integer or out of range", "ERR invalid expire time in 'set'
// command") in *error.
bool ParseSetPx(std::string_view ms, int64_t now_ms, int64_t* at_ms, std::string_view* error);
// PEXPIRE's argument the same way (a time in the past is fine: it deletes the key).
bool ParsePExpire(std::string_view ms, int64_t now_ms, int64_t* at_ms, std::string_view* error);

}  // namespace deadbolt::server
