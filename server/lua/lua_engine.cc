#include "server/lua/lua_engine.h"

#include <absl/container/flat_hash_map.h>
#include <time.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
int luaopen_cjson(lua_State* L);
int luaopen_bit(lua_State* L);
}

#include "server/base/config.h"
#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/cmdtable/script_busy.h"
#include "server/core/reactor.h"
#include "server/lua/lua_running.h"

namespace deadbolt::server {
namespace {

// Registry keys.
constexpr char kScriptsKey[] = "deadbolt.scripts";    // sha -> compiled function
constexpr char kGlobalsKey[] = "deadbolt.globals";    // the real globals table
constexpr char kProxiesKey[] = "deadbolt.proxies";    // the read-only views, emptied after a run
constexpr char kErrHandlerKey[] = "deadbolt.errh";

// Lines between two looks at the clock and at SCRIPT KILL (Redis: the same count).
constexpr int kHookInstructions = 100000;

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

thread_local LuaEngine* tls_engine = nullptr;

// --- the script cache, process-wide ---
struct Bodies {
  std::mutex mu;
  absl::flat_hash_map<std::string, std::string> by_sha;  // lower-case sha -> body
  std::atomic<uint64_t> generation{1};
};
Bodies& TheBodies() {
  static Bodies* const b = new Bodies();
  return *b;
}
std::string LowerSha(std::string_view sha) {
  std::string s(sha);
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
  }
  return s;
}

// --- the sandbox ---

// __index of the globals: reading a global that does not exist (Redis 7's wording).
int NonexistentGlobal(lua_State* L) {
  const char* name = lua_tostring(L, 2);
  return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                    name ? name : "?");
}

// __newindex of a read-only view (the globals, the libraries): Redis 7's readonly tables.
int ReadOnlyTable(lua_State* L) { return luaL_error(L, "Attempt to modify a readonly table"); }

// Replaces the table at the top of the stack with a read-only view of it: an empty table whose
// reads go to it and whose writes fail. The view is remembered in the proxies list.
void MakeReadOnlyView(lua_State* L) {
  const int real = lua_gettop(L);
  lua_newtable(L);  // the view
  lua_newtable(L);  // its metatable
  lua_pushvalue(L, real);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, ReadOnlyTable);
  lua_setfield(L, -2, "__newindex");
  lua_newtable(L);
  lua_setfield(L, -2, "__metatable");  // getmetatable sees a table; setmetatable fails
  lua_setmetatable(L, -2);
  lua_getfield(L, LUA_REGISTRYINDEX, kProxiesKey);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, static_cast<int>(lua_objlen(L, -2)) + 1);
  lua_pop(L, 1);
  lua_replace(L, real);
}

// A string or number error value as Lua's tostring would show it.
std::string ErrorValueText(lua_State* L, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TSTRING:
    case LUA_TNUMBER: {
      size_t n;
      const char* s = lua_tolstring(L, idx, &n);
      return std::string(s, n);
    }
    case LUA_TNIL:
      return "nil";
    case LUA_TBOOLEAN:
      return lua_toboolean(L, idx) ? "true" : "false";
    default:
      return std::string(lua_typename(L, lua_type(L, idx)));
  }
}

// The message handler of every run: turns any error into {err=..., source=..., line=...} with
// the place in the script that raised it, as Redis's __redis__err__handler does.
int ErrorHandler(lua_State* L) {
  lua_Debug ar;
  bool have = false;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar)) {
    have = true;
    if (std::strcmp(ar.what, "C") == 0) {
      have = lua_getstack(L, 2, &ar) && lua_getinfo(L, "Sl", &ar);
    }
  }
  if (!lua_istable(L, 1)) {
    std::string msg = "ERR " + ErrorValueText(L, 1);
    lua_newtable(L);
    lua_pushlstring(L, msg.data(), msg.size());
    lua_setfield(L, -2, "err");
    lua_replace(L, 1);
  }
  lua_settop(L, 1);
  if (have) {
    lua_pushstring(L, ar.source);
    lua_setfield(L, 1, "source");
    lua_pushinteger(L, ar.currentline);
    lua_setfield(L, 1, "line");
  }
  return 1;
}

// pcall as Redis 7 replaces it: an error that is a table with an `err` string (what redis.call
// raises) comes back as that string.
int Pcall(lua_State* L) {
  const int argc = lua_gettop(L);
  luaL_checkany(L, 1);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  if (lua_pcall(L, argc - 1, LUA_MULTRET, 0) != 0) {
    lua_remove(L, 1);
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "err");
      if (lua_isstring(L, -1)) {
        lua_replace(L, -2);
      } else {
        lua_pop(L, 1);
      }
    }
    lua_pushboolean(L, 0);
    lua_insert(L, 1);
  }
  return lua_gettop(L);
}

