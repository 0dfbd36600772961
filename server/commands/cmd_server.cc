// Connection and server commands: PING ECHO HELLO AUTH SELECT QUIT RESET INFO CONFIG TIME
// SHUTDOWN WAIT ROLE (CLIENT is in server/clients/).

#include <absl/strings/ascii.h>
#include <absl/strings/match.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <type_traits>

#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/cmdtable/memory_limit.h"
#include "server/cmdtable/script_busy.h"
#include "server/commands/cmd_util.h"
#include "server/commands/info.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/pubsub/registry.h"
#include "server/tls/tls.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

bool Eq(std::string_view a, std::string_view b) { return EqualsIgnoreCase(a, b); }

void Ping(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() > 2) {
    rb.Error(errors::WrongArity("ping"));
  } else if (conn.subscribed() && rb.resp() == 2) {
    // RESP2 subscribed mode: PING answers as a pub/sub message.
    rb.ArrayHeader(2);
    rb.Bulk("pong");
    rb.Bulk(args.size() == 2 ? args[1] : std::string_view());
  } else if (args.size() == 2) {
    rb.Bulk(args[1]);
  } else {
    rb.SimpleString("PONG");
  }
}

void Echo(CmdArgs args, Connection& conn, ReplyBuilder& rb) { rb.Bulk(args[1]); }

// A wrong password: counted (INFO stats acl_access_denied_auth, and the command's failed_calls
// as Redis 7.0 counts it) and logged with the client's address, at most 10 lines a minute per
// reactor so that a flood of guesses cannot fill the disk.
void WrongPassword(Connection& conn, std::string_view command) {
  Reactor& r = conn.reactor();
  ReactorStats& stats = r.stats();
  stats.acl_access_denied_auth++;
  if (const CommandSpec* spec = CommandTable::Get().Find(command)) {
    stats.commands[spec->stats_slot].failed_calls++;
  }
  static thread_local LogRateLimiter limiter(60 * 1000, 10);
  uint64_t left_out = 0;
  if (!limiter.Allow(r.now_ms(), &left_out)) return;
  std::string more = left_out ? " (" + std::to_string(left_out) + " more not logged)" : "";
  LogWarning("wrong password in %s from client id=%llu addr=%s%s", AsciiUpper(command).c_str(),
             static_cast<unsigned long long>(conn.id()), conn.peer().c_str(), more.c_str());
}

// AUTH as an ACL user (server/acl/): the default user's password is --requirepass; a nopass
// user takes any password. The password's SHA-256 is compared with every stored hash, whether
// or not the user exists, so the time taken does not tell which part failed.
std::string_view CheckAuth(Connection& conn, std::string_view command, std::string_view user,
                           std::string_view pass, bool with_user) {
  acl::Users& users = conn.reactor().acl_users();
  if (!with_user && users.Default()->nopass()) return errors::kAuthNotConfigured;
  acl::User* u = users.Find(user);
  const bool ok = u != nullptr ? u->PasswordOk(pass) : (acl::HashPassword(pass), false);
  if (!ok) {
    WrongPassword(conn, command);
    conn.LogAclDenial("auth", command, user, "toplevel");  // the command as sent, as Redis
    return errors::kWrongPass;
  }
  conn.set_user(u);
  conn.set_authenticated(true);
  return {};
}

void Auth(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() > 3) {
    rb.Error(errors::kSyntax);
    return;
  }
  bool with_user = args.size() == 3;
  std::string_view err = CheckAuth(conn, args[0], with_user ? args[1] : "default",
                                   with_user ? args[2] : args[1], with_user);
  if (err.empty()) {
    rb.Ok();
  } else {
    rb.Error(err);
  }
}

void Hello(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  int ver = conn.resp();
  size_t i = 1;
  if (args.size() >= 2) {
    int64_t v;
    if (!ParseNumber(args[1], &v)) {
      rb.Error("ERR Protocol version is not an integer or out of range");
      return;
    }
    if (v < 2 || v > 3) {
      rb.Error(errors::kNoProto);
      return;
    }
    ver = static_cast<int>(v);
    i = 2;
  }
  std::string_view setname;
  bool has_setname = false;
  for (; i < args.size(); i++) {
    bool more = i + 1 < args.size();
    if (Eq(args[i], "AUTH") && i + 2 < args.size()) {
      std::string_view err = CheckAuth(conn, args[0], args[i + 1], args[i + 2], true);
      if (!err.empty()) {
        rb.Error(err);
        return;
      }
      i += 2;
    } else if (Eq(args[i], "SETNAME") && more) {
      setname = args[i + 1];
      has_setname = true;
      i++;
    } else {
      rb.Error(absl::StrCat("ERR Syntax error in HELLO option '", AV(args[i]), "'"));
      return;
    }
  }
  if (!conn.authenticated()) {
    rb.Error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
        "<proto> AUTH <user> <pass> option can be used to authenticate the client and select the "
        "RESP protocol version at the same time");
    return;
  }
  if (has_setname) {
    for (char c : setname) {
      if (c < '!' || c > '~') {
        rb.Error(errors::kClientNameSpaces);
        return;
      }
    }
    conn.set_name(std::string(setname));
  }
  conn.set_resp(ver);
  rb.set_resp(ver);
  rb.MapHeader(7);
  rb.Bulk("server");
  rb.Bulk("redis");
  rb.Bulk("version");
  rb.Bulk(kVersion);
  rb.Bulk("proto");
  rb.Integer(ver);
  rb.Bulk("id");
  rb.Integer(static_cast<int64_t>(conn.id()));
  rb.Bulk("mode");
  rb.Bulk("standalone");
  rb.Bulk("role");
  rb.Bulk("master");
  rb.Bulk("modules");
  rb.ArrayHeader(0);
}

