// Connection and server commands: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT COMMAND INFO
// CONFIG TIME SHUTDOWN WAIT ROLE.

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
  rb.SimpleString("RESET");
}

// --- CLIENT ---

size_t SubCount(const Connection& c, PubSubKind k) {
  return c.pubsub_state() ? c.pubsub_state()->count(k) : 0;
}

// CLIENT LIST's flags, in Redis's order: P subscribed, x in MULTI, b blocked (waiting in
// LOCK.ACQUIRE ... WAIT, as Redis's BLPOP), N none.
std::string ClientFlags(const Connection& c) {
  std::string f;
  if (c.subscribed()) f += 'P';
  if (c.in_multi()) f += 'x';
  if (c.blocked()) f += 'b';
  if (c.no_evict) f += 'e';
  if (c.no_touch) f += 'T';
  if (f.empty()) f = "N";
  return f;
}

// One CLIENT LIST / CLIENT INFO line, without its newline. No field can hold a space or a
// newline: names and lib-name/lib-ver are checked when set, cmd= is the table's name.
}  // namespace

// One CLIENT LIST line (also ACL LOG's client-info, cmd_acl.cc).
std::string ClientLine(Connection& c, int64_t now_ms) {
  return absl::StrCat(
      "id=", c.id(), " addr=", c.peer(), " laddr=", c.local(), " fd=", c.fd(), " name=", c.name(),
      " age=", (now_ms - c.created_ms()) / 1000,
      " idle=", (now_ms - c.last_interaction_ms()) / 1000, " flags=", ClientFlags(c),
      " db=", c.db_index(), " sub=", SubCount(c, PubSubKind::kChannel),
      " psub=", SubCount(c, PubSubKind::kPattern), " ssub=", SubCount(c, PubSubKind::kShard),
      " multi=", c.in_multi() ? 0 : -1, " qbuf=", c.query_buffer_size(),
      " qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=", c.output_buffer_size(),
      " tot-mem=", c.MemoryUsage(), " events=r cmd=", AV(c.last_command()),
      " user=", AV(c.user().name()), " redir=-1 resp=", c.resp(), " lib-name=", c.lib_name(),
      " lib-ver=", c.lib_ver());
}

namespace {

void ClientId(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  rb.Integer(static_cast<int64_t>(conn.id()));
}

void ClientSetName(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  for (char c : args[2]) {
    if (c < '!' || c > '~') {
      rb.Error(errors::kClientNameSpaces);
      return;
    }
  }
  conn.set_name(std::string(args[2]));
  rb.Ok();
}

void ClientGetName(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  if (conn.name().empty()) {
    rb.Null();
  } else {
    rb.Bulk(conn.name());
  }
}

void ClientSetInfo(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  std::string* field = nullptr;
  if (Eq(args[2], "lib-name")) {
    field = &conn.lib_name();
  } else if (Eq(args[2], "lib-ver")) {
    field = &conn.lib_ver();
  } else {
    rb.Error(absl::StrCat("ERR Unrecognized option '", AV(args[2]), "'"));
    return;
  }
  for (char c : args[3]) {
    if (c < '!' || c > '~') {
      rb.Error(absl::StrCat("ERR ", AsciiUpper(args[2]),
                            " cannot contain spaces, newlines or special characters."));
      return;
    }
  }
  *field = std::string(args[3]);
  rb.Ok();
}

void ClientInfo(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  std::string line = ClientLine(conn, conn.reactor().now_ms()) + "\n";
  rb.Verbatim(line);
}

void ClientList(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() > 2) {
    // CLIENT LIST TYPE normal | ID id... : accept TYPE normal, ID list.
    if (!(args.size() >= 4 && (Eq(args[2], "TYPE") || Eq(args[2], "ID")))) {
      rb.Error(errors::kSyntax);
      return;
    }
  }
  std::vector<uint64_t> ids;
  bool by_type = false;
  bool want_pubsub = false;
  if (args.size() >= 4 && Eq(args[2], "ID")) {
    for (size_t i = 3; i < args.size(); i++) {
      uint64_t id;
      if (!ParseNumber(args[i], &id)) {
        rb.Error("ERR Invalid client ID");
        return;
      }
      ids.push_back(id);
    }
  } else if (args.size() >= 4) {
    by_type = true;
    if (!Eq(args[3], "normal") && !Eq(args[3], "pubsub") && !Eq(args[3], "master") &&
        !Eq(args[3], "replica") && !Eq(args[3], "slave")) {
      rb.Error(absl::StrCat("ERR Unknown client type '", AV(args[3]), "'"));
      return;
    }
    want_pubsub = Eq(args[3], "pubsub");
    if (!Eq(args[3], "normal") && !want_pubsub) ids.push_back(0);  // no replicas or masters
  }
  // Each reactor lists its clients as (id, line); the lines are merged in id order without
  // parsing them again.
  using Lines = std::vector<std::pair<uint64_t, std::string>>;
  OnAllReactors<Lines>(
      conn,
      [ids, by_type, want_pubsub](Reactor& r) {
        Lines lines;
        for (auto& [id, c] : r.connections()) {
          if (c->closing()) continue;
          if (by_type && c->subscribed() != want_pubsub) continue;
          if (!ids.empty() && std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
          lines.emplace_back(id, ClientLine(*c, r.now_ms()));
        }
        return lines;
      },
      [](std::vector<Lines>& parts, ReplyBuilder& rb) {
        std::vector<std::pair<uint64_t, std::string>*> all;
        for (auto& p : parts) {
          for (auto& l : p) all.push_back(&l);
        }
        std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->first < b->first; });
        std::string out;
        for (auto* l : all) absl::StrAppend(&out, l->second, "\n");
        rb.Verbatim(out);
      });
}

