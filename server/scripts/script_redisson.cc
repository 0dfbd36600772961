// Redisson's scripts beyond RLock (which script_catalog.cc has): RReadWriteLock, RSemaphore,
// RCountDownLatch, RSpinLock, RFencedLock and RFairLock, as the sources of the 3.3x line send
// them (github.com/redisson/redisson at 0482efe14713f6ef660cccbd66118154d72f1425; the texts, the
// Java string pieces joined, are test data in tests/e2e/redisson_texts.py). Every script is one
// line, so every error is "on @user_script:1.".
//
// Each function follows its script statement by statement through ScriptRun::Call, with Lua's
// rules where the script relies on them: a missing reply is false, tonumber() of a non-number is
// nil, string arithmetic coerces, numbers are passed to commands as "%.17g" and concatenated as
// "%.14g", a Lua number returned is an integer reply (truncated), a table an array.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/scripts/script_families.h"
#include "server/scripts/script_run.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;
using Type = CallReply::Type;

constexpr int kLine = 1;  // every Redisson script is one line
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
constexpr std::string_view kRead = "read";
constexpr std::string_view kWrite = "write";
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
std::string ConcatNumber(double v) {
  char buf[32];
  const int n = std::snprintf(buf, sizeof(buf), "%.14g", v);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

bool Fail(ScriptRun& r, std::string_view lua_message) {
  return r.Fail(errors::ScriptLuaError(kLine, lua_message), kLine);
}

// `KEYS[i] .. suffix`: KEYS[i] nil fails as Lua does.
bool ConcatKey(ScriptRun& r, LuaArg key, std::string_view suffix, std::string* out) {
  if (!key) return Fail(r, "attempt to concatenate field '?' (a nil value)");
  out->assign(*key);
  out->append(suffix);
  return true;
}

// tonumber(reply): a bulk string that reads as a number, or an integer.
std::optional<double> ToNumber(const CallReply& v) {
  double d;
  if (v.type == Type::kInteger) return static_cast<double>(v.integer);
  if (v.type == Type::kString && LuaToNumber(v.str, &d)) return d;
  return std::nullopt;
}
std::optional<double> ToNumber(LuaArg a) {
  double d;
  if (a && LuaToNumber(*a, &d)) return d;
  return std::nullopt;
}

// `local val = redis.call('get', latch); if val ~= false then return tonumber(val); end;`
// True when the script has ended here (replied or failed).
bool ReplyLatch(ScriptRun& r, LuaArg latch, ReplyBuilder& rb) {
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
bool SetLatch(ScriptRun& r, LuaArg latch, const std::string_view* value, LuaArg ms) {
  return r.Call(kLine, {&kSet, latch, value, &kPx, ms});
}

bool IsString(const CallReply& v, std::string_view s) {
  return v.type == Type::kString && v.str == s;
}

// ------------------------------------------------------------------------------------------
// RReadWriteLock: a hash with field "mode" ("read" / "write") and one hold count per holder
// ("<client id>:<thread id>", the writer's with ":write"). Each read hold also has a key
// "{lock}:<holder>:rwlock_timeout:<n>" whose TTL is that hold's lease.
// ------------------------------------------------------------------------------------------

// Read acquire. KEYS: lock, timeout prefix; ARGV: lease, holder, holder:write.
void ReadAcquire(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), prefix = r.key(2), lease = r.arg(1), holder = r.arg(2);
  CallReply mode;
  if (!r.Call(kLine, {&kHGet, lock, &kMode}, &mode)) return;
  std::string key;
  if (!mode.truthy()) {
    if (!r.Call(kLine, {&kHSet, lock, &kMode, &kRead})) return;
    if (!r.Call(kLine, {&kHSet, lock, holder, &kOne})) return;
    if (!ConcatKey(r, prefix, ":1", &key)) return;
    const std::string_view k = key;
    if (!r.Call(kLine, {&kSet, &k, &kOne})) return;
    if (!ConcatKey(r, prefix, ":1", &key)) return;
    if (!r.Call(kLine, {&kPExpire, &k, lease})) return;
    if (!r.Call(kLine, {&kPExpire, lock, lease})) return;
    rb.Null();
    return;
  }
  bool take = IsString(mode, kRead);
  if (!take && IsString(mode, kWrite)) {
    CallReply has;
    if (!r.Call(kLine, {&kHExists, lock, r.arg(3)}, &has)) return;
    take = has.integer == 1;
  }
  CallReply v;
  if (!take) {
    if (!r.Call(kLine, {&kPttl, lock}, &v)) return;
    rb.Integer(v.integer);
    return;
  }
  if (!r.Call(kLine, {&kHIncrBy, lock, holder, &kOne}, &v)) return;
  if (!ConcatKey(r, prefix, ":" + ConcatNumber(static_cast<double>(v.integer)), &key)) return;
  const std::string_view k = key;
  if (!r.Call(kLine, {&kSet, &k, &kOne})) return;
  if (!r.Call(kLine, {&kPExpire, &k, lease})) return;
  if (!r.Call(kLine, {&kPttl, lock}, &v)) return;
  const double remain = static_cast<double>(v.integer);
  const std::optional<double> lease_n = ToNumber(lease);
  if (!lease_n) {
    Fail(r, std::string("bad argument #2 to 'max' (number expected, got ") +
                (lease ? "string" : "nil") + ")");
    return;
  }
  NumText max(std::max(remain, *lease_n));
  if (!r.Call(kLine, {&kPExpire, lock, &max.view})) return;
  rb.Null();
}

// For each field of the hash holding a number n: fn(field, i) for i = n, n-1, ..., >= 1 (Lua's
// `for i=counter, 1, -1`). False when a call failed.
template <typename F>
bool ForEachReadHold(ScriptRun& r, LuaArg lock, F&& fn) {
  CallReply keys;
  if (!r.Call(kLine, {&kHKeys, lock}, &keys)) return false;
  std::vector<std::string> fields;
  for (const CallReply& k : keys.elements) fields.emplace_back(k.str);
  for (const std::string& field : fields) {
    const std::string_view f = field;
    CallReply v;
    if (!r.Call(kLine, {&kHGet, lock, &f}, &v)) return false;
    const std::optional<double> counter = ToNumber(v);
    if (!counter) continue;
    // Redisson's hold counts are small. A count this large (written by hand) would keep Redis
    // in the script for hours, or forever past 2^53; deadbolt refuses instead of stalling its
    // reactor: the one place its reply differs from Redis's.
    if (*counter > kMaxReadHolds) {
      return r.Fail("ERR deadbolt: a read lock hold count above 1000000 (field '" + field +
                        "'): the script would not finish",
                    kLine);
    }
    for (double i = *counter; i >= 1; i -= 1) {
      if (!fn(field, i)) return false;
    }
  }
  return true;
}

// Read release. KEYS: lock, channel, timeout prefix, key prefix, latch; ARGV: message, holder,
// publish command, latch ms.
void ReadRelease(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), channel = r.key(2), latch = r.key(5);
  LuaArg message = r.arg(1), holder = r.arg(2), publish = r.arg(3), latch_ms = r.arg(4);
  if (ReplyLatch(r, latch, rb)) return;
  CallReply mode, v;
  if (!r.Call(kLine, {&kHGet, lock, &kMode}, &mode)) return;
  if (!mode.truthy()) {
    if (!r.Call(kLine, {publish, channel, message})) return;
    if (!SetLatch(r, latch, &kOne, latch_ms)) return;
    rb.Integer(1);
    return;
  }
  if (!r.Call(kLine, {&kHExists, lock, holder}, &v)) return;
  if (v.integer == 0) {
    rb.Null();
    return;
  }
  if (!r.Call(kLine, {&kHIncrBy, lock, holder, &kMinusOne}, &v)) return;
  const int64_t counter = v.integer;
  if (counter == 0 && !r.Call(kLine, {&kHDel, lock, holder})) return;
  std::string key;
  if (!ConcatKey(r, r.key(3), ":" + ConcatNumber(static_cast<double>(counter) + 1), &key)) return;
  const std::string_view k = key;
  if (!r.Call(kLine, {&kDel, &k})) return;
  if (!r.Call(kLine, {&kHLen, lock}, &v)) return;
  if (v.integer > 1) {
    double max_remain = -3;
    LuaArg key_prefix = r.key(4);
    const bool ok = ForEachReadHold(r, lock, [&](const std::string& field, double i) {
      std::string timeout_key;
      if (!ConcatKey(r, key_prefix, ":" + field + ":rwlock_timeout:" + ConcatNumber(i),
                     &timeout_key)) {
        return false;
      }
      const std::string_view tk = timeout_key;
      CallReply ttl;
      if (!r.Call(kLine, {&kPttl, &tk}, &ttl)) return false;
      max_remain = std::max(static_cast<double>(ttl.integer), max_remain);
      return true;
    });
    if (!ok) return;
    if (max_remain > 0) {
      NumText ms(max_remain);
      if (!r.Call(kLine, {&kPExpire, lock, &ms.view})) return;
      if (!SetLatch(r, latch, &kZero, latch_ms)) return;
      rb.Integer(0);
      return;
    }
    if (IsString(mode, kWrite)) {
      if (!SetLatch(r, latch, &kZero, latch_ms)) return;
      rb.Integer(0);
      return;
    }
  }
  if (!r.Call(kLine, {&kDel, lock})) return;
  if (!r.Call(kLine, {publish, channel, message})) return;
  if (!SetLatch(r, latch, &kOne, latch_ms)) return;
  rb.Integer(1);
}

