#include "server/cmdtable/restart_delay.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/config.h"
#include "server/scripts/script_catalog.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

// An injected clock: unix ms, as the reactor's now_ms.
constexpr int64_t kSince = 1'700'000'000'000;
constexpr int64_t kDelay = 10'000;

TEST(RestartDelayTest, RemainingCountsDownFromStart) {
  RestartDelay d{kSince, kDelay};
  EXPECT_EQ(d.RemainingMs(kSince), kDelay);
  EXPECT_EQ(d.RemainingMs(kSince + 1), kDelay - 1);
  EXPECT_EQ(d.RemainingMs(kSince + kDelay - 1), 1);
  EXPECT_EQ(d.RemainingMs(kSince + kDelay), 0);
  EXPECT_EQ(d.RemainingMs(kSince + 100 * kDelay), 0);
  // A clock that went back before the start makes the wait longer, never shorter.
  EXPECT_EQ(d.RemainingMs(kSince - 5000), kDelay);
}

TEST(RestartDelayTest, OffByDefault) {
  RestartDelay off;
  EXPECT_EQ(off.RemainingMs(0), 0);
  EXPECT_EQ(off.RemainingMs(kSince), 0);
  RestartDelay zero{kSince, 0};
  EXPECT_EQ(zero.RemainingMs(kSince), 0);
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  for (size_t start = 0;;) {
    size_t end = line.find(' ', start);
    words.push_back(line.substr(start, end - start));
    if (end == std::string_view::npos) return words;
    start = end + 1;
  }
}

// The refusal of `line` (space-separated arguments) at `now`, or "" when it may run.
std::string Refusal(const RestartDelay& d, std::string_view line, int64_t now) {
  std::vector<std::string_view> args = Words(line);
  const CommandSpec* spec = CommandTable::Get().Find(args[0]);
  EXPECT_NE(spec, nullptr) << line;
  if (!spec) return "no such command";
  EXPECT_TRUE(spec->ArityOk(args.size())) << line;  // the gate runs after the arity check
  auto r = RestartDelayRefusal(d, *spec, CmdArgs(args.data(), args.size()), now);
  return r ? *r : "";
}

TEST(RestartDelayTest, ErrorSaysHowLongAgoAndHowLongMore) {
  RestartDelay d{kSince, kDelay};
  EXPECT_EQ(Refusal(d, "set lock tok NX PX 30000", kSince + 1234),
            "TRYAGAIN deadbolt restarted 1234 ms ago; lock acquisitions are refused for 8766 ms "
            "more (--restart-delay 10000)");
  EXPECT_EQ(Refusal(d, "SETNX lock tok", kSince),
            "TRYAGAIN deadbolt restarted 0 ms ago; lock acquisitions are refused for 10000 ms "
            "more (--restart-delay 10000)");
  EXPECT_EQ(Refusal(d, "SETNX lock tok", kSince + kDelay - 1),
            "TRYAGAIN deadbolt restarted 9999 ms ago; lock acquisitions are refused for 1 ms "
            "more (--restart-delay 10000)");
}

// The catalogue's scripts by SHA1 (tests/e2e/test_scripts.py names them).
constexpr std::string_view kRedissonAcquire = "149c5a8bf18676fd99e9e6e24923bd64d9b62f94";
constexpr std::string_view kRedissonAcquire3x = "dad0f8d619e548e04f21fb48d50be5034df3adae";
constexpr std::string_view kRedissonAcquireHSet = "9401052d872adfd0179ef8c8e8c028512707629a";
constexpr std::string_view kRedsyncTouchNx = "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79";
constexpr std::string_view kRedlock4Acquire = "e5a322e2634ef59a516e8ea150cb085afafee684";
constexpr std::string_view kRedlock5Acquire = "96da70f7716f27d278a5218544df37fd8b0a5e4c";
constexpr std::string_view kSesameAcquire = "1b77b94aa78451d55dfa97e18819bfbfc596cb5b";
constexpr std::string_view kPyRelease = "c3f8721cbb97f72bc19e972846bd7aaf91901658";
constexpr std::string_view kPyExtend = "a4e8783852e6b949f9ef3a97212805108459a890";
constexpr std::string_view kRedissonRelease = "6866459238a13a701d42f4971f12d9f3a50e2442";
constexpr std::string_view kRedissonRenew = "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635";
constexpr std::string_view kRedsyncTouch = "d75bb8b5bd13532ddedd17762e772346e39b321e";
constexpr std::string_view kRedlock4Release = "0f0f23b9048b36752b5be114f357ba083449f908";
constexpr std::string_view kRedlock4Extend = "ce46f80993d5dac20dd066eb301a4e37994bdbed";

