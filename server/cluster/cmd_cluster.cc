// CLUSTER, READONLY, READWRITE, ASKING, as Redis 7 answers them with cluster support disabled:
// each call that passes the dispatcher's checks (and, for CLUSTER, its subcommand's arity) gets
// ERR This instance has cluster support disabled.

#include <string>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"

namespace deadbolt::server {
namespace {

void Disabled(CmdArgs, Connection&, protocol::ReplyBuilder& rb) {
  rb.Error(errors::kClusterDisabled);
}

// Redis 7.0's CLUSTER subcommands: name, arity, and whether it is @admin (the rest are @slow
// only). One list for the dispatch and for COMMAND's subcommands.
struct ClusterSub {
  Sub sub;
  bool admin;
};
constexpr ClusterSub kSubs[] = {
    {{"addslots", -3, Disabled}, true},
    {{"addslotsrange", -4, Disabled}, true},
    {{"bumpepoch", 2, Disabled}, true},
    {{"count-failure-reports", 3, Disabled}, true},
    {{"countkeysinslot", 3, Disabled}, false},
    {{"delslots", -3, Disabled}, true},
    {{"delslotsrange", -4, Disabled}, true},
    {{"failover", -2, Disabled}, true},
    {{"flushslots", 2, Disabled}, true},
    {{"forget", 3, Disabled}, true},
    {{"getkeysinslot", 4, Disabled}, false},
    {{"help", 2, Disabled}, false},
    {{"info", 2, Disabled}, false},
    {{"keyslot", 3, Disabled}, false},
    {{"links", 2, Disabled}, false},
    {{"meet", -4, Disabled}, true},
    {{"myid", 2, Disabled}, false},
    {{"nodes", 2, Disabled}, false},
    {{"replicas", 3, Disabled}, true},
    {{"replicate", 3, Disabled}, true},
    {{"reset", -2, Disabled}, true},
    {{"saveconfig", 2, Disabled}, true},
    {{"set-config-epoch", 3, Disabled}, true},
    {{"setslot", -4, Disabled}, true},
    {{"shards", 2, Disabled}, false},
    {{"slaves", 3, Disabled}, true},
    {{"slots", 2, Disabled}, false},
};

void Cluster(CmdArgs args, Connection& conn, protocol::ReplyBuilder& rb) {
  static const auto* const subs = [] {
    auto* v = new std::vector<Sub>();
    for (const ClusterSub& s : kSubs) v->push_back(s.sub);
    return v;
  }();
  RunSub("cluster", subs->data(), subs->size(), args, conn, rb);
}

}  // namespace

void RegisterClusterCommands(CommandTable* t) {
  CommandSpec cluster = ConnCommand("cluster", -2, 0, Cluster, {"@slow"});
  for (const ClusterSub& s : kSubs) {
    const uint32_t flags = s.admin ? kStale | kAdmin : kStale;
    cluster.subcommands.push_back(
        ConnCommand(std::string("cluster|") + s.sub.name, s.sub.arity, flags, nullptr,
                    s.admin ? std::vector<std::string>{"@admin", "@slow", "@dangerous"}
                            : std::vector<std::string>{"@slow"}));
  }
  t->Add(std::move(cluster));
  // READONLY and READWRITE are @fast @connection and allowed while loading; ASKING is @fast.
  for (const char* name : {"readonly", "readwrite"}) {
    t->Add(ConnCommand(name, 1, kFast | kLoading | kStale, Disabled, {"@fast", "@connection"}));
  }
  t->Add(ConnCommand("asking", 1, kFast, Disabled, {"@fast", "@connection"}));
}

}  // namespace deadbolt::server
