#pragma once
// What the blocking pops share (BLPOP BRPOP BLMOVE BRPOPLPUSH in cmd_list.cc, BZPOPMIN BZPOPMAX
// in cmd_zset.cc, BLMPOP BZMPOP and their non-blocking forms in cmd_mpop.cc): the timeout
// argument, replies built for a waiter, and the queue discipline on LockWaiters' key-ready hook
// (server/txn/lock_waiters.h).
//
// Threads: each function runs on the reactor thread of the key's shard (ParseBlockTimeout on any).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "protocol/reply_builder.h"
#include "server/commands/cmd_util.h"
#include "server/txn/blocked_reply.h"
#include "shard/db.h"

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

// Redis 7.0's addReplyDouble: %.17g ("inf", "-inf"); a bulk string in RESP2, a double in RESP3.
void ReplyScore(protocol::ReplyBuilder& rb, double d);

// One element a pop took: a list's value, or a sorted set's member and its score.
struct Popped {
  std::string value;
  double score = 0;
};
// What differs between the pops of each type and reply (BLPOP BRPOP BZPOPMIN BZPOPMAX, and the
// *MPOP forms).
struct PopFns {
  int64_t (*size)(shard::Db& db, std::string_view key, int64_t now);  // -1: another type
  // Up to `count` elements, in the order taken (false: none).
  bool (*pop)(shard::Db& db, std::string_view key, int64_t now, size_t count,
              std::vector<Popped>* out);
  void (*reply)(protocol::ReplyBuilder& rb, std::string_view key, const std::vector<Popped>& got);
  // The client had gone before its reply reached it: the elements go back.
  void (*put_back)(shard::Db& db, std::string_view key, const std::vector<Popped>& got,
                   int64_t now);
};

// How a pop takes its elements, and puts them back for a client gone before its reply reached
// it (each where it was: a list's in their order at the same end, a member with its score unless
// added again meanwhile).
bool ListPopInto(shard::Db& d, std::string_view key, shard::ListEnd end, size_t count, int64_t now,
                 std::vector<Popped>* out);
void ListPutBack(shard::Db& d, std::string_view key, shard::ListEnd end,
                 const std::vector<Popped>& got, int64_t now);
bool ZPopInto(shard::Db& d, std::string_view key, bool max, size_t count, int64_t now,
              std::vector<Popped>* out);
void ZPutBack(shard::Db& d, std::string_view key, const std::vector<Popped>& got, int64_t now);

// The PopFns of a list's pops from `end` and of a sorted set's (from its maximum or minimum),
// with the reply each command gives.
using PopReplyFn = void (*)(protocol::ReplyBuilder& rb, std::string_view key,
                            const std::vector<Popped>& got);
int64_t ListSizeOrWrongType(shard::Db& d, std::string_view key, int64_t now);
int64_t ZSizeOrWrongType(shard::Db& d, std::string_view key, int64_t now);
template <shard::ListEnd end>
constexpr PopFns ListPopFns(PopReplyFn reply) {
  return PopFns{ListSizeOrWrongType,
                [](shard::Db& d, std::string_view key, int64_t now, size_t count,
                   std::vector<Popped>* out) { return ListPopInto(d, key, end, count, now, out); },
                reply,
                [](shard::Db& d, std::string_view key, const std::vector<Popped>& got,
                   int64_t now) { ListPutBack(d, key, end, got, now); }};
}
template <bool max>
constexpr PopFns ZPopFns(PopReplyFn reply) {
  return PopFns{ZSizeOrWrongType,
                [](shard::Db& d, std::string_view key, int64_t now, size_t count,
                   std::vector<Popped>* out) { return ZPopInto(d, key, max, count, now, out); },
                reply, ZPutBack};
}

// A pop's attempt on one shard: the first key in order that is not empty gives up to `count`
// elements and the reply is written (a key of another type met first: WRONGTYPE; a key whose
// earlier waiters take what it has is passed over). False: nothing to take, nothing written.
bool PopFirstReady(ShardCtx& ctx, CmdArgs keys, size_t count, const PopFns& fns);

// A blocking pop whose keys are all on this shard found none ready and may wait: the client
// waits on each of its keys (LockWaiters' key-ready hook), served by the first of them that has
// an element of the pop's type (a key of another type keeps it waiting, as Redis), which gives
// it up to `count`. Takes *ctx.block. `fns` must outlive the wait (a static).
void WaitOnKeys(ShardCtx& ctx, CmdArgs keys, int64_t deadline, const PopFns& fns, size_t count = 1);

// A waiter's key-ready hook (LockWaiters::Waiter::try_serve): serves the client through the
// reply (claiming it first) and returns true, or changes nothing and returns false to wait on.
using ServeFn = absl::AnyInvocable<bool(shard::Db& db, std::string_view key, int64_t now_ms,
                                        BlockedReply& reply)>;
// Makes the hook of one key, on the key's shard (copied to every shard the client waits on).
using MakeServeFn = std::function<ServeFn(int db, std::string_view key)>;

// WaitOnKeys with any hook (XREAD's waits for entries past an ID): all keys on this shard.
void WaitOnKeysWith(ShardCtx& ctx, CmdArgs keys, int64_t deadline, const MakeServeFn& make);

// The client waits on `keys` (key_shards[i]: the shard of keys[i]; `shards`: those, ascending,
// distinct) until `deadline`, each key on its shard with the hook `make` gives it; the first to
// serve it wins. Runs on the connection's reactor, in a fan-out's reply (after its slot so far:
// Connection::BlockAcross).
void WaitAcross(Connection& conn, const std::vector<std::string>& keys,
                const std::vector<int>& key_shards, const std::vector<int>& shards,
                int64_t deadline, MakeServeFn make);

// A pop whose keys are on several shards: one atomic attempt, as on one shard: every key's size
// is read under the keys' locks, then the first key in order that is not empty gives up to
// `count` elements (a key of another type met first is WRONGTYPE). If nothing can be taken: a
// null array when it may not wait (a non-blocking form, or inside MULTI/EXEC); otherwise the
// client waits on every key until `deadline`, on each key's shard, and the first key to get an
// element serves it (WaitOnKeys, across shards). Runs on the connection's reactor (a
// conn_handler).
void PopAcross(CmdArgs keys, int64_t deadline, size_t count, bool may_wait, Connection& conn,
               protocol::ReplyBuilder& rb, const PopFns& fns);

// BLMOVE / BRPOPLPUSH whose source and destination are on two shards, outside MULTI, found the
// source empty: the client waits on the source, on its shard (blocking_move.cc). When the source
// gets an element, its waiter moves it with a transaction over both keys (as LMOVE: atomic,
// journalled as one), holding the source's queue meanwhile so that the waiters behind it keep
// their turn. A destination of another type then: WRONGTYPE, nothing moved (Redis). A source
// emptied again before the move took its locks: the client waits on. Runs on the connection's
// reactor, after its reply slot so far (Connection::BlockAcross).
struct MoveAcrossWait {
  std::string src, dst;
  int src_shard = 0, dst_shard = 0;
  shard::ListEnd from = shard::ListEnd::kRight, to = shard::ListEnd::kLeft;
  int64_t deadline = 0;
};
void WaitToMoveAcross(Connection& conn, MoveAcrossWait wait);

}  // namespace deadbolt::server
