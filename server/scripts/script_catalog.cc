// The catalogue of lock scripts (see script_catalog.h) and the scripts over one key.
//
// Each entry is the SHA1 of a script exactly as its client sends it (recomputed from the
// client's installed package or its published source; see tests/e2e/test_scripts.py) and a
// function with the script's effects and reply. A function follows its script statement by
// statement: the same redis.call()s in the same order, the same Lua truthiness (a missing
// key's GET is false, a missing ARGV is nil), and the line of each call for the error Redis
// would report ("... script: <sha>, on @user_script:<line>."). Only the text of the scripts is
// the clients'; no script text is kept here, only its SHA1.

#include "server/scripts/script_catalog.h"

#include <absl/container/flat_hash_map.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/scripts/script_families.h"
#include "server/scripts/script_multikey.h"
#include "server/scripts/script_run.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;
using Cond = shard::SetOptions::Cond;

// Lua numbers the scripts pass to commands, as Redis formats them.
constexpr std::string_view kZero = "0";
constexpr std::string_view kOne = "1";
constexpr std::string_view kPublishCommand = "publish";

bool Equal(const std::optional<std::string_view>& value, LuaArg arg) {
  return value && arg && *value == *arg;
}

// --- compare-and-delete: GET, compare with ARGV[1], DEL; reply the DEL's result or 0 ---
// The classic release from the Redis documentation in its many spellings, redis-py's release
// (which replies 1 after its DEL: the same), redis-semaphore's release and older redsync's.
template <int kGetLine, int kDelLine>
void CompareAndDelete(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), token = r.arg(1);
  if (key && token && !r.read_only() && !r.acl_checks()) {
    // GET + compare + DEL in one lookup. A key of another type fails GET with WRONGTYPE.
    auto d = r.db().DelEx(*key, Cond::kIfEq, *token, r.now_ms());
    if (!d.ok()) {
      r.Fail(errors::ForStatus(d.status()), kGetLine);
      return;
    }
    rb.Integer(*d ? 1 : 0);
    return;
  }
  std::optional<std::string_view> value;
  if (!r.Get(key, kGetLine, &value)) return;
  if (!Equal(value, token)) {
    rb.Integer(0);
    return;
  }
  int64_t deleted;
  if (!r.Del(key, kDelLine, &deleted)) return;
  rb.Integer(deleted);
}

// --- redis-py Lock ---

// extend: ARGV = token, ms, mode. Mode "0" adds ms to the current PTTL (Lua arithmetic on the
// string ARGV[2]), anything else replaces it; a key without a TTL is not extended.
void PyExtend(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), token = r.arg(1);
  std::optional<std::string_view> value;
  if (!r.Get(key, 2, &value)) return;
  if (!Equal(value, token)) {
    rb.Integer(0);
    return;
  }
  int64_t pttl;
  if (!r.Pttl(key, 6, &pttl)) return;
  if (pttl < 0) {
    rb.Integer(0);
    return;
  }
  LuaArg ms = r.arg(2), mode = r.arg(3);
  char buf[32];
  std::string_view sum;
  if (mode && *mode == "0") {  // then ARGV[2] exists too
    double add;
    if (!LuaToNumber(*ms, &add)) {
      r.Fail(errors::ScriptArithmeticError(16, "string"), 16);
      return;
    }
    sum = LuaNumberText(add + static_cast<double>(pttl), buf);
    ms = &sum;
  }
  int64_t set;
  if (!r.PExpire(key, ms, 18, &set)) return;
  rb.Integer(1);
}

// reacquire: ARGV = token, ms: PEXPIRE the key if it holds the token.
void PyReacquire(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1);
  std::optional<std::string_view> value;
  if (!r.Get(key, 2, &value)) return;
  if (!Equal(value, r.arg(1))) {
    rb.Integer(0);
    return;
  }
  int64_t set;
  if (!r.PExpire(key, r.arg(2), 6, &set)) return;
  rb.Integer(1);
}

// --- go-redsync v4 ---

