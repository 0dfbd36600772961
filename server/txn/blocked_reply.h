#pragma once
// The reply of a command that waits in the server (LOCK.ACQUIRE ... WAIT), kept open by the
// shard that makes it wait.

#include <absl/functional/any_invocable.h>

#include <cstdint>
#include <string>

namespace deadbolt::server {

// Owned by the reactor thread of the shard running the command (the key's owner), which alone
// calls it. The dispatcher makes one for each call of a blocking command (CommandSpec::blocks)
// from a client connection and hands it to the shard handler through ShardCtx::block. A handler
// that has to wait moves it out (and writes nothing to ctx.rb); otherwise the dispatcher
// finishes it with what the handler wrote. Until Finish() the connection runs none of its later
// commands, as a blocked client in Redis.
//
// Finish() must be called exactly once: when the wait ends (served, timed out) or, after the
// client's connection has closed (cancelled()), to let the connection go. An unfinished one is
// only ever destroyed at shutdown.
class BlockedReply {
 public:
  virtual ~BlockedReply() = default;
  // The client's RESP version, for building the reply.
  virtual int resp() const = 0;
  // The waiting connection's id (unique for the life of the server).
  virtual uint64_t client_id() const = 0;
  // True once the client's connection has closed: the reply will go nowhere. Any thread may
  // have set it; it never goes back to false.
  virtual bool cancelled() const = 0;
  // Before a waiter takes anything for this reply: whether it may (a client waiting on several
  // keys has one reply shared by its waiters on each, and only the first to claim it serves
  // it). Once it returns true, it does so again for the same caller. A plain reply: always.
  virtual bool Claim() { return true; }
  // Sends `reply` (RESP bytes) to the client and lets its connection go on. If the connection
  // turns out to have closed before the reply reached it, `undo` (if any) runs back on this
  // reactor: a lock granted to a client that has gone is given back.
  virtual void Finish(std::string reply, absl::AnyInvocable<void()> undo = nullptr) = 0;
};

}  // namespace deadbolt::server
