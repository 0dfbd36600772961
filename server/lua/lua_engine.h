#pragma once
// The embedded Lua 5.1 that runs every script the native catalogue does not know
// (server/scripts/script_catalog.h), sandboxed as Redis 7 sandboxes it.
//
// One interpreter per reactor thread (LuaEngine::ForThisThread), created on first use; it
// compiles each script lazily, the first time that thread runs it, and keeps the compiled
// function by SHA1. The text of every script is kept server-wide (LuaScriptCache) so that an
// EVALSHA on any reactor finds what an EVAL or SCRIPT LOAD on another one stored.
//
// What a script sees: KEYS, ARGV, the redis library (call, pcall, error_reply, status_reply,
// sha1hex, log, setresp, LOG_* constants), the base, string, table and math libraries, and
// cjson, bit, struct and cmsgpack. No os, io, loadfile, dofile, require or debug. Reading a
// global that does not exist, or assigning any global, is an error (Redis 7's wording).
//
// redis.call() runs the command through the server's own command table: the handler of the
// command (CommandSpec::shard_handler) runs against ctx.db, exactly as when a client sends it.
// A script may touch only the keys it declared in KEYS (see kUndeclaredKey in lua_engine.cc).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/cmdtable/command.h"

struct lua_State;

namespace deadbolt::server {

// The text of every Lua script that EVAL or SCRIPT LOAD has seen, by SHA1. Process-wide: any
// reactor thread reads and writes it under its mutex (EVAL stores a script the first time its
// thread compiles it; EVALSHA looks a script up the first time its thread runs it).
class LuaScriptCache {
 public:
  static void Store(std::string_view sha, std::string_view body);
  // The body of `sha` (40 hex digits, any case), or nullopt.
  static std::optional<std::string> Find(std::string_view sha);
  static bool Exists(std::string_view sha);
  // SCRIPT FLUSH: forgets every body; each reactor drops its compiled scripts on its next run.
  static void Flush();
  // Changes on every Flush.
  static uint64_t generation();
};

// One script call.
struct LuaCall {
  std::string_view sha;   // 40 lower-case hex digits
  std::string_view body;  // EVAL: the text (maybe empty); EVALSHA: looked up by sha
  bool by_sha = false;    // EVALSHA
  CmdArgs keys;
  CmdArgs argv;
  bool read_only = false;  // EVAL_RO / EVALSHA_RO (a write fails)
  // The shard running the script, for BUSY and SCRIPT KILL (server/cmdtable/script_busy.h); -1: none.
  int shard = -1;
  // Set when the keys were copied into a private database (a script across shards): writes
  // do not make the script unkillable there, since they are thrown away when it is killed.
  bool scratch = false;
  // A Redis function (FCALL, server/lua/lua_functions.h): its errors name the function and
  // @user_function, as Redis's do, instead of the SHA1 and @user_script.
  bool function = false;
  std::string_view function_name;
};

// What a run did, for the caller.
struct LuaOutcome {
  bool failed = false;  // the reply is an error (the script raised one, or was killed)
  bool wrote = false;   // a write command ran
  bool killed = false;  // SCRIPT KILL stopped it
};

// Owned by one reactor thread (a thread_local), which alone calls it.
class LuaEngine {
 public:
  static LuaEngine& ForThisThread();
  LuaEngine();
  ~LuaEngine();
  LuaEngine(const LuaEngine&) = delete;
  LuaEngine& operator=(const LuaEngine&) = delete;

  // Compiles `body` (named `sha`) into this thread's cache if it is not there yet. False with
  // Redis's "ERR Error compiling script (new function): ..." in *error.
  bool Compile(std::string_view sha, std::string_view body, std::string* error,
               bool function = false);
  // Runs a script; its reply, or its error, goes to ctx.rb (in the client's protocol).
  // EVALSHA of a script nobody loaded replies NOSCRIPT.
  LuaOutcome Run(const LuaCall& call, ShardCtx& ctx);

  // For the redis library (lua_redis.cc): the call in progress.
  struct Running;
  Running* running() { return running_; }
  lua_State* state() { return L_; }

 private:
  void Reset();  // a fresh interpreter (start, SCRIPT FLUSH)
  void Open();
  // The interpreter's allocator: counts what it holds, and refuses to grow past mem_limit_
  // (lua-memory-limit as of the last Run; 0: none), which Lua raises as "not enough memory".
  static void* Alloc(void* ud, void* ptr, size_t osize, size_t nsize);
  int64_t mem_used_ = 0;
  int64_t mem_limit_ = 0;
  lua_State* L_ = nullptr;
  uint64_t generation_ = 0;
  Running* running_ = nullptr;
};

// What a script returns, or a redis.call() error, written as RESP (lua_convert.cc).
// Converts the value at the top of the stack to RESP into rb, as Redis 7 does. True when that
// is an error reply ({err=...}).
bool LuaToResp(lua_State* L, protocol::ReplyBuilder& rb, int script_resp);
// Pushes a command's reply (RESP2 or RESP3 text, one whole reply at *pos) as the Lua value a
// script sees. An error reply pushes {err=...} and sets *error true.
void RespToLua(lua_State* L, std::string_view in, size_t* pos, bool* error);

// The libraries Redis gives scripts beside its own (lua_libs.cc): struct and cmsgpack,
// written here; cjson and bit come from Debian's lua-cjson and lua-bitop.
int OpenLuaStruct(lua_State* L);
int OpenLuaCmsgpack(lua_State* L);

// The redis library (lua_redis.cc): registers the `redis` table in the globals at the top of
// the stack.
void OpenRedisLib(lua_State* L, LuaEngine* engine);

}  // namespace deadbolt::server
