#pragma once
// INFO: gathers counters from every reactor and formats Redis's sections.

#include "protocol/reply_builder.h"
#include "server/cmdtable/command.h"

namespace deadbolt::server {

void Info(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb);

}  // namespace deadbolt::server
