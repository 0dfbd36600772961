// Script commands: EVAL EVALSHA EVAL_RO EVALSHA_RO, SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP,
// FUNCTION LOAD|LIST|DELETE|FLUSH|KILL|STATS|HELP and FCALL FCALL_RO.
//
// A script is known by the SHA1 of its exact text. The catalogue of lock scripts
// (server/scripts/script_catalog.h) comes first: a script it knows runs natively, as C++ with
// the script's effects and reply. Any other script runs in the embedded Lua
// (server/lua/lua_engine.h), whose body cache SCRIPT LOAD and EVAL fill; EVALSHA of a SHA1
// neither knows replies NOSCRIPT.
//
// Routing: the keys of a call are args[3 .. 2 + numkeys] (EvalKeyRange). When they all live on
// one shard the shard handler runs there (inline or as a message: one step, atomic); when they
// span shards the connection handler runs the script as an atomic fan-out: the catalogue's
// multi-key scripts natively (node-redlock, Redisson's batched renewal; its other scripts reply
// CROSSSLOT, as a cluster would), Lua scripts by copying their keys into a private database on
// the first shard, running there, and writing the keys back (RunLuaAcrossShards), all under the
// fan-out's key locks. A malformed numkeys yields no keys, so the call runs here and replies the
// error.

#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp_parser.h"
#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/cmdtable/script_busy.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/lua/lua_engine.h"
#include "server/lua/lua_functions.h"
#include "server/scripts/script_catalog.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

// A script the catalogue does not know: its SHA1 (lower case) and, for EVAL, its text.
struct LuaTarget {
  std::array<char, 40> sha{};
  std::string_view body;
  bool by_sha = false;  // EVALSHA: the text is in LuaScriptCache, if anywhere
  // FCALL: the function (its script is `body`), kept alive for the call.
  std::shared_ptr<const LuaFunction> function;
  std::string_view sha_view() const { return std::string_view(sha.data(), sha.size()); }
};

bool EvalKeyRange(CmdArgs args, int* first, int* last) {
  int64_t n;
  if (!StringToInt64(args[2], &n) || n < 0 || n > static_cast<int64_t>(args.size()) - 3) {
    return false;
  }
  *first = 3;
  *last = 2 + static_cast<int>(n);
  return true;
}

// numkeys (args[2]) of EVAL or FCALL, checked in Redis 7.0's order: an integer (else
// `not_integer`, which EVAL and FCALL word differently), at most the arguments after it, not
// negative. False after replying the error.
bool ParseNumKeys(CmdArgs args, std::string_view not_integer, ReplyBuilder& rb, int64_t* n) {
  if (!StringToInt64(args[2], n)) {
    rb.Error(not_integer);
    return false;
  }
  if (*n > static_cast<int64_t>(args.size()) - 3) {
    rb.Error(errors::kNumKeysTooBig);
    return false;
  }
  if (*n < 0) {
    rb.Error(errors::kNumKeysNegative);
    return false;
  }
  return true;
}

