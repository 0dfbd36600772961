#pragma once
// ACL: users, the parser of their rules (ACL SETUSER's modifiers, an aclfile's lines), their
// description (ACL LIST, ACL GETUSER) and the check the dispatcher runs before a command.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/cmdtable/command.h"

namespace deadbolt::server::acl {

enum KeyPerm : uint8_t { kKeyRead = 1, kKeyWrite = 2, kKeyReadWrite = 3 };

struct KeyPattern {
  KeyPattern(std::string p, uint8_t f);
  std::string pattern;
  uint8_t perms = kKeyReadWrite;
  // "lock:app1:*": a literal prefix and one '*' at the end, matched without the glob matcher.
  bool prefix_only = false;
  bool Matches(std::string_view key) const;
};

// The categories Redis 7.0 knows, in ACL CAT's order (without the '@').
const std::vector<std::string>& Categories();
// The SHA-256 of a password, as 64 lower-case hex digits (what ACL LIST shows after '#').
std::string HashPassword(std::string_view password);

// Why a call is refused.
struct Denial {
  enum Reason : uint8_t { kCommand, kKey, kChannel };  // Redis's order: a later one is worse
  Reason reason;
  std::string object;  // the command ("get", "client|setname"), key or channel
};

// One set of rights: commands, key patterns and channel patterns. A user has its root selector
// (the rules given outside parentheses) and any number of "(...)" selectors (Redis 7); a call
// is allowed when one of them allows all of it. Owned as its user is.
class Selector {
 public:
  Selector();

  // Applies one selector rule ("~key*", "%R~k*", "&ch*", "+@read", "-get", "allkeys",
  // "resetchannels", ...). Returns Redis's error text, or nothing.
  std::optional<std::string> ApplyRule(std::string_view rule);
  // "~k* resetchannels &c* -@all +get": what ACL LIST shows for it.
  std::string Describe() const;
  std::string DescribeKeys() const;
  std::string DescribeChannels() const;
  std::string DescribeCommands() const;

  // Every command, every key, every channel.
  bool unrestricted() const;
  bool CommandAllowed(const CommandSpec& spec) const {
    return spec.acl_id >= 0 && static_cast<size_t>(spec.acl_id) < allowed_.size() &&
           allowed_[spec.acl_id] != 0;
  }
  // Whether `key` may be accessed with `perms` (kKeyRead and/or kKeyWrite).
  bool KeyAllowed(std::string_view key, uint8_t perms) const;
  // A channel (PUBLISH, SUBSCRIBE), or a pattern (PSUBSCRIBE: only a pattern the user was given
  // literally, as Redis).
  bool ChannelAllowed(std::string_view channel, bool is_pattern) const;
  // "+select|0": whether the call's first argument is one allowed for `spec`.
  bool FirstArgAllowed(const CommandSpec& spec, CmdArgs args) const;
  // This selector's check of a call (see acl::Check): nothing when it allows it, else the
  // denial, and in `*pos` (when given) the argument it is about (0 for the command).
  std::optional<Denial> Check(const CommandSpec& spec, const CommandSpec& sub, CmdArgs args,
                              size_t* pos) const;

 private:
  void SetAllCommands(bool allow);
  void SetCategory(std::string_view category, bool allow);
  void SetCommand(const CommandSpec& spec, bool allow);
  void SetBit(int acl_id, bool allow);
  void AddFirstArg(const CommandSpec& spec, std::string_view arg);

  bool all_commands_ = false;     // +@all: future commands too
  std::vector<uint8_t> allowed_;  // by CommandSpec::acl_id
  // "+select|0": the first arguments allowed for a command not allowed whole, by acl_id (empty
  // until one is given).
  std::vector<std::vector<std::string>> first_args_;
  bool all_keys_ = false;
  std::vector<KeyPattern> keys_;
  bool all_channels_ = false;
  std::vector<std::string> channels_;
};

// One user. Every reactor keeps its own copy of every user (Users); ACL SETUSER, DELUSER and
// LOAD change each copy on its own reactor, so a user is only read and written by the reactor
// that owns the copy, and a connection's pointer to its user stays valid (a deleted user is
// retired, not freed).
class User {
 public:
  explicit User(std::string name);

  // Applies one rule ("on", ">pass", "~key*", "+@read", "-flushall", "reset", "(~k* +get)",
  // "clearselectors", ...). Returns the error text Redis puts after "Error in ACL SETUSER
  // modifier '<rule>': ", or nothing.
  std::optional<std::string> ApplyRule(std::string_view rule);
  // What ACL LIST shows after "user <name> ".
  std::string Describe() const;
  // The root selector's parts (ACL GETUSER's commands, keys and channels).
  std::string DescribeKeys() const { return root_.DescribeKeys(); }
  std::string DescribeChannels() const { return root_.DescribeChannels(); }
  std::string DescribeCommands() const { return root_.DescribeCommands(); }
  std::vector<std::string> Flags() const;  // ACL GETUSER's flags