// delete: the DEL's result when the key holds ARGV[1], -1 when the key is missing, else 0.
void RedsyncDelete(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), token = r.arg(1);
  if (key && token && !r.read_only() && !r.acl_checks()) {
    auto d = r.db().DelEx(*key, Cond::kIfEq, *token, r.now_ms());
    if (!d.ok()) {
      r.Fail(errors::ForStatus(d.status()), 2);
      return;
    }
    rb.Integer(*d ? 1 : r.db().Exists(*key, r.now_ms()) ? 0 : -1);
    return;
  }
  std::optional<std::string_view> value;
  if (!r.Get(key, 2, &value)) return;
  if (Equal(value, token)) {
    int64_t deleted;
    if (!r.Del(key, 4, &deleted)) return;
    rb.Integer(deleted);
    return;
  }
  rb.Integer(value ? 0 : -1);
}

// touch: the PEXPIRE's result when the key holds ARGV[1], else 0. With kSetNx (touch with
// SET NX) a key that does not hold it is created with SET key ARGV[1] PX ARGV[2] NX: 1 if set.
template <bool kSetNx>
void RedsyncTouch(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), token = r.arg(1);
  std::optional<std::string_view> value;
  if (!r.Get(key, 2, &value)) return;
  if (Equal(value, token)) {
    int64_t set;
    if (!r.PExpire(key, r.arg(2), 3, &set)) return;
    rb.Integer(set);
    return;
  }
  if (kSetNx) {
    bool written;
    if (!r.SetPx(key, token, r.arg(2), true, 4, &written)) return;
    rb.Integer(written ? 1 : 0);
    return;
  }
  rb.Integer(0);
}

// --- redis-semaphore Mutex ---

// refresh: PEXPIRE key ARGV[2] if it holds ARGV[1]; 1, else 0.
void SemaphoreRefresh(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1);
  std::optional<std::string_view> value;
  if (!r.Get(key, 6, &value)) return;
  if (!Equal(value, r.arg(1))) {
    rb.Integer(0);
    return;
  }
  int64_t set;
  if (!r.PExpire(key, r.arg(2), 9, &set)) return;
  rb.Integer(1);
}

// --- Redisson RLock: a hash "<client id>:<thread id>" -> hold count. One-line scripts. ---

// acquire: KEYS = lock; ARGV = lease ms, field. Take it when the key is missing or the field is
// there (re-entry): count + 1, PEXPIRE, reply nil; else reply the PTTL. kHSetFirst: the oldest
// form, which creates the hash with HSET field 1.
template <bool kHSetFirst>
void RedissonAcquire(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), lease = r.arg(1), field = r.arg(2);
  bool exists;
  if (!r.Exists(key, 1, &exists)) return;
  bool take = !exists;
  if (exists && !r.HExists(key, field, 1, &take)) return;
  if (!take) {
    int64_t ttl;
    if (!r.Pttl(key, 1, &ttl)) return;
    rb.Integer(ttl);
    return;
  }
  if (kHSetFirst && !exists) {
    if (!r.HSet(key, field, kOne, 1)) return;
  } else {
    int64_t count;
    if (!r.HIncrBy(key, field, 1, 1, &count)) return;
  }
  int64_t set;
  if (!r.PExpire(key, lease, 1, &set)) return;
  rb.Null();
}

// renew (watchdog, one lock): KEYS = lock; ARGV = lease ms, field. PEXPIRE if the field is
// there: 1, else 0.
void RedissonRenewOne(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1);
  bool has;
  if (!r.HExists(key, r.arg(2), 1, &has)) return;
  if (!has) {
    rb.Integer(0);
    return;
  }
  int64_t set;
  if (!r.PExpire(key, r.arg(1), 1, &set)) return;
  rb.Integer(1);
}

// release: KEYS = lock, channel[, unlock latch]; ARGV = message, lease ms, field[, publish
// command, latch ms]. Not the holder: nil. Else count - 1; still held: PEXPIRE lease, reply 0;
// released: DEL, publish the message on the channel, reply 1. kCommandArg: the publish command
// is ARGV[4] ("publish" or "spublish"). kLatch: a latch key holding a previous reply is
// replied again (tonumber of it), and each reply is stored in the latch for ARGV[5] ms.
template <bool kCommandArg, bool kLatch>
void RedissonRelease(ScriptRun& r, ReplyBuilder& rb) {
  LuaArg key = r.key(1), channel = r.key(2), message = r.arg(1), lease = r.arg(2), field = r.arg(3);
  LuaArg latch = r.key(3);
  if (kLatch) {
    std::optional<std::string_view> before;
    if (!r.Get(latch, 1, &before)) return;
    if (before) {
      double n;
      if (LuaToNumber(*before, &n)) {
        rb.Integer(LuaNumberToInteger(n));
      } else {
        rb.Null();
      }
      return;
    }
  }
  bool has;
  if (!r.HExists(key, field, 1, &has)) return;
  if (!has) {
    rb.Null();
    return;
  }
  int64_t counter;
  if (!r.HIncrBy(key, field, -1, 1, &counter)) return;
  bool written;
  if (counter > 0) {
    int64_t set;
    if (!r.PExpire(key, lease, 1, &set)) return;
    if (kLatch && !r.SetPx(latch, &kZero, r.arg(5), false, 1, &written)) return;
    rb.Integer(0);
    return;
  }
  int64_t deleted;
  if (!r.Del(key, 1, &deleted)) return;
  if (!r.Publish(kCommandArg ? r.arg(4) : &kPublishCommand, channel, message, 1)) return;
  if (kLatch && !r.SetPx(latch, &kOne, r.arg(5), false, 1, &written)) return;
  rb.Integer(1);
}

