#pragma once
// The state of the script running on this thread, shared by the engine (lua_engine.cc) and the
// redis library (lua_redis.cc). Internal to server/lua/.

#include <cstdint>
#include <string>
#include <vector>

#include "server/lua/lua_engine.h"

namespace deadbolt::server {

// Lives on the stack of LuaEngine::Run, for one run, on the reactor thread running it.
struct LuaEngine::Running {
  const LuaCall* call = nullptr;
  ShardCtx* ctx = nullptr;
  shard::Db* db = nullptr;
  int db_index = 0;
  int resp = 2;  // redis.setresp()
  int64_t start_ms = 0;
  bool busy = false;    // past busy-reply-threshold: marked in ScriptBusy
  bool killed = false;  // SCRIPT KILL asked for it
  bool wrote = false;
  std::string out;  // a command's reply
  std::vector<std::string> arg_text;
  std::vector<std::string_view> args;
};

// Raises SCRIPT KILL's error in the running script.
void RaiseKilled(lua_State* L);

}  // namespace deadbolt::server