// Read renew (watchdog). KEYS: lock, key prefix; ARGV: lease, holder.
void ReadRenew(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), lease = r.arg(1);
  CallReply v;
  if (!r.Call(kLine, {&kHGet, lock, r.arg(2)}, &v)) return;
  if (!v.truthy()) {
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kPExpire, lock, lease})) return;
  if (!r.Call(kLine, {&kHLen, lock}, &v)) return;
  if (v.integer > 1) {
    LuaArg key_prefix = r.key(2);
    const bool ok = ForEachReadHold(r, lock, [&](const std::string& field, double i) {
      std::string timeout_key;
      if (!ConcatKey(r, key_prefix, ":" + field + ":rwlock_timeout:" + ConcatNumber(i),
                     &timeout_key)) {
        return false;
      }
      const std::string_view tk = timeout_key;
      return r.Call(kLine, {&kPExpire, &tk, lease});
    });
    if (!ok) return;
  }
  rb.Integer(1);
}

// Force unlock of the read (kMode "read") or write lock. KEYS: lock, channel; ARGV: message,
// publish command.
template <bool kWriteMode>
void RwForceUnlock(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1);
  CallReply mode;
  if (!r.Call(kLine, {&kHGet, lock, &kMode}, &mode)) return;
  if (!IsString(mode, kWriteMode ? kWrite : kRead)) {
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kDel, lock})) return;
  if (!r.Call(kLine, {r.arg(2), r.key(2), r.arg(1)})) return;
  rb.Integer(1);
}

// Read lock's isLocked. KEYS: lock.
void ReadIsLocked(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1);
  CallReply mode, len;
  if (!r.Call(kLine, {&kHGet, lock, &kMode}, &mode)) return;
  bool locked = IsString(mode, kRead);
  if (!locked && IsString(mode, kWrite)) {
    if (!r.Call(kLine, {&kHLen, lock}, &len)) return;
    locked = len.integer > 2;
  }
  rb.Integer(locked ? 1 : 0);
}

// Write acquire. KEYS: lock; ARGV: lease, holder:write. Re-entry adds the lease to the PTTL.
void WriteAcquire(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), lease = r.arg(1), holder = r.arg(2);
  CallReply mode, v;
  if (!r.Call(kLine, {&kHGet, lock, &kMode}, &mode)) return;
  if (!mode.truthy()) {
    if (!r.Call(kLine, {&kHSet, lock, &kMode, &kWrite})) return;
    if (!r.Call(kLine, {&kHSet, lock, holder, &kOne})) return;
    if (!r.Call(kLine, {&kPExpire, lock, lease})) return;
    rb.Null();
    return;
  }
  if (IsString(mode, kWrite)) {
    if (!r.Call(kLine, {&kHExists, lock, holder}, &v)) return;
    if (v.integer == 1) {
      if (!r.Call(kLine, {&kHIncrBy, lock, holder, &kOne})) return;
      if (!r.Call(kLine, {&kPttl, lock}, &v)) return;
      const std::optional<double> add = ToNumber(lease);
      if (!add) {
        r.Fail(errors::ScriptArithmeticError(kLine, lease ? "string" : "nil"), kLine);
        return;
      }
      NumText ms(static_cast<double>(v.integer) + *add);
      if (!r.Call(kLine, {&kPExpire, lock, &ms.view})) return;
      rb.Null();
      return;
    }
  }
  if (!r.Call(kLine, {&kPttl, lock}, &v)) return;
  rb.Integer(v.integer);
}

