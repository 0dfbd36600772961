// The `redis` library scripts call: call, pcall, error_reply, status_reply, sha1hex, log,
// setresp, and what Redis 7 keeps for compatibility (replicate_commands, set_repl, breakpoint,
// debug, the LOG_* and REPL_* constants, REDIS_VERSION).
//
// redis.call() runs the command's own handler (CommandSpec::shard_handler) from the server's
// command table on the script's database, with Redis 7's checks in Redis's order. A script may
// touch only the keys it declared: a command naming any other key fails with kUndeclaredKey.

#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "server/base/config.h"
#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/cmdtable/script_busy.h"
#include "server/base/script_sha1.h"
#include "server/base/str_util.h"
#include "server/cmdtable/memory_limit.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/acl/acl.h"
#include "server/lua/lua_running.h"
#include "server/pubsub/registry.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

// A key a script did not pass in KEYS (Dragonfly's wording: "script tried accessing undeclared
// key"). deadbolt routes a script by its KEYS, so any other key might live on another shard.
constexpr std::string_view kUndeclaredKey = "-ERR script tried accessing undeclared key, key: ";

// The Redis version deadbolt speaks as (server/core/server.h's kVersion), as a number.
constexpr int kVersionNum = 0x070200;

LuaEngine* EngineOf(lua_State* L) {
  return static_cast<LuaEngine*>(lua_touserdata(L, lua_upvalueindex(1)));
}

// Pushes {err=msg} as Redis's luaPushError: a message without a code gets "ERR ".
void PushError(lua_State* L, std::string_view msg) {
  std::string text;
  if (!msg.empty() && msg[0] == '-') {
    msg.remove_prefix(1);
    const size_t sp = msg.find(' ');
    if (sp == std::string_view::npos) {
      text = "ERR " + std::string(msg);
    } else {
      text = std::string(msg.substr(0, sp)) + " " + std::string(msg.substr(sp + 1));
    }
  } else {
    text = "ERR " + std::string(msg);
  }
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n')) text.pop_back();
  lua_newtable(L);
  lua_pushlstring(L, text.data(), text.size());
  lua_setfield(L, -2, "err");
}

// Raises (call) or returns (pcall) the error table at the top of the stack.
int Failed(lua_State* L, bool raise) {
  if (raise) return lua_error(L);
  return 1;
}

// Redis 7.0 passes a Lua number to a command as "%.17g" (7.2 uses the shortest text).
std::string NumberArg(lua_Number v) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%.17g", static_cast<double>(v));
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

