// deadbolt's own lock commands (docs/LOCKS.md):
//
//   LOCK.ACQUIRE key owner lease-ms [WAIT timeout-ms] [REENTRANT]  -> fencing token | nil
//   LOCK.RELEASE key owner                                          -> holds left | -1
//   LOCK.EXTEND key owner lease-ms                                  -> 1 | 0
//   LOCK.INFO key                   -> {owner, ttl_ms, token, holds, waiters}
//
// The lock is the string key holding the owner, its lease the TTL (shard::Db::LockAcquire keeps
// the fencing token and hold count beside it). Waiting is in the server: a LOCK.ACQUIRE with
// WAIT that finds the lock taken keeps its reply open (ShardCtx::block) in the key's queue in
// LockWaiters, which hands the lock over, first come first served, the moment it is free.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/reactor.h"
#include "server/txn/blocked_reply.h"
#include "server/txn/lock_waiters.h"
#include "shard/db.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;

// A lease (lease-ms): a positive integer whose end, from now, fits an int64.
bool ParseLease(std::string_view arg, std::string_view command, int64_t now_ms, int64_t* lease,
                ReplyBuilder& rb) {
  if (!StringToInt64(arg, lease)) {
    rb.Error(errors::kNotInteger);
    return false;
  }
  if (*lease <= 0 || *lease > INT64_MAX - now_ms) {
    rb.Error(errors::InvalidExpire(command));
    return false;
  }
  return true;
}

struct AcquireOptions {
  int64_t lease_ms = 0;
  bool wait = false;
  int64_t deadline_ms = LockWaiters::kForever;  // with wait
  bool reentrant = false;
};

bool ParseAcquire(CmdArgs args, int64_t now_ms, AcquireOptions* o, ReplyBuilder& rb) {
  if (!ParseLease(args[3], "lock.acquire", now_ms, &o->lease_ms, rb)) return false;
  for (size_t i = 4; i < args.size(); i++) {
    if (OptionIs(args[i], "reentrant")) {
      o->reentrant = true;
    } else if (OptionIs(args[i], "wait") && i + 1 < args.size()) {
      int64_t timeout;
      if (!StringToInt64(args[++i], &timeout)) {
        rb.Error(errors::kTimeoutNotInteger);
        return false;
      }
      if (timeout < 0) {
        rb.Error(errors::kTimeoutNegative);
        return false;
      }
      o->wait = true;
      // 0 waits without a time limit, as Redis's blocking commands do.
      o->deadline_ms = timeout == 0 || timeout > LockWaiters::kForever - now_ms
                           ? LockWaiters::kForever
                           : now_ms + timeout;
    } else {
      rb.Error(errors::kSyntax);
      return false;
    }
  }
  return true;
}

// CommandSpec::blocks of LOCK.ACQUIRE: only a call with WAIT may wait.
bool AcquireMayWait(CmdArgs args) {
  for (size_t i = 4; i < args.size(); i++) {
    if (OptionIs(args[i], "wait")) return true;
  }
  return false;
}

// --- LOCK.ACQUIRE key owner lease-ms [WAIT timeout-ms] [REENTRANT] ---