// Write release. KEYS: lock, channel, latch; ARGV: message, lease, holder:write, publish
// command, latch ms. The last writer's release leaves the lock to its readers (mode "read").
void WriteRelease(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), channel = r.key(2), latch = r.key(3);
  LuaArg message = r.arg(1), holder = r.arg(3), publish = r.arg(4), latch_ms = r.arg(5);
  if (ReplyLatch(r, latch, rb)) return;
  CallReply mode, v;
  if (!r.Call(kLine, {&kHGet, lock, &kMode}, &mode)) return;
  if (!mode.truthy()) {
    if (!r.Call(kLine, {publish, channel, message})) return;
    if (!SetLatch(r, latch, &kOne, latch_ms)) return;
    rb.Integer(1);
    return;
  }
  if (!IsString(mode, kWrite)) {
    rb.Null();
    return;
  }
  if (!r.Call(kLine, {&kHExists, lock, holder}, &v)) return;
  if (v.integer == 0) {
    rb.Null();
    return;
  }
  if (!r.Call(kLine, {&kHIncrBy, lock, holder, &kMinusOne}, &v)) return;
  if (v.integer > 0) {
    if (!r.Call(kLine, {&kPExpire, lock, r.arg(2)})) return;
    if (!SetLatch(r, latch, &kZero, latch_ms)) return;
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kHDel, lock, holder})) return;
  if (!r.Call(kLine, {&kHLen, lock}, &v)) return;
  if (v.integer == 1) {
    if (!r.Call(kLine, {&kDel, lock})) return;
    if (!r.Call(kLine, {publish, channel, message})) return;
  } else {
    if (!r.Call(kLine, {&kHSet, lock, &kMode, &kRead})) return;
  }
  if (!SetLatch(r, latch, &kOne, latch_ms)) return;
  rb.Integer(1);
}

// ------------------------------------------------------------------------------------------
// RSemaphore: a string key holding the permits left; releases publish the new count on
// "redisson_sc:{name}".
// ------------------------------------------------------------------------------------------

const char* LuaType(bool is_nil) { return is_nil ? "nil" : "number"; }

// tryAcquire. KEYS: semaphore; ARGV: permits.
void SemaphoreTryAcquire(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg sem = r.key(1), permits = r.arg(1);
  CallReply value;
  if (!r.Call(kLine, {&kGet, sem}, &value)) return;
  if (!value.truthy()) {
    rb.Integer(0);
    return;
  }
  // `tonumber(value) >= tonumber(ARGV[1])` is Lua's `b <= a`: the error names b first.
  const std::optional<double> a = ToNumber(value), b = ToNumber(permits);
  if (!a || !b) {
    if (!a && !b) {
      Fail(r, "attempt to compare two nil values");
    } else {
      Fail(r, std::string("attempt to compare ") + LuaType(!b) + " with " + LuaType(!a));
    }
    return;
  }
  if (!(*a >= *b)) {
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kDecrBy, sem, permits})) return;
  rb.Integer(1);
}

// release. KEYS: semaphore, channel; ARGV: permits, publish command. Replies nil.
void SemaphoreRelease(ScriptRun& r, ReplyBuilder& rb) {
  CallReply value;
  if (!r.Call(kLine, {&kIncrBy, r.key(1), r.arg(1)}, &value)) return;
  NumText count(static_cast<double>(value.integer));
  if (!r.Call(kLine, {r.arg(2), r.key(2), &count.view})) return;
  rb.Null();
}

// drainPermits. KEYS: semaphore. Replies the permits there were (as the string stored).
void SemaphoreDrain(ScriptRun& r, ReplyBuilder& rb) {
  CallReply value;
  if (!r.Call(kLine, {&kGet, r.key(1)}, &value)) return;
  if (!value.truthy()) {
    rb.Integer(0);
    return;
  }
  const std::string kept(value.str);
  if (!r.Call(kLine, {&kSet, r.key(1), &kZero})) return;
  rb.Bulk(kept);
}

// trySetPermits. KEYS: semaphore, channel; ARGV: permits, publish command.
void SemaphoreTrySetPermits(ScriptRun& r, ReplyBuilder& rb) {
  CallReply value;
  if (!r.Call(kLine, {&kGet, r.key(1)}, &value)) return;
  if (value.truthy()) {
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kSet, r.key(1), r.arg(1)})) return;
  if (!r.Call(kLine, {r.arg(2), r.key(2), r.arg(1)})) return;
  rb.Integer(1);
}

// addPermits. KEYS: semaphore, channel; ARGV: permits, publish command. Replies nil.
void SemaphoreAddPermits(ScriptRun& r, ReplyBuilder& rb) {
  CallReply value;
  if (!r.Call(kLine, {&kGet, r.key(1)}, &value)) return;
  double have = 0;
  if (value.truthy()) {
    const std::optional<double> n = ToNumber(value);
    if (!n) {
      Fail(r, "attempt to perform arithmetic on local 'value' (a string value)");
      return;
    }
    have = *n;
  }
  const std::optional<double> add = ToNumber(r.arg(1));
  if (!add) {
    r.Fail(errors::ScriptArithmeticError(kLine, r.arg(1) ? "string" : "nil"), kLine);
    return;
  }
  NumText sum(have + *add);
  if (!r.Call(kLine, {&kSet, r.key(1), &sum.view})) return;
  if (!r.Call(kLine, {r.arg(2), r.key(2), &sum.view})) return;
  rb.Null();
}

// ------------------------------------------------------------------------------------------
// RCountDownLatch: a string key holding the count; "redisson_countdownlatch__channel__{name}".
// ------------------------------------------------------------------------------------------