std::string Evalsha(std::string_view sha, std::string_view rest) {
  return "EVALSHA " + std::string(sha) + " " + std::string(rest);
}

TEST(RestartDelayTest, RefusesEveryWayToTakeALockWhileItRuns) {
  RestartDelay d{kSince, kDelay};
  const std::vector<std::string> refused = {
      "SET lock tok NX PX 30000",
      "SET lock tok",
      "SET lock tok XX",
      "SET lock tok IFEQ tok PX 5",
      "SET lock tok GET",
      "SETNX lock tok",
      "SETEX lock 30 tok",
      "PSETEX lock 30000 tok",
      "GETSET lock tok",
      "MSET a 1 b 2",
      "MSETNX a 1 b 2",
      "APPEND lock tok",
      "SETRANGE lock 0 x",
      "INCR n",
      "INCRBY n 2",
      "DECR n",
      "DECRBY n 2",
      "INCRBYFLOAT n 1.5",
      "HSET h f v",
      "HMSET h f v",
      "HSETNX h f v",
      "HINCRBY h f 1",
      "HINCRBYFLOAT h f 1.5",
      "COPY a b",
      "RENAME a b",
      "RENAMENX a b",
      "LOCK.ACQUIRE lock me 30000",
      "LOCK.ACQUIRE lock me 30000 WAIT 1000 REENTRANT",
      Evalsha(kRedissonAcquire, "1 lock 30000 id:1"),
      Evalsha(kRedissonAcquire3x, "1 lock 30000 id:1"),
      Evalsha(kRedissonAcquireHSet, "1 lock 30000 id:1"),
      Evalsha(kRedsyncTouchNx, "1 lock tok 30000"),
      Evalsha(kRedlock4Acquire, "2 a b tok 30000"),
      Evalsha(kRedlock5Acquire, "1 a tok 30000"),
      Evalsha(kSesameAcquire, "1 a 0 tok 30000"),
      // Any case of the SHA1, as EVALSHA takes it.
      "evalsha 149C5A8BF18676FD99E9E6E24923BD64D9B62F94 1 lock 30000 id:1",
      // Any script the catalogue does not know runs in Lua, which may create keys.
      "EVAL return 0",
  };
  for (const std::string& line : refused) {
    SCOPED_TRACE(line);
    EXPECT_EQ(Refusal(d, line, kSince + 1).rfind("TRYAGAIN ", 0), 0u);
    EXPECT_EQ(Refusal(d, line, kSince + kDelay - 1).rfind("TRYAGAIN ", 0), 0u);
    // Once the delay is over, the same calls run.
    EXPECT_EQ(Refusal(d, line, kSince + kDelay), "");
    // And without --restart-delay they always do.
    EXPECT_EQ(Refusal(RestartDelay{kSince, 0}, line, kSince + 1), "");
  }
}

TEST(RestartDelayTest, ReleasesExtensionsDeletesAndReadsKeepWorking) {
  RestartDelay d{kSince, kDelay};
  const std::vector<std::string> allowed = {
      "GET lock",
      "MGET a b",
      "PTTL lock",
      "EXISTS lock",
      "DEL lock",
      "UNLINK a b",
      "DELIFEQ lock tok",
      "DELEX lock IFEQ tok",
      "EXPIRE lock 30",
      "PEXPIRE lock 30000",
      "PEXPIREAT lock 1",
      "PERSIST lock",
      "GETDEL lock",
      "GETEX lock PX 100",
      "HDEL h f",
      "HGET h f",
      "LOCK.RELEASE lock me",
      "LOCK.EXTEND lock me 30000",
      "LOCK.INFO lock",
      "PING",
      "MULTI",
      "EXEC",
      "DISCARD",
      "WATCH lock",
      "FLUSHALL",
      "PUBLISH ch msg",
      "INFO",
      Evalsha(kPyRelease, "1 lock tok"),
      Evalsha(kPyExtend, "1 lock tok 1000 1"),
      Evalsha(kRedissonRelease, "3 lock ch latch msg 30000 id:1 publish 1000"),
      Evalsha(kRedissonRenew, "2 a b 30000 id:1 id:1"),
      Evalsha(kRedsyncTouch, "1 lock tok 30000"),
      Evalsha(kRedlock4Release, "2 a b tok"),
      Evalsha(kRedlock4Extend, "2 a b tok 30000"),
      // Read-only forms never write; a SHA1 nobody loaded runs nothing (NOSCRIPT).
      "EVALSHA_RO " + std::string(kRedissonAcquire) + " 1 lock 30000 id:1",
      Evalsha(std::string(40, 'a'), "1 lock tok"),
      "EVALSHA notasha 0",
      "EVAL_RO return 0",
  };
  for (const std::string& line : allowed) {
    SCOPED_TRACE(line);
    EXPECT_EQ(Refusal(d, line, kSince + 1), "");
  }
}