// The script, KEYS and ARGV of an EVAL-family call, checked in Redis 7.0's order; false after
// replying the error. A script the catalogue does not know leaves call->script null and fills
// *lua.
template <bool kBySha, bool kReadOnly>
bool ParseEval(CmdArgs args, ReplyBuilder& rb, ScriptCall* call, LuaTarget* lua) {
  if (kBySha && args[1].size() != 40) {  // not a SHA1: NOSCRIPT before anything else
    rb.Error(errors::kNoScript);
    return false;
  }
  int64_t n;
  if (!ParseNumKeys(args, errors::kNotInteger, rb, &n)) return false;
  call->script = kBySha ? FindScriptBySha(args[1]) : FindScriptByText(args[1]);
  if (!call->script) {
    lua->by_sha = kBySha;
    if (kBySha) {
      for (size_t i = 0; i < 40; i++) {
        const char c = args[1][i];
        lua->sha[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
      }
    } else {
      lua->sha = Sha1Hex(Sha1(args[1]));
      lua->body = args[1];
    }
  }
  call->keys = args.subspan(3, static_cast<size_t>(n));
  call->argv = args.subspan(3 + static_cast<size_t>(n));
  call->read_only = kReadOnly;
  return true;
}

void CountRun(bool native) {
  if (Reactor* r = Reactor::Current()) {
    (native ? r->stats().script_native_runs : r->stats().script_lua_runs)++;
  }
}

// All keys on the shard running this (or no keys).
template <bool kBySha, bool kReadOnly>
void EvalOnShard(CmdArgs args, ShardCtx& ctx) {
  ScriptCall call;
  LuaTarget lua;
  if (!ParseEval<kBySha, kReadOnly>(args, ctx.rb, &call, &lua)) return;
  if (call.script) {
    CountRun(true);
    RunScriptOnShard(call, ctx);
    return;
  }
  CountRun(false);
  LuaCall lc;
  lc.sha = lua.sha_view();
  lc.body = lua.body;
  lc.by_sha = lua.by_sha;
  lc.keys = call.keys;
  lc.argv = call.argv;
  lc.read_only = kReadOnly;
  lc.shard = ctx.shard.index();
  LuaEngine::ForThisThread().Run(lc, ctx);
}

// A Lua script whose keys span shards, atomic under the fan-out's key locks:
//   phase 1: every shard copies its keys out (KeySnapshot);
//   phase 2: the first shard restores them all into a private database, runs the script there
//            (redis.call may only touch declared keys, so every key it can touch is there) and
//            copies the keys out again;
//   phase 3: if the script wrote, every shard writes its keys back (deleting those the script
//            deleted). A script killed by SCRIPT KILL writes nothing back.
void RunLuaAcrossShards(const ScriptCall& call, const LuaTarget& lua, bool read_only,
                        Connection& conn, ReplyBuilder& rb) {
  struct State {
    std::string sha, body;
    bool by_sha = false;
    std::shared_ptr<const LuaFunction> function;
    std::vector<std::string> keys, argv;
    std::vector<std::string_view> key_views, argv_views;
    std::vector<int> owner;
    std::vector<int> shards;
    std::vector<std::optional<shard::KeySnapshot>> before, after;
    std::vector<bool> written;  // the script wrote the key (KEYS[i])
    bool write_back = false;
    int resp = 2;
    std::string reply;
  };
  auto st = std::make_shared<State>();
  st->sha.assign(lua.sha_view());
  st->body.assign(lua.body);
  st->by_sha = lua.by_sha;
  st->function = lua.function;
  for (auto k : call.keys) st->keys.emplace_back(k);
  for (auto a : call.argv) st->argv.emplace_back(a);
  for (const auto& k : st->keys) st->key_views.emplace_back(k);
  for (const auto& a : st->argv) st->argv_views.emplace_back(a);
  const Server& server = conn.reactor().server();
  for (const auto& k : st->keys) {
    const int s = server.ShardOf(k);
    st->owner.push_back(s);
    if (std::find(st->shards.begin(), st->shards.end(), s) == st->shards.end()) {
      st->shards.push_back(s);
    }
  }
  std::sort(st->shards.begin(), st->shards.end());
  st->before.resize(st->keys.size());
  st->after.resize(st->keys.size());
  st->resp = rb.resp();
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); i++) {
      if (st->owner[i] == ctx.shard.index()) st->before[i] = ctx.db.Snapshot(st->keys[i], ctx.now_ms);
    }
  });
  phases.push_back([st, read_only](ShardCtx& ctx) {
    if (ctx.shard.index() != st->shards[0]) return;
    shard::Shard scratch(ctx.shard.index(), ctx.shard.num_dbs());
    shard::Db& db = scratch.db(ctx.db_index);
    for (size_t i = 0; i < st->keys.size(); i++) {
      if (st->before[i]) db.Restore(st->keys[i], *st->before[i], true, ctx.now_ms, true);
    }
    ReplyBuilder out(&st->reply, st->resp);
    ShardCtx sctx{scratch, db, ctx.db_index, ctx.now_ms, ctx.config, out};
    sctx.acl_user = ctx.acl_user;  // the fan-out's: the caller's user, for redis.call
    LuaCall lc;
    lc.sha = st->sha;
    lc.body = st->body;
    lc.by_sha = st->by_sha;
    lc.keys = CmdArgs(st->key_views.data(), st->key_views.size());
    lc.argv = CmdArgs(st->argv_views.data(), st->argv_views.size());
    lc.read_only = read_only;
    lc.shard = ctx.shard.index();
    lc.scratch = true;
    if (st->function) {
      lc.function = true;
      lc.function_name = st->function->name;
    }
    // The keys the script writes, told by the private database: only those are written back,
    // so a key it only read is not touched (a client watching it sees no change, as in Redis).
    struct Writes : shard::KeyObserver {
      absl::flat_hash_set<std::string> keys;
      void OnKeyChanged(std::string_view key) override { keys.emplace(key); }
    } writes;
    db.AddObserver(&writes);
    const LuaOutcome o = LuaEngine::ForThisThread().Run(lc, sctx);
    db.RemoveObserver(&writes);
    st->write_back = o.wrote && !o.killed;
    if (!st->write_back) return;
    st->written.resize(st->keys.size());
    for (size_t i = 0; i < st->keys.size(); i++) {
      st->written[i] = writes.keys.contains(st->keys[i]);
      if (st->written[i]) st->after[i] = db.Snapshot(st->keys[i], ctx.now_ms);
    }
  });
  phases.push_back([st](ShardCtx& ctx) {
    if (!st->write_back) return;
    for (size_t i = 0; i < st->keys.size(); i++) {
      if (st->owner[i] != ctx.shard.index() || !st->written[i]) continue;
      if (st->after[i]) {
        ctx.db.Restore(st->keys[i], *st->after[i], true, ctx.now_ms, true);
      } else if (st->before[i]) {
        ctx.db.Del(st->keys[i], ctx.now_ms);
      }
    }
  });
  const std::vector<int> shards = st->shards;
  conn.FanOutPhases(shards, std::move(phases),
                    [st](ReplyBuilder& rb) { rb.out()->append(st->reply); });
}