// countDown. KEYS: latch, channel; ARGV: message "0", publish command. Replies nil.
void LatchCountDown(ScriptRun& r, ReplyBuilder& rb) {
  CallReply v;
  if (!r.Call(kLine, {&kDecr, r.key(1)}, &v)) return;
  if (v.integer <= 0 && !r.Call(kLine, {&kDel, r.key(1)})) return;
  if (v.integer == 0 && !r.Call(kLine, {r.arg(2), r.key(2), r.arg(1)})) return;
  rb.Null();
}

// trySetCount. KEYS: latch, channel; ARGV: message "1", count, publish command.
void LatchTrySetCount(ScriptRun& r, ReplyBuilder& rb) {
  CallReply v;
  if (!r.Call(kLine, {&kExists, r.key(1)}, &v)) return;
  if (v.integer != 0) {
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kSet, r.key(1), r.arg(2)})) return;
  if (!r.Call(kLine, {r.arg(3), r.key(2), r.arg(1)})) return;
  rb.Integer(1);
}

// delete: DEL the key (and tell waiters) — also RCountDownLatch's. KEYS: key, channel; ARGV:
// message, publish command. kPublish false: RSpinLock's forceUnlock, DEL only.
template <bool kPublish>
void DeleteAndTell(ScriptRun& r, ReplyBuilder& rb) {
  CallReply v;
  if (!r.Call(kLine, {&kDel, r.key(1)}, &v)) return;
  if (v.integer != 1) {
    rb.Integer(0);
    return;
  }
  if (kPublish && !r.Call(kLine, {r.arg(2), r.key(2), r.arg(1)})) return;
  rb.Integer(1);
}

// ------------------------------------------------------------------------------------------
// RSpinLock (RLock's hash, no pub/sub) and RFencedLock (RLock plus a token counter).
// ------------------------------------------------------------------------------------------

// RSpinLock release. KEYS: lock, latch; ARGV: lease, holder, latch ms.
void SpinRelease(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), latch = r.key(2), holder = r.arg(2), latch_ms = r.arg(3);
  if (ReplyLatch(r, latch, rb)) return;
  CallReply v;
  if (!r.Call(kLine, {&kHExists, lock, holder}, &v)) return;
  if (v.integer == 0) {
    rb.Null();
    return;
  }
  if (!r.Call(kLine, {&kHIncrBy, lock, holder, &kMinusOne}, &v)) return;
  if (v.integer > 0) {
    if (!r.Call(kLine, {&kPExpire, lock, r.arg(1)})) return;
    if (!SetLatch(r, latch, &kZero, latch_ms)) return;
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kDel, lock})) return;
  if (!SetLatch(r, latch, &kOne, latch_ms)) return;
  rb.Integer(1);
}

// RFencedLock acquire. KEYS: lock, token counter; ARGV: lease, holder. Taken (free or re-entry):
// INCR the token, count + 1, PEXPIRE. kWithToken: reply {-1, token} / {pttl, -1}; else nil /
// the PTTL.
template <bool kWithToken>
void FencedAcquire(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), holder = r.arg(2);
  CallReply v;
  if (!r.Call(kLine, {&kExists, lock}, &v)) return;
  bool take = v.integer == 0;
  if (!take) {
    if (!r.Call(kLine, {&kHExists, lock, holder}, &v)) return;
    take = v.integer == 1;
  }
  if (!take) {
    if (!r.Call(kLine, {&kPttl, lock}, &v)) return;
    if (kWithToken) {
      rb.ArrayHeader(2);
      rb.Integer(v.integer);
      rb.Integer(-1);
    } else {
      rb.Integer(v.integer);
    }
    return;
  }
  CallReply token;
  if (!r.Call(kLine, {&kIncr, r.key(2)}, &token)) return;
  if (!r.Call(kLine, {&kHIncrBy, lock, holder, &kOne})) return;
  if (!r.Call(kLine, {&kPExpire, lock, r.arg(1)})) return;
  if (kWithToken) {
    rb.ArrayHeader(2);
    rb.Integer(-1);
    rb.Integer(token.integer);
  } else {
    rb.Null();
  }
}


// ------------------------------------------------------------------------------------------
// RFairLock: RLock's hash, plus a queue of waiters (list "redisson_lock_queue:{lock}") and
// each waiter's timeout (sorted set "redisson_lock_timeout:{lock}", unix ms by the clients'
// clocks, passed in ARGV). A waiter whose timeout has passed is dropped from the front of the
// queue by whoever runs a script next; the first waiter is told on "<channel>:<its name>"
// when the lock is released.
// ------------------------------------------------------------------------------------------

// Lua's `a <= b` of two numbers that may be nil: false after recording the error.
bool CompareLe(ScriptRun& r, const std::optional<double>& a, const std::optional<double>& b,
               bool* le) {
  if (!a && !b) return Fail(r, "attempt to compare two nil values");
  if (!a || !b) {
    return Fail(r, std::string("attempt to compare ") + LuaType(!a) + " with " + LuaType(!b));
  }
  *le = *a <= *b;
  return true;
}

bool ArithmeticOnNil(ScriptRun& r) { return Fail(r, "attempt to perform arithmetic on a nil value"); }

// `while true do` drop the first waiter if its timeout <= tonumber(now) `end`.
bool DropTimedOutWaiters(ScriptRun& r, LuaArg queue, LuaArg timeouts, LuaArg now) {
  const std::optional<double> now_n = ToNumber(now);
  for (;;) {
    CallReply first;
    if (!r.Call(kLine, {&kLIndex, queue, &kZero}, &first)) return false;
    if (!first.truthy()) return true;
    const std::string id(first.str);
    const std::string_view idv = id;
    CallReply score;
    if (!r.Call(kLine, {&kZScore, timeouts, &idv}, &score)) return false;
    bool expired;
    if (!CompareLe(r, ToNumber(score), now_n, &expired)) return false;
    if (!expired) return true;
    if (!r.Call(kLine, {&kZRem, timeouts, &idv})) return false;
    if (!r.Call(kLine, {&kLPop, queue})) return false;
  }
}

