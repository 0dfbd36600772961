#pragma once
// What the Redisson scripts (script_redisson.cc, script_redisson_queue.cc) share: the command
// names they call, Lua's number and concatenation rules, and the latch helpers. Owned by no
// thread: constants and pure helpers, used on the shard's reactor that runs a script.

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "server/base/error_strings.h"
#include "server/scripts/script_run.h"

namespace deadbolt::server::redisson {

using protocol::ReplyBuilder;
using Type = CallReply::Type;

constexpr int kLine = 1;               // every Redisson script is one line
constexpr double kMaxReadHolds = 1e6;  // see ForEachReadHold

constexpr std::string_view kGet = "get";
constexpr std::string_view kSet = "set";
constexpr std::string_view kDel = "del";
constexpr std::string_view kExists = "exists";
constexpr std::string_view kIncr = "incr";
constexpr std::string_view kDecr = "decr";
constexpr std::string_view kIncrBy = "incrby";
constexpr std::string_view kDecrBy = "decrby";
constexpr std::string_view kPExpire = "pexpire";
constexpr std::string_view kPttl = "pttl";
constexpr std::string_view kHGet = "hget";
constexpr std::string_view kHSet = "hset";
constexpr std::string_view kHDel = "hdel";
constexpr std::string_view kHLen = "hlen";
constexpr std::string_view kHKeys = "hkeys";
constexpr std::string_view kHExists = "hexists";
constexpr std::string_view kHIncrBy = "hincrby";
constexpr std::string_view kPx = "px";
constexpr std::string_view kLIndex = "lindex";
constexpr std::string_view kLPop = "lpop";
constexpr std::string_view kRPush = "rpush";
constexpr std::string_view kLRange = "lrange";
constexpr std::string_view kLRem = "lrem";
constexpr std::string_view kZScore = "zscore";
constexpr std::string_view kZRem = "zrem";
constexpr std::string_view kZAdd = "zadd";
constexpr std::string_view kZIncrBy = "zincrby";
constexpr std::string_view kZRange = "zrange";
constexpr std::string_view kZRangeByScore = "zrangebyscore";
constexpr std::string_view kLimit = "limit";
constexpr std::string_view kWithScores = "WITHSCORES";
constexpr std::string_view kOkReply = "OK";
constexpr std::string_view kZCount = "zcount";
constexpr std::string_view kPlusInf = "+inf";

// Lua 5.1's unpack() fails beyond this many results (LUAI_MAXCSTACK 8000, less its argument).
constexpr size_t kMaxUnpack = 7999;
constexpr std::string_view kMode = "mode";
constexpr std::string_view kReadMode = "read";
constexpr std::string_view kWriteMode = "write";
constexpr std::string_view kZero = "0";
constexpr std::string_view kOne = "1";
constexpr std::string_view kMinusOne = "-1";

// A Lua number passed to redis.call(), as text ("%.17g").
struct NumText {
  explicit NumText(double v) : view(LuaNumberText(v, buf)) {}
  char buf[32];
  std::string_view view;
};

// A Lua number in a concatenation ("%.14g").
inline std::string ConcatNumber(double v) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof(buf), "%.14g", v);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

inline bool Fail(ScriptRun& r, std::string_view lua_message) {
  return r.Fail(errors::ScriptLuaError(kLine, lua_message), kLine);
}

// `KEYS[i] .. suffix`: KEYS[i] nil fails as Lua does.
inline bool ConcatKey(ScriptRun& r, LuaArg key, std::string_view suffix, std::string* out) {
  if (!key) return Fail(r, "attempt to concatenate field '?' (a nil value)");
  out->assign(*key);
  out->append(suffix);
  return true;
}

// tonumber(reply): a bulk string that reads as a number, or an integer.
inline std::optional<double> ToNumber(const CallReply& v) {
  double d;
  if (v.type == Type::kInteger) return static_cast<double>(v.integer);
  if (v.type == Type::kString && LuaToNumber(v.str, &d)) return d;
  return std::nullopt;
}
inline std::optional<double> ToNumber(LuaArg a) {
  double d;
  if (a && LuaToNumber(*a, &d)) return d;
  return std::nullopt;
}

// `local val = redis.call('get', latch); if val ~= false then return tonumber(val); end;`
// True when the script has ended here (replied or failed).
inline bool ReplyLatch(ScriptRun& r, LuaArg latch, ReplyBuilder& rb) {
  CallReply v;
  if (!r.Call(kLine, {&kGet, latch}, &v)) return true;
  if (!v.truthy()) return false;
  const std::optional<double> n = ToNumber(v);
  if (n) {
    rb.Integer(LuaNumberToInteger(*n));
  } else {
    rb.Null();
  }
  return true;
}

// `redis.call('set', latch, value, 'px', ms)`.
inline bool SetLatch(ScriptRun& r, LuaArg latch, const std::string_view* value, LuaArg ms) {
  return r.Call(kLine, {&kSet, latch, value, &kPx, ms});
}

inline bool IsString(const CallReply& v, std::string_view s) {
  return v.type == Type::kString && v.str == s;
}

inline const char* LuaType(bool is_nil) { return is_nil ? "nil" : "number"; }

}  // namespace deadbolt::server::redisson
