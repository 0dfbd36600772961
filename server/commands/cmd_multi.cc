// Transaction commands: MULTI EXEC DISCARD WATCH UNWATCH. The work is in connection_exec.cc.

#include "server/cmdtable/command.h"
#include "server/core/connection.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

void Multi(CmdArgs, Connection& conn, ReplyBuilder& rb) { conn.Multi(rb); }
void Exec(CmdArgs, Connection& conn, ReplyBuilder& rb) { conn.Exec(rb); }
void Discard(CmdArgs, Connection& conn, ReplyBuilder& rb) { conn.Discard(rb); }
void Watch(CmdArgs args, Connection& conn, ReplyBuilder& rb) { conn.Watch(args, rb); }
void Unwatch(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  conn.Unwatch();
  rb.Ok();
}

CommandSpec Tx(std::string name, int arity, uint32_t flags, ConnHandler h, int first_key = 0,
               int last_key = 0) {
  // EXEC is @slow in Redis 7.0; the others @fast.
  std::vector<std::string> acl = {name == "exec" ? "@slow" : "@fast", "@transaction"};
  return ConnCommand(std::move(name), arity, flags, h, std::move(acl), first_key,
                     last_key, first_key ? 1 : 0);
}

}  // namespace

void RegisterTransactionCommands(CommandTable* t) {
  // Inside MULTI these run at once instead of being queued, except UNWATCH (queued, as in Redis).
  t->Add(Tx("multi", 1, kNoScript | kLoading | kStale | kFast | kNoQueue | kAllowBusy, Multi));
  t->Add(Tx("exec", 1, kNoScript | kLoading | kStale | kNoQueue | kBarrier, Exec));
  t->Add(Tx("discard", 1, kNoScript | kLoading | kStale | kFast | kNoQueue | kAllowBusy, Discard));
  t->Add(
      Tx("watch", -2, kNoScript | kLoading | kStale | kFast | kNoQueue | kAllowBusy, Watch, 1, -1));
  t->Add(Tx("unwatch", 1, kNoScript | kLoading | kStale | kFast | kAllowBusy, Unwatch));
}

}  // namespace deadbolt::server