// The lock is free and nobody is ahead of `holder`: take it, leave the queue, and move every
// waiter's timeout `wait` ms earlier. *taken false when it cannot be taken.
bool FairTakeIfFirst(ScriptRun& r, LuaArg wait, bool* taken) {
  LuaArg lock = r.key(1), queue = r.key(2), timeouts = r.key(3), holder = r.arg(2);
  CallReply v;
  *taken = false;
  if (!r.Call(kLine, {&kExists, lock}, &v)) return false;
  if (v.integer != 0) return true;
  if (!r.Call(kLine, {&kExists, queue}, &v)) return false;
  if (v.integer != 0) {
    if (!r.Call(kLine, {&kLIndex, queue, &kZero}, &v)) return false;
    if (!(v.type == Type::kString && holder && v.str == *holder)) return true;
  }
  if (!r.Call(kLine, {&kLPop, queue})) return false;
  if (!r.Call(kLine, {&kZRem, timeouts, holder})) return false;
  CallReply keys;
  if (!r.Call(kLine, {&kZRange, timeouts, &kZero, &kMinusOne}, &keys)) return false;
  std::vector<std::string> members;
  for (const CallReply& k : keys.elements) members.emplace_back(k.str);
  for (const std::string& m : members) {
    const std::optional<double> w = ToNumber(wait);
    if (!w) return ArithmeticOnNil(r);
    NumText delta(-*w);
    const std::string_view mv = m;
    if (!r.Call(kLine, {&kZIncrBy, timeouts, &delta.view, &mv})) return false;
  }
  if (!r.Call(kLine, {&kHSet, lock, holder, &kOne})) return false;
  if (!r.Call(kLine, {&kPExpire, lock, r.arg(1)})) return false;
  *taken = true;
  return true;
}

// Re-entry: the holder's count + 1 and a new lease. *held false when it is not the holder.
bool FairReenter(ScriptRun& r, bool* held) {
  LuaArg lock = r.key(1), holder = r.arg(2);
  CallReply v;
  if (!r.Call(kLine, {&kHExists, lock, holder}, &v)) return false;
  *held = v.integer == 1;
  if (!*held) return true;
  if (!r.Call(kLine, {&kHIncrBy, lock, holder, &kOne})) return false;
  return r.Call(kLine, {&kPExpire, lock, r.arg(1)});
}

// tryLock() without waiting. KEYS: lock, queue, timeouts; ARGV: lease, holder, now, wait.
void FairTryAcquire(ScriptRun& r, ReplyBuilder& rb) {
  if (!DropTimedOutWaiters(r, r.key(2), r.key(3), r.arg(3))) return;
  bool done;
  if (!FairTakeIfFirst(r, r.arg(4), &done)) return;
  if (!done && !FairReenter(r, &done)) return;
  if (done) {
    rb.Null();
  } else {
    rb.Integer(1);
  }
}

// lock() / tryLock(wait). KEYS: lock, queue, timeouts; ARGV: lease, holder, wait, now.
void FairAcquire(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), queue = r.key(2), timeouts = r.key(3), holder = r.arg(2);
  if (!DropTimedOutWaiters(r, queue, timeouts, r.arg(4))) return;
  bool done;
  if (!FairTakeIfFirst(r, r.arg(3), &done)) return;
  if (!done && !FairReenter(r, &done)) return;
  if (done) {
    rb.Null();
    return;
  }
  const std::optional<double> wait = ToNumber(r.arg(3)), now = ToNumber(r.arg(4));
  CallReply v;
  if (!r.Call(kLine, {&kZScore, timeouts, holder}, &v)) return;
  if (v.truthy()) {  // queued already: about the time until its turn
    const std::optional<double> timeout = ToNumber(v);
    if (!timeout || !wait || !now) {
      ArithmeticOnNil(r);
      return;
    }
    rb.Integer(LuaNumberToInteger(*timeout - *wait - *now));
    return;
  }
  if (!r.Call(kLine, {&kLIndex, queue, &kMinusOne}, &v)) return;
  double ttl;
  if (v.truthy() && !(holder && v.str == *holder)) {
    const std::string last(v.str);
    const std::string_view lv = last;
    if (!r.Call(kLine, {&kZScore, timeouts, &lv}, &v)) return;
    const std::optional<double> last_timeout = ToNumber(v);
    if (!last_timeout || !now) {
      ArithmeticOnNil(r);
      return;
    }
    ttl = *last_timeout - *now;
  } else {
    if (!r.Call(kLine, {&kPttl, lock}, &v)) return;
    ttl = static_cast<double>(v.integer);
  }
  if (!wait || !now) {
    ArithmeticOnNil(r);
    return;
  }
  NumText timeout(ttl + *wait + *now);
  if (!r.Call(kLine, {&kZAdd, timeouts, &timeout.view, holder}, &v)) return;
  if (v.integer == 1 && !r.Call(kLine, {&kRPush, queue, holder})) return;
  rb.Integer(LuaNumberToInteger(ttl));
}

// A waiter gives up. KEYS: queue, timeouts; ARGV: holder, wait. The waiters behind it move
// `wait` ms earlier; it leaves the queue and the timeouts. Replies nil.
void FairAcquireFailed(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg queue = r.key(1), timeouts = r.key(2), holder = r.arg(1);
  CallReply list;
  if (!r.Call(kLine, {&kLRange, queue, &kZero, &kMinusOne}, &list)) return;
  std::vector<std::string> ids;
  for (const CallReply& e : list.elements) ids.emplace_back(e.str);
  size_t i = 0;  // 0-based: queue[i + 1] in Lua
  while (i < ids.size() && !(holder && ids[i] == *holder)) i++;
  for (i++; i < ids.size(); i++) {
    const std::optional<double> w = ToNumber(r.arg(2));
    if (!w) {
      ArithmeticOnNil(r);
      return;
    }
    NumText delta(-*w);
    const std::string_view id = ids[i];
    if (!r.Call(kLine, {&kZIncrBy, timeouts, &delta.view, &id})) return;
  }
  if (!r.Call(kLine, {&kZRem, timeouts, holder})) return;
  if (!r.Call(kLine, {&kLRem, queue, &kZero, holder})) return;
  rb.Null();
}

// Tells the first waiter, if any: `redis.call(publish, channel .. ':' .. next, message)`.
bool TellNextWaiter(ScriptRun& r, LuaArg publish, LuaArg message) {
  CallReply next;
  if (!r.Call(kLine, {&kLIndex, r.key(2), &kZero}, &next)) return false;
  if (!next.truthy()) return true;
  std::string channel;
  if (!ConcatKey(r, r.key(4), ":" + std::string(next.str), &channel)) return false;
  const std::string_view cv = channel;
  return r.Call(kLine, {publish, &cv, message});
}