// Keys on several shards.
template <bool kBySha, bool kReadOnly>
void EvalAcrossShards(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  ScriptCall call;
  LuaTarget lua;
  if (!ParseEval<kBySha, kReadOnly>(args, rb, &call, &lua)) return;
  if (call.script) {
    if (!call.script->multi) {
      rb.Error(errors::kCrossShard);
      return;
    }
    CountRun(true);
    call.script->multi(call, conn, rb);
    return;
  }
  if (lua.by_sha && !LuaScriptCache::Exists(lua.sha_view())) {
    rb.Error(errors::kNoScript);
    return;
  }
  CountRun(false);
  RunLuaAcrossShards(call, lua, kReadOnly, conn, rb);
}

// CommandSpec::may_create of EVAL / EVALSHA: a catalogued script may create a key only when it
// acquires a lock (ScriptInfo::acquires); a Lua script may do anything, so it may (EVAL_RO and
// EVALSHA_RO never write). An EVALSHA of a SHA1 nobody loaded runs nothing (NOSCRIPT).
template <bool kBySha>
bool EvalMayCreate(CmdArgs args) {
  const ScriptInfo* s = kBySha ? FindScriptBySha(args[1]) : FindScriptByText(args[1]);
  if (s) return s->acquires;
  return !kBySha || (args[1].size() == 40 && LuaScriptCache::Exists(args[1]));
}

template <bool kBySha>
bool EvalKeysOnly(CmdArgs args) {
  const ScriptInfo* s = kBySha ? FindScriptBySha(args[1]) : FindScriptByText(args[1]);
  return s != nullptr && s->keys_only;
}

// --- SCRIPT ---

// A script the catalogue does not know is compiled by this reactor's Lua (a syntax error is
// replied as Redis replies it) and its text kept for EVALSHA on any reactor.
void ScriptLoad(CmdArgs args, ReplyBuilder& rb) {
  if (const ScriptInfo* s = FindScriptByText(args[2])) {
    rb.Bulk(s->sha);
    return;
  }
  const auto hex = Sha1Hex(Sha1(args[2]));
  const std::string_view sha(hex.data(), hex.size());
  std::string error;
  if (!LuaEngine::ForThisThread().Compile(sha, args[2], &error)) {
    rb.Error(error);
    return;
  }
  LuaScriptCache::Store(sha, args[2]);
  rb.Bulk(sha);
}

void ScriptExists(CmdArgs args, ReplyBuilder& rb) {
  rb.ArrayHeader(args.size() - 2);
  for (size_t i = 2; i < args.size(); i++) {
    rb.Integer(FindScriptBySha(args[i]) || (args[i].size() == 40 && LuaScriptCache::Exists(args[i]))
                   ? 1
                   : 0);
  }
}

bool FlushOptionOk(CmdArgs args) {
  return args.size() <= 3 &&
         (args.size() < 3 || OptionIs(args[2], "async") || OptionIs(args[2], "sync"));
}

