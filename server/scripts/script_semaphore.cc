// redis-semaphore (npm, 5.8.0): the scripts of Semaphore and MultiSemaphore, which
// RedlockSemaphore and RedlockMultiSemaphore send to each of their servers too. A semaphore is a
// sorted set "semaphore:<name>" of holder -> the time (unix ms) it last acquired or refreshed;
// a holder whose time is older than the lock timeout has expired. MultiSemaphore's holder of N
// permits is N members "<id>_0" .. "<id>_<N-1>". Release of a plain Semaphore is a ZREM.
//
// As everywhere in the catalogue only the SHA1 of each text is here (tests/e2e/test_scripts.py
// reads the texts from the npm package); the functions follow the Lua line by line: tonumber()
// of ARGV (nil when it is not a number), Lua's arithmetic, comparison and concatenation errors
// naming the local they met, numbers passed to commands as "%.17g", and the line of each.

#include <cmath>
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

constexpr std::string_view kZRemRangeByScore = "zremrangebyscore";
constexpr std::string_view kZCard = "zcard";
constexpr std::string_view kZScore = "zscore";
constexpr std::string_view kZAdd = "zadd";
constexpr std::string_view kZRem = "zrem";
constexpr std::string_view kPExpire = "pexpire";
constexpr std::string_view kMinusInf = "-inf";

// Lua 5.1's unpack() fails beyond this many results (LUAI_MAXCSTACK 8000, less its argument).
constexpr double kMaxUnpack = 7999;

// tonumber(a): nullopt for nil or a string that is not a number.
std::optional<double> ToNumber(LuaArg a) {
  double v;
  if (a == nullptr || !LuaToNumber(*a, &v)) return std::nullopt;
  return v;
}

// A Lua number passed to redis.call(), as text.
struct NumText {
  explicit NumText(double v) : view(LuaNumberText(v, buf)) {}
  char buf[32];
  std::string_view view;
};

bool ArithmeticOnNil(ScriptRun& r, int line, std::string_view local) {
  return r.Fail(errors::ScriptLuaError(
                    line, "attempt to perform arithmetic on local '" + std::string(local) +
                              "' (a nil value)"),
                line);
}

bool CompareWithNil(ScriptRun& r, int line) {
  return r.Fail(errors::ScriptLuaError(line, "attempt to compare number with nil"), line);
}

bool ConcatNil(ScriptRun& r, int line, std::string_view local) {
  return r.Fail(errors::ScriptLuaError(line, "attempt to concatenate local '" +
                                                 std::string(local) + "' (a nil value)"),
                line);
}

// `local expiredTimestamp = now - lockTimeout` at `line`, then
// redis.call('zremrangebyscore', key, '-inf', expiredTimestamp) at `zrem_line`.
bool DropExpired(ScriptRun& r, LuaArg key, const std::optional<double>& now,
                 const std::optional<double>& lock_timeout, int line, int zrem_line) {
  if (!now) return ArithmeticOnNil(r, line, "now");
  if (!lock_timeout) return ArithmeticOnNil(r, line, "lockTimeout");
  NumText expired(*now - *lock_timeout);
  return r.Call(zrem_line, {&kZRemRangeByScore, key, &kMinusInf, &expired.view});
}

// How many times `for i=0, permits - 1 do` runs (permits is a number); more than unpack()
// could pass on is reported as kMaxUnpack + 1.
double LoopCount(double permits) {
  const double last = permits - 1;
  if (!(last >= 0)) return 0;  // NaN too
  if (last >= kMaxUnpack) return kMaxUnpack + 1;
  return std::floor(last) + 1;
}

// The members "<identifier>_0" .. "<identifier>_<n-1>" (identifier .. '_' .. i).
std::vector<std::string> PermitMembers(std::string_view identifier, int n) {
  std::vector<std::string> members;
  members.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) members.push_back(std::string(identifier) + "_" + std::to_string(i));
  return members;
}

// --- Semaphore ---
//   local key, limit, identifier, lockTimeout, now = KEYS[1], tonumber(ARGV[1]), ARGV[2],
//     tonumber(ARGV[3]), tonumber(ARGV[4])                                  (lines 2-6)
//   zremrangebyscore key -inf (now - lockTimeout)                          (7, 9)
//   acquire: if zcard key < limit / refresh: if zscore key identifier then  (11)
//     zadd key now identifier; pexpire key lockTimeout; return 1            (12, 13)
//   else return 0
template <bool kRefresh>
void SemaphoreTake(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), identifier = r.arg(2);
  const std::optional<double> limit = ToNumber(r.arg(1)), lock_timeout = ToNumber(r.arg(3)),
                              now = ToNumber(r.arg(4));
  if (!DropExpired(r, key, now, lock_timeout, 7, 9)) return;
  CallReply reply;
  bool take;
  if (kRefresh) {
    if (!r.Call(11, {&kZScore, key, identifier}, &reply)) return;
    take = reply.truthy();
  } else {
    if (!r.Call(11, {&kZCard, key}, &reply)) return;
    if (!limit) {
      CompareWithNil(r, 11);
      return;
    }
    take = static_cast<double>(reply.integer) < *limit;
  }
  if (!take) {
    rb.Integer(0);
    return;
  }
  NumText now_text(*now), timeout_text(*lock_timeout);
  if (!r.Call(12, {&kZAdd, key, &now_text.view, identifier})) return;
  if (!r.Call(13, {&kPExpire, key, &timeout_text.view})) return;
  rb.Integer(1);
}