ScriptInfo Entry(std::string_view sha, std::string_view client, std::string_view name, int num_keys,
                 ScriptShardFn run, ScriptMultiFn multi = nullptr) {
  ScriptInfo s{sha, client, name, num_keys, run, multi, {}};
  if (!ParseSha1Hex(sha, &s.digest)) std::abort();  // a typo in the table below
  return s;
}

// A script that acquires a lock (ScriptInfo::acquires).
ScriptInfo Acquiring(ScriptInfo s) {
  s.acquires = true;
  return s;
}

void AddSingleKeyScriptsUnmarked(std::vector<ScriptInfo>* out) {
  constexpr std::string_view kPy = "redis-py Lock";
  out->push_back(
      Entry("c3f8721cbb97f72bc19e972846bd7aaf91901658", kPy, "release", 1, CompareAndDelete<2, 6>));
  out->push_back(Entry("a4e8783852e6b949f9ef3a97212805108459a890", kPy, "extend", 1, PyExtend));
  out->push_back(
      Entry("1cac51482acf5858da00f6d685d68f886cd6b6b2", kPy, "reacquire", 1, PyReacquire));

  constexpr std::string_view kRedisson = "Redisson RLock";
  out->push_back(Acquiring(Entry("149c5a8bf18676fd99e9e6e24923bd64d9b62f94", kRedisson,
                                 "acquire (3.2x-4.x: missing or re-entry in one condition)", 1,
                                 RedissonAcquire<false>)));
  out->push_back(
      Acquiring(Entry("dad0f8d619e548e04f21fb48d50be5034df3adae", kRedisson,
                      "acquire (3.1x-3.2x: HINCRBY in both branches)", 1, RedissonAcquire<false>)));
  out->push_back(
      Acquiring(Entry("9401052d872adfd0179ef8c8e8c028512707629a", kRedisson,
                      "acquire (up to 3.11: HSET on a new lock)", 1, RedissonAcquire<true>)));
  out->push_back(Entry("6866459238a13a701d42f4971f12d9f3a50e2442", kRedisson,
                       "release (3.2x-4.x: publish command argument, unlock latch)", 3,
                       RedissonRelease<true, true>));
  out->push_back(Entry("778cea8aada230ae060b432fc333adaec85f2f4c", kRedisson,
                       "release (3.17-3.2x: publish command argument)", 2,
                       RedissonRelease<true, false>));
  out->push_back(Entry("3ffe249c16dee540ac8ab32e39bd408626b9aff7", kRedisson,
                       "release (up to 3.16: PUBLISH)", 2, RedissonRelease<false, false>));
  out->push_back(Entry("8e19a1ddbdee9138df9f32a480c57addab4353d1", kRedisson,
                       "renew one lock (watchdog, up to 3.2x)", 1, RedissonRenewOne));

  constexpr std::string_view kRedsync = "go-redsync v4";
  out->push_back(
      Entry("e950836ed1e694540c503ef9972b8de518044d3b", kRedsync, "delete", 1, RedsyncDelete));
  out->push_back(
      Entry("d75bb8b5bd13532ddedd17762e772346e39b321e", kRedsync, "touch", 1, RedsyncTouch<false>));
  out->push_back(Acquiring(Entry("b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79", kRedsync,
                                 "touch with SET NX", 1, RedsyncTouch<true>)));
  out->push_back(Entry("00583931c4e4d483f6233879c133c71ed5393f9d", kRedsync,
                       "delete (older releases: no -1 for a missing key)", 1,
                       CompareAndDelete<2, 3>));

  constexpr std::string_view kSemaphore = "redis-semaphore Mutex";
  out->push_back(Entry("594683e49a64ebaf975caf5f8079a1d097c438f1", kSemaphore, "refresh", 1,
                       SemaphoreRefresh));
  out->push_back(Entry("7157921a7cc7cfba979acf6d63f073151df17d12", kSemaphore, "release", 1,
                       CompareAndDelete<5, 6>));

  // if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0
  // end, as the Redis documentation gives it and as it is commonly copied.
  constexpr std::string_view kClassic = "compare-and-delete (Redis documentation)";
  out->push_back(Entry("b70c2384248f88e6b75b9f89241a180f856ad852", kClassic,
                       "one line, double quotes", 1, CompareAndDelete<1, 1>));
  out->push_back(Entry("123f4af3b13ed08b98b0b2a98d211f1a02aff662", kClassic,
                       "one line, double quotes, two spaces after else", 1,
                       CompareAndDelete<1, 1>));
  out->push_back(Entry("e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4", kClassic,
                       "one line, single quotes, space after commas", 1, CompareAndDelete<1, 1>));
  out->push_back(Entry("ae3671744a5dbb24ea37ef607b8b10ac7856d43e", kClassic,
                       "one line, single quotes", 1, CompareAndDelete<1, 1>));
  out->push_back(Entry("bd75051e9049411d4a96c0df196ac2667d38f481", kClassic,
                       "six lines as in the SET documentation", 1, CompareAndDelete<1, 3>));
  out->push_back(Entry("0df94f0c181d164030a056e556fe2176c70f0013", kClassic,
                       "six lines as in the SET documentation, final newline", 1,
                       CompareAndDelete<1, 3>));
}