int GenericCall(lua_State* L, bool raise) {
  LuaEngine::Running* run = EngineOf(L)->running();
  const int argc = lua_gettop(L);
  if (run == nullptr) {
    PushError(L, "redis.call() is only available while a script runs");
    return Failed(L, raise);
  }
  if (argc == 0) {
    PushError(L, "Please specify at least one argument for this redis lib call");
    return Failed(L, raise);
  }
  run->arg_text.resize(static_cast<size_t>(argc));
  run->args.resize(static_cast<size_t>(argc));
  for (int i = 1; i <= argc; i++) {
    std::string& t = run->arg_text[static_cast<size_t>(i - 1)];
    const int type = lua_type(L, i);
    if (type == LUA_TNUMBER) {
      t = NumberArg(lua_tonumber(L, i));
    } else if (type == LUA_TSTRING) {
      size_t n;
      const char* s = lua_tolstring(L, i, &n);
      t.assign(s, n);
    } else {
      PushError(L, "Lua redis lib command arguments must be strings or integers");
      return Failed(L, raise);
    }
    run->args[static_cast<size_t>(i - 1)] = t;
  }
  CmdArgs args(run->args.data(), run->args.size());
  // Commands that run on the connection, not on a shard, which scripts commonly call: PUBLISH /
  // SPUBLISH reach subscribers from the reactor running the script; TIME, PING and ECHO answer
  // here.
  const bool publish =
      EqualsIgnoreCase(args[0], "publish") || EqualsIgnoreCase(args[0], "spublish");
  const bool local = EqualsIgnoreCase(args[0], "time") || EqualsIgnoreCase(args[0], "ping") ||
                     EqualsIgnoreCase(args[0], "echo");
  const CommandSpec* spec = CommandTable::Get().Find(args[0]);
  if (spec == nullptr) {
    PushError(L, "Unknown Redis command called from script");
    return Failed(L, raise);
  }
  if (!spec->ArityOk(args.size())) {
    PushError(L, "Wrong number of args calling Redis command from script");
    return Failed(L, raise);
  }
  if ((spec->flags & kNoScript) || (spec->shard_handler == nullptr && !publish && !local)) {
    PushError(L, "This Redis command is not allowed from script");
    return Failed(L, raise);
  }
  if (const acl::User* user = run->ctx->acl_user) {
    // ACL: the caller's user may run this call (Redis's scriptVerifyACL). The refusal's text is
    // freed before Failed(), whose lua_error does not return.
    bool refused = false;
    {
      const std::string refusal = acl::ScriptCallRefusal(*user, args, run->ctx->now_ms);
      if (!refusal.empty()) {
        PushError(L, "-" + refusal);
        refused = true;
      }
    }
    if (refused) return Failed(L, raise);
  }
  const bool write = (spec->flags & kWrite) != 0;
  if (write && run->call->read_only) {
    PushError(L, "Write commands are not allowed from read-only scripts.");
    return Failed(L, raise);
  }
  if ((spec->flags & kDenyOom) && !run->wrote && MemoryLimit::Over()) {
    // Over maxmemory, before the script's first write (Redis's scriptVerifyOOM).
    PushError(L, "-" + std::string(errors::kOom));
    return Failed(L, raise);
  }
  const LuaCall& call = *run->call;
  std::string_view undeclared;
  spec->ForEachKey(args, [&](int i) {
    if (!undeclared.empty()) return;
    for (std::string_view k : call.keys) {
      if (k == args[i]) return;
    }
    undeclared = args[i];
  });
  if (!undeclared.empty()) {
    PushError(L, std::string(kUndeclaredKey) + std::string(undeclared));
    return Failed(L, raise);
  }
  if (write && call.shard >= 0 && ScriptBusy::Get().kill_requested(call.shard)) {
    RaiseKilled(L);
  }
  run->out.clear();
  protocol::ReplyBuilder rb(&run->out, run->resp);
  if (local) {
    if (EqualsIgnoreCase(args[0], "time")) {
      timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      const std::string sec = std::to_string(ts.tv_sec);
      const std::string usec = std::to_string(ts.tv_nsec / 1000);
      rb.ArrayHeader(2);
      rb.Bulk(sec);
      rb.Bulk(usec);
    } else if (EqualsIgnoreCase(args[0], "echo")) {
      rb.Bulk(args[1]);
    } else if (args.size() == 2) {
      rb.Bulk(args[1]);
    } else {
      rb.SimpleString("PONG");
    }
  } else if (publish) {
    Reactor* r = Reactor::Current();
    const bool shard_channel = EqualsIgnoreCase(args[0], "spublish");
    const int64_t n =
        r ? PublishNoWait(*r, shard_channel ? PubSubKind::kShard : PubSubKind::kChannel, args[1],
                          args[2])
          : 0;
    rb.Integer(n);
  } else {
    ShardCtx& outer = *run->ctx;
    ShardCtx ctx{outer.shard, *run->db, run->db_index, outer.now_ms, outer.config, rb};
    ctx.acl_user = outer.acl_user;
    spec->shard_handler(args, ctx);
  }
  if (write) {
    run->wrote = true;
    if (call.shard >= 0 && !call.scratch) ScriptBusy::Get().MarkWrote(call.shard);
  }
  if (run->out.empty()) {
    lua_pushboolean(L, 0);
    return 1;
  }
  size_t pos = 0;
  bool error = false;
  RespToLua(L, run->out, &pos, &error);
  if (error) return Failed(L, raise);
  return 1;
}

int Call(lua_State* L) { return GenericCall(L, true); }
int PCall(lua_State* L) { return GenericCall(L, false); }

// redis.error_reply(msg): {err=msg}, "-" and "ERR " added as Redis does.
int ErrorReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    PushError(L, "wrong number or type of arguments");
    return 1;
  }
  size_t n;
  const char* s = lua_tolstring(L, 1, &n);
  std::string msg(s, n);
  if (msg.empty() || msg[0] != '-') msg.insert(0, "-");
  PushError(L, msg);
  return 1;
}

int StatusReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    PushError(L, "wrong number or type of arguments");
    return 1;
  }
  lua_newtable(L);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "ok");
  return 1;
}

int Sha1HexFn(lua_State* L) {
  if (lua_gettop(L) != 1) {
    PushError(L, "wrong number of arguments");
    return lua_error(L);
  }
  size_t n;
  const char* s = lua_tolstring(L, 1, &n);
  const auto hex = Sha1Hex(Sha1(std::string_view(s ? s : "", s ? n : 0)));
  lua_pushlstring(L, hex.data(), hex.size());
  return 1;
}

int LogFn(lua_State* L) {
  const int argc = lua_gettop(L);
  if (argc < 2) {
    PushError(L, "redis.log() requires two arguments or more.");
    return lua_error(L);
  }
  if (!lua_isnumber(L, 1)) {
    PushError(L, "First argument must be a number (log level).");
    return lua_error(L);
  }
  const int level = static_cast<int>(lua_tointeger(L, 1));
  if (level < 0 || level > 3) {
    PushError(L, "Invalid debug level.");
    return lua_error(L);
  }
  std::string msg;
  for (int i = 2; i <= argc; i++) {
    size_t n;
    const char* s = lua_tolstring(L, i, &n);
    if (s == nullptr) continue;
    if (i > 2) msg.push_back(' ');
    msg.append(s, n);
  }
  LuaEngine::Running* run = EngineOf(L)->running();
  if (level == 3) {
    LogWarning("%s", msg.c_str());
  } else if (level == 2) {
    LogNotice("%s", msg.c_str());
  } else if (run && (run->ctx->config.loglevel == "debug" ||
                     (level == 1 && run->ctx->config.loglevel == "verbose"))) {
    LogNotice("%s", msg.c_str());
  }
  return 0;
}

int SetResp(lua_State* L) {
  LuaEngine::Running* run = EngineOf(L)->running();
  if (lua_gettop(L) != 1) {
    PushError(L, "redis.setresp() requires one argument.");
    return lua_error(L);
  }
  const int v = static_cast<int>(lua_tointeger(L, 1));
  if (v != 2 && v != 3) {
    PushError(L, "RESP version must be 2 or 3.");
    return lua_error(L);
  }
  if (run) run->resp = v;
  return 0;
}

int ReturnTrue(lua_State* L) {
  lua_pushboolean(L, 1);
  return 1;
}
int ReturnFalse(lua_State* L) {
  lua_pushboolean(L, 0);
  return 1;
}
int ReturnNothing(lua_State*) { return 0; }

}  // namespace

void OpenRedisLib(lua_State* L, LuaEngine* engine) {
  const int g = lua_gettop(L);
  lua_newtable(L);
  const struct {
    const char* name;
    lua_CFunction fn;
  } kFns[] = {{"call", Call},
              {"pcall", PCall},
              {"error_reply", ErrorReply},
              {"status_reply", StatusReply},
              {"sha1hex", Sha1HexFn},
              {"log", LogFn},
              {"setresp", SetResp},
              {"replicate_commands", ReturnTrue},
              {"set_repl", ReturnNothing},
              {"breakpoint", ReturnFalse},
              {"debug", ReturnNothing}};
  for (const auto& f : kFns) {
    lua_pushlightuserdata(L, engine);
    lua_pushcclosure(L, f.fn, 1);
    lua_setfield(L, -2, f.name);
  }
  const struct {
    const char* name;
    int value;
  } kConsts[] = {{"LOG_DEBUG", 0},    {"LOG_VERBOSE", 1}, {"LOG_NOTICE", 2},
                 {"LOG_WARNING", 3},  {"REPL_NONE", 0},   {"REPL_AOF", 1},
                 {"REPL_SLAVE", 2},   {"REPL_REPLICA", 2}, {"REPL_ALL", 3},
                 {"REDIS_VERSION_NUM", kVersionNum}};
  for (const auto& c : kConsts) {
    lua_pushinteger(L, c.value);
    lua_setfield(L, -2, c.name);
  }
  lua_pushstring(L, kVersion);  // server/core/server.h
  lua_setfield(L, -2, "REDIS_VERSION");
  lua_setfield(L, g, "redis");
}

}  // namespace deadbolt::server