// --- MultiSemaphore: acquire and refresh ---
//   local key, limit, permits, identifier, lockTimeout, now = KEYS[1], tonumber(ARGV[1]),
//     tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])      (lines 2-7)
//   zremrangebyscore key -inf (now - lockTimeout)                          (8, 11)
//   acquire: if (zcard key + permits) <= limit
//   refresh: if zscore key (identifier .. '_0')                             (13)
//     for i = 0, permits - 1: args += now, identifier .. '_' .. i          (14-17)
//     zadd key unpack(args); pexpire key lockTimeout; return 1              (18, 19)
//   else return 0
template <bool kRefresh>
void MultiSemaphoreTake(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), identifier = r.arg(3);
  const std::optional<double> limit = ToNumber(r.arg(1)), permits = ToNumber(r.arg(2)),
                              lock_timeout = ToNumber(r.arg(4)), now = ToNumber(r.arg(5));
  if (!DropExpired(r, key, now, lock_timeout, 8, 11)) return;
  CallReply reply;
  bool take;
  if (kRefresh) {
    if (!identifier) {
      ConcatNil(r, 13, "identifier");
      return;
    }
    const std::string first = std::string(*identifier) + "_0";
    const std::string_view first_view = first;
    if (!r.Call(13, {&kZScore, key, &first_view}, &reply)) return;
    take = reply.truthy();
    if (take && !permits) {
      ArithmeticOnNil(r, 14, "permits");
      return;
    }
  } else {
    if (!r.Call(13, {&kZCard, key}, &reply)) return;
    if (!permits) {
      ArithmeticOnNil(r, 13, "permits");
      return;
    }
    if (!limit) {
      CompareWithNil(r, 13);
      return;
    }
    take = static_cast<double>(reply.integer) + *permits <= *limit;
  }
  if (!take) {
    rb.Integer(0);
    return;
  }
  const double count = LoopCount(*permits);
  if (count > 0 && !identifier) {
    ConcatNil(r, 16, "identifier");
    return;
  }
  if (2 * count > kMaxUnpack) {
    r.Fail(errors::ScriptLuaError(18, "too many results to unpack"), 18);
    return;
  }
  const std::vector<std::string> members =
      count > 0 ? PermitMembers(*identifier, static_cast<int>(count)) : std::vector<std::string>();
  NumText now_text(*now), timeout_text(*lock_timeout);
  std::vector<std::string_view> views = {kZAdd};
  for (const std::string& m : members) {
    views.push_back(now_text.view);
    views.push_back(m);
  }
  std::vector<LuaArg> args;
  args.reserve(views.size() + 1);
  args.push_back(&views[0]);
  args.push_back(key);
  for (size_t i = 1; i < views.size(); i++) args.push_back(&views[i]);
  if (!r.Call(18, args)) return;
  if (!r.Call(19, {&kPExpire, key, &timeout_text.view})) return;
  rb.Integer(1);
}

// --- MultiSemaphore: release ---
//   local key, permits, identifier = KEYS[1], tonumber(ARGV[1]), ARGV[2]   (lines 2-4)
//   for i = 0, permits - 1: args += identifier .. '_' .. i                (7-9)
//   return zrem key unpack(args)                                          (11)
void MultiSemaphoreRelease(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), identifier = r.arg(2);
  const std::optional<double> permits = ToNumber(r.arg(1));
  if (!permits) {
    ArithmeticOnNil(r, 7, "permits");
    return;
  }
  const double count = LoopCount(*permits);
  if (count > 0 && !identifier) {
    ConcatNil(r, 8, "identifier");
    return;
  }
  if (count > kMaxUnpack) {
    r.Fail(errors::ScriptLuaError(11, "too many results to unpack"), 11);
    return;
  }
  const std::vector<std::string> members =
      count > 0 ? PermitMembers(*identifier, static_cast<int>(count)) : std::vector<std::string>();
  const std::vector<std::string_view> views(members.begin(), members.end());
  std::vector<LuaArg> args = {&kZRem, key};
  for (const std::string_view& m : views) args.push_back(&m);
  CallReply reply;
  if (!r.Call(11, args, &reply)) return;
  rb.Integer(reply.integer);
}

}  // namespace

void AddSemaphoreScripts(std::vector<ScriptInfo>* out) {
  constexpr std::string_view kSem = "redis-semaphore Semaphore";
  out->push_back(MakeScript("43ebdb49120d170e08af560cb4e46e36f8585936", kSem, "acquire", 1,
                            SemaphoreTake<false>, /*acquires=*/true));
  out->push_back(MakeScript("999a49a1d07671a8027165641001f5bad44608b3", kSem, "refresh", 1,
                            SemaphoreTake<true>));
  constexpr std::string_view kMulti = "redis-semaphore MultiSemaphore";
  out->push_back(MakeScript("10c1c2e05e7c48aa5824d227b8c51abcde87b18e", kMulti, "acquire", 1,
                            MultiSemaphoreTake<false>, /*acquires=*/true));
  out->push_back(MakeScript("2327bcdc5edb5b8687f6d19b5e1f42b815ebddab", kMulti, "refresh", 1,
                            MultiSemaphoreTake<true>));
  out->push_back(MakeScript("0bd1010c98f1ddd70a6024fd374489a8ea3d2c12", kMulti, "release", 1,
                            MultiSemaphoreRelease));
}

}  // namespace deadbolt::server
