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

// One user. Every reactor keeps its own copy of every user (Users); ACL SETUSER, DELUSER and
// LOAD change each copy on its own reactor, so a user is only read and written by the reactor
// that owns the copy, and a connection's pointer to its user stays valid (a deleted user is
// retired, not freed).
class User {
 public:
  explicit User(std::string name);

  // Applies one rule ("on", ">pass", "~key*", "+@read", "-flushall", "reset", ...). Returns the
  // error text Redis puts after "Error in ACL SETUSER modifier '<rule>': ", or nothing.
  std::optional<std::string> ApplyRule(std::string_view rule);
  // What ACL LIST shows after "user <name> ".
  std::string Describe() const;
  std::string DescribeKeys() const;
  std::string DescribeChannels() const;
  std::string DescribeCommands() const;
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
  bool CommandAllowed(const CommandSpec& spec) const {
    return spec.acl_id >= 0 && static_cast<size_t>(spec.acl_id) < allowed_.size() &&
           allowed_[spec.acl_id] != 0;
  }
  // Whether `key` may be accessed with `perms` (kKeyRead and/or kKeyWrite).
  bool KeyAllowed(std::string_view key, uint8_t perms) const;
  // A channel (PUBLISH, SUBSCRIBE), or a pattern (PSUBSCRIBE: only a pattern the user was given
  // literally, as Redis).
  bool ChannelAllowed(std::string_view channel, bool is_pattern) const;

 private:
  void Refresh();
  void SetAllCommands(bool allow);
  void SetCategory(std::string_view category, bool allow);
  void SetCommand(const CommandSpec& spec, bool allow);

  std::string name_;
  bool enabled_ = false;
  bool nopass_ = false;
  int sanitize_ = 0;  // 0: neither flag set, 1: sanitize-payload, 2: skip-sanitize-payload
  std::vector<std::string> passwords_;  // SHA-256 hex
  bool all_commands_ = false;           // +@all: future commands too
  std::vector<uint8_t> allowed_;        // by CommandSpec::acl_id
  bool all_keys_ = false;
  std::vector<KeyPattern> keys_;
  bool all_channels_ = false;
  std::vector<std::string> channels_;
  bool unrestricted_ = false;
  uint64_t version_ = 0;
};

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
  // returns the error (Redis's words for a bad rule; file and line given by the caller).
  static std::optional<std::string> Parse(std::string_view text, Users* out);
  // The aclfile's text for these users (ACL SAVE): one "user <name> <rules>" line each.
  std::string Serialize() const;

 private:
  std::map<std::string, std::unique_ptr<User>, std::less<>> users_;
  std::vector<std::unique_ptr<User>> retired_;
};

// Why a call is refused.
struct Denial {
  enum Reason : uint8_t { kCommand, kKey, kChannel };
  Reason reason;
  std::string object;  // the command ("get", "client|setname"), key or channel
};

// The check: whether `user` may run this call. `spec` is the table's command (its keys), `sub`
// the subcommand's spec for a container command (CLIENT SETNAME) or `spec` itself. Keys need
// read for a read-only command and read and write otherwise.
std::optional<Denial> Check(const User& user, const CommandSpec& spec, const CommandSpec& sub,
                            CmdArgs args);

// The dispatcher's error reply for a denial (NOPERM ...), ACL DRYRUN's text, and the words of
// a script's refusal.
std::string DenialError(const Denial& d);
std::string DenialDryRun(const Denial& d);
std::string_view DenialScriptError(const Denial& d);
// ACL LOG's reason field.
std::string_view DenialReason(const Denial& d);

// A script's redis.call(args...) made for `user` (Redis's scriptVerifyACL): empty when allowed;
// else the error ("ERR The user executing the script can't ...", without the script's place),
// and the refusal is in ACL LOG (context "lua"). Any thread.
std::string ScriptCallRefusal(const User& user, CmdArgs args, int64_t now_ms);

}  // namespace deadbolt::server::acl