// Forgets the Lua scripts; the catalogue is built in and stays.
void ScriptFlush(CmdArgs args, ReplyBuilder& rb) {
  if (!FlushOptionOk(args)) {
    rb.Error(errors::kScriptFlushOption);
    return;
  }
  LuaScriptCache::Flush();
  rb.Ok();
}

// Asks a Lua script (function: a function, FUNCTION KILL) that has run past busy-reply-threshold
// to stop (server/cmdtable/script_busy.h).
void ScriptKill(ReplyBuilder& rb, bool function = false) {
  switch (ScriptBusy::Get().RequestKill(function)) {
    case ScriptBusy::Kill::kWrongKind:  // as Redis: the BUSY text naming the other KILL
      rb.Error(function ? errors::kBusyScript : errors::kBusyFunction);
      return;
    case ScriptBusy::Kill::kNotBusy:
      rb.Error(errors::kScriptNotBusy);
      return;
    case ScriptBusy::Kill::kUnkillable:
      rb.Error(errors::kScriptUnkillable);
      return;
    case ScriptBusy::Kill::kKilled:
      rb.Ok();
      return;
  }
}

void ScriptHelp(ReplyBuilder& rb) {
  WriteHelp(rb,
            {"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
             "EXISTS <sha1> [<sha1> ...]",
             "    Return information about the existence of the scripts in the script cache.",
             "FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache. Very dangerous on replicas.",
             "    ASYNC: Asynchronously flush the scripts cache.",
             "    SYNC: Synchronously flush the scripts cache.", "KILL",
             "    Kill the currently executing Lua script.", "LOAD <script>",
             "    Load a script into the scripts cache without executing it.", "HELP",
             "    Prints this help."});
}

void Script(CmdArgs args, Connection&, ReplyBuilder& rb) {
  struct Sub {
    const char* name;
    int arity;
  };
  static const Sub kSubs[] = {{"load", 3}, {"exists", -3}, {"flush", -2}, {"kill", 2}, {"help", 2}};
  const std::string_view sub = args[1];
  for (const Sub& s : kSubs) {
    if (!EqualsIgnoreCase(sub, s.name)) continue;
    const size_t argc = args.size();
    if (s.arity >= 0 ? argc != static_cast<size_t>(s.arity)
                     : argc < static_cast<size_t>(-s.arity)) {
      rb.Error(errors::WrongArity(std::string("script|") + s.name));
      return;
    }
    const std::string_view name = s.name;
    if (name == "load") {
      ScriptLoad(args, rb);
    } else if (name == "exists") {
      ScriptExists(args, rb);
    } else if (name == "flush") {
      ScriptFlush(args, rb);
    } else if (name == "kill") {
      ScriptKill(rb);
    } else {
      ScriptHelp(rb);
    }
    return;
  }
  rb.Error(errors::UnknownSubcommand(sub, "SCRIPT"));
}

// --- FUNCTION and FCALL (server/lua/lua_functions.h) ---

// The text of a RESP error reply without its '-' and CRLF.
std::string_view ErrorText(std::string_view reply) {
  if (!reply.empty() && reply[0] == '-') reply.remove_prefix(1);
  while (!reply.empty() && (reply.back() == '\n' || reply.back() == '\r')) reply.remove_suffix(1);
  return reply;
}

