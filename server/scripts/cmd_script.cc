// Script commands: EVAL EVALSHA EVAL_RO EVALSHA_RO, SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP.
//
// deadbolt has no Lua VM. A script is known by the SHA1 of its exact text and runs only if it is
// in the catalogue of lock scripts (server/scripts/script_catalog.h), as native code with the
// script's effects and reply. EVALSHA of any other SHA1 replies NOSCRIPT, so clients fall back to
// EVAL or SCRIPT LOAD with the text, which is refused with an error naming the built-in lock
// commands.
//
// Routing: the keys of a call are args[3 .. 2 + numkeys] (EvalKeyRange). When they all live on
// one shard the shard handler runs there (inline or as a message: one step, atomic); when they
// span shards the connection handler runs the script as an atomic fan-out (only the multi-key
// scripts can: node-redlock, Redisson's batched renewal; others reply CROSSSLOT, as a cluster
// would). A malformed numkeys yields no keys, so the call runs here and replies the error.

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/scripts/script_catalog.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

bool EvalKeyRange(CmdArgs args, int* first, int* last) {
  int64_t n;
  if (!StringToInt64(args[2], &n) || n < 0 || n > static_cast<int64_t>(args.size()) - 3) {
    return false;
  }
  *first = 3;
  *last = 2 + static_cast<int>(n);
  return true;
}

// The script, KEYS and ARGV of an EVAL-family call, checked in Redis 7.0's order; false after
// replying the error.
template <bool kBySha, bool kReadOnly>
bool ParseEval(CmdArgs args, ReplyBuilder& rb, ScriptCall* call) {
  if (kBySha && args[1].size() != 40) {  // not a SHA1: NOSCRIPT before anything else
    rb.Error(errors::kNoScript);
    return false;
  }
  int64_t n;
  if (!StringToInt64(args[2], &n)) {
    rb.Error(errors::kNotInteger);
    return false;
  }
  if (n > static_cast<int64_t>(args.size()) - 3) {
    rb.Error(errors::kNumKeysTooBig);
    return false;
  }
  if (n < 0) {
    rb.Error(errors::kNumKeysNegative);
    return false;
  }
  call->script = kBySha ? FindScriptBySha(args[1]) : FindScriptByText(args[1]);
  if (!call->script) {
    rb.Error(kBySha ? errors::kNoScript : errors::kUnknownScript);
    return false;
  }
  call->keys = args.subspan(3, static_cast<size_t>(n));
  call->argv = args.subspan(3 + static_cast<size_t>(n));
  call->read_only = kReadOnly;
  return true;
}

// All keys on the shard running this (or no keys).
template <bool kBySha, bool kReadOnly>
void EvalOnShard(CmdArgs args, ShardCtx& ctx) {
  ScriptCall call;
  if (!ParseEval<kBySha, kReadOnly>(args, ctx.rb, &call)) return;
  RunScriptOnShard(call, ctx);
}

// Keys on several shards.
template <bool kBySha, bool kReadOnly>
void EvalAcrossShards(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  ScriptCall call;
  if (!ParseEval<kBySha, kReadOnly>(args, rb, &call)) return;
  if (!call.script->multi) {
    rb.Error(errors::kCrossShard);
    return;
  }
  call.script->multi(call, conn, rb);
}

// CommandSpec::may_create of EVAL / EVALSHA: the call may create a key only when its script is
// one that acquires a lock (ScriptInfo::acquires). An unknown script runs nothing.
template <bool kBySha>
bool EvalMayCreate(CmdArgs args) {
  const ScriptInfo* s = kBySha ? FindScriptBySha(args[1]) : FindScriptByText(args[1]);
  return s && s->acquires;
}

// --- SCRIPT ---

void ScriptLoad(CmdArgs args, ReplyBuilder& rb) {
  const ScriptInfo* s = FindScriptByText(args[2]);
  if (!s) {
    rb.Error(errors::kUnknownScript);
    return;
  }
  rb.Bulk(s->sha);
}

void ScriptExists(CmdArgs args, ReplyBuilder& rb) {
  rb.ArrayHeader(args.size() - 2);
  for (size_t i = 2; i < args.size(); i++) rb.Integer(FindScriptBySha(args[i]) ? 1 : 0);
}