// unlock. KEYS: lock, queue, timeouts, channel, latch; ARGV: message, lease, holder, now,
// publish command, latch ms.
void FairRelease(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1), latch = r.key(5), holder = r.arg(3), publish = r.arg(5);
  LuaArg message = r.arg(1), latch_ms = r.arg(6);
  if (ReplyLatch(r, latch, rb)) return;
  if (!DropTimedOutWaiters(r, r.key(2), r.key(3), r.arg(4))) return;
  CallReply v;
  if (!r.Call(kLine, {&kExists, lock}, &v)) return;
  if (v.integer == 0) {
    if (!TellNextWaiter(r, publish, message)) return;
    if (!SetLatch(r, latch, &kOne, latch_ms)) return;
    rb.Integer(1);
    return;
  }
  if (!r.Call(kLine, {&kHExists, lock, holder}, &v)) return;
  if (v.integer == 0) {
    rb.Null();
    return;
  }
  if (!r.Call(kLine, {&kHIncrBy, lock, holder, &kMinusOne}, &v)) return;
  if (v.integer > 0) {
    if (!r.Call(kLine, {&kPExpire, lock, r.arg(2)})) return;
    if (!SetLatch(r, latch, &kZero, latch_ms)) return;
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kDel, lock})) return;
  if (!SetLatch(r, latch, &kOne, latch_ms)) return;
  if (!TellNextWaiter(r, publish, message)) return;
  rb.Integer(1);
}

// forceUnlock. KEYS: lock, queue, timeouts, channel; ARGV: message, now, publish command.
void FairForceUnlock(ScriptRun& r, ReplyBuilder& rb) {
  if (!DropTimedOutWaiters(r, r.key(2), r.key(3), r.arg(2))) return;
  CallReply v;
  if (!r.Call(kLine, {&kDel, r.key(1)}, &v)) return;
  if (v.integer != 1) {
    rb.Integer(0);
    return;
  }
  if (!TellNextWaiter(r, r.arg(3), r.arg(1))) return;
  rb.Integer(1);
}


// ------------------------------------------------------------------------------------------
// RPermitExpirableSemaphore: the permits left (string `name`) and the permits out (sorted set
// "{name}:timeout" of permit id -> expiry, unix ms by the client's clock). Most scripts first
// take back the permits whose expiry has passed.
// ------------------------------------------------------------------------------------------

// expiredIds = ZRANGEBYSCORE timeouts 0 now LIMIT 0 limit; if any: ZREM them, INCRBY the
// permits by their number, and if that is > 0 publish it. *returned: the INCRBY's reply when
// there were any (availablePermits returns it).
bool TakeBackExpired(ScriptRun& r, LuaArg name, LuaArg timeouts, LuaArg now, LuaArg limit,
                     LuaArg publish, LuaArg channel, std::optional<int64_t>* returned = nullptr) {
  CallReply ids;
  if (!r.Call(kLine, {&kZRangeByScore, timeouts, &kZero, now, &kLimit, &kZero, limit}, &ids)) {
    return false;
  }
  if (ids.elements.empty()) return true;
  if (ids.elements.size() > kMaxUnpack) return Fail(r, "too many results to unpack");
  std::vector<std::string> members;
  for (const CallReply& e : ids.elements) members.emplace_back(e.str);
  const std::vector<std::string_view> views(members.begin(), members.end());
  std::vector<LuaArg> args = {&kZRem, timeouts};
  for (const std::string_view& v : views) args.push_back(&v);
  if (!r.Call(kLine, args)) return false;
  NumText count(static_cast<double>(members.size()));
  CallReply value;
  if (!r.Call(kLine, {&kIncrBy, name, &count.view}, &value)) return false;
  if (value.integer > 0) {
    NumText v(static_cast<double>(value.integer));
    if (!r.Call(kLine, {publish, channel, &v.view})) return false;
  }
  if (returned) *returned = value.integer;
  return true;
}

// tryAcquire. KEYS: name, timeouts, channel; ARGV: permits, expiry, now, never, publish, ids.
void PermitTryAcquire(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg name = r.key(1), timeouts = r.key(2), permits = r.arg(1);
  if (!TakeBackExpired(r, name, timeouts, r.arg(3), permits, r.arg(5), r.key(3))) return;
  CallReply value;
  if (!r.Call(kLine, {&kGet, name}, &value)) return;
  if (value.truthy()) {
    // `tonumber(value) >= tonumber(ARGV[1])` is Lua's `b <= a`.
    bool enough;
    if (!CompareLe(r, ToNumber(permits), ToNumber(value), &enough)) return;
    if (enough) {
      if (!r.Call(kLine, {&kDecrBy, name, permits})) return;
      for (size_t i = 6; i <= r.call().argv.size(); i++) {
        if (!r.Call(kLine, {&kZAdd, timeouts, r.arg(2), r.arg(i)})) return;
      }
      CallReply ttl;
      if (!r.Call(kLine, {&kPttl, name}, &ttl)) return;
      if (ttl.integer > 0) {
        NumText ms(static_cast<double>(ttl.integer));
        if (!r.Call(kLine, {&kPExpire, timeouts, &ms.view})) return;
      }
      rb.Bulk(kOkReply);
      return;
    }
  }
  CallReply v;
  if (!r.Call(kLine, {&kZRange, timeouts, &kZero, &kZero, &kWithScores}, &v)) return;
  if (v.elements.size() >= 2 && !(r.arg(4) && v.elements[1].str == *r.arg(4))) {
    rb.Bulk(":" + std::string(v.elements[1].str));
    return;
  }
  rb.Null();
}

// tryRelease of one permit. KEYS: name, channel, timeouts; ARGV: id, 1, now, publish.
void PermitTryRelease(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg timeouts = r.key(3), id = r.arg(1);
  CallReply expire, removed, value;
  if (!r.Call(kLine, {&kZScore, timeouts, id}, &expire)) return;
  const std::optional<double> expiry = ToNumber(expire);
  if (!r.Call(kLine, {&kZRem, timeouts, id}, &removed)) return;
  if (removed.integer != 1) {
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kIncrBy, r.key(1), r.arg(2)}, &value)) return;
  NumText v(static_cast<double>(value.integer));
  if (!r.Call(kLine, {r.arg(4), r.key(2), &v.view})) return;
  bool expired;
  if (!CompareLe(r, expiry, ToNumber(r.arg(3)), &expired)) return;
  rb.Integer(expired ? 0 : 1);
}

