// COMMAND: the command table as clients see it (COUNT, INFO, DOCS, LIST, HELP), read from the
// same table the dispatcher checks against.

#include <absl/strings/str_cat.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "shard/base/glob.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

bool IsBareContainer(const CommandSpec& s) { return (s.flags & kContainer) && s.arity != -1; }

// A container's own entry has no flags and no keys, as in Redis (its subcommands have them),
// unless it runs without one (COMMAND).
// A command whose keys an argument places (EVAL's numkeys, ZINTERSTORE's) is movablekeys.
void WriteFlags(const CommandSpec& s, ReplyBuilder& rb) {
  if (IsBareContainer(s)) {
    rb.SetHeader(0);
    return;
  }
  static const std::pair<uint32_t, const char*> kNames[] = {
      {kWrite, "write"},       {kReadOnly, "readonly"},
      {kDenyOom, "denyoom"},   {kAdmin, "admin"},
      {kPubSub, "pubsub"},     {kNoScript, "noscript"},
      {kLoading, "loading"},   {kStale, "stale"},
      {kNoAuth, "no_auth"},    {kFast, "fast"},
      {kBlocking, "blocking"}, {kAllowBusy, "allow_busy"},
      {kNoMulti, "no_multi"},  {kNoMandatoryKeys, "no_mandatory_keys"},
      {kAsking, "asking"},
  };
  size_t n = s.movable_keys() ? 1 : 0;
  for (auto& [f, name] : kNames) n += (s.flags & f) ? 1 : 0;
  rb.SetHeader(n);
  for (auto& [f, name] : kNames) {
    if (s.flags & f) rb.SimpleString(name);
  }
  if (s.movable_keys()) rb.SimpleString("movablekeys");
}

void WriteCommandInfo(const CommandSpec& s, ReplyBuilder& rb) {
  rb.ArrayHeader(10);
  rb.Bulk(s.name);
  rb.Integer(s.arity);
  WriteFlags(s, rb);
  const bool keys = !IsBareContainer(s);
  rb.Integer(keys ? s.first_key : 0);
  rb.Integer(keys ? s.last_key : 0);
  rb.Integer(keys ? s.key_step : 0);
  rb.SetHeader(s.acl_categories.size());
  for (auto& c : s.acl_categories) rb.SimpleString(c);
  rb.ArrayHeader(0);  // tips
  rb.ArrayHeader(0);  // key specs
  rb.ArrayHeader(s.subcommands.size());
  for (auto& sub : s.subcommands) WriteCommandInfo(sub, rb);
}

void CommandCount(CmdArgs, Connection&, ReplyBuilder& rb) {
  rb.Integer(static_cast<int64_t>(CommandTable::Get().All().size()));
}

// A command or a subcommand by its full name ("config|get"), as COMMAND INFO and LIST name them.
const CommandSpec* FindByFullName(std::string_view name) {
  const size_t bar = name.find('|');
  const CommandSpec* spec = CommandTable::Get().Find(name.substr(0, bar));
  if (spec == nullptr || bar == std::string_view::npos) return spec;
  return CommandTable::FindSubcommand(*spec, name.substr(bar + 1));
}

void CommandInfo(CmdArgs args, Connection&, ReplyBuilder& rb) {
  const auto& t = CommandTable::Get();
  if (args.size() == 2) {
    rb.ArrayHeader(t.All().size());
    for (auto& s : t.All()) WriteCommandInfo(s, rb);
    return;
  }
  rb.ArrayHeader(args.size() - 2);
  for (size_t i = 2; i < args.size(); i++) {
    if (const CommandSpec* s = FindByFullName(args[i])) {
      WriteCommandInfo(*s, rb);
    } else {
      rb.Null();  // as Redis: a null in the array
    }
  }
}

void WriteDocs(const CommandSpec& s, ReplyBuilder& rb) {
  std::string group = "server";
  for (auto& c : s.acl_categories) {
    if (c == "@string" || c == "@hash" || c == "@pubsub" || c == "@connection" ||
        c == "@transactions" || c == "@scripting") {
      group = c.substr(1);
    } else if (c == "@keyspace" && group == "server") {
      group = "generic";
    }
  }
  rb.MapHeader(s.subcommands.empty() ? 3 : 4);
  rb.Bulk("summary");
  rb.Bulk(absl::StrCat("The ", AsciiUpper(s.name), " command."));
  rb.Bulk("since");
  rb.Bulk("1.0.0");
  rb.Bulk("group");
  rb.Bulk(group);
  if (!s.subcommands.empty()) {
    rb.Bulk("subcommands");
    rb.MapHeader(s.subcommands.size());
    for (auto& sub : s.subcommands) {
      rb.Bulk(sub.name);
      WriteDocs(sub, rb);
    }
  }
}

