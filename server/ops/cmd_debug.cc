// DEBUG, for test suites: SLEEP, SET-ACTIVE-EXPIRE, OBJECT, PROTOCOL, RELOAD. Refused unless
// enable-debug-command allows it (no: never; local: from a loopback client; yes: always), with
// Redis 7's error text.

#include <absl/strings/str_cat.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/db.h"
#include "shard/journal_format/journal_format.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

constexpr std::string_view kDebugNotAllowed =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";

bool IsLocal(const std::string& peer) {
  return peer.rfind("127.", 0) == 0 || peer.rfind("::1", 0) == 0 ||
         peer.rfind("[::1]", 0) == 0 || peer.rfind("unix", 0) == 0;
}

void Raw(ReplyBuilder& rb, std::string_view bytes) { rb.out()->append(bytes); }

// DEBUG RELOAD on one shard, as Redis's save-and-load: every key goes through the journal's
// encoding (what a rewrite writes) and is put back from the bytes read (what a restart
// replays), so a value the encoding would not keep exactly changes now, under the test's
// eyes. Returns false when the bytes do not read back whole.
bool ReloadShard(ShardCtx& ctx) {
  shard::Shard& sh = ctx.shard;
  std::string buf;
  shard::JournalWriter w(&buf);
  size_t keys = 0;
  for (int d = 0; d < sh.num_dbs(); d++) {
    shard::Db& db = sh.db(d);
    w.BeginFrame();
    if (uint64_t t = db.last_fencing_token()) w.Token(static_cast<uint32_t>(d), t);
    w.EndFrame();
    std::vector<std::string> names;  // all first: putting keys back must not disturb the scan
    uint64_t cursor = 0;
    do {
      shard::ScanResult r = db.Scan(cursor, "*", 1024, shard::ValueType::kNone, ctx.now_ms);
      for (std::string& k : r.keys) names.push_back(std::move(k));
      cursor = r.cursor;
    } while (cursor != 0);
    for (size_t i = 0; i < names.size(); i += 1024) {
      w.BeginFrame();
      for (size_t j = i; j < names.size() && j < i + 1024; j++) {
        if (auto snap = db.Snapshot(names[j], ctx.now_ms)) {
          w.Put(static_cast<uint32_t>(d), names[j], *snap);
          keys++;
        }
      }
      w.EndFrame();
    }
  }
  size_t put = 0;
  shard::JournalScan scan = shard::ScanJournal(buf, [&](const shard::JournalRecord& r) {
    if (r.kind == shard::RecordKind::kPut) put++;
    shard::ApplyJournalRecord(r, sh, ctx.now_ms);
    return true;
  });
  return scan.status == shard::JournalScan::Status::kOk && put == keys;
}

// DEBUG PROTOCOL <type>: one reply of each RESP3 type (and its RESP2 form), as Redis sends.
void Protocol(std::string_view type, ReplyBuilder& rb) {
  const bool resp3 = rb.resp() >= 3;
  if (EqualsIgnoreCase(type, "string")) {
    rb.Bulk("Hello World");
  } else if (EqualsIgnoreCase(type, "integer")) {
    rb.Integer(12345);
  } else if (EqualsIgnoreCase(type, "double")) {
    rb.Double(3.141);
  } else if (EqualsIgnoreCase(type, "bignum")) {
    if (resp3) {
      Raw(rb, "(1234567999999999999999999999999999999\r\n");
    } else {
      rb.Bulk("1234567999999999999999999999999999999");
    }
  } else if (EqualsIgnoreCase(type, "null")) {
    rb.Null();
  } else if (EqualsIgnoreCase(type, "array")) {
    rb.ArrayHeader(3);
    for (int i = 0; i < 3; i++) rb.Integer(i);
  } else if (EqualsIgnoreCase(type, "set")) {
    rb.SetHeader(3);
    for (int i = 0; i < 3; i++) rb.Integer(i);
  } else if (EqualsIgnoreCase(type, "map")) {
    rb.MapHeader(3);
    for (int i = 0; i < 3; i++) {
      rb.Integer(i);
      rb.Bool(i == 1);
    }
  } else if (EqualsIgnoreCase(type, "attrib")) {
    if (resp3) Raw(rb, "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n");
    rb.Bulk("Some real reply following the attribute");
  } else if (EqualsIgnoreCase(type, "push")) {
    if (!resp3) {
      rb.Error("ERR RESP2 is not supported by this command");
      return;
    }
    rb.PushHeader(2);
    rb.Bulk("server-cpu-usage");
    rb.Integer(42);
    rb.Bulk("Some real reply following the push reply");
  } else if (EqualsIgnoreCase(type, "verbatim")) {
    rb.Verbatim("This is a verbatim\nstring");
  } else if (EqualsIgnoreCase(type, "true")) {
    rb.Bool(true);
  } else if (EqualsIgnoreCase(type, "false")) {
    rb.Bool(false);
  } else {
    rb.Error(
        "ERR Wrong protocol type name. Please use one of the following: "
        "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false");
  }
}