// tryRelease of several. KEYS: name, channel, timeouts; ARGV: count, now, publish, ids.
void PermitTryReleaseMany(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg name = r.key(1), channel = r.key(2), timeouts = r.key(3), publish = r.arg(3);
  if (!TakeBackExpired(r, name, timeouts, r.arg(2), &kMinusOne, publish, channel)) return;
  const size_t n = r.call().argv.size() >= 4 ? r.call().argv.size() - 3 : 0;
  if (n > kMaxUnpack) {
    Fail(r, "too many results to unpack");
    return;
  }
  std::vector<LuaArg> args = {&kZRem, timeouts};
  for (size_t i = 4; i <= r.call().argv.size(); i++) args.push_back(r.arg(i));
  CallReply removed;
  if (!r.Call(kLine, args, &removed)) return;
  if (removed.integer == 0) {
    rb.Integer(0);
    return;
  }
  NumText count(static_cast<double>(removed.integer));
  if (!r.Call(kLine, {&kIncrBy, name, &count.view})) return;
  if (!r.Call(kLine, {publish, channel, &count.view})) return;
  rb.Integer(removed.integer);
}

// availablePermits. KEYS: name, timeouts, channel; ARGV: now, publish.
void PermitAvailable(ScriptRun& r, ReplyBuilder& rb) {
  std::optional<int64_t> returned;
  if (!TakeBackExpired(r, r.key(1), r.key(2), r.arg(1), &kMinusOne, r.arg(2), r.key(3),
                       &returned)) {
    return;
  }
  if (returned) {
    rb.Integer(*returned);
    return;
  }
  CallReply value;
  if (!r.Call(kLine, {&kGet, r.key(1)}, &value)) return;
  if (value.truthy()) {
    rb.Bulk(value.str);
  } else {
    rb.Integer(0);
  }
}

// addPermits. KEYS: name, channel; ARGV: permits, publish. Replies nil.
void PermitAddPermits(ScriptRun& r, ReplyBuilder& rb) {
  CallReply value;
  if (!r.Call(kLine, {&kGet, r.key(1)}, &value)) return;
  const std::optional<double> have =
      value.truthy() ? ToNumber(value) : std::optional<double>(0);
  const std::optional<double> add = ToNumber(r.arg(1));
  if (!have || !add) {
    ArithmeticOnNil(r);
    return;
  }
  NumText sum(*have + *add);
  if (!r.Call(kLine, {&kSet, r.key(1), &sum.view})) return;
  if (*add > 0 && !r.Call(kLine, {r.arg(2), r.key(2), r.arg(1)})) return;
  rb.Null();
}

// updateLeaseTime. KEYS: name, timeouts, channel; ARGV: id, expiry, now, publish.
void PermitUpdateLease(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg timeouts = r.key(2), id = r.arg(1);
  if (!TakeBackExpired(r, r.key(1), timeouts, r.arg(3), &kMinusOne, r.arg(4), r.key(3))) return;
  CallReply v;
  if (!r.Call(kLine, {&kZScore, timeouts, id}, &v)) return;
  if (!v.truthy()) {
    rb.Integer(0);
    return;
  }
  if (!r.Call(kLine, {&kZAdd, timeouts, r.arg(2), id})) return;
  rb.Integer(1);
}


// acquiredPermits (kTotal false: the permits out) and getPermits (kTotal true: left + out).
// KEYS: name, timeouts, channel; ARGV: now, publish.
template <bool kTotal>
void PermitCount(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg name = r.key(1), timeouts = r.key(2);
  if (!TakeBackExpired(r, name, timeouts, r.arg(1), &kMinusOne, r.arg(2), r.key(3))) return;
  CallReply available;
  if (kTotal) {
    if (!r.Call(kLine, {&kGet, name}, &available)) return;
    if (!available.truthy()) {
      rb.Integer(0);
      return;
    }
  }
  CallReply acquired;
  if (!r.Call(kLine, {&kZCount, timeouts, &kZero, &kPlusInf}, &acquired)) return;
  if (!kTotal) {
    rb.Integer(acquired.integer);
    return;
  }
  const std::optional<double> left = ToNumber(available);
  if (!left) {
    ArithmeticOnNil(r);
    return;
  }
  rb.Integer(LuaNumberToInteger(*left + static_cast<double>(acquired.integer)));
}

// setPermits: the total (left + out) becomes ARGV[1]. KEYS: name, channel, timeouts; ARGV:
// permits, publish. Replies nil.
void PermitSetPermits(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg name = r.key(1), permits = r.arg(1);
  CallReply available;
  if (!r.Call(kLine, {&kGet, name}, &available)) return;
  if (!available.truthy()) {
    if (!r.Call(kLine, {&kSet, name, permits})) return;
    if (!r.Call(kLine, {r.arg(2), r.key(2), permits})) return;
    rb.Null();
    return;
  }
  CallReply acquired;
  if (!r.Call(kLine, {&kZCount, r.key(3), &kZero, &kPlusInf}, &acquired)) return;
  const std::optional<double> left = ToNumber(available), want = ToNumber(permits);
  if (!left) {
    ArithmeticOnNil(r);
    return;
  }
  const double maximum = static_cast<double>(acquired.integer) + *left;
  if (want && maximum == *want) {
    rb.Null();
    return;
  }
  if (!want) {
    ArithmeticOnNil(r);
    return;
  }
  NumText delta(*want - maximum);
  if (!r.Call(kLine, {&kIncrBy, name, &delta.view})) return;
  if (!r.Call(kLine, {r.arg(2), r.key(2), permits})) return;
  rb.Null();
}

}  // namespace