// math.random and math.randomseed as Redis replaces them: POSIX's 48-bit linear congruential
// generator (drand48's constants), so that a script that seeds it gets Redis's numbers. One
// generator per reactor, seeded with 0 when its interpreter starts.
thread_local uint64_t rand48_state = 0;
constexpr int64_t kRand48Max = 2147483647;

void SeedRand48(int32_t seed) {
  rand48_state = ((static_cast<uint64_t>(static_cast<uint32_t>(seed)) << 16) | 0x330e) &
                 ((uint64_t{1} << 48) - 1);
}

int64_t NextRand48() {
  rand48_state = (rand48_state * 0x5deece66dULL + 0xb) & ((uint64_t{1} << 48) - 1);
  return static_cast<int64_t>(rand48_state >> 17);
}

int MathRandom(lua_State* L) {
  const lua_Number r = static_cast<lua_Number>(NextRand48() % kRand48Max) /
                       static_cast<lua_Number>(kRand48Max);
  switch (lua_gettop(L)) {
    case 0:
      lua_pushnumber(L, r);
      return 1;
    case 1: {
      const int u = luaL_checkint(L, 1);
      luaL_argcheck(L, 1 <= u, 1, "interval is empty");
      lua_pushnumber(L, std::floor(r * u) + 1);
      return 1;
    }
    case 2: {
      const int l = luaL_checkint(L, 1);
      const int u = luaL_checkint(L, 2);
      luaL_argcheck(L, l <= u, 2, "interval is empty");
      lua_pushnumber(L, std::floor(r * (u - l + 1)) + l);
      return 1;
    }
    default:
      return luaL_error(L, "wrong number of arguments");
  }
}

int MathRandomSeed(lua_State* L) {
  SeedRand48(luaL_checkint(L, 1));
  return 0;
}

void CountHook(lua_State* L, lua_Debug*) {
  LuaEngine* e = tls_engine;
  if (e == nullptr || e->running() == nullptr) return;
  LuaEngine::Running& r = *e->running();
  if (!r.killed) {
    // The server is shutting down (SIGTERM, SHUTDOWN NOSAVE): stop as if killed.
    Reactor* reactor = Reactor::Current();
    auto stopping = [reactor] { return reactor != nullptr && reactor->stop_requested(); };
    if (!stopping()) {
      if (r.call->shard < 0) return;
      if (!r.busy) {
        if (MonotonicMs() - r.start_ms < r.ctx->config.busy_reply_threshold_ms) return;
        r.busy = true;
        ScriptBusy::Get().MarkBusy(r.call->shard, r.call->function);
      }
      // This reactor's clients are answered meanwhile (BUSY); SCRIPT KILL or SHUTDOWN NOSAVE
      // from one of them lands here too.
      if (reactor != nullptr) reactor->ServeWhileBusy();
      if (!stopping() && !ScriptBusy::Get().kill_requested(r.call->shard)) return;
    }
    r.killed = true;
    // From now on every line raises the error again, so that a pcall cannot swallow it.
    lua_sethook(L, CountHook, LUA_MASKLINE, 0);
  }
  RaiseKilled(L);
}

}  // namespace

void RaiseKilled(lua_State* L) {
  lua_newtable(L);
  lua_pushstring(L, "ERR Script killed by user with SCRIPT KILL...");
  lua_setfield(L, -2, "err");
  lua_error(L);
}

// --- LuaScriptCache ---

void LuaScriptCache::Store(std::string_view sha, std::string_view body) {
  Bodies& b = TheBodies();
  std::lock_guard<std::mutex> lock(b.mu);
  b.by_sha.try_emplace(LowerSha(sha), body);
}

std::optional<std::string> LuaScriptCache::Find(std::string_view sha) {
  Bodies& b = TheBodies();
  std::lock_guard<std::mutex> lock(b.mu);
  auto it = b.by_sha.find(LowerSha(sha));
  if (it == b.by_sha.end()) return std::nullopt;
  return it->second;
}

bool LuaScriptCache::Exists(std::string_view sha) {
  Bodies& b = TheBodies();
  std::lock_guard<std::mutex> lock(b.mu);
  return b.by_sha.contains(LowerSha(sha));
}

void LuaScriptCache::Flush() {
  Bodies& b = TheBodies();
  std::lock_guard<std::mutex> lock(b.mu);
  b.by_sha.clear();
  b.generation.fetch_add(1);
}

uint64_t LuaScriptCache::generation() { return TheBodies().generation.load(); }

// --- LuaEngine ---

LuaEngine& LuaEngine::ForThisThread() {
  static thread_local LuaEngine engine;
  return engine;
}

LuaEngine::LuaEngine() {
  tls_engine = this;
  Reset();
}

LuaEngine::~LuaEngine() {
  if (L_) lua_close(L_);
  if (tls_engine == this) tls_engine = nullptr;
}

