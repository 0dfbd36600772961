#include "server/lua/lua_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "server/base/config.h"
#include "server/cmdtable/script_busy.h"
#include "server/base/script_sha1.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

// Runs scripts on one shard, as EVAL does, and returns their RESP replies.
class LuaEngineTest : public ::testing::Test {
 protected:
  std::string Eval(std::string_view body, std::vector<std::string_view> keys = {},
                   std::vector<std::string_view> argv = {}, int resp = 2, bool read_only = false,
                   int shard_index = -1) {
    const auto hex = Sha1Hex(Sha1(body));
    LuaCall call;
    call.sha = std::string_view(hex.data(), hex.size());
    call.body = body;
    call.keys = CmdArgs(keys.data(), keys.size());
    call.argv = CmdArgs(argv.data(), argv.size());
    call.read_only = read_only;
    call.shard = shard_index;
    std::string out;
    protocol::ReplyBuilder rb(&out, resp);
    ShardCtx ctx{shard_, shard_.db(0), 0, 1000, config_, rb};
    last_ = LuaEngine::ForThisThread().Run(call, ctx);
    return out;
  }
  std::string Sha(std::string_view body) {
    const auto hex = Sha1Hex(Sha1(body));
    return std::string(hex.data(), hex.size());
  }

  shard::Shard shard_{0, 1};
  Config config_;
  LuaOutcome last_;
};

