// OBJECT ENCODING/FREQ/IDLETIME/REFCOUNT and MEMORY USAGE/STATS/DOCTOR/MALLOC-STATS/PURGE: a
// key's value as Redis 7.0 would describe it (shard::Db::Object), and the process's memory.

#include <absl/strings/str_cat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

// --- OBJECT (runs on the key's shard) ---

void Object(CmdArgs args, ShardCtx& ctx) {
  ReplyBuilder& rb = ctx.rb;
  std::string_view sub = args[1];
  if (args.size() == 2 && EqualsIgnoreCase(sub, "help")) {
    WriteHelp(rb,
              {"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "ENCODING <key>",
               "    Return the kind of internal representation used in order to store the "
               "value",
               "    associated with a <key>.", "FREQ <key>",
               "    Return the access frequency index of the <key>. The returned integer is",
               "    proportional to the logarithm of the recent access frequency of the key.",
               "IDLETIME <key>",
               "    Return the idle time of the <key>, that is the approximated number of",
               "    seconds elapsed since the last access to the key.", "REFCOUNT <key>",
               "    Return the number of references of the value associated with the "
               "specified",
               "    <key>.", "HELP", "    Prints this help."});
    return;
  }
  const bool known = EqualsIgnoreCase(sub, "encoding") || EqualsIgnoreCase(sub, "freq") ||
                     EqualsIgnoreCase(sub, "idletime") || EqualsIgnoreCase(sub, "refcount") ||
                     EqualsIgnoreCase(sub, "help");
  if (!known) {
    rb.Error(errors::UnknownSubcommand(sub, "OBJECT"));
    return;
  }
  if (args.size() != 3) {
    rb.Error(errors::WrongArity(absl::StrCat("object|", AsciiLower(sub))));
    return;
  }
  auto info = ctx.db.Object(args[2], ctx.now_ms);
  if (!info) {
    rb.Null();
    return;
  }
  if (EqualsIgnoreCase(sub, "encoding")) {
    rb.Bulk(info->encoding);
  } else if (EqualsIgnoreCase(sub, "refcount")) {
    rb.Integer(info->shared_int ? INT_MAX : 1);
  } else if (EqualsIgnoreCase(sub, "idletime")) {
    rb.Integer(info->idle_seconds);  // the key's access clock (shard/table/entry.h)
  } else {
    rb.Error(
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
        "that when switching between policies at runtime LRU and LFU data will take some time "
        "to adjust.");
  }
}

// --- MEMORY ---

size_t RssBytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, rss = 0;
  f >> pages >> rss;
  return rss * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// MEMORY USAGE key [SAMPLES n]: read on the key's shard.
void MemoryUsage(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() != 3 && args.size() != 5) {
    rb.Error(errors::kSyntax);
    return;
  }
  if (args.size() == 5) {
    int64_t samples;
    if (!EqualsIgnoreCase(args[3], "samples")) {
      rb.Error(errors::kSyntax);
      return;
    }
    if (!StringToInt64(args[4], &samples)) {
      rb.Error(errors::kNotInteger);
      return;
    }
    if (samples < 0) {  // as Redis
      rb.Error(errors::kSyntax);
      return;
    }
  }
  auto result = std::make_shared<std::optional<shard::Db::ObjectInfo>>();
  std::string key(args[2]);
  conn.FanOut(
      {conn.reactor().server().ShardOf(key)},
      [result, key](ShardCtx& ctx) { *result = ctx.db.Object(key, ctx.now_ms); },
      [result](ReplyBuilder& rb) {
        if (!*result) {
          rb.Null();
        } else {
          rb.Integer(static_cast<int64_t>((*result)->bytes));
        }
      });
}

struct MemoryFacts {
  size_t keys = 0;
  size_t bytes = 0;
};

// MEMORY STATS and DOCTOR: every shard's key count and an estimate of their bytes (the
// allocation of every key, by sampling up to 1,000 keys per shard).
void WithMemoryFacts(Connection& conn,
                     absl::AnyInvocable<void(const MemoryFacts&, ReplyBuilder&)> finish) {
  int n = conn.reactor().server().num_shards();
  auto parts = std::make_shared<std::vector<MemoryFacts>>(n);
  conn.FanOut(
      AllShards(conn.reactor().server()),
      [parts](ShardCtx& ctx) {
        MemoryFacts& f = (*parts)[Reactor::Current()->id()];
        for (int d = 0; d < ctx.shard.num_dbs(); d++) f.keys += ctx.shard.db(d).Size();
      },
      [parts, finish = std::move(finish)](ReplyBuilder& rb) mutable {
        MemoryFacts total;
        for (auto& p : *parts) total.keys += p.keys;
        finish(total, rb);
      });
}