// FUNCTION LOAD [REPLACE] <code>: runs the library once, in a scratch database, to learn what
// it registers; its functions then run by FCALL on any reactor.
void FunctionLoad(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  bool replace = false;
  for (size_t i = 2; i + 1 < args.size(); i++) {
    if (!OptionIs(args[i], "replace")) {
      rb.Error("ERR Unknown option given: " + std::string(args[i]));
      return;
    }
    replace = true;
  }
  const std::string_view code = args.back();
  LibraryMetadata md;
  if (auto e = ParseLibraryMetadata(code, &md)) {
    rb.Error(*e);
    return;
  }
  {
    // The library alone first, so that a syntax error names its own lines, as Redis's does.
    const auto body_hex = Sha1Hex(Sha1(md.body));
    std::string error;
    if (!LuaEngine::ForThisThread().Compile(std::string_view(body_hex.data(), body_hex.size()),
                                            md.body, &error, /*function=*/true)) {
      rb.Error(error);
      return;
    }
  }
  const std::string probe = FunctionLoadScript(md.body);
  const auto hex = Sha1Hex(Sha1(probe));
  shard::Shard scratch(conn.reactor().id(), 1);
  std::string out;
  ReplyBuilder orb(&out, 2);
  ShardCtx sctx{scratch, scratch.db(0), 0, conn.reactor().now_ms(), conn.reactor().config(), orb};
  LuaCall lc;
  lc.sha = std::string_view(hex.data(), hex.size());
  lc.body = probe;
  lc.scratch = true;
  lc.function = true;
  lc.function_name = md.name;
  if (LuaEngine::ForThisThread().Run(lc, sctx).failed) {
    std::string_view e = ErrorText(out);
    if (e.rfind("ERR Error compiling function: ", 0) == 0) {
      rb.Error(e);
      return;
    }
    if (size_t at = e.rfind(" script: "); at != std::string_view::npos) e = e.substr(0, at);
    rb.Error("ERR Error registering functions: " + std::string(e));
    return;
  }
  // Four bulks per function: name, flags, whether it has a description, the description.
  protocol::RespParser parser;
  std::vector<std::string_view> got;
  size_t used = 0;
  if (parser.Parse(out, &used, &got) != protocol::ParseStatus::kOk || got.size() % 4 != 0) {
    rb.Error("ERR Error registering functions: unexpected result");
    return;
  }
  if (got.empty()) {
    rb.Error("ERR No functions registered");
    return;
  }
  LuaLibrary lib;
  lib.name = md.name;
  lib.code = std::string(code);
  for (size_t i = 0; i < got.size(); i += 4) {
    auto f = std::make_shared<LuaFunction>();
    f->name = std::string(got[i]);
    int64_t flags = 0;
    StringToInt64(got[i + 1], &flags);
    f->flags = static_cast<uint32_t>(flags);
    f->has_description = got[i + 2] == "1";
    f->description = std::string(got[i + 3]);
    f->library = md.name;
    f->script = FunctionCallScript(md.body, f->name);
    const auto h = Sha1Hex(Sha1(f->script));
    f->sha.assign(h.data(), h.size());
    lib.functions.push_back(std::move(f));
  }
  if (auto e = LuaFunctions::Get().Add(std::move(lib), replace)) {
    rb.Error(*e);
    return;
  }
  rb.Bulk(md.name);
}

// FUNCTION LIST [LIBRARYNAME <pattern>] [WITHCODE], as Redis 7.0 replies it.
void FunctionList(CmdArgs args, Connection&, ReplyBuilder& rb) {
  bool with_code = false;
  std::string_view pattern;
  for (size_t i = 2; i < args.size(); i++) {
    if (OptionIs(args[i], "withcode")) {
      with_code = true;
    } else if (OptionIs(args[i], "libraryname") && i + 1 < args.size()) {
      pattern = args[++i];
    } else {
      rb.Error("ERR Unknown argument " + std::string(args[i]));
      return;
    }
  }
  const auto libs = LuaFunctions::Get().List(pattern);
  rb.ArrayHeader(libs.size());
  for (const auto& lib : libs) {
    rb.MapHeader(with_code ? 4 : 3);
    rb.Bulk("library_name");
    rb.Bulk(lib->name);
    rb.Bulk("engine");
    rb.Bulk("LUA");
    rb.Bulk("functions");
    rb.ArrayHeader(lib->functions.size());
    for (const auto& f : lib->functions) {
      rb.MapHeader(3);
      rb.Bulk("name");
      rb.Bulk(f->name);
      rb.Bulk("description");
      if (f->has_description) {
        rb.Bulk(f->description);
      } else {
        rb.Null();
      }
      rb.Bulk("flags");
      const auto names = FunctionFlagNames(f->flags);
      rb.SetHeader(names.size());
      for (std::string_view n : names) rb.Bulk(n);
    }
    if (with_code) {
      rb.Bulk("library_code");
      rb.Bulk(lib->code);
    }
  }
}

void FunctionDelete(CmdArgs args, Connection&, ReplyBuilder& rb) {
  if (!LuaFunctions::Get().Delete(args[2])) {
    rb.Error("ERR Library not found");
    return;
  }
  rb.Ok();
}