void Select(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  int64_t db;
  if (!ParseNumber(args[1], &db)) {
    rb.Error(errors::kNotInteger);
    return;
  }
  if (db < 0 || db >= conn.reactor().config().databases) {
    rb.Error(errors::kDbIndexOutOfRange);
    return;
  }
  conn.set_db_index(static_cast<int>(db));
  rb.Ok();
}

void Quit(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  rb.Ok();
  conn.CloseAfterReply();
}

void Reset(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  conn.ResetTransactionState();
  conn.set_db_index(0);
  conn.set_resp(2);
  rb.set_resp(2);
  conn.set_name("");
  conn.ResetUser();
  conn.set_monitor(false);
  conn.StopTracking();
  rb.SimpleString("RESET");
}

// --- CONFIG ---

void ConfigGet(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  std::vector<std::pair<std::string, std::string>> all;
  for (size_t i = 2; i < args.size(); i++) {
    for (auto& kv : conn.reactor().config().Get(args[i])) {
      if (std::find(all.begin(), all.end(), kv) == all.end()) all.push_back(kv);
    }
  }
  rb.MapHeader(all.size());
  for (auto& [k, v] : all) {
    rb.Bulk(k);
    rb.Bulk(v);
  }
}

void ConfigSet(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() % 2 != 0) {
    rb.Error(errors::WrongArity("config|set"));
    return;
  }
  // Validate on a copy first, so a bad value changes nothing anywhere.
  Config probe = conn.reactor().config();
  std::vector<std::pair<std::string, std::string>> changes;
  for (size_t i = 2; i + 1 < args.size(); i += 2) {
    for (size_t j = 2; j < i; j += 2) {
      if (EqualsIgnoreCase(args[j], args[i])) {
        rb.Error(errors::ConfigSetDuplicate(args[i]));
        return;
      }
    }
    if (auto err = probe.Set(args[i], args[i + 1])) {
      rb.Error(*err);
      return;
    }
    changes.emplace_back(std::string(args[i]), std::string(args[i + 1]));
  }
  // The TLS settings, as Redis: a new context is built from them at once; if that fails the
  // reply says so, the reason goes to the log and nothing changes (the old context stays in
  // use). Built here, on the connection's reactor, then handed to every reactor by the message
  // below: new TLS connections get it, established ones keep the context they were made with.
  std::shared_ptr<const TlsContext> tls;
  if (probe.tls_port != 0) {
    for (auto& [k, v] : changes) {
      if (!IsTlsContextSetting(k)) continue;
      auto made = TlsContext::Create(probe);
      if (auto* err = std::get_if<std::string>(&made)) {
        LogWarning("%s", err->c_str());
        LogWarning(
            "Failed applying new configuration. Possibly related to new %s setting. "
            "Restoring previous settings.",
            AsciiLower(k).c_str());
        rb.Error(errors::TlsReconfigureFailed(k));
        return;
      }
      tls = std::move(std::get<std::unique_ptr<TlsContext>>(made));
      break;
    }
  }
  OnAllReactors(
      conn,
      [changes, tls](Reactor& r) {
        for (auto& [k, v] : changes) r.mutable_config().Set(k, v);
        if (tls) r.set_tls_context(tls);
        // A new maxmemory holds from the reply on, as in Redis.
        MemoryLimit::Refresh(r.config().maxmemory);
        r.ApplyConfig();
        return std::string();
      },
      [](std::vector<std::string>&, ReplyBuilder& rb) { rb.Ok(); });
}

void ConfigResetStat(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  OnAllReactors(
      conn,
      [](Reactor& r) {
        // In place: the command running now (this one, on its own reactor) holds a reference
        // into `commands`, charged when it ends.
        std::vector<CommandStats> commands = std::move(r.stats().commands);
        for (CommandStats& c : commands) c = CommandStats();
        r.stats() = ReactorStats();
        r.stats().commands = std::move(commands);
        return std::string();
      },
      [](std::vector<std::string>&, ReplyBuilder& rb) { rb.Ok(); });
}

void ConfigRewrite(CmdArgs, Connection&, ReplyBuilder& rb) {
  rb.Error("ERR The server is running without a config file");
}

