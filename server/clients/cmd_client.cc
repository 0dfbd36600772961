// CLIENT and its subcommands: a connection's identity and settings (ID, SETNAME, GETNAME,
// SETINFO, INFO, NO-EVICT, NO-TOUCH, REPLY), every connection's (LIST, KILL, PAUSE, UNPAUSE,
// UNBLOCK), and client-side caching's (TRACKING, CACHING, GETREDIR, TRACKINGINFO: cmd_tracking.cc).

#include <absl/strings/str_cat.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/clients/cmd_tracking.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/pubsub/registry.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

bool Eq(std::string_view a, std::string_view b) { return EqualsIgnoreCase(a, b); }

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
  if (const Connection::TrackingState* t = c.tracking(); t && t->on) {
    f += 't';
    if (t->broken_redirect) f += 'R';
    if (t->bcast) f += 'B';
  }
  if (c.no_evict) f += 'e';
  if (c.no_touch) f += 'T';
  if (f.empty()) f = "N";
  return f;
}

// CLIENT LIST's redir=: the client a tracking client's invalidations go to (0: itself), -1 when
// it does not track.
int64_t Redirect(const Connection& c) {
  const Connection::TrackingState* t = c.tracking();
  return t && t->on ? static_cast<int64_t>(t->redirect) : -1;
}

// One CLIENT LIST / CLIENT INFO line, without its newline. No field can hold a space or a
// newline: names and lib-name/lib-ver are checked when set, cmd= is the table's name.

// One CLIENT LIST line (also ACL LOG's client-info and the eviction log: Connection's
// client_info_line).
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
      " user=", AV(c.user().name()), " redir=", Redirect(c), " resp=", c.resp(),
      " lib-name=", c.lib_name(), " lib-ver=", c.lib_ver());
}

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
                 "CACHING (YES|NO)",
                 "    Track, or not, the keys of the next command (OPTIN and OPTOUT modes).",
                 "GETNAME",
                 "    Return the name of the current connection.",
                 "GETREDIR",
                 "    Return the ID of the client invalidations are redirected to.",
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
                 "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix>] [...]",
                 "         [OPTIN] [OPTOUT] [NOLOOP]",
                 "    Turn client-side caching's invalidation messages on or off.",
                 "TRACKINGINFO",
                 "    Return the tracking settings of the current connection.",
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
      {"id", 2, ClientId},
      {"setname", 3, ClientSetName},
      {"getname", 2, ClientGetName},
      {"setinfo", 4, ClientSetInfo},
      {"list", -2, ClientList},
      {"kill", -3, ClientKill},
      {"info", 2, ClientInfo},
      {"help", 2, ClientHelp},
      {"no-evict", 3, ClientOnOff},
      {"no-touch", 3, ClientOnOff},
      {"reply", 3, ClientReply},
      {"pause", -3, ClientPause},
      {"unpause", 2, ClientUnpause},
      {"unblock", -3, ClientUnblock},
      {"tracking", -3, ClientTracking},
      {"caching", 3, ClientCaching},
      {"getredir", 2, ClientGetRedir},
      {"trackinginfo", 2, ClientTrackingInfo},
  };
  RunSub("client", kSubs, std::size(kSubs), args, conn, rb);
}

}  // namespace

void RegisterClientCommands(CommandTable* t) {
  Connection::client_info_line = [](Connection& c) { return ClientLine(c, c.reactor().now_ms()); };
  t->Add(OnlySlow(Subs(
      ConnCommand("client", -2, kLoading | kStale | kNoScript, Client, {"@slow", "@connection"}),
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
       {"unblock", -3},
       {"tracking", -3},
       {"caching", 3},
       {"getredir", 2},
       {"trackinginfo", 2}},
      {"kill", "list", "no-evict", "pause", "unpause", "unblock"})));
}

}  // namespace deadbolt::server