void FunctionFlush(CmdArgs args, Connection&, ReplyBuilder& rb) {
  if (!FlushOptionOk(args)) {
    rb.Error(errors::kFunctionFlushOption);
    return;
  }
  LuaFunctions::Get().Flush();
  rb.Ok();
}

void FunctionKill(CmdArgs, Connection&, ReplyBuilder& rb) { ScriptKill(rb, /*function=*/true); }

// FUNCTION STATS: which function runs is not tracked across reactors (nil), then the engines.
void FunctionStats(CmdArgs, Connection&, ReplyBuilder& rb) {
  rb.MapHeader(2);
  rb.Bulk("running_script");
  rb.Null();
  rb.Bulk("engines");
  rb.MapHeader(1);
  rb.Bulk("LUA");
  rb.MapHeader(2);
  rb.Bulk("libraries_count");
  rb.Integer(static_cast<int64_t>(LuaFunctions::Get().List("").size()));
  rb.Bulk("functions_count");
  rb.Integer(static_cast<int64_t>(LuaFunctions::Get().num_functions()));
}

void FunctionHelp(CmdArgs, Connection&, ReplyBuilder& rb) {
  WriteHelp(rb, {"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                 "LOAD [REPLACE] <FUNCTION CODE>",
                 "    Create a new library with the given library name and code.",
                 "DELETE <LIBRARY NAME>", "    Delete the given library.",
                 "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
                 "    Return general information on all the libraries.", "STATS",
                 "    Return the available engines and how many libraries and functions each has.",
                 "KILL", "    Kill the current running function.", "FLUSH [ASYNC|SYNC]",
                 "    Delete all the libraries.", "HELP", "    Prints this help."});
}

void Function(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  static const Sub kSubs[] = {
      {"load", -3, FunctionLoad},   {"list", -2, FunctionList}, {"delete", 3, FunctionDelete},
      {"flush", -2, FunctionFlush}, {"kill", 2, FunctionKill},  {"stats", 2, FunctionStats},
      {"help", 2, FunctionHelp},
  };
  RunSub("function", kSubs, std::size(kSubs), args, conn, rb);
}

// FCALL / FCALL_RO <function> <numkeys> key... arg...: the function, then numkeys, checked as
// Redis 7.0 does; false after replying the error.
template <bool kReadOnly>
bool ParseFcall(CmdArgs args, ReplyBuilder& rb, ScriptCall* call, LuaTarget* lua) {
  lua->function = LuaFunctions::Get().Find(args[1]);
  if (!lua->function) {
    rb.Error("ERR Function not found");
    return false;
  }
  int64_t n;
  if (!ParseNumKeys(args, "ERR Bad number of keys provided", rb, &n)) return false;
  if (kReadOnly && !(lua->function->flags & kFnNoWrites)) {
    rb.Error("ERR Can not execute a script with write flag using *_ro command.");
    return false;
  }
  std::copy(lua->function->sha.begin(), lua->function->sha.end(), lua->sha.begin());
  lua->body = lua->function->script;
  call->keys = args.subspan(3, static_cast<size_t>(n));
  call->argv = args.subspan(3 + static_cast<size_t>(n));
  call->read_only = kReadOnly || (lua->function->flags & kFnNoWrites);
  return true;
}

template <bool kReadOnly>
void FcallOnShard(CmdArgs args, ShardCtx& ctx) {
  ScriptCall call;
  LuaTarget lua;
  if (!ParseFcall<kReadOnly>(args, ctx.rb, &call, &lua)) return;
  CountRun(false);
  LuaCall lc;
  lc.sha = lua.sha_view();
  lc.body = lua.body;
  lc.keys = call.keys;
  lc.argv = call.argv;
  lc.read_only = call.read_only;
  lc.shard = ctx.shard.index();
  lc.function = true;
  lc.function_name = lua.function->name;
  LuaEngine::ForThisThread().Run(lc, ctx);
}

template <bool kReadOnly>
void FcallAcrossShards(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  ScriptCall call;
  LuaTarget lua;
  if (!ParseFcall<kReadOnly>(args, rb, &call, &lua)) return;
  CountRun(false);
  RunLuaAcrossShards(call, lua, call.read_only, conn, rb);
}