void ConfigHelp(CmdArgs, Connection&, ReplyBuilder& rb) {
  WriteHelp(rb, {"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "GET <pattern>",
                 "    Return parameters matching the glob-like <pattern> and their values.",
                 "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
                 "RESETSTAT", "    Reset statistics reported by the INFO command.", "REWRITE",
                 "    Rewrite the configuration file.", "HELP", "    Prints this help."});
}

void ConfigCmd(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  static const Sub kSubs[] = {
      {"get", -3, ConfigGet},        {"set", -4, ConfigSet},  {"resetstat", 2, ConfigResetStat},
      {"rewrite", 2, ConfigRewrite}, {"help", 2, ConfigHelp},
  };
  RunSub("config", kSubs, std::size(kSubs), args, conn, rb);
}

// --- misc ---

void Time(CmdArgs, Connection&, ReplyBuilder& rb) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  rb.ArrayHeader(2);
  rb.Bulk(std::to_string(tv.tv_sec));
  rb.Bulk(std::to_string(tv.tv_usec));
}

void Shutdown(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  bool nosave = false;
  for (size_t i = 1; i < args.size(); i++) {
    nosave = nosave || Eq(args[i], "NOSAVE");
    if (!Eq(args[i], "NOSAVE") && !Eq(args[i], "SAVE") && !Eq(args[i], "NOW") &&
        !Eq(args[i], "FORCE") && !Eq(args[i], "ABORT")) {
      rb.Error(errors::kSyntax);
      return;
    }
    if (Eq(args[i], "ABORT")) {
      rb.Error("ERR No shutdown in progress.");
      return;
    }
  }
  if (!nosave && ScriptBusy::Get().any()) {
    // As Redis: while a script is past busy-reply-threshold, only SHUTDOWN NOSAVE stops it.
    rb.Error(ScriptBusy::Get().busy_error());
    return;
  }
  LogNotice("User requested shutdown...");
  conn.reactor().server().RequestShutdown();
  conn.CloseAfterReply();
}

void Wait(CmdArgs args, Connection&, ReplyBuilder& rb) {
  // As Redis: the replica count first, then the timeout with its own error texts.
  int64_t n, timeout;
  if (!ParseNumber(args[1], &n)) {
    rb.Error(errors::kNotInteger);
    return;
  }
  if (!ParseNumber(args[2], &timeout)) {
    rb.Error(errors::kTimeoutNotInteger);
    return;
  }
  if (timeout < 0) {
    rb.Error(errors::kTimeoutNegative);
    return;
  }
  rb.Integer(0);  // no replicas
}

void Role(CmdArgs, Connection&, ReplyBuilder& rb) {
  rb.ArrayHeader(3);
  rb.Bulk("master");
  rb.Integer(0);
  rb.ArrayHeader(0);
}

CommandSpec Conn(std::string name, int arity, uint32_t flags, ConnHandler h,
                 std::vector<std::string> acl) {
  return ConnCommand(std::move(name), arity, flags, h, std::move(acl));
}

}  // namespace

void RegisterServerCommands(CommandTable* t) {
  const uint32_t kConnFlags = kFast | kLoading | kStale | kNoScript;
  t->Add(Conn("ping", -1, kFast, Ping, {"@fast", "@connection"}));
  t->Add(Conn("echo", 2, kFast | kLoading | kStale, Echo, {"@fast", "@connection"}));
  t->Add(Conn("hello", -1, kConnFlags | kNoAuth | kAllowBusy, Hello, {"@fast", "@connection"}));
  t->Add(Conn("auth", -2, kConnFlags | kNoAuth | kAllowBusy, Auth, {"@fast", "@connection"}));
  t->Add(Conn("select", 2, kConnFlags, Select, {"@fast", "@connection"}));
  t->Add(Conn("quit", -1, kConnFlags | kNoAuth | kNoQueue | kAllowBusy, Quit,
              {"@fast", "@connection"}));
  t->Add(Conn("reset", 1, kConnFlags | kNoAuth | kNoQueue | kAllowBusy, Reset,
              {"@fast", "@connection"}));
  t->Add(Conn("info", -1, kLoading | kStale, Info, {"@slow", "@dangerous"}));
  t->Add(OnlySlow(Subs(Conn("config", -2, kAdmin | kNoScript | kLoading | kStale, ConfigCmd,
                            {"@admin", "@slow", "@dangerous"}),
                       {{"get", -3}, {"set", -4}, {"resetstat", 2}, {"rewrite", 2}, {"help", 2}})));
  t->Add(Conn("time", 1, kFast | kLoading | kStale, Time, {"@fast"}));
  t->Add(Conn("shutdown", -1, kAdmin | kNoScript | kLoading | kStale | kAllowBusy | kNoMulti,
              Shutdown, {"@admin", "@slow", "@dangerous"}));
  t->Add(Conn("wait", 3, kNoScript, Wait, {"@slow", "@connection"}));
  t->Add(Conn("role", 1, kNoScript | kLoading | kStale | kFast, Role,
              {"@admin", "@fast", "@dangerous"}));
}

}  // namespace deadbolt::server
