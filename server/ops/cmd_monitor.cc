// MONITOR: the connection receives a line for every command any client sends, on any reactor
// (Reactor::FeedMonitors), until RESET or it closes.

#include "server/cmdtable/command.h"
#include "server/core/connection.h"

namespace deadbolt::server {
namespace {

void Monitor(CmdArgs, Connection& conn, protocol::ReplyBuilder& rb) {
  if (conn.monitor()) return;  // as Redis: a second MONITOR is ignored, without a reply
  rb.Ok();
  conn.set_monitor(true);
}

}  // namespace

void RegisterMonitorCommands(CommandTable* t) {
  t->Add(ConnCommand("monitor", 1, kAdmin | kNoScript | kLoading | kStale, Monitor,
                     {"@admin", "@slow", "@dangerous"}));
}

}  // namespace deadbolt::server
