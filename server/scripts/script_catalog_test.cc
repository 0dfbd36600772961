#include "server/cmdtable/memory_limit.h"
#include "server/scripts/script_catalog.h"

#include <gtest/gtest.h>

#include <cctype>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "server/base/config.h"
#include "server/scripts/script_run.h"
#include "server/base/script_sha1.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

std::string Hex(std::string_view data) {
  auto h = Sha1Hex(Sha1(data));
  return std::string(h.data(), h.size());
}

TEST(Sha1Test, KnownVectors) {
  EXPECT_EQ(Hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(Hex(std::string(1000000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  // Around the padding boundaries (one or two final blocks).
  EXPECT_EQ(Hex(std::string(55, 'a')), "c1c8bbdc22796e28c0e15163d20899b65621d65a");
  EXPECT_EQ(Hex(std::string(56, 'a')), "c2db330f6083854c99d4b5bfb6e8f29f201be699");
  EXPECT_EQ(Hex(std::string(63, 'a')), "03f09f5b158a7a8cdad920bddc29b81c18a551f5");
  EXPECT_EQ(Hex(std::string(64, 'a')), "0098ba824b5c16427bd7a1122a5a442a25ec644d");
  EXPECT_EQ(Hex(std::string(119, 'a')), "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56");
  EXPECT_EQ(Hex(std::string(120, 'a')), "f34c1488385346a55709ba056ddd08280dd4c6d6");
}

TEST(Sha1Test, ParseHex) {
  Sha1Digest d;
  ASSERT_TRUE(ParseSha1Hex("A9993E364706816ABA3E25717850C26C9CD0D89D", &d));
  EXPECT_EQ(d, Sha1("abc"));
  EXPECT_FALSE(ParseSha1Hex("a9993e364706816aba3e25717850c26c9cd0d89", &d));    // 39
  EXPECT_FALSE(ParseSha1Hex("a9993e364706816aba3e25717850c26c9cd0d89d0", &d));  // 41
  EXPECT_FALSE(ParseSha1Hex("g9993e364706816aba3e25717850c26c9cd0d89d", &d));
  EXPECT_FALSE(ParseSha1Hex("", &d));
}

TEST(ScriptCatalogTest, EntriesAreWellFormed) {
  std::set<std::string_view> shas;
  ASSERT_GE(AllScripts().size(), 30u);
  for (const ScriptInfo& s : AllScripts()) {
    SCOPED_TRACE(std::string(s.sha));
    EXPECT_TRUE(shas.insert(s.sha).second) << "duplicate";
    ASSERT_EQ(s.sha.size(), 40u);
    for (char c : s.sha) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    auto hex = Sha1Hex(s.digest);
    EXPECT_EQ(std::string_view(hex.data(), hex.size()), s.sha);
    EXPECT_NE(s.run, nullptr);
    EXPECT_FALSE(s.client.empty());
    EXPECT_FALSE(s.name.empty());
    EXPECT_EQ(FindScriptBySha(s.sha), &s);
    std::string upper(s.sha);
    for (char& c : upper) c = static_cast<char>(std::toupper(c));
    EXPECT_EQ(FindScriptBySha(upper), &s);
  }
  EXPECT_EQ(FindScriptBySha(std::string(40, 'a')), nullptr);
  EXPECT_EQ(FindScriptBySha("c3f8721cbb97f72bc19e972846bd7aaf9190165"), nullptr);
  EXPECT_EQ(FindScriptBySha("not a sha"), nullptr);
}

// The classic compare-and-delete, as the Redis documentation gives it.
constexpr std::string_view kClassic =
    "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else "
    "return 0 end";

TEST(ScriptCatalogTest, FindByText) {
  const ScriptInfo* s = FindScriptByText(kClassic);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->sha, "b70c2384248f88e6b75b9f89241a180f856ad852");
  EXPECT_EQ(FindScriptByText(std::string(kClassic) + " "), nullptr);
  EXPECT_EQ(FindScriptByText("return 1"), nullptr);
  const ScriptInfo* docs = FindScriptByText(
      "if redis.call(\"get\",KEYS[1]) == ARGV[1]\nthen\n    return redis.call(\"del\",KEYS[1])\n"
      "else\n    return 0\nend\n");
  ASSERT_NE(docs, nullptr);
  EXPECT_EQ(docs->sha, "0df94f0c181d164030a056e556fe2176c70f0013");
}

// Which scripts a pipeline may run ahead of an earlier command (server/core/relay.cc): those
// whose effects are on their KEYS alone. Redisson's releases publish the unlock; scripts over
// several keys or shards are not single-key scripts.
TEST(ScriptCatalogTest, KeysOnly) {
  auto keys_only = [](std::string_view sha) {
    const ScriptInfo* s = FindScriptBySha(sha);
    EXPECT_NE(s, nullptr) << sha;
    return s != nullptr && s->keys_only;
  };
  EXPECT_TRUE(keys_only("b70c2384248f88e6b75b9f89241a180f856ad852"));   // compare-and-delete
  EXPECT_TRUE(keys_only("c3f8721cbb97f72bc19e972846bd7aaf91901658"));   // redis-py release
  EXPECT_TRUE(keys_only("e950836ed1e694540c503ef9972b8de518044d3b"));   // redsync delete
  EXPECT_TRUE(keys_only("149c5a8bf18676fd99e9e6e24923bd64d9b62f94"));   // Redisson acquire
  EXPECT_FALSE(keys_only("6866459238a13a701d42f4971f12d9f3a50e2442"));  // Redisson releases
  EXPECT_FALSE(keys_only("778cea8aada230ae060b432fc333adaec85f2f4c"));
  EXPECT_FALSE(keys_only("3ffe249c16dee540ac8ab32e39bd408626b9aff7"));
  EXPECT_FALSE(keys_only("43ebdb49120d170e08af560cb4e46e36f8585936"));  // semaphore acquire
  for (const ScriptInfo& s : AllScripts()) {
    if (s.keys_only) EXPECT_EQ(s.multi, nullptr) << s.sha;
  }
}

TEST(LuaNumberTest, Conversions) {
  double v;
  EXPECT_TRUE(LuaToNumber("12", &v));
  EXPECT_EQ(v, 12);
  EXPECT_TRUE(LuaToNumber(" 12 ", &v));
  EXPECT_EQ(v, 12);
  EXPECT_TRUE(LuaToNumber("0x10", &v));
  EXPECT_EQ(v, 16);
  EXPECT_TRUE(LuaToNumber("1e3", &v));
  EXPECT_EQ(v, 1000);
  EXPECT_TRUE(LuaToNumber("-2.5", &v));
  EXPECT_EQ(v, -2.5);
  EXPECT_FALSE(LuaToNumber("", &v));
  EXPECT_FALSE(LuaToNumber("abc", &v));
  EXPECT_FALSE(LuaToNumber("12abc", &v));
  EXPECT_FALSE(LuaToNumber(std::string(100, '1') + "x", &v));
  char buf[32];
  EXPECT_EQ(LuaNumberText(6000.0, buf), "6000");
  EXPECT_EQ(LuaNumberText(5001.5, buf), "5001.5");
  EXPECT_EQ(LuaNumberText(-1, buf), "-1");
  EXPECT_EQ(LuaNumberText(9223372036854775807.0, buf), "9.2233720368547758e+18");
  EXPECT_EQ(LuaNumberToInteger(1.9), 1);
  EXPECT_EQ(LuaNumberToInteger(-2.5), -2);
  EXPECT_EQ(LuaNumberToInteger(1e30), INT64_MIN);
  EXPECT_EQ(LuaNumberToInteger(std::numeric_limits<double>::infinity()), INT64_MIN);
  EXPECT_EQ(LuaNumberToInteger(std::numeric_limits<double>::quiet_NaN()), INT64_MIN);
}

// Runs catalogued scripts on one shard, as the shard handler does.
class ScriptRunTest : public ::testing::Test {
 protected:
  static constexpr int64_t kNow = 1'700'000'000'000;

  // EVALSHA sha numkeys args...: the raw RESP2 reply.
  std::string Eval(std::string_view sha, std::vector<std::string_view> keys,
                   std::vector<std::string_view> argv, bool read_only = false) {
    ScriptCall call;
    call.script = FindScriptBySha(sha);
    EXPECT_NE(call.script, nullptr) << sha;
    if (!call.script) return "";
    call.keys = CmdArgs(keys.data(), keys.size());
    call.argv = CmdArgs(argv.data(), argv.size());
    call.read_only = read_only;
    call.publish = &RecordPublish;
    std::string out;
    protocol::ReplyBuilder rb(&out, 2);
    ShardCtx ctx{shard_, shard_.db(0), 0, now_, config_, rb};
    RunScriptOnShard(call, ctx);
    return out;
  }

  static int64_t RecordPublish(bool shard_channel, std::string_view channel,
                               std::string_view message) {
    published_.push_back(std::string(shard_channel ? "S " : "P ") + std::string(channel) + " " +
                         std::string(message));
    return 0;
  }

  shard::Db& db() { return shard_.db(0); }
  void SetString(std::string_view k, std::string_view v, int64_t px = 0) {
    shard::SetOptions o;
    if (px) {
      o.expire = shard::SetOptions::Expire::kAt;
      o.expire_at_ms = now_ + px;
    }
    ASSERT_TRUE(db().Set(k, v, o, now_).ok());
  }
  std::string GetString(std::string_view k) {
    auto r = db().Get(k, now_);
    return r.ok() ? std::string(*r) : "(nil)";
  }

  shard::Shard shard_{0, 16};
  Config config_;
  int64_t now_ = kNow;
  static inline std::vector<std::string> published_;
};

constexpr std::string_view kPyRelease = "c3f8721cbb97f72bc19e972846bd7aaf91901658";
constexpr std::string_view kPyExtend = "a4e8783852e6b949f9ef3a97212805108459a890";
constexpr std::string_view kClassicSha = "b70c2384248f88e6b75b9f89241a180f856ad852";
constexpr std::string_view kRedsyncDelete = "e950836ed1e694540c503ef9972b8de518044d3b";
constexpr std::string_view kRedissonAcquire = "149c5a8bf18676fd99e9e6e24923bd64d9b62f94";
constexpr std::string_view kRedissonRelease = "6866459238a13a701d42f4971f12d9f3a50e2442";
constexpr std::string_view kRedissonRenew = "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635";
constexpr std::string_view kRedlockAcquire = "96da70f7716f27d278a5218544df37fd8b0a5e4c";
constexpr std::string_view kRedlockExtend = "aed6f382e410db8ba7926d4e5e9aab410bf2a78a";
constexpr std::string_view kRedlockRelease = "e4612211c9f8f51c257e26e056b0a654b3187242";
constexpr std::string_view kSesameAcquire = "1b77b94aa78451d55dfa97e18819bfbfc596cb5b";

TEST_F(ScriptRunTest, CompareAndDelete) {
  SetString("k", "tok");
  EXPECT_EQ(Eval(kPyRelease, {"k"}, {"other"}), ":0\r\n");
  EXPECT_EQ(GetString("k"), "tok");
  EXPECT_EQ(Eval(kPyRelease, {"k"}, {"tok"}), ":1\r\n");
  EXPECT_EQ(GetString("k"), "(nil)");
  EXPECT_EQ(Eval(kPyRelease, {"k"}, {"tok"}), ":0\r\n");
  EXPECT_EQ(Eval(kPyRelease, {"k"}, {}), ":0\r\n");  // ARGV[1] is nil
  ASSERT_TRUE(db().HSet("h", "f", "v", now_).ok());
  EXPECT_EQ(Eval(kPyRelease, {"h"}, {"tok"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of value script: "
            "c3f8721cbb97f72bc19e972846bd7aaf91901658, on @user_script:2.\r\n");
  EXPECT_EQ(Eval(kPyRelease, {}, {"tok"}),
            "-ERR Lua redis lib command arguments must be strings or integers script: "
            "c3f8721cbb97f72bc19e972846bd7aaf91901658, on @user_script:2.\r\n");
  SetString("k", "tok");
  EXPECT_EQ(Eval(kPyRelease, {"k"}, {"tok"}, /*read_only=*/true),
            "-ERR Write commands are not allowed from read-only scripts. script: "
            "c3f8721cbb97f72bc19e972846bd7aaf91901658, on @user_script:6.\r\n");
  EXPECT_EQ(GetString("k"), "tok");
  EXPECT_EQ(Eval(kClassicSha, {"k"}, {"tok"}), ":1\r\n");
  // redsync's delete tells a missing key (-1) from another owner (0).
  EXPECT_EQ(Eval(kRedsyncDelete, {"k"}, {"tok"}), ":-1\r\n");
  SetString("k", "mine");
  EXPECT_EQ(Eval(kRedsyncDelete, {"k"}, {"tok"}), ":0\r\n");
  EXPECT_EQ(Eval(kRedsyncDelete, {"k"}, {"mine"}), ":1\r\n");
}

TEST_F(ScriptRunTest, PyExtendArithmetic) {
  SetString("k", "tok", 5000);
  EXPECT_EQ(Eval(kPyExtend, {"k"}, {"tok", "1000", "0"}), ":1\r\n");
  EXPECT_EQ(db().Pttl("k", now_), 6000);
  EXPECT_EQ(Eval(kPyExtend, {"k"}, {"tok", "0x10", "0"}), ":1\r\n");  // Lua reads hex
  EXPECT_EQ(db().Pttl("k", now_), 6016);
  EXPECT_EQ(Eval(kPyExtend, {"k"}, {"tok", "100", "1"}), ":1\r\n");
  EXPECT_EQ(db().Pttl("k", now_), 100);
  EXPECT_EQ(Eval(kPyExtend, {"k"}, {"tok", "abc", "0"}),
            "-ERR user_script:16: attempt to perform arithmetic on field '?' (a string value) "
            "script: a4e8783852e6b949f9ef3a97212805108459a890, on @user_script:16.\r\n");
  EXPECT_EQ(Eval(kPyExtend, {"k"}, {"tok", "1.5", "0"}),
            "-ERR value is not an integer or out of range script: "
            "a4e8783852e6b949f9ef3a97212805108459a890, on @user_script:18.\r\n");
  SetString("p", "tok");  // no TTL: not extended
  EXPECT_EQ(Eval(kPyExtend, {"p"}, {"tok", "1000", "1"}), ":0\r\n");
}

TEST_F(ScriptRunTest, RedissonLockCycle) {
  published_.clear();
  EXPECT_EQ(Eval(kRedissonAcquire, {"L"}, {"30000", "id:1"}), "$-1\r\n");
  EXPECT_EQ(Eval(kRedissonAcquire, {"L"}, {"30000", "id:1"}), "$-1\r\n");  // re-entry
  EXPECT_EQ(Eval(kRedissonAcquire, {"L"}, {"30000", "id:2"}), ":30000\r\n");
  EXPECT_EQ(*db().HGet("L", "id:1", now_), "2");
  std::vector<std::string_view> release_keys = {"L", "redisson_lock__channel:{L}",
                                                "redisson_unlock_latch:{L}:r1"};
  std::vector<std::string_view> release_args = {"0", "30000", "id:1", "publish", "1000"};
  EXPECT_EQ(Eval(kRedissonRelease, release_keys, release_args), ":0\r\n");
  EXPECT_EQ(GetString("redisson_unlock_latch:{L}:r1"), "0");
  // A retried release reads the latch.
  EXPECT_EQ(Eval(kRedissonRelease, release_keys, release_args), ":0\r\n");
  release_keys[2] = "redisson_unlock_latch:{L}:r2";
  EXPECT_EQ(Eval(kRedissonRelease, release_keys, release_args), ":1\r\n");
  EXPECT_FALSE(db().Exists("L", now_));
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0], "P redisson_lock__channel:{L} 0");
  release_keys[2] = "redisson_unlock_latch:{L}:r3";
  EXPECT_EQ(Eval(kRedissonRelease, release_keys, release_args), "$-1\r\n");  // not the holder
  // SPUBLISH when ARGV[4] says so.
  EXPECT_EQ(Eval(kRedissonAcquire, {"L"}, {"30000", "id:1"}), "$-1\r\n");
  release_args[3] = "SPUBLISH";
  release_keys[2] = "redisson_unlock_latch:{L}:r4";
  EXPECT_EQ(Eval(kRedissonRelease, release_keys, release_args), ":1\r\n");
  ASSERT_EQ(published_.size(), 2u);
  EXPECT_EQ(published_[1], "S redisson_lock__channel:{L} 0");
}

// Over maxmemory a script's first write that may grow the data fails it, as in Redis; a write
// after one that ran goes through (it cannot be taken back), and releases run.
TEST_F(ScriptRunTest, OverMaxmemory) {
  MemoryLimit::SetOver(true);
  EXPECT_EQ(Eval(kRedissonAcquire, {"L"}, {"30000", "id:1"}),
            "-OOM command not allowed when used memory > 'maxmemory'. script: "
            "149c5a8bf18676fd99e9e6e24923bd64d9b62f94, on @user_script:1.\r\n");
  EXPECT_FALSE(db().Exists("L", now_));
  SetString("k", "mine", 1000);
  EXPECT_EQ(Eval(kClassicSha, {"k"}, {"mine"}), ":1\r\n");
  MemoryLimit::SetOver(false);
}

TEST_F(ScriptRunTest, RedissonRenewBatch) {
  ASSERT_TRUE(db().HSet("a", "id:1", "1", now_).ok());
  ASSERT_TRUE(db().HSet("b", "id:2", "1", now_).ok());
  EXPECT_EQ(Eval(kRedissonRenew, {"a", "b", "c"}, {"30000", "id:1", "id:1", "id:1"}),
            "*3\r\n:1\r\n:0\r\n:0\r\n");
  EXPECT_EQ(db().Pttl("a", now_), 30000);
  EXPECT_EQ(db().Pttl("b", now_), -1);
  SetString("s", "v");
  EXPECT_EQ(Eval(kRedissonRenew, {"a", "s"}, {"1000", "id:1", "id:1"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of value script: "
            "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635, on @user_script:1.\r\n");
  EXPECT_EQ(db().Pttl("a", now_), 1000);  // renewed before the error, as in Redis
  EXPECT_EQ(Eval(kRedissonRenew, {}, {"1000"}), "*0\r\n");
}

TEST_F(ScriptRunTest, RedlockOneShard) {
  EXPECT_EQ(Eval(kRedlockAcquire, {"r1", "r2"}, {"v", "10000"}), ":2\r\n");
  EXPECT_EQ(Eval(kRedlockAcquire, {"r2", "r3"}, {"w", "10000"}), ":0\r\n");
  EXPECT_FALSE(db().Exists("r3", now_));
  EXPECT_EQ(Eval(kRedlockExtend, {"r1", "r2"}, {"v", "20000"}), ":2\r\n");
  EXPECT_EQ(db().Pttl("r2", now_), 20000);
  EXPECT_EQ(Eval(kRedlockExtend, {"r1", "r2"}, {"w", "20000"}), ":0\r\n");
  EXPECT_EQ(Eval(kRedlockAcquire, {"r9"}, {"v", "0"}),
            "-ERR invalid expire time in 'set' command script: "
            "96da70f7716f27d278a5218544df37fd8b0a5e4c, on @user_script:11.\r\n");
  EXPECT_EQ(Eval(kRedlockRelease, {"r1", "r1", "r2", "zz"}, {"v"}), ":2\r\n");
  EXPECT_FALSE(db().Exists("r1", now_));
  // @sesamecare-oss/redlock SELECTs the database in ARGV[1].
  EXPECT_EQ(Eval(kSesameAcquire, {"s1"}, {"3", "v", "1000"}), ":1\r\n");
  EXPECT_FALSE(db().Exists("s1", now_));
  EXPECT_TRUE(shard_.db(3).Exists("s1", now_));
  EXPECT_EQ(Eval(kSesameAcquire, {"s1"}, {"99", "v", "1000"}), ":1\r\n");  // no such db: 0
  EXPECT_TRUE(db().Exists("s1", now_));
}

constexpr std::string_view kSemAcquire = "43ebdb49120d170e08af560cb4e46e36f8585936";
constexpr std::string_view kMultiSemRelease = "0bd1010c98f1ddd70a6024fd374489a8ea3d2c12";

// Scripts whose redis.call()s run through the command handlers (ScriptRun::Call).
TEST_F(ScriptRunTest, SemaphoreThroughCommandHandlers) {
  EXPECT_EQ(Eval(kSemAcquire, {"s"}, {"2", "a", "500", "1000"}), ":1\r\n");
  EXPECT_EQ(Eval(kSemAcquire, {"s"}, {"2", "b", "500", "1001"}), ":1\r\n");
  EXPECT_EQ(Eval(kSemAcquire, {"s"}, {"2", "c", "500", "1002"}), ":0\r\n");
  EXPECT_EQ(*db().ZCard("s", now_), 2);
  EXPECT_EQ(db().Pttl("s", now_), 500);
  EXPECT_EQ(Eval(kSemAcquire, {"s"}, {"2", "c", "500", "1501"}), ":1\r\n");  // a, b expired
  EXPECT_EQ(*db().ZScore("s", "c", now_), std::optional<double>(1501));
  EXPECT_EQ(Eval(kSemAcquire, {"s"}, {"2", "d", "500", "1501"}, /*read_only=*/true),
            "-ERR Write commands are not allowed from read-only scripts. script: "
            "43ebdb49120d170e08af560cb4e46e36f8585936, on @user_script:9.\r\n");
  EXPECT_EQ(Eval(kSemAcquire, {"s"}, {"2", "d", "500"}),
            "-ERR user_script:7: attempt to perform arithmetic on local 'now' (a nil value) "
            "script: 43ebdb49120d170e08af560cb4e46e36f8585936, on @user_script:7.\r\n");
  SetString("str", "v");
  EXPECT_EQ(Eval(kSemAcquire, {"str"}, {"2", "d", "500", "1"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of value script: "
            "43ebdb49120d170e08af560cb4e46e36f8585936, on @user_script:9.\r\n");
  EXPECT_EQ(Eval(kMultiSemRelease, {"s"}, {"0", "c"}),
            "-ERR Wrong number of args calling Redis command from script script: "
            "0bd1010c98f1ddd70a6024fd374489a8ea3d2c12, on @user_script:11.\r\n");
}

}  // namespace
}  // namespace deadbolt::server