void AddSingleKeyScripts(std::vector<ScriptInfo>* out) {
  const size_t first = out->size();
  AddSingleKeyScriptsUnmarked(out);
  // Each reads and writes its KEYS[1] alone, but Redisson's releases, which publish the unlock.
  for (size_t i = first; i < out->size(); i++) {
    ScriptInfo& s = (*out)[i];
    s.keys_only = !(s.client == "Redisson RLock" && s.name.starts_with("release"));
  }
}

struct DigestHash {
  size_t operator()(const Sha1Digest& d) const {
    uint64_t h;
    std::memcpy(&h, d.data(), sizeof(h));  // a SHA1 is already uniformly distributed
    return h;
  }
};

// Built on first use (thread-safe static initialisation); read-only afterwards.
struct Catalog {
  Catalog() {
    AddSingleKeyScripts(&all);
    AddMultiKeyScripts(&all);
    AddSemaphoreScripts(&all);
    AddRedissonScripts(&all);
    for (const ScriptInfo& s : all) by_digest.emplace(s.digest, &s);
  }
  std::vector<ScriptInfo> all;
  absl::flat_hash_map<Sha1Digest, const ScriptInfo*, DigestHash> by_digest;
};

const Catalog& TheCatalog() {
  static const Catalog* catalog = new Catalog();
  return *catalog;
}

}  // namespace

ScriptInfo MakeScript(std::string_view sha, std::string_view client, std::string_view name,
                      int num_keys, ScriptShardFn run, bool acquires) {
  ScriptInfo s = Entry(sha, client, name, num_keys, run);
  s.acquires = acquires;
  return s;
}

absl::Span<const ScriptInfo> AllScripts() { return TheCatalog().all; }

const ScriptInfo* FindScriptBySha(std::string_view hex) {
  Sha1Digest d;
  if (!ParseSha1Hex(hex, &d)) return nullptr;
  const auto& index = TheCatalog().by_digest;
  auto it = index.find(d);
  return it == index.end() ? nullptr : it->second;
}

const ScriptInfo* FindScriptByText(std::string_view body) {
  const auto& index = TheCatalog().by_digest;
  auto it = index.find(Sha1(body));
  return it == index.end() ? nullptr : it->second;
}

void RunScriptOnShard(const ScriptCall& call, ShardCtx& ctx) {
  ScriptRun run(call, ctx);
  call.script->run(run, ctx.rb);
  if (run.failed()) ctx.rb.Error(run.error());
}

}  // namespace deadbolt::server