// CLIENT UNBLOCK id [TIMEOUT|ERROR]: a client waiting in a blocking command (BLPOP and the other
// blocking pops, LOCK.ACQUIRE ... WAIT) on any reactor gets its timeout's reply now, or the
// UNBLOCKED error. 1 if it was blocked, else 0. Checked in Redis's order: the reason, then the id.
void ClientUnblock(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() > 4) {
    rb.Error(errors::SubcommandSyntax(args[1], "CLIENT"));
    return;
  }
  bool error = false;
  if (args.size() == 4) {
    if (Eq(args[3], "error")) {
      error = true;
    } else if (!Eq(args[3], "timeout")) {
      rb.Error(errors::kUnblockReason);
      return;
    }
  }
  int64_t id;
  if (!StringToInt64(args[2], &id)) {
    rb.Error(errors::kNotInteger);
    return;
  }
  std::string reply;
  if (error) reply = "-" + std::string(errors::kUnblocked) + "\r\n";
  OnAllReactors<int>(
      conn,
      [id, reply](Reactor& r) {
        auto it = r.connections().find(static_cast<uint64_t>(id));
        if (it == r.connections().end() || it->second->closing()) return 0;
        return it->second->Unblock(reply) ? 1 : 0;
      },
      [](std::vector<int>& parts, ReplyBuilder& rb) {
        int n = 0;
        for (int x : parts) n += x;
        rb.Integer(n);
      });
}