void Debug(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  const std::string& allow = conn.reactor().config().enable_debug_command;
  if (allow == "no" || (allow == "local" && !IsLocal(conn.peer()))) {
    rb.Error(kDebugNotAllowed);
    return;
  }
  std::string_view sub = args[1];
  if (EqualsIgnoreCase(sub, "sleep") && args.size() == 3) {
    // As Redis: the whole server sleeps (here: this reactor, which stops serving meanwhile).
    double secs = std::atof(std::string(args[2]).c_str());
    if (secs > 0) std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    rb.Ok();
  } else if (EqualsIgnoreCase(sub, "set-active-expire") && args.size() == 3) {
    const bool on = std::atoi(std::string(args[2]).c_str()) != 0;
    conn.FanOut(
        AllShards(conn.reactor().server()),
        [on](ShardCtx&) { Reactor::Current()->set_active_expire(on); },
        [](ReplyBuilder& rb) { rb.Ok(); });
  } else if (EqualsIgnoreCase(sub, "object") && args.size() == 3) {
    auto info = std::make_shared<std::optional<shard::Db::ObjectInfo>>();
    std::string key(args[2]);
    conn.FanOut(
        {conn.reactor().server().ShardOf(key)},
        [info, key](ShardCtx& ctx) { *info = ctx.db.Object(key, ctx.now_ms); },
        [info](ReplyBuilder& rb) {
          if (!*info) {
            rb.Error("ERR no such key");
            return;
          }
          rb.SimpleString(absl::StrCat("Value at:0x0 refcount:", (*info)->shared_int ? 2147483647 : 1,
                                       " encoding:", (*info)->encoding, " serializedlength:",
                                       (*info)->bytes, " lru:", (*info)->lru,
                                       " lru_seconds_idle:", (*info)->idle_seconds));
        });
  } else if (EqualsIgnoreCase(sub, "reload")) {
    // DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: the options are Redis's RDB file's; here every
    // shard's keys make the round trip through the journal's encoding (ReloadShard).
    const std::vector<int>& all = AllShards(conn.reactor().server());
    auto failed = std::make_shared<std::vector<char>>(all.size(), 0);
    conn.FanOut(
        all, [failed](ShardCtx& ctx) { (*failed)[ctx.shard.index()] = !ReloadShard(ctx); },
        [failed](ReplyBuilder& rb) {
          for (char f : *failed) {
            if (f) {
              rb.Error("ERR Error trying to load the RDB dump, check server logs.");
              return;
            }
          }
          rb.Ok();
        });
  } else if (EqualsIgnoreCase(sub, "protocol") && args.size() == 3) {
    Protocol(args[2], rb);
  } else if (EqualsIgnoreCase(sub, "help") && args.size() == 2) {
    WriteHelp(
        rb,
        {"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "OBJECT <key>",
         "    Show low level info about the internal encoding of the <key>.", "PROTOCOL <type>",
         "    Reply with a test value of the specified type. <type> can be: string,",
         "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
         "    true, false.", "RELOAD [option ...]",
         "    Save the keys and load them back (here: through the journal's encoding).",
         "SET-ACTIVE-EXPIRE <0|1>",
         "    Setting it to 0 disables expiring keys in background when they are not",
         "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
         "    default.", "SLEEP <seconds>", "    Stop the server for <seconds>. Decimals allowed.",
         "HELP", "    Prints this help."});
  } else {
    rb.Error(errors::SubcommandSyntax(sub, "DEBUG"));
  }
}

}  // namespace

void RegisterDebugCommands(CommandTable* t) {
  t->Add(ConnCommand("debug", -2, kAdmin | kNoScript | kLoading | kStale, Debug,
                     {"@admin", "@slow", "@dangerous"}));
}

}  // namespace deadbolt::server