CommandSpec EvalSpec(std::string name, uint32_t flags, ShardHandler on_shard, ConnHandler across,
                     MayCreateFn may_create = nullptr, KeysOnlyFn keys_only = nullptr) {
  CommandSpec s;
  s.name = std::move(name);
  s.arity = -3;
  // kWrite / kReadOnly: a fan-out locks the call's keys on every shard (FanOutPhases).
  s.flags = flags | kNoScript | kStale | kMultiKey | kNoMandatoryKeys;
  s.first_key = 0;
  s.last_key = 0;
  s.key_step = 0;
  s.key_range = EvalKeyRange;
  s.shard_handler = on_shard;
  s.conn_handler = across;
  s.may_create = may_create;
  s.keys_only = keys_only;
  s.acl_categories = {"@slow", "@scripting"};
  return s;
}

// A subcommand of SCRIPT or FUNCTION (`parent`), named as COMMAND, ACL rules and
// CommandTable::FindSubcommand expect: "function|flush".
CommandSpec ScriptSub(std::string_view parent, std::string name, int arity, uint32_t flags) {
  CommandSpec s;
  s.name = std::string(parent) + "|" + name;
  s.arity = arity;
  s.flags = flags;
  s.first_key = s.last_key = s.key_step = 0;
  s.acl_categories = {"@slow", "@scripting"};
  if (flags & kWrite) s.acl_categories.push_back("@write");  // (as Redis: FUNCTION LOAD, ...)
  return s;
}

}  // namespace

void RegisterScriptCommands(CommandTable* t) {
  // EVAL / EVALSHA may create a key when the script acquires a lock; the _RO forms never write.
  t->Add(EvalSpec("eval", kWrite | kMayCreate, EvalOnShard<false, false>,
                  EvalAcrossShards<false, false>, EvalMayCreate<false>, EvalKeysOnly<false>));
  t->Add(EvalSpec("evalsha", kWrite | kMayCreate, EvalOnShard<true, false>,
                  EvalAcrossShards<true, false>, EvalMayCreate<true>, EvalKeysOnly<true>));
  t->Add(EvalSpec("eval_ro", kReadOnly, EvalOnShard<false, true>, EvalAcrossShards<false, true>,
                  nullptr, EvalKeysOnly<false>));
  t->Add(EvalSpec("evalsha_ro", kReadOnly, EvalOnShard<true, true>, EvalAcrossShards<true, true>,
                  nullptr, EvalKeysOnly<true>));
  CommandSpec script;
  script.name = "script";
  script.arity = -2;
  script.flags = kNoScript | kAllowBusy;
  script.first_key = script.last_key = script.key_step = 0;
  script.conn_handler = Script;
  script.acl_categories = {"@slow"};
  script.subcommands.push_back(ScriptSub("script", "exists", -3, kNoScript));
  script.subcommands.push_back(ScriptSub("script", "flush", -2, kNoScript));
  script.subcommands.push_back(ScriptSub("script", "help", 2, kLoading | kStale));
  script.subcommands.push_back(ScriptSub("script", "kill", 2, kNoScript | kAllowBusy));
  script.subcommands.push_back(ScriptSub("script", "load", 3, kNoScript | kStale));
  t->Add(std::move(script));
  CommandSpec function;
  function.name = "function";
  function.arity = -2;
  function.flags = kNoScript | kAllowBusy;
  function.first_key = function.last_key = function.key_step = 0;
  function.conn_handler = Function;
  function.acl_categories = {"@slow"};
  function.subcommands.push_back(ScriptSub("function", "delete", 3, kWrite | kNoScript));
  function.subcommands.push_back(ScriptSub("function", "flush", -2, kWrite | kNoScript));
  function.subcommands.push_back(ScriptSub("function", "help", 2, kLoading | kStale));
  function.subcommands.push_back(ScriptSub("function", "kill", 2, kNoScript | kAllowBusy));
  function.subcommands.push_back(ScriptSub("function", "list", -2, kNoScript));
  function.subcommands.push_back(ScriptSub("function", "load", -3, kWrite | kDenyOom | kNoScript));
  function.subcommands.push_back(ScriptSub("function", "stats", 2, kNoScript | kAllowBusy));
  t->Add(std::move(function));
  // FCALL may create a key (any function may); FCALL_RO runs only no-writes functions.
  t->Add(EvalSpec("fcall", kWrite | kMayCreate, FcallOnShard<false>, FcallAcrossShards<false>));
  t->Add(EvalSpec("fcall_ro", kReadOnly, FcallOnShard<true>, FcallAcrossShards<true>));
}

}  // namespace deadbolt::server