void ClientKill(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  // CLIENT KILL addr (old form) or CLIENT KILL <filter> <value> ... (new form).
  std::string addr, laddr, user;
  uint64_t id = 0;
  bool skipme = true;
  // TYPE: every client here is a normal one or a subscriber (no replicas, no master).
  enum class Type { kAny, kNormal, kPubSub, kNone } type = Type::kAny;
  bool old_form = args.size() == 3;
  if (old_form) {
    addr = std::string(args[2]);
  } else {
    if (args.size() % 2 != 0) {
      rb.Error(errors::kSyntax);
      return;
    }
    for (size_t i = 2; i + 1 < args.size(); i += 2) {
      if (Eq(args[i], "ID")) {
        if (!ParseNumber(args[i + 1], &id) || id == 0) {
          rb.Error("ERR client-id should be greater than 0");
          return;
        }
      } else if (Eq(args[i], "ADDR")) {
        addr = std::string(args[i + 1]);
      } else if (Eq(args[i], "LADDR")) {
        laddr = std::string(args[i + 1]);
      } else if (Eq(args[i], "SKIPME")) {
        if (Eq(args[i + 1], "yes")) {
          skipme = true;
        } else if (Eq(args[i + 1], "no")) {
          skipme = false;
        } else {
          rb.Error(errors::kSyntax);
          return;
        }
      } else if (Eq(args[i], "TYPE")) {
        const std::string_view t = args[i + 1];
        if (Eq(t, "normal")) {
          type = Type::kNormal;
        } else if (Eq(t, "pubsub")) {
          type = Type::kPubSub;
        } else if (Eq(t, "master") || Eq(t, "replica") || Eq(t, "slave")) {
          type = Type::kNone;
        } else {
          rb.Error("ERR Unknown client type '" + std::string(t) + "'");
          return;
        }
      } else if (Eq(args[i], "USER")) {
        if (conn.reactor().acl_users().Find(args[i + 1]) == nullptr) {
          rb.Error("ERR No such user '" + std::string(args[i + 1]) + "'");
          return;
        }
        user = std::string(args[i + 1]);
      } else {
        rb.Error(errors::kSyntax);
        return;
      }
    }
  }
  uint64_t self = conn.id();
  OnAllReactors(
      conn,
      [addr, laddr, user, type, id, skipme, self](Reactor& r) {
        std::vector<Connection*> victims;
        for (auto& [cid, c] : r.connections()) {
          if (c->closing()) continue;
          if (!addr.empty() && c->peer() != addr) continue;
          if (!laddr.empty() && c->local() != laddr) continue;
          if (!user.empty() && c->user().name() != user) continue;
          if (type == Type::kNone || (type == Type::kNormal && c->subscribed()) ||
              (type == Type::kPubSub && !c->subscribed())) {
            continue;
          }
          if (id && cid != id) continue;
          if (skipme && cid == self) continue;
          victims.push_back(c);
        }
        for (Connection* c : victims) {
          if (c->id() == self) {
            c->CloseAfterReply();
          } else {
            c->Kill();
          }
        }
        return std::to_string(victims.size());
      },
      [old_form](std::vector<std::string>& parts, ReplyBuilder& rb) {
        int64_t total = 0;
        for (auto& p : parts) total += std::stoll(p);
        if (old_form) {
          if (total == 0) {
            rb.Error(errors::kNoSuchClient);
          } else {
            rb.Ok();
          }
        } else {
          rb.Integer(total);
        }
      });
}

// CLIENT NO-EVICT / NO-TOUCH on|off.
void ClientOnOff(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  bool on;
  if (Eq(args[2], "on")) {
    on = true;
  } else if (Eq(args[2], "off")) {
    on = false;
  } else {
    rb.Error(errors::kSyntax);
    return;
  }
  (Eq(args[1], "no-evict") ? conn.no_evict : conn.no_touch) = on;
  rb.Ok();
}

// CLIENT REPLY ON|OFF|SKIP: OFF and SKIP have no reply of their own.
void ClientReply(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (Eq(args[2], "on")) {
    conn.ReplyOn();
    rb.Ok();
  } else if (Eq(args[2], "off")) {
    conn.ReplyOff();
  } else if (Eq(args[2], "skip")) {
    if (!conn.reply_off()) conn.ReplySkipNext();
  } else {
    rb.Error(errors::kSyntax);
  }
}

// CLIENT PAUSE timeout-ms [WRITE|ALL]: every reactor holds the matching commands until then.
void ClientPause(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  int64_t ms;
  if (!ParseNumber(args[2], &ms)) {
    rb.Error("ERR timeout is not an integer or out of range");
    return;
  }
  if (ms < 0) {
    rb.Error("ERR timeout is negative");
    return;
  }
  bool all = true;
  if (args.size() == 4) {
    if (Eq(args[3], "write")) {
      all = false;
    } else if (!Eq(args[3], "all")) {
      rb.Error("ERR CLIENT PAUSE mode must be WRITE or ALL");
      return;
    }
  } else if (args.size() > 4) {
    rb.Error(errors::SubcommandSyntax(args[1], "CLIENT"));
    return;
  }
  const int64_t end = conn.reactor().now_ms() + ms;
  OnAllReactors(
      conn,
      [end, all](Reactor& r) {
        r.Pause(end, all);
        return std::string();
      },
      [](std::vector<std::string>&, ReplyBuilder& rb) { rb.Ok(); });
}

