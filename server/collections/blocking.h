#pragma once
// What the blocking pops share (BLPOP BRPOP BLMOVE BRPOPLPUSH in cmd_list.cc, BZPOPMIN BZPOPMAX
// in cmd_zset.cc): the timeout argument, replies built for a waiter, and the queue discipline on
// LockWaiters' key-ready hook (server/txn/lock_waiters.h).
//
// Threads: each function runs on the reactor thread of the key's shard (ParseBlockTimeout on any).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/reply_builder.h"
#include "server/commands/cmd_util.h"

namespace deadbolt::server {

// Redis's getTimeoutFromObjectOrReply: seconds as a float, 0 for no limit. Sets the deadline
// (LockWaiters::kForever for none); false after replying the error.
bool ParseBlockTimeout(std::string_view s, int64_t now_ms, int64_t* deadline,
                       protocol::ReplyBuilder& rb);

// A waiter's reply bytes in its protocol: `n` bulk strings as an array, or `items[0]` alone.
std::string RespOf(int resp, const std::string_view* items, size_t n, bool bulk_only);
std::string ErrorOf(int resp, std::string_view msg);

// While others wait on `key`, a newcomer goes behind them: the ready ones are served first.
// True while some still wait (the newcomer must not take what is there).
bool OthersWait(ShardCtx& ctx, std::string_view key);

// After a write that may have made `key` ready: its waiters are served now, before any other
// command can take what was added (the change report would also serve them, a little later).
void ServeWaiters(ShardCtx& ctx, std::string_view key);

// CommandSpec::blocks of the blocking pops: every call may wait.
bool AlwaysMayBlock(CmdArgs);

// One element a blocking pop took: a list's value, or a sorted set's member and its score.
struct Popped {
  std::string value;
  double score = 0;
};
// What differs between the blocking pops of each type, for BlockingPopAcross.
struct PopAcrossFns {
  int64_t (*size)(ShardCtx& ctx, std::string_view key);           // -1: a key of another type
  bool (*pop)(ShardCtx& ctx, std::string_view key, Popped* out);  // false: nothing taken
  void (*reply)(protocol::ReplyBuilder& rb, std::string_view key, const Popped& popped);
};
// A blocking pop (BLPOP BRPOP BZPOPMIN BZPOPMAX) whose keys are on several shards: one atomic
// attempt, as the non-blocking forms make: every key's size is read under the keys' locks, then
// the first key in order that is not empty gives one element (a key of another type met first
// is WRONGTYPE). If nothing can be taken it does not wait: a null reply inside MULTI/EXEC,
// kBlockOnOneKey otherwise. Runs on the connection's reactor (a conn_handler).
void BlockingPopAcross(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb,
                       const PopAcrossFns& fns);

}  // namespace deadbolt::server