// The catalogue is built in: there is nothing to flush, and its scripts stay known.
void ScriptFlush(CmdArgs args, ReplyBuilder& rb) {
  if (args.size() > 3 ||
      (args.size() == 3 && !OptionIs(args[2], "async") && !OptionIs(args[2], "sync"))) {
    rb.Error(errors::kScriptFlushOption);
    return;
  }
  rb.Ok();
}

void ScriptHelp(ReplyBuilder& rb) {
  static const char* kLines[] = {
      "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "EXISTS <sha1> [<sha1> ...]",
      "    Return information about the existence of the scripts in the script cache.",
      "    deadbolt knows the lock scripts of popular clients, built in.",
      "FLUSH [ASYNC|SYNC]",
      "    Flush the Lua scripts cache. deadbolt's scripts are built in and stay.",
      "KILL",
      "    Kill the currently executing Lua script.",
      "LOAD <script>",
      "    Load a script into the scripts cache without executing it: its SHA1 if deadbolt",
      "    runs it natively, else an error (deadbolt runs no general Lua).",
      "HELP",
      "    Prints this help."};
  rb.ArrayHeader(std::size(kLines));
  for (const char* l : kLines) rb.SimpleString(l);
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
      rb.Error(errors::kScriptNotBusy);
    } else {
      ScriptHelp(rb);
    }
    return;
  }
  rb.Error(errors::UnknownSubcommand(sub, "SCRIPT"));
}

CommandSpec EvalSpec(std::string name, uint32_t flags, ShardHandler on_shard, ConnHandler across,
                     MayCreateFn may_create = nullptr) {
  CommandSpec s;
  s.name = std::move(name);
  s.arity = -3;
  // kWrite / kReadOnly: a fan-out locks the call's keys on every shard (FanOutPhases).
  s.flags = flags | kNoScript | kStale | kMultiKey;
  s.first_key = 0;
  s.last_key = 0;
  s.key_step = 0;
  s.key_range = EvalKeyRange;
  s.shard_handler = on_shard;
  s.conn_handler = across;
  s.may_create = may_create;
  s.acl_categories = {"@slow", "@scripting"};
  return s;
}

CommandSpec ScriptSub(std::string name, int arity, uint32_t flags) {
  CommandSpec s;
  s.name = "script|" + name;
  s.arity = arity;
  s.flags = flags;
  s.first_key = s.last_key = s.key_step = 0;
  s.acl_categories = {"@slow", "@scripting"};
  return s;
}

}  // namespace

void RegisterScriptCommands(CommandTable* t) {
  // EVAL / EVALSHA may create a key when the script acquires a lock; the _RO forms never write.
  t->Add(EvalSpec("eval", kWrite | kMayCreate, EvalOnShard<false, false>,
                  EvalAcrossShards<false, false>, EvalMayCreate<false>));
  t->Add(EvalSpec("evalsha", kWrite | kMayCreate, EvalOnShard<true, false>,
                  EvalAcrossShards<true, false>, EvalMayCreate<true>));
  t->Add(EvalSpec("eval_ro", kReadOnly, EvalOnShard<false, true>, EvalAcrossShards<false, true>));
  t->Add(EvalSpec("evalsha_ro", kReadOnly, EvalOnShard<true, true>, EvalAcrossShards<true, true>));
  CommandSpec script;
  script.name = "script";
  script.arity = -2;
  script.flags = kNoScript;
  script.first_key = script.last_key = script.key_step = 0;
  script.conn_handler = Script;
  script.acl_categories = {"@slow"};
  script.subcommands.push_back(ScriptSub("exists", -3, kNoScript));
  script.subcommands.push_back(ScriptSub("flush", -2, kNoScript));
  script.subcommands.push_back(ScriptSub("help", 2, kLoading | kStale));
  script.subcommands.push_back(ScriptSub("kill", 2, kNoScript));
  script.subcommands.push_back(ScriptSub("load", 3, kNoScript | kStale));
  t->Add(std::move(script));
}

}  // namespace deadbolt::server
