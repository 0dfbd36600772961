// ACL: SETUSER GETUSER DELUSER LIST USERS WHOAMI CAT LOG GENPASS DRYRUN LOAD SAVE HELP. The users
// and the check are in server/acl/; every reactor keeps its own copy of the users, and a change
// (SETUSER, DELUSER, LOAD) goes to every reactor as a message, as CONFIG SET does.

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <type_traits>

#include "server/acl/acl.h"
#include "server/acl/acl_log.h"
#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"

namespace deadbolt::server {

namespace {

using protocol::ReplyBuilder;

// Runs fn on every reactor, then finish on this one.
void OnEveryReactor(Connection& conn, std::function<void(Reactor&)> fn,
                    absl::AnyInvocable<void(ReplyBuilder&)> finish) {
  conn.FanOut(
      AllShards(conn.reactor().server()), [fn](ShardCtx&) { fn(*Reactor::Current()); },
      [finish = std::move(finish)](ReplyBuilder& rb) mutable { finish(rb); });
}

// Closes the clients of `user` on reactor r (the caller after its reply), as Redis does when a
// user is deleted.
void CloseClientsOf(Reactor& r, const acl::User* user, uint64_t caller) {
  std::vector<Connection*> victims;
  for (auto& [id, c] : r.connections()) {
    if (!c->closing() && &c->user() == user) victims.push_back(c);
  }
  for (Connection* c : victims) {
    if (c->id() == caller) {
      c->CloseAfterReply();
    } else {
      c->Kill();
    }
  }
}

bool ValidUserName(std::string_view name) {
  for (char c : name) {
    if (c == ' ' || c == '\0') return false;
  }
  return true;
}

void SetUser(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  std::string name(args[2]);
  if (!ValidUserName(name)) {
    rb.Error("ERR Usernames can't contain spaces or null characters");
    return;
  }
  // Every rule is tried on a copy first: a bad one changes nothing anywhere, as in Redis.
  const acl::User* existing = conn.reactor().acl_users().Find(name);
  acl::User probe = existing ? *existing : acl::User(name);
  // A selector may come split over several arguments ("(~a*", "+get)").
  std::vector<std::string> rules;
  const std::vector<std::string_view> given(args.begin() + 3, args.end());
  if (auto err = acl::MergeSelectorArgs(given, &rules)) {
    rb.Error("ERR " + *err);
    return;
  }
  for (const std::string& rule : rules) {
    if (auto err = probe.ApplyRule(rule)) {
      rb.Error("ERR Error in ACL SETUSER modifier '" + rule + "': " + *err);
      return;
    }
  }
  OnEveryReactor(
      conn,
      [name, rules](Reactor& r) {
        acl::User* u = r.acl_users().FindOrCreate(name);
        for (const std::string& rule : rules) u->ApplyRule(rule);
      },
      [](ReplyBuilder& rb) { rb.Ok(); });
}

void GetUser(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  const acl::User* u = conn.reactor().acl_users().Find(args[2]);
  if (u == nullptr) {
    rb.Null();
    return;
  }
  rb.MapHeader(6);
  rb.Bulk("flags");
  const std::vector<std::string> flags = u->Flags();
  rb.SetHeader(flags.size());  // a set in RESP3, as Redis
  for (const std::string& f : flags) rb.Bulk(f);
  rb.Bulk("passwords");
  rb.ArrayHeader(u->password_hashes().size());
  for (const std::string& h : u->password_hashes()) rb.Bulk(h);
  rb.Bulk("commands");
  rb.Bulk(u->DescribeCommands());
  rb.Bulk("keys");
  rb.Bulk(u->DescribeKeys());
  rb.Bulk("channels");
  rb.Bulk(u->DescribeChannels());
  rb.Bulk("selectors");
  rb.ArrayHeader(u->selectors().size());
  for (const acl::Selector& s : u->selectors()) {
    rb.MapHeader(3);
    rb.Bulk("commands");
    rb.Bulk(s.DescribeCommands());
    rb.Bulk("keys");
    rb.Bulk(s.DescribeKeys());
    rb.Bulk("channels");
    rb.Bulk(s.DescribeChannels());
  }
}

void DelUser(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  std::vector<std::string> names;
  for (size_t i = 2; i < args.size(); i++) {
    if (args[i] == "default") {
      rb.Error("ERR The 'default' user cannot be removed");
      return;
    }
    if (conn.reactor().acl_users().Find(args[i]) &&
        std::find(names.begin(), names.end(), args[i]) == names.end()) {
      names.emplace_back(args[i]);
    }
  }
  const uint64_t caller = conn.id();
  const int64_t deleted = static_cast<int64_t>(names.size());
  OnEveryReactor(
      conn,
      [names, caller](Reactor& r) {
        for (const std::string& n : names) {
          if (acl::User* u = r.acl_users().Find(n)) {
            CloseClientsOf(r, u, caller);
            r.acl_users().Retire(n);
          }
        }
      },
      [deleted](ReplyBuilder& rb) { rb.Integer(deleted); });
}

void List(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  const auto& all = conn.reactor().acl_users().all();
  rb.ArrayHeader(all.size());
  for (const auto& [name, u] : all) rb.Bulk("user " + name + " " + u->Describe());
}

void Users(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  const auto& all = conn.reactor().acl_users().all();
  rb.ArrayHeader(all.size());
  for (const auto& [name, u] : all) rb.Bulk(name);
}

void WhoAmI(CmdArgs, Connection& conn, ReplyBuilder& rb) { rb.Bulk(conn.user().name()); }

void Cat(CmdArgs args, Connection&, ReplyBuilder& rb) {
  if (args.size() == 2) {
    rb.ArrayHeader(acl::Categories().size());
    for (const std::string& c : acl::Categories()) rb.Bulk(c);
    return;
  }
  const std::string cat = AsciiLower(args[2]);
  bool known = false;
  for (const std::string& c : acl::Categories()) known = known || c == cat;
  if (!known) {
    rb.Error("ERR Unknown category '" + std::string(args[2]) + "'");
    return;
  }
  std::vector<std::string_view> names;
  for (const CommandSpec& s : CommandTable::Get().All()) {
    for (const std::string& c : s.acl_categories) {
      if (c.size() == cat.size() + 1 && std::string_view(c).substr(1) == cat) {
        names.push_back(s.name);
        break;
      }
    }
  }
  rb.ArrayHeader(names.size());
  for (std::string_view n : names) rb.Bulk(n);
}

void Log(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  size_t count = 10;
  if (args.size() == 3) {
    if (EqualsIgnoreCase(args[2], "reset")) {
      acl::AclLog::Get().Reset();
      rb.Ok();
      return;
    }
    int64_t n;
    if (!ParseNumber(args[2], &n)) {
      rb.Error(errors::kNotInteger);
      return;
    }
    count = static_cast<size_t>(std::max<int64_t>(n, 0));  // as Redis: a negative count, none
  } else if (args.size() > 3) {
    rb.Error(errors::kSyntax);
    return;
  }
  const int64_t now = conn.reactor().now_ms();
  const std::vector<acl::LogEntry> entries = acl::AclLog::Get().Newest(count);
  rb.ArrayHeader(entries.size());
  for (const acl::LogEntry& e : entries) {
    rb.MapHeader(7);
    rb.Bulk("count");
    rb.Integer(static_cast<int64_t>(e.count));
    rb.Bulk("reason");
    rb.Bulk(e.reason);
    rb.Bulk("context");
    rb.Bulk(e.context);
    rb.Bulk("object");
    rb.Bulk(e.object);
    rb.Bulk("username");
    rb.Bulk(e.username);
    rb.Bulk("age-seconds");
    rb.Double(static_cast<double>(now - e.updated_ms) / 1000.0);
    rb.Bulk("client-info");
    rb.Bulk(e.client_info);
  }
}

void GenPass(CmdArgs args, Connection&, ReplyBuilder& rb) {
  int64_t bits = 256;
  if (args.size() == 3) {
    if (!ParseNumber(args[2], &bits)) {
      rb.Error(errors::kNotInteger);
      return;
    }
    if (bits <= 0 || bits > 4096) {
      rb.Error(
          "ERR ACL GENPASS argument must be the number of bits for the output password, a "
          "positive number up to 4096");
      return;
    }
  } else if (args.size() > 3) {
    rb.Error(errors::kSyntax);
    return;
  }
  const size_t chars = static_cast<size_t>((bits + 3) / 4);
  std::string random((chars + 1) / 2, '\0');
  size_t got = 0;
  while (got < random.size()) {
    const ssize_t n = getrandom(random.data() + got, random.size() - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : random) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  out.resize(chars);
  rb.Bulk(out);
}

void DryRun(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  const acl::User* u = conn.reactor().acl_users().Find(args[2]);
  if (u == nullptr) {
    rb.Error("ERR User '" + std::string(args[2]) + "' not found");
    return;
  }
  CmdArgs call = args.subspan(3);
  const CommandSpec* spec = CommandTable::Get().Find(call[0]);
  if (spec == nullptr) {
    rb.Error("ERR Command '" + std::string(call[0]) + "' not found");
    return;
  }
  if (!spec->ArityOk(call.size())) {
    rb.Error(errors::WrongArity(spec->name));
    return;
  }
  const CommandSpec* sub = spec;
  if (!spec->subcommands.empty() && call.size() > 1) {
    if (const CommandSpec* s = CommandTable::FindSubcommand(*spec, call[1])) sub = s;
  }
  if (auto denial = acl::Check(*u, *spec, *sub, call)) {
    rb.Bulk(acl::DenialDryRun(*denial));
  } else {
    rb.Ok();
  }
}

void Load(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  const std::string& path = conn.reactor().config().aclfile;
  if (path.empty()) {
    rb.Error(errors::kAclNoFile);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    rb.Error("ERR Error loading ACLs, opening file '" + path + "': " + std::strerror(errno));
    return;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto loaded = std::make_shared<acl::Users>();
  if (auto err = acl::Users::Parse(text.str(), path, loaded.get())) {
    rb.Error("ERR " + *err);
    return;
  }
  const uint64_t caller = conn.id();
  OnEveryReactor(
      conn,
      [loaded, caller](Reactor& r) {
        acl::Users& cur = r.acl_users();
        std::vector<std::string> gone;
        for (const auto& [name, u] : cur.all()) {
          if (loaded->Find(name) == nullptr) gone.push_back(name);
        }
        for (const std::string& name : gone) {
          CloseClientsOf(r, cur.Find(name), caller);
          cur.Retire(name);
        }
        // In place: connections keep pointing at their user.
        for (const auto& [name, u] : loaded->all()) *cur.FindOrCreate(name) = *u;
      },
      [](ReplyBuilder& rb) { rb.Ok(); });
}

void Save(CmdArgs, Connection& conn, ReplyBuilder& rb) {
  const std::string& path = conn.reactor().config().aclfile;
  if (path.empty()) {
    rb.Error(errors::kAclNoFile);
    return;
  }
  // Written aside and renamed over the file, so a crash leaves the old file or the new one.
  const std::string text = conn.reactor().acl_users().Serialize();
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  bool ok = false;
  if (FILE* f = std::fopen(tmp.c_str(), "wb")) {
    ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = std::fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    ok = std::fclose(f) == 0 && ok;
    ok = ok && std::rename(tmp.c_str(), path.c_str()) == 0;
    if (!ok) std::remove(tmp.c_str());
  }
  if (!ok) {
    LogWarning("ACL SAVE: writing %s failed: %s", path.c_str(), std::strerror(errno));
    rb.Error(
        "ERR There was an error trying to save the ACLs. Please check the server logs for more "
        "information");
    return;
  }
  rb.Ok();
}

void Help(CmdArgs, Connection&, ReplyBuilder& rb) {
  WriteHelp(
      rb,
      {"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
       "CAT [<category>]",
       "    List all commands that belong to <category>, or all command categories",
       "    when no category is specified.",
       "DELUSER <username> [<username> ...]",
       "    Delete a list of users.",
       "DRYRUN <username> <command> [<arg> ...]",
       "    Returns whether the user can execute the given command without executing the command.",
       "GETUSER <username>",
       "    Get the user's details.",
       "GENPASS [<bits>]",
       "    Generate a secure 256-bit user password. The optional `bits` argument can",
       "    be used to specify a different size.",
       "LIST",
       "    Show users details in config file format.",
       "LOAD",
       "    Reload users from the ACL file.",
       "LOG [<count> | RESET]",
       "    Show the ACL log entries.",
       "SAVE",
       "    Save the current config to the ACL file.",
       "SETUSER <username> <attribute> [<attribute> ...]",
       "    Create or modify a user with the specified attributes.",
       "USERS",
       "    List all the registered usernames.",
       "WHOAMI",
       "    Return the current connection username.",
       "HELP",
       "    Print this help."});
}

struct AclSub {
  const char* name;
  int arity;
  ConnHandler fn;
  bool admin;
};

const AclSub kSubs[] = {
    {"cat", -2, Cat, false},         {"deluser", -3, DelUser, true}, {"dryrun", -4, DryRun, true},
    {"genpass", -2, GenPass, false}, {"getuser", 3, GetUser, true},  {"list", 2, List, true},
    {"load", 2, Load, true},         {"log", -2, Log, true},         {"save", 2, Save, true},
    {"setuser", -3, SetUser, true},  {"users", 2, Users, true},      {"whoami", 2, WhoAmI, false},
    {"help", 2, Help, false},
};

void Acl(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  for (const AclSub& s : kSubs) {
    if (!EqualsIgnoreCase(args[1], s.name)) continue;
    const size_t argc = args.size();
    if (s.arity >= 0 ? argc != static_cast<size_t>(s.arity)
                     : argc < static_cast<size_t>(-s.arity)) {
      rb.Error(errors::WrongArity(std::string("acl|") + s.name));
      return;
    }
    s.fn(args, conn, rb);
    return;
  }
  rb.Error(errors::UnknownSubcommand(args[1], "ACL"));
}

}  // namespace

void RegisterAclCommands(CommandTable* t) {
  // kAdmin: MONITOR does not show ACL calls (their arguments hold passwords).
  const uint32_t kFlags = kAdmin | kNoScript | kLoading | kStale;
  CommandSpec acl = ConnCommand("acl", -2, kFlags, Acl, {"@slow"});
  for (const AclSub& s : kSubs) {
    std::vector<std::string> cats = s.admin
                                        ? std::vector<std::string>{"@admin", "@slow", "@dangerous"}
                                        : std::vector<std::string>{"@slow"};
    acl.subcommands.push_back(ConnCommand(std::string("acl|") + s.name, s.arity,
                                          s.admin ? kFlags : (kFlags & ~kAdmin), nullptr,
                                          std::move(cats)));
  }
  t->Add(std::move(acl));
}

}  // namespace deadbolt::server