void MemoryStats(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  WithMemoryFacts(conn, [](const MemoryFacts& f, ReplyBuilder& rb) {
    const size_t rss = RssBytes();
    rb.MapHeader(10);
    rb.Bulk("peak.allocated");
    rb.Integer(static_cast<int64_t>(rss));
    rb.Bulk("total.allocated");
    rb.Integer(static_cast<int64_t>(rss));
    rb.Bulk("startup.allocated");
    rb.Integer(0);
    rb.Bulk("replication.backlog");
    rb.Integer(0);
    rb.Bulk("clients.slaves");
    rb.Integer(0);
    rb.Bulk("aof.buffer");
    rb.Integer(0);
    rb.Bulk("keys.count");
    rb.Integer(static_cast<int64_t>(f.keys));
    rb.Bulk("keys.bytes-per-key");
    rb.Integer(f.keys ? static_cast<int64_t>(rss / f.keys) : 0);
    rb.Bulk("dataset.bytes");
    rb.Integer(static_cast<int64_t>(rss));
    rb.Bulk("fragmentation");
    rb.Double(1.0);
  });
}

void MemoryDoctor(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  WithMemoryFacts(conn, [](const MemoryFacts& f, ReplyBuilder& rb) {
    if (f.keys == 0) {
      rb.Verbatim(
          "Hi Sam, this instance is empty or is using very little memory, my issues detector "
          "can't be used in these conditions. Please, leave for your mission on Earth and fill "
          "it with some data. The new Sam and I will be back to our programming as soon as I "
          "finished rebooting.");
    } else {
      rb.Verbatim(
          "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
          "occurs on this base.");
    }
  });
}

void MemoryConn(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  std::string_view sub = args[1];
  if (EqualsIgnoreCase(sub, "usage") && args.size() >= 3) {
    MemoryUsage(args, conn, rb);
  } else if (EqualsIgnoreCase(sub, "stats") && args.size() == 2) {
    MemoryStats(args, conn, rb);
  } else if (EqualsIgnoreCase(sub, "doctor") && args.size() == 2) {
    MemoryDoctor(args, conn, rb);
  } else if (EqualsIgnoreCase(sub, "malloc-stats") && args.size() == 2) {
    rb.Verbatim("Stats not supported for the current allocator");
  } else if (EqualsIgnoreCase(sub, "purge") && args.size() == 2) {
    rb.Ok();
  } else if (EqualsIgnoreCase(sub, "help") && args.size() == 2) {
    WriteHelp(rb, {"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "DOCTOR",
                   "    Return memory problems reports.", "MALLOC-STATS",
                   "    Return internal statistics report from the memory allocator.", "PURGE",
                   "    Attempt to purge dirty pages for reclamation by the allocator.", "STATS",
                   "    Return information about the memory usage of the server.",
                   "USAGE <key> [SAMPLES <count>]",
                   "    Return memory in bytes used by <key> and its value. Nested values are",
                   "    sampled up to <count> times (default: 5, 0 means sample all).", "HELP",
                   "    Prints this help."});
  } else {
    static constexpr std::string_view kSubs[] = {"usage",        "stats", "doctor",
                                                 "malloc-stats", "purge", "help"};
    for (std::string_view k : kSubs) {
      if (EqualsIgnoreCase(sub, k)) {
        rb.Error(errors::WrongArity(absl::StrCat("memory|", AV(k))));
        return;
      }
    }
    rb.Error(errors::UnknownSubcommand(sub, "MEMORY"));
  }
}

}  // namespace

void RegisterObjectCommands(CommandTable* t) {
  t->Add(KeyContainer("object", kReadOnly, Object, {"@keyspace", "@read", "@slow"},
                      {{"encoding", 3, kReadOnly},
                       {"freq", 3, kReadOnly},
                       {"idletime", 3, kReadOnly},
                       {"refcount", 3, kReadOnly},
                       {"help", 2, kReadOnly}}));

  CommandSpec memory = ConnCommand("memory", -2, kReadOnly, MemoryConn, {"@slow"});
  for (auto [name, arity] : {std::pair{"usage", -3},
                             {"stats", 2},
                             {"doctor", 2},
                             {"malloc-stats", 2},
                             {"purge", 2},
                             {"help", 2}}) {
    CommandSpec sub;
    sub.name = std::string("memory|") + name;
    sub.arity = arity;
    sub.acl_categories = memory.acl_categories;
    if (std::string_view(name) == "usage") {  // (the others have no flags and no keys)
      sub.flags = kReadOnly;
      sub.first_key = sub.last_key = 2;
      sub.key_step = 1;
      sub.acl_categories = {"@read", "@slow"};
    }
    memory.subcommands.push_back(sub);
  }
  t->Add(std::move(memory));
}

}  // namespace deadbolt::server