TEST(RestartDelayTest, EvalIsJudgedByItsScriptText) {
  RestartDelay d{kSince, kDelay};
  // Redisson's 3.1x acquire, as seed 004 quotes it (the catalogue knows it by this text's SHA1).
  const std::string acquire =
      "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); "
      "redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (redis.call('hexists', "
      "KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); "
      "redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', "
      "KEYS[1]);";
  const std::string release =
      "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else "
      "return 0 end";
  ASSERT_NE(FindScriptByText(acquire), nullptr);
  ASSERT_NE(FindScriptByText(release), nullptr);
  auto refusal = [&](const std::string& body, int64_t now) {
    std::vector<std::string_view> args = {"eval", body, "1", "lock", "30000", "id:1"};
    return RestartDelayRefusal(d, *CommandTable::Get().Find("eval"),
                               CmdArgs(args.data(), args.size()), now);
  };
  EXPECT_TRUE(refusal(acquire, kSince + 1).has_value());
  EXPECT_FALSE(refusal(acquire, kSince + kDelay).has_value());
  EXPECT_FALSE(refusal(release, kSince + 1).has_value());
}

// Which commands may create a key: the whole table, so a new command has to be placed.
TEST(RestartDelayTest, CommandTableSaysWhichCommandsMayCreateAKey) {
  const std::set<std::string> may_create = {
      "set", "setnx", "setex", "psetex", "getset", "mset", "msetnx", "append", "setrange", "incr",
      "decr", "incrby", "decrby", "incrbyfloat", "hset", "hmset", "hsetnx", "hincrby",
      "hincrbyfloat", "copy", "rename", "renamenx", "lock.acquire", "eval", "evalsha", "fcall",
      "zadd", "zincrby", "zrangestore", "zunionstore", "zinterstore",
      // Lists and sets (issue 13): every denyoom one (LSET and LINSERT, as Redis marks them,
      // though they never create), and SMOVE, which creates its destination.
      "lpush", "rpush", "lpushx", "rpushx", "lset", "linsert", "lmove", "rpoplpush", "sadd",
      "smove", "sinterstore", "sunionstore", "sdiffstore", "blmove", "brpoplpush", "setbit",
      "bitop", "bitfield", "zdiffstore",
      // HyperLogLogs (PFDEBUG is denyoom in Redis; it never creates).
      "pfadd", "pfmerge", "pfdebug",
      // MOVE creates the key in the other database.
      "move",
      // Geo: GEOADD, and the searches that may store.
      "geoadd", "georadius", "georadiusbymember", "geosearchstore",
      // SORT ... STORE.
      "sort",
      // RESTORE (and RESTORE-ASKING, its cluster twin) creates its key.
      "restore", "restore-asking",
      // Streams: XADD creates its key; XSETID is denyoom in Redis, though it never creates.
      "xadd", "xsetid",
      // XGROUP CREATE ... MKSTREAM (per call: CommandSpec::may_create).
      "xgroup"};
  // Writes that only change or remove keys that exist (or send messages).
  const std::set<std::string> writes_that_never_create = {"del",
                                                          "unlink",
                                                          "expire",
                                                          "pexpire",
                                                          "expireat",
                                                          "pexpireat",
                                                          "persist",
                                                          "getdel",
                                                          "getex",
                                                          "hdel",
                                                          "delifeq",
                                                          "delex",
                                                          "lock.release",
                                                          "lock.extend",
                                                          "flushdb",
                                                          "flushall",
                                                          "zrem",
                                                          "zremrangebyscore",
                                                          "zremrangebyrank",
                                                          "zremrangebylex",
                                                          "zpopmin",
                                                          "zpopmax",
                                                          "lpop",
                                                          "rpop",
                                                          "lrem",
                                                          "ltrim",
                                                          "srem",
                                                          "spop",
                                                          "blpop",
                                                          "brpop",
                                                          "bzpopmin",
                                                          "bzpopmax",
                                                          "lmpop",
                                                          "blmpop",
                                                          "zmpop",
                                                          "bzmpop",
                                                          "xdel",
                                                          "xtrim",
                                                          "xreadgroup",
                                                          "xack",
                                                          "xclaim",
                                                          "xautoclaim"};
  std::set<std::string> got_may_create, got_other_writes;
  for (const CommandSpec& s : CommandTable::Get().All()) {
    SCOPED_TRACE(s.name);
    if (s.flags & kMayCreate) {
      got_may_create.insert(s.name);
    } else if (s.flags & kWrite) {
      got_other_writes.insert(s.name);
    }
    // Every denyoom command (Redis's mark for "may grow memory") may create a key.
    if (s.flags & kDenyOom) {
      EXPECT_TRUE(s.flags & kMayCreate);
    }
    if (s.may_create) {
      EXPECT_TRUE(s.flags & kMayCreate);
    }
  }
  EXPECT_EQ(got_may_create, may_create);
  EXPECT_EQ(got_other_writes, writes_that_never_create);
}

