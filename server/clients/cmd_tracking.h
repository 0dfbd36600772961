#pragma once
// CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO (cmd_tracking.cc), dispatched by CLIENT
// (cmd_client.cc).

#include "protocol/reply_builder.h"
#include "server/cmdtable/command.h"

namespace deadbolt::server {

class Connection;

void ClientTracking(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb);
void ClientCaching(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb);
void ClientGetRedir(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb);
void ClientTrackingInfo(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb);

}  // namespace deadbolt::server