void ClientUnpause(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  OnAllReactors(
      conn,
      [](Reactor& r) {
        r.Unpause();
        return std::string();
      },
      [](std::vector<std::string>&, ReplyBuilder& rb) { rb.Ok(); });
}

void ClientHelp(CmdArgs, Connection&, ReplyBuilder& rb) {
  WriteHelp(rb, {"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                 "GETNAME",
                 "    Return the name of the current connection.",
                 "ID",
                 "    Return the ID of the current connection.",
                 "INFO",
                 "    Return information about the current client connection.",
                 "KILL <ip:port>",
                 "    Kill connection made from <ip:port>.",
                 "KILL <option> <value> [<option> <value> [...]]",
                 "    Kill connections. Options are: ID, ADDR, LADDR, SKIPME (yes|no).",
                 "LIST [options ...]",
                 "    Return information about client connections.",
                 "SETINFO <option> <value>",
                 "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
                 "SETNAME <name>",
                 "    Assign the name <name> to the current connection.",
                 "PAUSE <timeout> [WRITE|ALL]",
                 "    Suspend all, or just write, clients for <timeout> milliseconds.",
                 "UNPAUSE",
                 "    Stop the current client pause, resuming traffic.",
                 "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                 "    Unblock the specified blocked client.",
                 "REPLY (ON|OFF|SKIP)",
                 "    Control the replies sent to the current connection.",
                 "NO-EVICT (ON|OFF)",
                 "    Protect current client connection from eviction.",
                 "NO-TOUCH (ON|OFF)",
                 "    Will not touch LRU/LFU stats when this mode is on.",
                 "HELP",
                 "    Print this help."});
}

void Client(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  static const Sub kSubs[] = {
      {"id", 2, ClientId},           {"setname", 3, ClientSetName},  {"getname", 2, ClientGetName},
      {"setinfo", 4, ClientSetInfo}, {"list", -2, ClientList},       {"kill", -3, ClientKill},
      {"info", 2, ClientInfo},       {"help", 2, ClientHelp},        {"no-evict", 3, ClientOnOff},
      {"no-touch", 3, ClientOnOff},  {"reply", 3, ClientReply},      {"pause", -3, ClientPause},
      {"unpause", 2, ClientUnpause}, {"unblock", -3, ClientUnblock},
  };
  RunSub("client", kSubs, std::size(kSubs), args, conn, rb);
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

// A container and its subcommands, which have its categories (`admin`: those also @admin
// @dangerous, as Redis 7.0). ACL checks the subcommand called.
CommandSpec Subs(CommandSpec parent, std::initializer_list<std::pair<const char*, int>> subs,
                 std::initializer_list<const char*> admin = {}) {
  for (auto& [name, arity] : subs) {
    std::vector<std::string> cats = parent.acl_categories;
    for (const char* a : admin) {
      if (std::string_view(a) == name) cats = {"@admin", "@slow", "@dangerous", "@connection"};
    }
    parent.subcommands.push_back(
        Conn(parent.name + "|" + name, arity, parent.flags, nullptr, std::move(cats)));
  }
  return parent;
}

// As Redis 7.0: CLIENT and CONFIG themselves are only @slow, their subcommands more.
CommandSpec OnlySlow(CommandSpec container) {
  container.acl_categories = {"@slow"};
  return container;
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
  t->Add(OnlySlow(
      Subs(Conn("client", -2, kLoading | kStale | kNoScript, Client, {"@slow", "@connection"}),
           {{"id", 2},
            {"setname", 3},
            {"getname", 2},
            {"setinfo", 4},
            {"list", -2},
            {"kill", -3},
            {"info", 2},
            {"help", 2},
            {"no-evict", 3},
            {"no-touch", 3},
            {"reply", 3},
            {"pause", -3},
            {"unpause", 2},
            {"unblock", -3}},
           {"kill", "list", "no-evict", "pause", "unpause", "unblock"})));
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