void AddRedissonScripts(std::vector<ScriptInfo>* out) {
  constexpr std::string_view kRw = "Redisson RReadWriteLock";
  out->push_back(MakeScript("95553a6ff11176c18e71344e89d116b06fd6f753", kRw, "read acquire", 2,
                            ReadAcquire, /*acquires=*/true));
  out->push_back(MakeScript("5947c0fee6ca25ae094ec1b3e7a2559a9273d29f", kRw, "read release", 5,
                            ReadRelease));
  out->push_back(MakeScript("6563941ff57e01b8cf61e86907b80686438a2f74", kRw, "read renew", 2,
                            ReadRenew));
  out->push_back(MakeScript("27dbe744e95c1d854a7f556cc6817030de2d0d01", kRw,
                            "read force unlock", 2, RwForceUnlock<false>));
  out->push_back(MakeScript("8ad44f1ba014938c20da38206b6d496c85ec1aed", kRw, "read isLocked", 1,
                            ReadIsLocked));
  out->push_back(MakeScript("6306ba3bf1f563b284bed52d305fce615c6664d9", kRw, "write acquire", 1,
                            WriteAcquire, /*acquires=*/true));
  out->push_back(MakeScript("d29c5559782035515d32e926762830b3304b49be", kRw, "write release", 3,
                            WriteRelease));
  out->push_back(MakeScript("2e2cb2a3b13e2e80e4236ef6a25beaf365dba608", kRw,
                            "write force unlock", 2, RwForceUnlock<true>));

  constexpr std::string_view kSem = "Redisson RSemaphore";
  out->push_back(MakeScript("c7dc9d189c1715465a31a06ddbc008585e0c20be", kSem, "tryAcquire", 1,
                            SemaphoreTryAcquire));
  out->push_back(MakeScript("ae27582488dd01f4e238cc0733a12146d410eb44", kSem, "release", 2,
                            SemaphoreRelease, /*acquires=*/true));
  out->push_back(MakeScript("c87766d572855e9461c4ecd453db5d1cbab6119e", kSem, "drainPermits", 1,
                            SemaphoreDrain));
  out->push_back(MakeScript("241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c", kSem, "trySetPermits", 2,
                            SemaphoreTrySetPermits, /*acquires=*/true));
  out->push_back(MakeScript("98238d408c6755085344670d3a2ddaa55cf177a9", kSem, "addPermits", 2,
                            SemaphoreAddPermits, /*acquires=*/true));

  constexpr std::string_view kLatch = "Redisson RCountDownLatch";
  out->push_back(MakeScript("38060fab26b0e7c5982a5cfd7ad542e44d3da19b", kLatch, "countDown", 2,
                            LatchCountDown));
  out->push_back(MakeScript("2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892", kLatch, "trySetCount", 2,
                            LatchTrySetCount, /*acquires=*/true));
  out->push_back(MakeScript("47aed1b8133417c9bc009ffc08602e37ed4a1bb3", kLatch, "delete", 2,
                            DeleteAndTell<true>));

  // RSpinLock's acquire is the 3.1x RLock acquire (dad0f8d6..., in script_catalog.cc).
  constexpr std::string_view kSpin = "Redisson RSpinLock";
  out->push_back(MakeScript("73ac2729af29ea9a975f95e8097f7ee9a74cce3d", kSpin, "release", 2,
                            SpinRelease));
  out->push_back(MakeScript("51b433c3cc9a6ca991b3aefec63d23490c246318", kSpin, "force unlock", 1,
                            DeleteAndTell<false>));

  // RFencedLock's release is RLock's (68664592..., in script_catalog.cc).
  constexpr std::string_view kFenced = "Redisson RFencedLock";
  out->push_back(MakeScript("49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45", kFenced,
                            "acquire with token", 2, FencedAcquire<true>, /*acquires=*/true));
  out->push_back(MakeScript("46b5551ba403d6152a7a6eca122e08728d6c8c66", kFenced, "acquire", 2,
                            FencedAcquire<false>, /*acquires=*/true));

  // RFairLock's watchdog renewal is RLock's.
  constexpr std::string_view kFair = "Redisson RFairLock";
  out->push_back(MakeScript("762bfafa6be221431a0b668685dd15c926483619", kFair,
                            "acquire or queue (lock, tryLock with wait)", 3, FairAcquire,
                            /*acquires=*/true));
  out->push_back(MakeScript("aa0a28d2eb7cbeb50151315a58eb75302d8dfa40", kFair,
                            "tryLock without waiting", 3, FairTryAcquire, /*acquires=*/true));
  out->push_back(MakeScript("d1ddef65ad80886b5d36e023c99930044ddd653a", kFair,
                            "leave the queue (acquire failed)", 2, FairAcquireFailed));
  out->push_back(MakeScript("ca303f8587d0942f8a0021f62338626ca4dd0118", kFair, "release", 5,
                            FairRelease));
  out->push_back(MakeScript("047c11d7fec40d0102fe9903ff1e19e9a1dec610", kFair, "force unlock", 4,
                            FairForceUnlock));

  // RPermitExpirableSemaphore's trySetPermits is RSemaphore's (241ce4e8...).
  constexpr std::string_view kPermit = "Redisson RPermitExpirableSemaphore";
  out->push_back(MakeScript("992c96b09a3d8ea0b37f5dc12e5347a44d93909d", kPermit, "tryAcquire", 3,
                            PermitTryAcquire));
  out->push_back(MakeScript("4ce079451bee2993ce00c8a4e205b536c6ccad67", kPermit,
                            "tryRelease one", 3, PermitTryRelease));
  out->push_back(MakeScript("bb41a8ec1cd921c89e9d8f2ddde38ad13a2e8b74", kPermit,
                            "tryRelease many", 3, PermitTryReleaseMany));
  out->push_back(MakeScript("26b3972b2c9e617556282f404cb79709d746a713", kPermit,
                            "availablePermits", 3, PermitAvailable));
  out->push_back(MakeScript("ec6fb1cd5f66817424e8fe70fee7929391b7c6f0", kPermit, "addPermits", 2,
                            PermitAddPermits, /*acquires=*/true));
  out->push_back(MakeScript("2298b02cc67a89f2a638e47503db3675c73d77f5", kPermit,
                            "updateLeaseTime", 3, PermitUpdateLease));
  out->push_back(MakeScript("6f0b0be79a0c146c778cb14f40c10eb5b706e574", kPermit,
                            "acquiredPermits", 3, PermitCount<false>));
  out->push_back(MakeScript("e242db5c1c68811b0d26a41937dcf22415b6d872", kPermit, "getPermits", 3,
                            PermitCount<true>));
  out->push_back(MakeScript("494d8561fee0cdb033f6c28d74c052c52189a578", kPermit, "setPermits", 3,
                            PermitSetPermits, /*acquires=*/true));
}

}  // namespace deadbolt::server