void Acquire(CmdArgs args, ShardCtx& ctx) {
  AcquireOptions o;
  if (!ParseAcquire(args, ctx.now_ms, &o, ctx.rb)) return;
  const std::string_view key = args[1], owner = args[2];
  LockWaiters& waiters = Reactor::Current()->lock_waiters();
  // First come, first served: while others wait for this lock a newcomer queues behind them,
  // even if the lock has just been freed (its handover, done first here, goes to them). Only
  // the holder re-entering it passes them.
  bool may_take = true;
  if (waiters.HasWaiters(ctx.db_index, key)) {
    waiters.HandOver(ctx.db_index, key);
    if (waiters.HasWaiters(ctx.db_index, key)) {
      auto held = ctx.db.Get(key, ctx.now_ms);
      if (!held.ok() && held.status() == shard::OpStatus::kWrongType) {
        ctx.rb.Error(errors::kWrongType);
        return;
      }
      may_take = o.reentrant && held.ok() && *held == owner;
    }
  }
  if (may_take) {
    auto g = ctx.db.LockAcquire(key, owner, o.lease_ms, o.reentrant, ctx.now_ms);
    if (!g.ok()) {
      ctx.rb.Error(errors::ForStatus(g.status()));
      return;
    }
    if (g->acquired) {
      ctx.rb.Integer(static_cast<int64_t>(g->token));
      return;
    }
  }
  if (o.wait && ctx.block && *ctx.block) {
    LockWaiters::Waiter w;
    w.owner = std::string(owner);
    w.lease_ms = o.lease_ms;
    w.reentrant = o.reentrant;
    w.deadline_ms = o.deadline_ms;
    w.reply = std::move(*ctx.block);  // the reply stays open: nothing is written now
    waiters.Wait(ctx.db_index, key, std::move(w));
    return;
  }
  ctx.rb.Null();  // busy (inside MULTI/EXEC, WAIT does not wait, as in Redis)
}

// --- LOCK.RELEASE key owner ---

void Release(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.LockRelease(args[1], args[2], ctx.now_ms);
  if (!r.ok()) {
    ctx.rb.Error(errors::ForStatus(r.status()));
    return;
  }
  ctx.rb.Integer(*r);
  // Freed: the next waiter gets it now rather than after this command.
  if (*r == 0) Reactor::Current()->lock_waiters().HandOver(ctx.db_index, args[1]);
}

// --- LOCK.EXTEND key owner lease-ms ---

void Extend(CmdArgs args, ShardCtx& ctx) {
  int64_t lease;
  if (!ParseLease(args[3], "lock.extend", ctx.now_ms, &lease, ctx.rb)) return;
  auto r = ctx.db.LockExtend(args[1], args[2], lease, ctx.now_ms);
  if (!r.ok()) {
    ctx.rb.Error(errors::ForStatus(r.status()));
    return;
  }
  ctx.rb.Integer(*r ? 1 : 0);
}

// --- LOCK.INFO key ---

void Info(CmdArgs args, ShardCtx& ctx) {
  auto r = ctx.db.LockInfo(args[1], ctx.now_ms);
  if (!r.ok()) {
    ctx.rb.Error(errors::ForStatus(r.status()));
    return;
  }
  const shard::LockState& s = *r;
  ReplyBuilder& rb = ctx.rb;
  rb.MapHeader(5);
  rb.Bulk("owner");
  if (s.held) {
    rb.Bulk(s.owner);
  } else {
    rb.Null();
  }
  rb.Bulk("ttl_ms");
  rb.Integer(s.held ? s.pttl_ms : -2);
  rb.Bulk("token");
  if (s.held && s.token != 0) {
    rb.Integer(static_cast<int64_t>(s.token));
  } else {
    rb.Null();
  }
  rb.Bulk("holds");
  rb.Integer(s.held ? s.holds : 0);
  rb.Bulk("waiters");
  rb.Integer(
      static_cast<int64_t>(Reactor::Current()->lock_waiters().Waiters(ctx.db_index, args[1])));
}

}  // namespace

void RegisterNativeLockCommands(CommandTable* t) {
  CommandSpec acquire = Key1("lock.acquire", -4, kWrite | kDenyOom | kBlocking, Acquire,
                             {"@write", "@string", "@slow", "@blocking"});
  acquire.blocks = AcquireMayWait;
  t->Add(std::move(acquire));
  t->Add(Key1("lock.release", 3, kWrite | kFast, Release, {"@write", "@string", "@fast"}));
  t->Add(Key1("lock.extend", 4, kWrite | kFast, Extend, {"@write", "@string", "@fast"}));
  t->Add(Key1("lock.info", 2, kReadOnly | kFast, Info, {"@read", "@string", "@fast"}));
}

}  // namespace deadbolt::server