// ScriptInfo::acquires against what each script does: run on an empty keyspace (all a server
// without persistence has after a restart, and keeps while the delay refuses everything that
// creates a key), a script that acquires creates a key, and no other script ever does.
TEST(RestartDelayTest, OnlyAcquiringScriptsCreateKeysOnAnEmptyKeyspace) {
  // Arguments in the shapes the clients send: lease + field (Redisson acquire, renew), token +
  // ms (node-redlock, redsync), db + token + ms (@sesamecare-oss/redlock), token + ms + mode
  // (redis-py extend), message + lease + field + command + latch ms (Redisson release), lease +
  // fields (Redisson's batched renewal), limit + id + timeout + now (redis-semaphore's
  // Semaphore), limit + permits + id + timeout + now (its MultiSemaphore).
  const std::vector<std::vector<std::string_view>> argvs = {
      {"30000", "id:1"},
      {"tok", "30000"},
      {"0", "tok", "30000"},
      {"tok", "30000", "1"},
      {"tok", "30000", "0"},
      {"msg", "30000", "id:1", "publish", "1000"},
      {"30000", "id:1", "id:1", "id:1"},
      {"3", "id", "30000", "1000"},
      {"3", "1", "id", "30000", "1000"},
      {}};
  const std::vector<std::string_view> keys = {"lock", "redisson_lock__channel:{lock}",
                                              "redisson_unlock_latch:{lock}:1"};
  Config config;
  int acquiring = 0;
  for (const ScriptInfo& script : AllScripts()) {
    SCOPED_TRACE(std::string(script.client) + " " + std::string(script.name));
    bool created = false;
    for (const auto& argv : argvs) {
      shard::Shard shard(0, 16);
      ScriptCall call;
      call.script = &script;
      call.keys = CmdArgs(keys.data(), keys.size());
      call.argv = CmdArgs(argv.data(), argv.size());
      call.publish = [](bool, std::string_view, std::string_view) -> int64_t { return 0; };
      std::string out;
      protocol::ReplyBuilder rb(&out, 2);
      ShardCtx ctx{shard, shard.db(0), 0, kSince, config, rb};
      RunScriptOnShard(call, ctx);
      size_t n = 0;
      // Redisson's read-write lock releases write their unlock latch even when the lock is
      // free (a retried unlock reads it): a latch is no lock, so it does not count.
      for (int db = 0; db < shard.num_dbs(); db++) {
        n += shard.db(db).Size() - (shard.db(db).Exists(keys[2], kSince) ? 1 : 0);
      }
      if (n > 0) created = true;
    }
    EXPECT_EQ(created, script.acquires);
    if (script.acquires) acquiring++;
  }
  // Redisson RLock x3, redsync's touch with SET NX, node-redlock x3, redis-semaphore's acquires
  // x2, Redisson's read and write acquire, fenced acquire x2, fair lock acquire x2, semaphore
  // release / trySetPermits / addPermits, count-down latch trySetCount, permit-expirable
  // semaphore addPermits / setPermits.
  EXPECT_EQ(acquiring, 21);
}

TEST(RestartDelayTest, ConfigFlag) {
  Config c;
  EXPECT_EQ(c.restart_delay_ms, 0);
  std::vector<std::string> args = {"deadbolt-server", "--restart-delay", "15000"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  EXPECT_EQ(Config::ParseArgs(static_cast<int>(argv.size()), argv.data(), &c), std::nullopt);
  EXPECT_EQ(c.restart_delay_ms, 15000);
  auto got = c.Get("restart-delay");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].second, "15000");
  // Fixed at start: the delay counts from then.
  ASSERT_TRUE(c.Set("restart-delay", "0").has_value());
  EXPECT_EQ(c.restart_delay_ms, 15000);
  std::vector<std::string> bad = {"deadbolt-server", "--restart-delay", "-1"};
  std::vector<char*> bad_argv;
  for (auto& a : bad) bad_argv.push_back(a.data());
  Config c2;
  EXPECT_NE(Config::ParseArgs(static_cast<int>(bad_argv.size()), bad_argv.data(), &c2),
            std::nullopt);
  EXPECT_NE(Config::Usage().find("--restart-delay MS"), std::string::npos);
}

}  // namespace
}  // namespace deadbolt::server