TEST_F(LuaEngineTest, ConvertsValuesAsRedis) {
  EXPECT_EQ(Eval("return 3.99"), ":3\r\n");
  EXPECT_EQ(Eval("return -3.99"), ":-3\r\n");
  EXPECT_EQ(Eval("return 'x'"), "$1\r\nx\r\n");
  EXPECT_EQ(Eval("return true"), ":1\r\n");
  EXPECT_EQ(Eval("return false"), "$-1\r\n");
  EXPECT_EQ(Eval("return nil", {}, {}, 3), "_\r\n");
  EXPECT_EQ(Eval("return {1, 2, nil, 4}"), "*2\r\n:1\r\n:2\r\n");
  EXPECT_EQ(Eval("return {1, {2, {'a'}}}"), "*2\r\n:1\r\n*2\r\n:2\r\n*1\r\n$1\r\na\r\n");
  EXPECT_EQ(Eval("return {ok='FINE'}"), "+FINE\r\n");
  EXPECT_EQ(Eval("return {err='CODE msg'}"), "-CODE msg\r\n");
  EXPECT_TRUE(last_.failed);
  EXPECT_EQ(Eval("return {double=1.5}", {}, {}, 3), ",1.5\r\n");
  EXPECT_EQ(Eval("return {map={a=1}}", {}, {}, 3), "%1\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(Eval("return {map={a=1}}", {}, {}, 2), "*2\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(Eval("return {set={a=true}}", {}, {}, 3), "~1\r\n$1\r\na\r\n");
  // A table holding itself: arrays nested until Lua's stack limit, then Redis's error there
  // (the same 32010 bytes redis-server 7.0 sends).
  const std::string deep = Eval("local t = {} t[1] = t return t");
  EXPECT_EQ(deep.size(), 32010u);
  EXPECT_EQ(deep.substr(0, 8), "*1\r\n*1\r\n");
  EXPECT_EQ(deep.substr(deep.size() - 30), "-ERR reached lua stack limit\r\n");
  // setresp(3): booleans become RESP3 booleans.
  EXPECT_EQ(Eval("redis.setresp(3) return false", {}, {}, 3), "#f\r\n");
}

TEST_F(LuaEngineTest, KeysArgvAndRedisCall) {
  EXPECT_EQ(Eval("return {KEYS[1], ARGV[1], #KEYS, #ARGV}", {"k"}, {"a", "b"}),
            "*4\r\n$1\r\nk\r\n$1\r\na\r\n:1\r\n:2\r\n");
  EXPECT_EQ(Eval("return redis.call('SET', KEYS[1], ARGV[1])", {"k"}, {"v"}), "+OK\r\n");
  EXPECT_TRUE(last_.wrote);
  EXPECT_EQ(Eval("return redis.call('GET', KEYS[1])", {"k"}), "$1\r\nv\r\n");
  EXPECT_FALSE(last_.wrote);
  EXPECT_EQ(Eval("return redis.call('GET', KEYS[1]) == false", {"missing"}), ":1\r\n");
  // Numbers go to commands as Redis 7.0 writes them ("%.17g").
  EXPECT_EQ(Eval("redis.call('SET', KEYS[1], 7) return redis.call('GET', KEYS[1])", {"n"}),
            "$1\r\n7\r\n");
  // RESP3 replies under setresp(3).
  Eval("return redis.call('HSET', KEYS[1], 'f', 'v')", {"h"});
  EXPECT_EQ(Eval("redis.setresp(3) return redis.call('HGETALL', KEYS[1]).map.f", {"h"}),
            "$1\r\nv\r\n");
}

TEST_F(LuaEngineTest, UndeclaredKeysAreRefused) {
  const std::string body = "return redis.call('GET', 'other')";
  EXPECT_EQ(Eval(body, {"k"}), "-ERR script tried accessing undeclared key, key: other script: " +
                                   Sha(body) + ", on @user_script:1.\r\n");
  const std::string mget = "return redis.pcall('MGET', KEYS[1], 'x')";
  EXPECT_EQ(Eval(mget, {"k"}), "-ERR script tried accessing undeclared key, key: x\r\n");
}

TEST_F(LuaEngineTest, ErrorsCarryTheScriptAndLine) {
  const std::string body = "local a = 1\nreturn a + nil_value";
  EXPECT_EQ(Eval(body),
            "-ERR user_script:2: Script attempted to access nonexistent global variable "
            "'nil_value' script: " + Sha(body) + ", on @user_script:2.\r\n");
  const std::string global = "x = 1";
  EXPECT_EQ(Eval(global), "-ERR user_script:1: Attempt to modify a readonly table script: " +
                              Sha(global) + ", on @user_script:1.\r\n");
  EXPECT_EQ(Eval("return 1 +"),
            "-ERR Error compiling script (new function): user_script:1: unexpected symbol near "
            "'<eof>'\r\n");
  const std::string ro = "return redis.call('SET', KEYS[1], 'x')";
  EXPECT_EQ(Eval(ro, {"k"}, {}, 2, true),
            "-ERR Write commands are not allowed from read-only scripts. script: " + Sha(ro) +
                ", on @user_script:1.\r\n");
}

TEST_F(LuaEngineTest, SandboxHidesFilesAndKeepsLibrariesIntact) {
  for (const char* name : {"os", "io", "loadfile", "dofile", "require", "debug", "print"}) {
    const std::string body = std::string("return ") + name;
    EXPECT_NE(Eval(body).find("nonexistent global variable"), std::string::npos) << name;
  }
  EXPECT_NE(Eval("redis.call = nil").find("readonly table"), std::string::npos);
  // rawset into the globals' view does not outlive the script.
  Eval("rawset(_G, 'leak', 1)");
  EXPECT_NE(Eval("return leak").find("nonexistent global variable 'leak'"), std::string::npos);
  EXPECT_EQ(Eval("return redis.call('SET', KEYS[1], 'ok')", {"k"}), "+OK\r\n");
}

TEST_F(LuaEngineTest, Libraries) {
  EXPECT_EQ(Eval("return cjson.encode(cjson.decode('[1,\"a\"]'))"), "$7\r\n[1,\"a\"]\r\n");
  EXPECT_EQ(Eval("return bit.bxor(5, 3)"), ":6\r\n");
  EXPECT_EQ(Eval("return {struct.unpack('>i2 c3', struct.pack('>i2 c3', -2, 'abc'))}"),
            "*3\r\n:-2\r\n$3\r\nabc\r\n:6\r\n");
  EXPECT_EQ(Eval("return struct.size('<!4 b i4')"), ":8\r\n");
  EXPECT_EQ(Eval("local t = cmsgpack.unpack(cmsgpack.pack({1, -200, 'x', {a=70000}}))\n"
                 "return {t[1], t[2], t[3], t[4].a}"),
            "*4\r\n:1\r\n:-200\r\n$1\r\nx\r\n:70000\r\n");
  EXPECT_EQ(Eval("return #cmsgpack.pack(1.5)"), ":5\r\n");  // a float32
  EXPECT_EQ(Eval("return redis.sha1hex('abc')"),
            "$40\r\na9993e364706816aba3e25717850c26c9cd0d89d\r\n");
}

TEST_F(LuaEngineTest, EvalshaNeedsTheText) {
  const std::string body = "return 'cached'";
  LuaScriptCache::Flush();
  LuaCall call;
  const std::string sha = Sha(body);
  call.sha = sha;
  call.by_sha = true;
  std::string out;
  protocol::ReplyBuilder rb(&out, 2);
  ShardCtx ctx{shard_, shard_.db(0), 0, 1000, config_, rb};
  LuaEngine::ForThisThread().Run(call, ctx);
  EXPECT_EQ(out, "-NOSCRIPT No matching script. Please use EVAL.\r\n");
  LuaScriptCache::Store(sha, body);
  out.clear();
  LuaEngine::ForThisThread().Run(call, ctx);
  EXPECT_EQ(out, "$6\r\ncached\r\n");
  LuaScriptCache::Flush();
  EXPECT_FALSE(LuaScriptCache::Exists(sha));
  out.clear();
  LuaEngine::ForThisThread().Run(call, ctx);  // this thread's compiled copy is gone too
  EXPECT_EQ(out, "-NOSCRIPT No matching script. Please use EVAL.\r\n");
}

TEST_F(LuaEngineTest, ScriptKillStopsALongScript) {
  config_.busy_reply_threshold_ms = 0;
  constexpr int kShard = 7;
  std::atomic<bool> done{false};
  std::thread killer([&] {
    while (!done.load()) {
      if (ScriptBusy::Get().busy(kShard) &&
          ScriptBusy::Get().RequestKill() == ScriptBusy::Kill::kKilled) {
        return;
      }
      std::this_thread::yield();
    }
  });
  const std::string body = "while true do pcall(function() end) end";
  const std::string out = Eval(body, {}, {}, 2, false, kShard);
  done = true;
  killer.join();
  EXPECT_EQ(out, "-ERR Script killed by user with SCRIPT KILL... script: " + Sha(body) +
                     ", on @user_script:1.\r\n");
  EXPECT_TRUE(last_.killed);
  EXPECT_FALSE(ScriptBusy::Get().busy(kShard));
  EXPECT_EQ(ScriptBusy::Get().RequestKill(), ScriptBusy::Kill::kNotBusy);
}

TEST_F(LuaEngineTest, LuaMemoryLimitStopsAScriptThatGrowsWithoutEnd) {
  config_.lua_memory_limit = 16 << 20;
  // Doubling a string: past 16 MB the next allocation is refused, and the script fails.
  EXPECT_EQ(Eval("local s = 'x' for i = 1, 40 do s = s .. s end return #s"),
            "-ERR not enough memory\r\n");
  EXPECT_TRUE(last_.failed);
  // pcall inside the script sees the same error.
  EXPECT_EQ(Eval("local ok, e = pcall(string.rep, 'x', 32 * 1024 * 1024) return e"),
            "$17\r\nnot enough memory\r\n");
  // What the failed scripts built is gone: a script using much of the limit still runs.
  EXPECT_EQ(Eval("return #string.rep('x', 4 * 1024 * 1024)"), ":4194304\r\n");
  config_.lua_memory_limit = 0;  // no limit
  EXPECT_EQ(Eval("return #string.rep('x', 32 * 1024 * 1024)"), ":33554432\r\n");
}

TEST(ScriptBusyTest, AScriptThatWroteIsUnkillable) {
  ScriptBusy& b = ScriptBusy::Get();
  constexpr int kShard = 9;
  b.Clear(kShard);
  EXPECT_FALSE(b.busy(kShard));
  b.MarkBusy(kShard, false);
  EXPECT_TRUE(b.any());
  b.MarkWrote(kShard);
  EXPECT_EQ(b.RequestKill(), ScriptBusy::Kill::kUnkillable);
  EXPECT_FALSE(b.kill_requested(kShard));
  b.Clear(kShard);
  EXPECT_FALSE(b.any());
  b.MarkBusy(kShard, false);
  EXPECT_EQ(b.RequestKill(), ScriptBusy::Kill::kKilled);
  EXPECT_TRUE(b.kill_requested(kShard));
  b.Clear(kShard);
  EXPECT_FALSE(b.kill_requested(kShard));
}

TEST(ScriptBusyTest, EachKillStopsItsOwnKind) {
  // As Redis: SCRIPT KILL does not stop a function, nor FUNCTION KILL an EVAL script; the BUSY
  // text names the KILL that would.
  ScriptBusy& b = ScriptBusy::Get();
  constexpr int kShard = 10;
  b.Clear(kShard);
  b.MarkBusy(kShard, /*function=*/true);
  EXPECT_EQ(b.busy_error(), errors::kBusyFunction);
  EXPECT_EQ(b.RequestKill(/*function=*/false), ScriptBusy::Kill::kWrongKind);
  EXPECT_FALSE(b.kill_requested(kShard));
  EXPECT_EQ(b.RequestKill(/*function=*/true), ScriptBusy::Kill::kKilled);
  b.Clear(kShard);
  b.MarkBusy(kShard, /*function=*/false);
  EXPECT_EQ(b.busy_error(), errors::kBusyScript);
  EXPECT_EQ(b.RequestKill(/*function=*/true), ScriptBusy::Kill::kWrongKind);
  EXPECT_EQ(b.RequestKill(/*function=*/false), ScriptBusy::Kill::kKilled);
  b.Clear(kShard);
}

}  // namespace
}  // namespace deadbolt::server
