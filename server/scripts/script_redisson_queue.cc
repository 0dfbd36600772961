// Redisson's queue-keeping primitives: RFairLock (a waiters' list and a sorted set of their
// timeouts) and RPermitExpirableSemaphore (a sorted set of the permits out). Same sources and
// rules as script_redisson.cc, whose header comment says how each function follows its script.

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

bool ArithmeticOnNil(ScriptRun& r) {
  return Fail(r, "attempt to perform arithmetic on a nil value");
}

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
  const std::optional<double> have = value.truthy() ? ToNumber(value) : std::optional<double>(0);
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

void AddRedissonQueueScripts(std::vector<ScriptInfo>* out) {
  constexpr std::string_view kFair = "Redisson RFairLock";
  out->push_back(MakeScript("762bfafa6be221431a0b668685dd15c926483619", kFair,
                            "acquire or queue (lock, tryLock with wait)", 3, FairAcquire,
                            /*acquires=*/true));
  out->push_back(MakeScript("aa0a28d2eb7cbeb50151315a58eb75302d8dfa40", kFair,
                            "tryLock without waiting", 3, FairTryAcquire, /*acquires=*/true));
  out->push_back(MakeScript("d1ddef65ad80886b5d36e023c99930044ddd653a", kFair,
                            "leave the queue (acquire failed)", 2, FairAcquireFailed));
  out->push_back(
      MakeScript("ca303f8587d0942f8a0021f62338626ca4dd0118", kFair, "release", 5, FairRelease));
  out->push_back(MakeScript("047c11d7fec40d0102fe9903ff1e19e9a1dec610", kFair, "force unlock", 4,
                            FairForceUnlock));

  // RPermitExpirableSemaphore's trySetPermits is RSemaphore's (241ce4e8...).
  constexpr std::string_view kPermit = "Redisson RPermitExpirableSemaphore";
  out->push_back(MakeScript("992c96b09a3d8ea0b37f5dc12e5347a44d93909d", kPermit, "tryAcquire", 3,
                            PermitTryAcquire));
  out->push_back(MakeScript("4ce079451bee2993ce00c8a4e205b536c6ccad67", kPermit, "tryRelease one",
                            3, PermitTryRelease));
  out->push_back(MakeScript("bb41a8ec1cd921c89e9d8f2ddde38ad13a2e8b74", kPermit, "tryRelease many",
                            3, PermitTryReleaseMany));
  out->push_back(MakeScript("26b3972b2c9e617556282f404cb79709d746a713", kPermit, "availablePermits",
                            3, PermitAvailable));
  out->push_back(MakeScript("ec6fb1cd5f66817424e8fe70fee7929391b7c6f0", kPermit, "addPermits", 2,
                            PermitAddPermits, /*acquires=*/true));
  out->push_back(MakeScript("2298b02cc67a89f2a638e47503db3675c73d77f5", kPermit, "updateLeaseTime",
                            3, PermitUpdateLease));
  out->push_back(MakeScript("6f0b0be79a0c146c778cb14f40c10eb5b706e574", kPermit, "acquiredPermits",
                            3, PermitCount<false>));
  out->push_back(MakeScript("e242db5c1c68811b0d26a41937dcf22415b6d872", kPermit, "getPermits", 3,
                            PermitCount<true>));
  out->push_back(MakeScript("494d8561fee0cdb033f6c28d74c052c52189a578", kPermit, "setPermits", 3,
                            PermitSetPermits, /*acquires=*/true));
}

}  // namespace deadbolt::server
