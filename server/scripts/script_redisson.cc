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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/scripts/script_families.h"
#include "server/scripts/script_redisson_lua.h"

namespace deadbolt::server {
namespace {

using namespace redisson;  // NOLINT: the scripts' shared vocabulary

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
    if (!r.Call(kLine, {&kHSet, lock, &kMode, &kReadMode})) return;
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
  bool take = IsString(mode, kReadMode);
  if (!take && IsString(mode, kWriteMode)) {
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
    if (IsString(mode, kWriteMode)) {
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
template <bool kForWrite>
void RwForceUnlock(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg lock = r.key(1);
  CallReply mode;
  if (!r.Call(kLine, {&kHGet, lock, &kMode}, &mode)) return;
  if (!IsString(mode, kForWrite ? kWriteMode : kReadMode)) {
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
  bool locked = IsString(mode, kReadMode);
  if (!locked && IsString(mode, kWriteMode)) {
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
    if (!r.Call(kLine, {&kHSet, lock, &kMode, &kWriteMode})) return;
    if (!r.Call(kLine, {&kHSet, lock, holder, &kOne})) return;
    if (!r.Call(kLine, {&kPExpire, lock, lease})) return;
    rb.Null();
    return;
  }
  if (IsString(mode, kWriteMode)) {
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
  if (!IsString(mode, kWriteMode)) {
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
    if (!r.Call(kLine, {&kHSet, lock, &kMode, &kReadMode})) return;
  }
  if (!SetLatch(r, latch, &kOne, latch_ms)) return;
  rb.Integer(1);
}

// ------------------------------------------------------------------------------------------
// RSemaphore: a string key holding the permits left; releases publish the new count on
// "redisson_sc:{name}".
// ------------------------------------------------------------------------------------------

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

}  // namespace

void AddRedissonScripts(std::vector<ScriptInfo>* out) {
  constexpr std::string_view kRw = "Redisson RReadWriteLock";
  out->push_back(MakeScript("95553a6ff11176c18e71344e89d116b06fd6f753", kRw, "read acquire", 2,
                            ReadAcquire, /*acquires=*/true));
  out->push_back(
      MakeScript("5947c0fee6ca25ae094ec1b3e7a2559a9273d29f", kRw, "read release", 5, ReadRelease));
  out->push_back(
      MakeScript("6563941ff57e01b8cf61e86907b80686438a2f74", kRw, "read renew", 2, ReadRenew));
  out->push_back(MakeScript("27dbe744e95c1d854a7f556cc6817030de2d0d01", kRw, "read force unlock", 2,
                            RwForceUnlock<false>));
  out->push_back(MakeScript("8ad44f1ba014938c20da38206b6d496c85ec1aed", kRw, "read isLocked", 1,
                            ReadIsLocked));
  out->push_back(MakeScript("6306ba3bf1f563b284bed52d305fce615c6664d9", kRw, "write acquire", 1,
                            WriteAcquire, /*acquires=*/true));
  out->push_back(MakeScript("d29c5559782035515d32e926762830b3304b49be", kRw, "write release", 3,
                            WriteRelease));
  out->push_back(MakeScript("2e2cb2a3b13e2e80e4236ef6a25beaf365dba608", kRw, "write force unlock",
                            2, RwForceUnlock<true>));

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
  out->push_back(
      MakeScript("73ac2729af29ea9a975f95e8097f7ee9a74cce3d", kSpin, "release", 2, SpinRelease));
  out->push_back(MakeScript("51b433c3cc9a6ca991b3aefec63d23490c246318", kSpin, "force unlock", 1,
                            DeleteAndTell<false>));

  // RFencedLock's release is RLock's (68664592..., in script_catalog.cc).
  constexpr std::string_view kFenced = "Redisson RFencedLock";
  out->push_back(MakeScript("49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45", kFenced,
                            "acquire with token", 2, FencedAcquire<true>, /*acquires=*/true));
  out->push_back(MakeScript("46b5551ba403d6152a7a6eca122e08728d6c8c66", kFenced, "acquire", 2,
                            FencedAcquire<false>, /*acquires=*/true));

  // RFairLock's watchdog renewal is RLock's.
  AddRedissonQueueScripts(out);
}

}  // namespace deadbolt::server