void CommandDocs(CmdArgs args, Connection&, ReplyBuilder& rb) {
  const auto& t = CommandTable::Get();
  std::vector<const CommandSpec*> specs;
  if (args.size() == 2) {
    for (auto& s : t.All()) specs.push_back(&s);
  } else {
    for (size_t i = 2; i < args.size(); i++) {
      if (const CommandSpec* s = t.Find(args[i])) specs.push_back(s);
    }
  }
  rb.MapHeader(specs.size());
  for (const CommandSpec* s : specs) {
    rb.Bulk(s->name);
    WriteDocs(*s, rb);
  }
}

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]: every command and
// subcommand by its full name, as Redis 7 lists them.
void CommandList(CmdArgs args, Connection&, ReplyBuilder& rb) {
  enum class By { kAll, kModule, kAclCat, kPattern } by = By::kAll;
  std::string filter;
  if (args.size() == 5 && EqualsIgnoreCase(args[2], "FILTERBY")) {
    if (EqualsIgnoreCase(args[3], "MODULE")) {
      by = By::kModule;
    } else if (EqualsIgnoreCase(args[3], "ACLCAT")) {
      by = By::kAclCat;
      filter = "@" + AsciiLower(args[4]);
    } else if (EqualsIgnoreCase(args[3], "PATTERN")) {
      by = By::kPattern;
      filter = std::string(args[4]);
    } else {
      rb.Error(errors::kSyntax);
      return;
    }
  } else if (args.size() != 2) {
    rb.Error(errors::kSyntax);
    return;
  }
  auto listed = [&](const CommandSpec& s) {
    switch (by) {
      case By::kAll:
        return true;
      case By::kModule:
        return false;  // no modules
      case By::kAclCat:
        return std::find(s.acl_categories.begin(), s.acl_categories.end(), filter) !=
               s.acl_categories.end();
      case By::kPattern:
        return shard::GlobMatch(filter, s.name, /*nocase=*/true);
    }
    return false;
  };
  std::vector<const CommandSpec*> out;
  for (const CommandSpec& s : CommandTable::Get().All()) {
    if (listed(s)) out.push_back(&s);
    for (const CommandSpec& sub : s.subcommands) {
      if (listed(sub)) out.push_back(&sub);
    }
  }
  rb.ArrayHeader(out.size());
  for (const CommandSpec* s : out) rb.Bulk(s->name);
}

// COMMAND GETKEYS command [arg ...]: the key arguments of that call, found as the dispatcher
// finds them (so as a cluster client would route it). Redis 7.0's errors, in its order.
void CommandGetKeys(CmdArgs args, Connection&, ReplyBuilder& rb) {
  const CmdArgs call = args.subspan(2);
  const CommandSpec* s = CommandTable::Get().Find(call[0]);
  if (s != nullptr && !s->subcommands.empty() && call.size() >= 2) {
    s = CommandTable::FindSubcommand(*s, call[1]);  // (a container's subcommand, or none)
  }
  if (s == nullptr) {
    rb.Error(errors::kGetKeysInvalidCommand);
    return;
  }
  if (!s->has_keys()) {
    rb.Error(errors::kGetKeysNoKeys);
    return;
  }
  if (!s->ArityOk(call.size())) {
    rb.Error(errors::kGetKeysArity);
    return;
  }
  int first, last;
  if (s->key_range != nullptr && !s->key_range(call, &first, &last) &&
      !(s->flags & kNoMandatoryKeys)) {
    rb.Error(errors::kGetKeysInvalidArgs);
    return;
  }
  std::vector<std::string_view> keys;
  s->ForEachKey(call, [&](int i) { keys.push_back(call[i]); });
  rb.BulkArray(keys.data(), keys.size());
}

void CommandHelp(CmdArgs, Connection&, ReplyBuilder& rb) {
  WriteHelp(rb,
            {"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", "(no subcommand)",
             "    Return details about all commands.", "COUNT",
             "    Return the total number of commands in this server.", "LIST",
             "    Return a list of all commands in this server.", "INFO [<command-name> ...]",
             "    Return details about the given commands.", "DOCS [<command-name> ...]",
             "    Return documentation details about the given commands.", "GETKEYS <full-command>",
             "    Return the keys from a full Redis command.", "HELP", "    Print this help."});
}

void Command(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() == 1) {
    const auto& t = CommandTable::Get();
    rb.ArrayHeader(t.All().size());
    for (auto& s : t.All()) WriteCommandInfo(s, rb);
    return;
  }
  static const Sub kSubs[] = {
      {"count", 2, CommandCount}, {"info", -2, CommandInfo}, {"docs", -2, CommandDocs},
      {"list", -2, CommandList},  {"help", 2, CommandHelp},  {"getkeys", -4, CommandGetKeys},
  };
  RunSub("command", kSubs, std::size(kSubs), args, conn, rb);
}

}  // namespace

void RegisterCommandCommands(CommandTable* t) {
  CommandSpec command =
      ConnCommand("command", -1, kLoading | kStale, Command, {"@slow", "@connection"});
  for (auto [name, arity] : std::initializer_list<std::pair<const char*, int>>{
           {"count", 2}, {"info", -2}, {"docs", -2}, {"list", -2}, {"help", 2}, {"getkeys", -4}}) {
    command.subcommands.push_back(ConnCommand(std::string("command|") + name, arity, command.flags,
                                              nullptr, command.acl_categories));
  }
  t->Add(std::move(command));
}

}  // namespace deadbolt::server