void* LuaEngine::Alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* e = static_cast<LuaEngine*>(ud);
  if (nsize == 0) {
    free(ptr);
    e->mem_used_ -= static_cast<int64_t>(osize);
    return nullptr;
  }
  const int64_t grow = static_cast<int64_t>(nsize) - static_cast<int64_t>(osize);
  // Lua needs a block that shrinks to stay where it is, and never asks to shrink one to fail.
  if (grow > 0 && e->mem_limit_ > 0 && e->mem_used_ + grow > e->mem_limit_) return nullptr;
  void* p = realloc(ptr, nsize);
  if (p == nullptr && grow > 0) return nullptr;
  if (p == nullptr) return ptr;  // (a shrink the allocator refused: the block stays as it was)
  e->mem_used_ += grow;
  return p;
}

namespace {
int Panic(lua_State* L) {
  // An error outside any protected call: a bug. Lua aborts after this returns.
  LogWarning("Lua panic: %s", lua_isstring(L, -1) ? lua_tostring(L, -1) : "(no message)");
  return 0;
}
}  // namespace

void LuaEngine::Reset() {
  if (L_) lua_close(L_);
  generation_ = LuaScriptCache::generation();
  L_ = lua_newstate(Alloc, this);
  lua_atpanic(L_, Panic);
  Open();
}

void LuaEngine::Open() {
  lua_State* L = L_;
  const lua_CFunction libs[] = {luaopen_base, luaopen_table, luaopen_string, luaopen_math};
  for (lua_CFunction f : libs) {
    lua_pushcfunction(L, f);
    lua_call(L, 0, 0);
  }
  lua_pushcfunction(L, luaopen_cjson);  // returns its table without naming a global
  lua_call(L, 0, 1);
  lua_setglobal(L, "cjson");
  lua_pushcfunction(L, luaopen_bit);
  lua_call(L, 0, 0);
  OpenLuaStruct(L);
  lua_pop(L, lua_gettop(L));
  OpenLuaCmsgpack(L);
  lua_pop(L, lua_gettop(L));
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kScriptsKey);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, kProxiesKey);
  lua_pushcfunction(L, ErrorHandler);
  lua_setfield(L, LUA_REGISTRYINDEX, kErrHandlerKey);

  lua_pushvalue(L, LUA_GLOBALSINDEX);  // the real globals
  const int g = lua_gettop(L);
  OpenRedisLib(L, this);
  lua_pushcfunction(L, Pcall);
  lua_setfield(L, g, "pcall");
  // What Redis 7 takes away: files, the OS, modules, the debugger, printing.
  for (const char* name : {"dofile", "loadfile", "print", "getfenv", "setfenv", "newproxy",
                           "module", "require", "package", "os", "io", "debug"}) {
    lua_pushnil(L);
    lua_setfield(L, g, name);
  }
  lua_getfield(L, g, "math");
  lua_pushcfunction(L, MathRandom);
  lua_setfield(L, -2, "random");
  lua_pushcfunction(L, MathRandomSeed);
  lua_setfield(L, -2, "randomseed");
  lua_pop(L, 1);
  SeedRand48(0);
  // Every library table becomes read-only, as in Redis 7.
  for (const char* name :
       {"string", "table", "math", "coroutine", "redis", "cjson", "bit", "struct", "cmsgpack"}) {
    lua_getfield(L, g, name);
    if (lua_istable(L, -1)) {
      MakeReadOnlyView(L);
      lua_setfield(L, g, name);
    } else {
      lua_pop(L, 1);
    }
  }
  lua_pushvalue(L, g);
  lua_setfield(L, LUA_REGISTRYINDEX, kGlobalsKey);
  // The real globals reject reads of what does not exist...
  lua_newtable(L);
  lua_pushcfunction(L, NonexistentGlobal);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, g);
  // ... and scripts see them through a read-only view.
  lua_pushvalue(L, g);
  MakeReadOnlyView(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, g, "_G");
  lua_replace(L, LUA_GLOBALSINDEX);
  lua_settop(L, 0);
}

bool LuaEngine::Compile(std::string_view sha, std::string_view body, std::string* error,
                        bool function) {
  if (generation_ != LuaScriptCache::generation()) Reset();
  lua_State* L = L_;
  lua_getfield(L, LUA_REGISTRYINDEX, kScriptsKey);
  lua_pushlstring(L, sha.data(), sha.size());
  lua_rawget(L, -2);
  if (!lua_isnil(L, -1)) {
    lua_settop(L, 0);
    return true;
  }
  lua_pop(L, 1);
  if (luaL_loadbuffer(L, body.data(), body.size(), function ? "@user_function" : "@user_script") !=
      0) {
    *error = (function ? "ERR Error compiling function: "
                       : "ERR Error compiling script (new function): ") +
             ErrorValueText(L, -1);
    lua_settop(L, 0);
    return false;
  }
  lua_pushlstring(L, sha.data(), sha.size());
  lua_insert(L, -2);
  lua_rawset(L, -3);
  lua_settop(L, 0);
  return true;
}