  // Whether `password` opens this user (an enabled user: nopass, or one of its hashes).
  bool PasswordOk(std::string_view password) const;

  // The hot path's one test: every command, every key, every channel. The dispatcher checks
  // nothing else for such a user.
  bool unrestricted() const { return unrestricted_; }
  // Changes whenever the user does (a connection's copy for other threads is then taken again).
  uint64_t version() const { return version_; }

  const std::string& name() const { return name_; }
  bool enabled() const { return enabled_; }
  bool nopass() const { return nopass_; }
  const std::vector<std::string>& password_hashes() const { return passwords_; }
  const Selector& root() const { return root_; }
  const std::vector<Selector>& selectors() const { return selectors_; }
  // The root selector's rights alone.
  bool CommandAllowed(const CommandSpec& spec) const { return root_.CommandAllowed(spec); }
  bool KeyAllowed(std::string_view key, uint8_t perms) const {
    return root_.KeyAllowed(key, perms);
  }
  bool ChannelAllowed(std::string_view channel, bool is_pattern) const {
    return root_.ChannelAllowed(channel, is_pattern);
  }

 private:
  void Refresh();

  std::string name_;
  bool enabled_ = false;
  bool nopass_ = false;
  int sanitize_ = 0;  // 0: neither flag set, 1: sanitize-payload, 2: skip-sanitize-payload
  std::vector<std::string> passwords_;  // SHA-256 hex
  Selector root_;
  std::vector<Selector> selectors_;  // "(...)", in the order given
  bool unrestricted_ = false;
  uint64_t version_ = 0;
};

// ACL SETUSER's arguments (or an aclfile line's words) with a selector split over several of
// them ("(~a*", "+get)") joined again with single spaces, as Redis does. Returns the error text
// (after "ERR ") when a selector is not closed.
std::optional<std::string> MergeSelectorArgs(const std::vector<std::string_view>& args,
                                             std::vector<std::string>* out);

// A reactor's users by name. Owned by one reactor (or by the main thread before start).
class Users {
 public:
  // The default user alone: on, every command, key and channel; nopass, or `requirepass`.
  static Users WithDefault(std::string_view requirepass);
  Users() = default;
  Users(Users&&) = default;
  Users& operator=(Users&&) = default;
  Users Clone() const;

  User* Find(std::string_view name) const;
  User* Default() const { return Find("default"); }
  // The user of that name, created (off, no rights) if new.
  User* FindOrCreate(std::string_view name);
  // Removes the user; its object is kept (retired) so connections pointing at it stay valid.
  // Returns it, or null when there was none.
  User* Retire(std::string_view name);
  const std::map<std::string, std::unique_ptr<User>, std::less<>>& all() const { return users_; }
  // Sets the default user's password from --requirepass / CONFIG SET requirepass ("": nopass).
  void SetRequirePass(std::string_view pass);

  // Parses an aclfile's text ("user <name> <rule> ..." per line) into a new set of users, or
  // returns every error in it, in Redis's words (`file` names it, as Redis names it: each line's
  // error, then "WARNING: ACL errors detected, no change ..."). *out is changed only on success.
  static std::optional<std::string> Parse(std::string_view text, std::string_view file,
                                          Users* out);
  // The aclfile's text for these users (ACL SAVE): one "user <name> <rules>" line each.
  std::string Serialize() const;

 private:
  std::map<std::string, std::unique_ptr<User>, std::less<>> users_;
  std::vector<std::unique_ptr<User>> retired_;
};

// The check: whether `user` may run this call. `spec` is the table's command (its keys), `sub`
// the subcommand's spec for a container command (CLIENT SETNAME) or `spec` itself. Keys need
// read for a read-only command and read and write otherwise. With selectors, the call is
// allowed when one selector allows it all; else the denial reported is Redis's "most relevant"
// one: a channel's over a key's over a command's, then the one about the later argument.
std::optional<Denial> Check(const User& user, const CommandSpec& spec, const CommandSpec& sub,
                            CmdArgs args);

// The dispatcher's error reply for a denial (NOPERM ...), ACL DRYRUN's text, and the words of
// a script's refusal.
std::string DenialError(const Denial& d);
std::string DenialDryRun(const Denial& d);
std::string_view DenialScriptError(const Denial& d);
// The error of a command queued in MULTI that the user's rules no longer allow at EXEC.
std::string DenialAtExec(const Denial& d);
// ACL LOG's reason field.
std::string_view DenialReason(const Denial& d);

// A script's redis.call(args...) made for `user` (Redis's scriptVerifyACL): empty when allowed;
// else the error ("ERR The user executing the script can't ...", without the script's place),
// and the refusal is in ACL LOG (context "lua"). Any thread.
std::string ScriptCallRefusal(const User& user, CmdArgs args, int64_t now_ms);

}  // namespace deadbolt::server::acl
