// Redis 7's conversions between Lua values and RESP.
//
// RESP -> Lua (what redis.call() returns): integer -> number; bulk -> string; nil bulk and nil
// array (RESP2) -> false; status -> {ok=s}; error -> {err=s}; array -> table. RESP3 (after
// redis.setresp(3)): null -> nil, map -> {map={k=v}}, set -> {set={m=true}}, double ->
// {double=n}, boolean -> true/false, big number -> {big_number=s}, verbatim ->
// {verbatim_string={format=f, string=s}}.
//
// Lua -> RESP (what a script returns): string -> bulk; number -> integer (truncated, as a C cast);
// true -> 1 and false -> nil (under setresp(3): RESP3 booleans); a table -> {err=}: error,
// {ok=}: status, {double=}: double, {big_number=}: big number, {map=}: map, {set=}: set,
// otherwise an array of t[1], t[2], ... up to the first nil; anything else -> nil.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" {
#include <lauxlib.h>
#include <lua.h>
}

#include "server/commands/cmd_util.h"
#include "server/lua/lua_engine.h"

namespace deadbolt::server {
namespace {

int64_t NumberToInteger(double v) {
  if (std::isnan(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

std::string_view StringAt(lua_State* L, int idx) {
  size_t n;
  const char* s = lua_tolstring(L, idx, &n);
  return std::string_view(s, n);
}

// t[name] of the table at the top, pushed; true if it has type `type`.
bool Field(lua_State* L, const char* name, int type) {
  lua_pushstring(L, name);
  lua_rawget(L, -2);
  if (lua_type(L, -1) == type) return true;
  lua_pop(L, 1);
  return false;
}

void PushField(lua_State* L, const char* name) { lua_setfield(L, -2, name); }

}  // namespace

bool LuaToResp(lua_State* L, protocol::ReplyBuilder& rb, int script_resp) {
  if (!lua_checkstack(L, 4)) {
    // A table nested too deep (or holding itself): Redis's error, in place of the value.
    rb.Error("ERR reached lua stack limit");
    return true;
  }
  switch (lua_type(L, -1)) {
    case LUA_TSTRING:
      rb.Bulk(StringAt(L, -1));
      return false;
    case LUA_TBOOLEAN:
      if (script_resp == 2) {
        if (lua_toboolean(L, -1)) {
          rb.Integer(1);
        } else {
          rb.Null();
        }
      } else {
        rb.Bool(lua_toboolean(L, -1));
      }
      return false;
    case LUA_TNUMBER:
      rb.Integer(NumberToInteger(lua_tonumber(L, -1)));
      return false;
    case LUA_TTABLE:
      break;
    default:
      rb.Null();
      return false;
  }
  if (Field(L, "err", LUA_TSTRING)) {
    rb.Error(StringAt(L, -1));
    lua_pop(L, 1);
    return true;
  }
  if (Field(L, "ok", LUA_TSTRING)) {
    rb.SimpleString(StringAt(L, -1));
    lua_pop(L, 1);
    return false;
  }
  if (Field(L, "double", LUA_TNUMBER)) {
    rb.Double(lua_tonumber(L, -1));
    lua_pop(L, 1);
    return false;
  }
  if (Field(L, "big_number", LUA_TSTRING)) {
    const std::string_view s = StringAt(L, -1);
    if (rb.resp() == 3) {
      std::string* out = rb.out();
      out->push_back('(');
      for (char c : s) out->push_back(c == '\r' || c == '\n' ? ' ' : c);
      out->append("\r\n");
    } else {
      rb.Bulk(s);
    }
    lua_pop(L, 1);
    return false;
  }
  const bool is_map = Field(L, "map", LUA_TTABLE);
  if (is_map || Field(L, "set", LUA_TTABLE)) {
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      lua_pop(L, 1);
      n++;
    }
    if (is_map) {
      rb.MapHeader(n);
    } else {
      rb.SetHeader(n);
    }
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      if (is_map) {
        lua_pushvalue(L, -2);  // the key
        LuaToResp(L, rb, script_resp);
        lua_pop(L, 1);
        LuaToResp(L, rb, script_resp);  // the value
        lua_pop(L, 1);
      } else {
        lua_pop(L, 1);
        LuaToResp(L, rb, script_resp);  // the key; stays for lua_next
      }
    }
    lua_pop(L, 1);
    return false;
  }
  size_t n = 0;
  for (;;) {
    lua_rawgeti(L, -1, static_cast<int>(n + 1));
    const bool nil = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (nil) break;
    n++;
  }
  rb.ArrayHeader(n);
  for (size_t i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, static_cast<int>(i));
    LuaToResp(L, rb, script_resp);
    lua_pop(L, 1);
  }
  return false;
}

void RespToLua(lua_State* L, std::string_view in, size_t* pos, bool* error) {
  lua_checkstack(L, 6);
  const char type = in[*pos];
  const size_t eol = in.find("\r\n", *pos);
  const std::string_view line = in.substr(*pos + 1, eol - *pos - 1);
  *pos = eol + 2;
  int64_t n = 0;
  switch (type) {
    case '+':
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      PushField(L, "ok");
      return;
    case '-':
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      PushField(L, "err");
      *error = true;
      return;
    case ':':
      StringToInt64(line, &n);
      lua_pushnumber(L, static_cast<lua_Number>(n));
      return;
    case '$':
    case '=': {
      StringToInt64(line, &n);
      if (n < 0) {
        lua_pushboolean(L, 0);
        return;
      }
      std::string_view s = in.substr(*pos, static_cast<size_t>(n));
      *pos += static_cast<size_t>(n) + 2;
      if (type == '$') {
        lua_pushlstring(L, s.data(), s.size());
        return;
      }
      lua_newtable(L);
      lua_newtable(L);
      lua_pushlstring(L, s.data(), std::min<size_t>(3, s.size()));
      PushField(L, "format");
      s.remove_prefix(std::min<size_t>(4, s.size()));
      lua_pushlstring(L, s.data(), s.size());
      PushField(L, "string");
      PushField(L, "verbatim_string");
      return;
    }
    case '_':
      lua_pushnil(L);
      return;
    case '#':
      lua_pushboolean(L, line == "t");
      return;
    case ',': {
      std::string text(line);
      lua_newtable(L);
      lua_pushnumber(L, std::strtod(text.c_str(), nullptr));
      PushField(L, "double");
      return;
    }
    case '(':
      lua_newtable(L);
      lua_pushlstring(L, line.data(), line.size());
      PushField(L, "big_number");
      return;
    case '%':
    case '~': {
      StringToInt64(line, &n);
      lua_newtable(L);
      lua_newtable(L);
      for (int64_t i = 0; i < n; i++) {
        bool ignored = false;
        RespToLua(L, in, pos, &ignored);
        if (type == '%') {
          RespToLua(L, in, pos, &ignored);
        } else {
          lua_pushboolean(L, 1);
        }
        if (lua_isnil(L, -2)) {
          lua_pop(L, 2);
        } else {
          lua_rawset(L, -3);
        }
      }
      PushField(L, type == '%' ? "map" : "set");
      return;
    }
    default: {  // '*', '>'
      StringToInt64(line, &n);
      if (n < 0) {
        lua_pushboolean(L, 0);
        return;
      }
      lua_createtable(L, static_cast<int>(n), 0);
      for (int64_t i = 0; i < n; i++) {
        bool ignored = false;
        RespToLua(L, in, pos, &ignored);
        lua_rawseti(L, -2, static_cast<int>(i + 1));
      }
      return;
    }
  }
}

}  // namespace deadbolt::server