LuaOutcome LuaEngine::Run(const LuaCall& call, ShardCtx& ctx) {
  LuaOutcome outcome;
  if (generation_ != LuaScriptCache::generation()) Reset();
  lua_State* L = L_;
  lua_settop(L, 0);
  lua_getfield(L, LUA_REGISTRYINDEX, kErrHandlerKey);  // 1
  lua_getfield(L, LUA_REGISTRYINDEX, kScriptsKey);
  lua_pushlstring(L, call.sha.data(), call.sha.size());
  lua_rawget(L, -2);
  if (lua_isnil(L, -1)) {
    lua_settop(L, 0);
    std::string body_copy;
    std::string_view body = call.body;
    if (call.by_sha) {
      auto found = LuaScriptCache::Find(call.sha);
      if (!found) {
        ctx.rb.Error(errors::kNoScript);
        outcome.failed = true;
        return outcome;
      }
      body_copy = std::move(*found);
      body = body_copy;
    }
    std::string error;
    if (!Compile(call.sha, body, &error, call.function)) {
      ctx.rb.Error(error);
      outcome.failed = true;
      return outcome;
    }
    if (!call.by_sha && !call.function) LuaScriptCache::Store(call.sha, call.body);
    return Run(call, ctx);  // now compiled
  }
  lua_replace(L, 2);  // 1: handler, 2: the script
  lua_settop(L, 2);

  // KEYS and ARGV, fresh for every run, in the real globals.
  lua_getfield(L, LUA_REGISTRYINDEX, kGlobalsKey);
  auto set_array = [&](const char* name, CmdArgs a) {
    lua_createtable(L, static_cast<int>(a.size()), 0);
    for (size_t i = 0; i < a.size(); i++) {
      lua_pushlstring(L, a[i].data(), a[i].size());
      lua_rawseti(L, -2, static_cast<int>(i + 1));
    }
    lua_setfield(L, -2, name);  // rawset: the globals' metatable has no __newindex
  };
  set_array("KEYS", call.keys);
  set_array("ARGV", call.argv);
  lua_pop(L, 1);

  Running run;
  run.call = &call;
  run.ctx = &ctx;
  run.db = &ctx.db;
  run.db_index = ctx.db_index;
  run.start_ms = MonotonicMs();
  running_ = &run;
  tls_engine = this;
  if (call.shard >= 0) ScriptBusy::Get().Clear(call.shard);
  lua_sethook(L, CountHook, LUA_MASKCOUNT, kHookInstructions);
  mem_limit_ = ctx.config.lua_memory_limit;
  const int rc = lua_pcall(L, 0, 1, 1);
  lua_sethook(L, nullptr, 0, 0);
  if (rc == LUA_ERRMEM) lua_gc(L, LUA_GCCOLLECT, 0);  // what it built goes now, not later
  running_ = nullptr;
  if (call.shard >= 0) ScriptBusy::Get().Clear(call.shard);
  outcome.wrote = run.wrote;
  outcome.killed = run.killed;

  if (rc == 0) {
    outcome.failed = LuaToResp(L, ctx.rb, run.resp);  // a returned {err=...} fails too
  } else {
    outcome.failed = true;
    std::string msg;
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "err");
      msg = lua_isstring(L, -1) ? ErrorValueText(L, -1) : std::string("ERR unknown error");
      lua_pop(L, 1);
      lua_getfield(L, -1, "source");
      lua_getfield(L, -2, "line");
      if (lua_isstring(L, -2) && lua_isnumber(L, -1)) {
        msg.append(" script: ");
        msg.append(call.function ? call.function_name : call.sha);
        msg.append(", on ");
        msg.append(lua_tostring(L, -2));
        msg.push_back(':');
        msg.append(std::to_string(lua_tointeger(L, -1)));
        msg.push_back('.');
      }
      lua_pop(L, 2);
    } else {
      msg = "ERR " + ErrorValueText(L, -1);  // an error in the handler itself (out of memory)
    }
    ctx.rb.Error(msg);
  }
  lua_settop(L, 0);
  // What a script managed to put into the read-only views (rawset) goes with it.
  lua_getfield(L, LUA_REGISTRYINDEX, kProxiesKey);
  const int n = static_cast<int>(lua_objlen(L, -1));
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      lua_pushnil(L);
      lua_rawset(L, -4);
      lua_pop(L, 1);
      lua_pushnil(L);
    }
    lua_pop(L, 1);
  }
  lua_settop(L, 0);
  return outcome;
}

}  // namespace deadbolt::server
