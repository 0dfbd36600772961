#pragma once
// The catalogue of lock scripts deadbolt runs natively, without Lua.
//
// Clients name a script by the SHA1 of its exact text (EVALSHA) or send the text (EVAL). deadbolt
// knows the scripts that popular lock clients send — redis-py's Lock, Redisson's RLock,
// go-redsync, node-redlock, redis-semaphore, the classic compare-and-delete — by their SHA1 and
// runs each as a small C++ function over shard::Db operations with exactly the script's effects,
// reply and errors (as Redis 7.0 gives them, "... script: <sha>, on @user_script:<line>.").
// Any other script runs in the embedded Lua (server/lua/lua_engine.h): the catalogue is the fast
// path and wins for every SHA1 it knows.
//
// The catalogue is static: built once, read-only, shared by every reactor.

#include <absl/types/span.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/reply_builder.h"
#include "server/cmdtable/command.h"
#include "server/base/script_sha1.h"

namespace deadbolt::server {

class Connection;
class ScriptRun;
struct ScriptInfo;

// How a PUBLISH / SPUBLISH made by a script reaches subscribers. Returns the receivers.
using ScriptPublishFn = int64_t (*)(bool shard_channel, std::string_view channel,
                                    std::string_view message);

// One EVAL/EVALSHA call: the script, and KEYS and ARGV as the script sees them. Views into the
// command's arguments; lives for the call, on the thread running it.
struct ScriptCall {
  const ScriptInfo* script = nullptr;
  CmdArgs keys;            // KEYS[1..n]
  CmdArgs argv;            // ARGV[1..m]
  bool read_only = false;  // EVAL_RO / EVALSHA_RO: the script's first write fails
  // Where PUBLISH goes; null: PublishNoWait on the calling reactor.
  ScriptPublishFn publish = nullptr;
};

// Runs a script on the one shard owning all its keys, in one step (atomic: a shard is
// single-threaded). Writes the script's reply or its error.
using ScriptShardFn = void (*)(ScriptRun& run, protocol::ReplyBuilder& rb);
// Runs a script whose keys span shards, atomically, on the connection's reactor: it fans out
// with Connection::FanOutPhases, which holds the command's key locks on every shard for all the
// phases, and the fan-out's finish writes the reply.
using ScriptMultiFn = void (*)(const ScriptCall& call, Connection& conn,
                               protocol::ReplyBuilder& rb);

struct ScriptInfo {
  std::string_view sha;     // 40 lower-case hex digits: SHA1 of the exact script text
  std::string_view client;  // who sends it, e.g. "redis-py Lock"
  std::string_view name;    // what it is, e.g. "release"
  int num_keys;             // KEYS the client passes (-1: any number); documentation only, as
                            // in Redis a script sees missing KEYS/ARGV as nil
  ScriptShardFn run;
  ScriptMultiFn multi;  // null: the keys must live on one shard (CROSSSLOT otherwise)
  Sha1Digest digest;    // sha, parsed
  // The script may create a key that is a lock: it acquires one (Redisson's and node-redlock's
  // acquire, redsync's touch with SET NX). Refused while --restart-delay runs. A release or an
  // extension only acts on a lock that exists (Redisson's release may write its unlock latch,
  // but only after releasing a lock that was held).
  bool acquires = false;
  // Its effects are on its KEYS alone: no PUBLISH, no other key (a pipeline may run it ahead of
  // an earlier command, under locks on its keys: server/core/relay.cc).
  bool keys_only = false;
};

// Every catalogued script.
absl::Span<const ScriptInfo> AllScripts();
// The script whose SHA1 is `hex` (40 hex digits, any case), or null. A hash lookup, no allocation.
const ScriptInfo* FindScriptBySha(std::string_view hex);
// The script whose exact text is `body` (its SHA1 is looked up), or null.
const ScriptInfo* FindScriptByText(std::string_view body);

// Runs `call` on one shard (all its keys are on `ctx.shard`): the script's reply, or its error,
// goes to ctx.rb.
void RunScriptOnShard(const ScriptCall& call, ShardCtx& ctx);

}  // namespace deadbolt::server
