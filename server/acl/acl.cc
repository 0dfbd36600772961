#include "server/acl/acl.h"

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>

#include "server/acl/acl_log.h"
#include "server/base/error_strings.h"
#include "shard/base/glob.h"

namespace deadbolt::server::acl {
namespace {

bool EqNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x += 'a' - 'A';
    if (y >= 'A' && y <= 'Z') y += 'a' - 'A';
    if (x != y) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
  }
  return out;
}

bool HasCategory(const CommandSpec& spec, std::string_view category) {
  for (const std::string& c : spec.acl_categories) {
    if (c.size() == category.size() + 1 && std::string_view(c).substr(1) == category) return true;
  }
  return false;
}

bool IsCategory(std::string_view name) {
  for (const std::string& c : Categories()) {
    if (c == name) return true;
  }
  return false;
}

bool ValidHash(std::string_view h) {
  if (h.size() != 64) return false;
  for (char c : h) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Compares two hashes in time that does not depend on where they differ.
bool HashEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); i++) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

constexpr std::string_view kUnknownName = "Unknown command or category name in ACL";
constexpr std::string_view kNoSuchPassword =
    "The password you are trying to remove from the user does not exist";
constexpr std::string_view kBadHash =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters";
constexpr std::string_view kKeyAfterAll =
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have "
    "any effect. Try 'resetkeys' to start with an empty list of patterns";
constexpr std::string_view kChannelAfterAll =
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not "
    "have any effect. Try 'resetchannels' to start with an empty list of channels";

}  // namespace

const std::vector<std::string>& Categories() {
  static const std::vector<std::string> kAll = {
      "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
      "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
      "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting"};
  return kAll;
}

std::string HashPassword(std::string_view password) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(password.data(), password.size(), md, &len, EVP_sha256(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; i++) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

KeyPattern::KeyPattern(std::string p, uint8_t f) : pattern(std::move(p)), perms(f) {
  prefix_only = !pattern.empty() && pattern.back() == '*' &&
                pattern.find_first_of("*?[\\") == pattern.size() - 1;
}

bool KeyPattern::Matches(std::string_view key) const {
  if (prefix_only) return key.starts_with(std::string_view(pattern).substr(0, pattern.size() - 1));
  return shard::GlobMatch(pattern, key);
}

// --- Selector ---

Selector::Selector() { allowed_.assign(CommandTable::Get().AclCount(), 0); }

bool Selector::unrestricted() const {
  bool every = all_commands_;
  for (uint8_t a : allowed_) every = every && a != 0;
  return every && all_keys_ && all_channels_;
}

// As Redis: a command allowed or refused whole (alone, by category, by +@all) loses the first
// arguments allowed for it.
void Selector::SetAllCommands(bool allow) {
  std::fill(allowed_.begin(), allowed_.end(), allow ? 1 : 0);
  all_commands_ = allow;
  first_args_.clear();
}

void Selector::SetBit(int id, bool allow) {
  allowed_[id] = allow ? 1 : 0;
  if (static_cast<size_t>(id) < first_args_.size()) first_args_[id].clear();
}

void Selector::SetCommand(const CommandSpec& spec, bool allow) {
  SetBit(spec.acl_id, allow);
  for (const CommandSpec& sub : spec.subcommands) SetBit(sub.acl_id, allow);
}

void Selector::SetCategory(std::string_view category, bool allow) {
  const CommandTable& t = CommandTable::Get();
  for (size_t id = 0; id < t.AclCount(); id++) {
    if (HasCategory(t.AclSpec(static_cast<int>(id)), category)) {
      SetBit(static_cast<int>(id), allow);
    }
  }
}

bool Selector::FirstArgAllowed(const CommandSpec& spec, CmdArgs args) const {
  if (args.size() < 2 || static_cast<size_t>(spec.acl_id) >= first_args_.size()) return false;
  for (const std::string& a : first_args_[spec.acl_id]) {
    if (EqNoCase(a, args[1])) return true;
  }
  return false;
}

// "+select|0": `spec` (a command without subcommands) with that first argument. Redis keeps the
// case given (ACL LIST shows it) and compares without it.
void Selector::AddFirstArg(const CommandSpec& spec, std::string_view arg) {
  if (first_args_.size() < allowed_.size()) first_args_.resize(allowed_.size());
  std::vector<std::string>& args = first_args_[spec.acl_id];
  for (const std::string& a : args) {
    if (EqNoCase(a, arg)) return;
  }
  args.emplace_back(arg);
}

std::optional<std::string> Selector::ApplyRule(std::string_view rule) {
  if (EqNoCase(rule, "allkeys") || rule == "~*") {
    all_keys_ = true;
    keys_.assign(1, KeyPattern{"*", kKeyReadWrite});
    return std::nullopt;
  }
  if (EqNoCase(rule, "resetkeys")) {
    all_keys_ = false;
    keys_.clear();
    return std::nullopt;
  }
  if (EqNoCase(rule, "allchannels") || rule == "&*") {
    all_channels_ = true;
    channels_.assign(1, "*");
    return std::nullopt;
  }
  if (EqNoCase(rule, "resetchannels")) {
    all_channels_ = false;
    channels_.clear();
    return std::nullopt;
  }
  if (EqNoCase(rule, "allcommands") || EqNoCase(rule, "+@all")) {
    SetAllCommands(true);
    return std::nullopt;
  }
  if (EqNoCase(rule, "nocommands") || EqNoCase(rule, "-@all")) {
    SetAllCommands(false);
    return std::nullopt;
  }
  if (rule.empty()) return std::string("Syntax error");
  const char c = rule[0];
  if (c == '~' || c == '%') {
    uint8_t perms = kKeyReadWrite;
    std::string_view pattern;
    if (c == '~') {
      pattern = rule.substr(1);
    } else {
      const size_t tilde = rule.find('~');
      if (tilde == std::string_view::npos || tilde == 1) return std::string("Syntax error");
      perms = 0;
      for (char f : rule.substr(1, tilde - 1)) {
        if (f == 'R' || f == 'r') {
          perms |= kKeyRead;
        } else if (f == 'W' || f == 'w') {
          perms |= kKeyWrite;
        } else {
          return std::string("Syntax error");
        }
      }
      pattern = rule.substr(tilde + 1);
    }
    if (all_keys_) return std::string(kKeyAfterAll);
    if (pattern == "*" && perms == kKeyReadWrite) return ApplyRule("allkeys");
    for (KeyPattern& k : keys_) {
      if (k.pattern == pattern) {
        k.perms |= perms;
        return std::nullopt;
      }
    }
    keys_.push_back(KeyPattern{std::string(pattern), perms});
    return std::nullopt;
  }
  if (c == '&') {
    if (all_channels_) return std::string(kChannelAfterAll);
    std::string pattern(rule.substr(1));
    if (std::find(channels_.begin(), channels_.end(), pattern) == channels_.end()) {
      channels_.push_back(std::move(pattern));
    }
    return std::nullopt;
  }
  if (c == '+' || c == '-') {
    const bool allow = c == '+';
    std::string name = Lower(rule.substr(1));
    if (!name.empty() && name[0] == '@') {
      if (!IsCategory(std::string_view(name).substr(1))) return std::string(kUnknownName);
      SetCategory(std::string_view(name).substr(1), allow);
      return std::nullopt;
    }
    const size_t bar = name.rfind('|');
    if (allow && bar != std::string::npos) {
      // "+client|setname" (a subcommand) or "+select|0" (a first argument).
      const CommandSpec* cmd = CommandTable::Get().FindFullName(name.substr(0, bar));
      if (cmd == nullptr) return std::string(kUnknownName);
      if (cmd->name.find('|') != std::string::npos) {
        return std::string("Allowing first-arg of a subcommand is not supported");
      }
      if (bar + 1 == name.size()) return std::string("Syntax error");
      if (cmd->subcommands.empty()) {
        AddFirstArg(*cmd, rule.substr(bar + 2));  // as given: '+' and the name are ASCII
        return std::nullopt;
      }
    }
    const CommandSpec* spec = CommandTable::Get().FindFullName(name);
    if (spec == nullptr) return std::string(kUnknownName);
    SetCommand(*spec, allow);
    return std::nullopt;
  }
  return std::string("Syntax error");
}

// --- User ---

User::User(std::string name) : name_(std::move(name)) { Refresh(); }

void User::Refresh() {
  static std::atomic<uint64_t> versions{0};
  version_ = ++versions;
  unrestricted_ = root_.unrestricted();
}

std::optional<std::string> User::ApplyRule(std::string_view rule) {
  auto done = [this]() -> std::optional<std::string> {
    Refresh();
    return std::nullopt;
  };
  if (EqNoCase(rule, "on")) {
    enabled_ = true;
    return done();
  }
  if (EqNoCase(rule, "off")) {
    enabled_ = false;
    return done();
  }
  if (EqNoCase(rule, "nopass")) {
    nopass_ = true;
    passwords_.clear();
    return done();
  }
  if (EqNoCase(rule, "resetpass")) {
    nopass_ = false;
    passwords_.clear();
    return done();
  }
  if (EqNoCase(rule, "sanitize-payload")) {
    sanitize_ = 1;
    return done();
  }
  if (EqNoCase(rule, "skip-sanitize-payload")) {
    sanitize_ = 2;
    return done();
  }
  if (EqNoCase(rule, "clearselectors")) {
    selectors_.clear();
    return done();
  }
  if (EqNoCase(rule, "reset")) {
    for (std::string_view r : {"resetpass", "resetkeys", "resetchannels", "off", "clearselectors",
                               "-@all", "sanitize-payload"}) {
      ApplyRule(r);
    }
    return done();
  }
  if (rule.size() >= 2 && rule.front() == '(' && rule.back() == ')') {
    // A selector: its rules separated by spaces, all applied or none.
    Selector sel;
    std::string_view inner = rule.substr(1, rule.size() - 2);
    while (!inner.empty()) {
      const size_t sp = inner.find(' ');
      std::string_view word = inner.substr(0, sp);
      inner = sp == std::string_view::npos ? std::string_view() : inner.substr(sp + 1);
      if (word.empty()) continue;
      if (auto err = sel.ApplyRule(word)) return err;
    }
    selectors_.push_back(std::move(sel));
    return done();
  }
  if (rule.empty()) return std::string("Syntax error");
  const char c = rule[0];
  if (c == '>' || c == '<' || c == '#' || c == '!') {
    std::string hash;
    if (c == '>' || c == '<') {
      hash = HashPassword(rule.substr(1));
    } else {
      hash = std::string(rule.substr(1));
      if (!ValidHash(hash)) return std::string(kBadHash);
    }
    auto it = std::find(passwords_.begin(), passwords_.end(), hash);
    if (c == '>' || c == '#') {
      if (it == passwords_.end()) passwords_.push_back(hash);
      nopass_ = false;
    } else {
      if (it == passwords_.end()) return std::string(kNoSuchPassword);
      passwords_.erase(it);
    }
    return done();
  }
  if (auto err = root_.ApplyRule(rule)) return err;
  return done();
}

std::optional<std::string> MergeSelectorArgs(const std::vector<std::string_view>& args,
                                             std::vector<std::string>* out) {
  out->clear();
  for (size_t i = 0; i < args.size(); i++) {
    std::string_view a = args[i];
    if (a.empty() || a.front() != '(' || a.back() == ')') {
      out->emplace_back(a);
      continue;
    }
    std::string merged(a);
    size_t j = i + 1;
    for (; j < args.size(); j++) {
      merged += ' ';
      merged += args[j];
      if (!args[j].empty() && args[j].back() == ')') break;
    }
    if (j == args.size()) {
      return "Unmatched parenthesis in acl selector starting at '" + std::string(a) + "'.";
    }
    out->push_back(std::move(merged));
    i = j;
  }
  return std::nullopt;
}

std::vector<std::string> User::Flags() const {
  std::vector<std::string> flags;
  flags.push_back(enabled_ ? "on" : "off");
  if (nopass_) flags.push_back("nopass");
  if (sanitize_ == 1) flags.push_back("sanitize-payload");
  if (sanitize_ == 2) flags.push_back("skip-sanitize-payload");
  return flags;
}

std::string Selector::DescribeKeys() const {
  std::string out;
  for (const KeyPattern& k : keys_) {
    if (!out.empty()) out += ' ';
    if (k.perms == kKeyRead) {
      out += "%R";
    } else if (k.perms == kKeyWrite) {
      out += "%W";
    }
    out += '~';
    out += k.pattern;
  }
  return out;
}

std::string Selector::DescribeChannels() const {
  std::string out;
  for (const std::string& ch : channels_) {
    if (!out.empty()) out += ' ';
    out += '&';
    out += ch;
  }
  return out;
}

// As Redis 6.2 and 7.0 describe a user's commands: worked out from the bitmap, not from the rules
// given. From "+@all" (a user who gets future commands) or "-@all", the category that fits best
// (more of its commands to change than to leave, fewest left wrong, then most fixed) is applied
// while one fits, then single commands make up the difference (Redis lists those in its hash
// table's order, which changes from run to run; here by name).
std::string Selector::DescribeCommands() const {
  const CommandTable& t = CommandTable::Get();
  const bool additive = !all_commands_;
  std::string out = additive ? "-@all" : "+@all";
  std::vector<uint8_t> fake(allowed_.size(), additive ? 0 : 1);
  std::vector<uint8_t> left = allowed_;  // what the categories applied so far leave to do
  const std::vector<std::string>& cats = Categories();
  std::vector<std::vector<int>> members(cats.size());
  for (size_t id = 0; id < t.AclCount(); id++) {
    for (size_t j = 0; j < cats.size(); j++) {
      if (HasCategory(t.AclSpec(static_cast<int>(id)), cats[j])) {
        members[j].push_back(static_cast<int>(id));
      }
    }
  }
  std::vector<bool> applied(cats.size(), false);
  for (;;) {
    int best = -1;
    size_t min_diff = SIZE_MAX, max_same = 0;
    for (size_t j = 0; j < cats.size(); j++) {
      if (applied[j]) continue;
      size_t on = 0, off = 0;
      for (int id : members[j]) (left[id] ? on : off)++;
      const size_t diff = additive ? off : on, same = additive ? on : off;
      if (same > diff && (diff < min_diff || (diff == min_diff && same > max_same))) {
        best = static_cast<int>(j);
        min_diff = diff;
        max_same = same;
      }
    }
    if (best < 0) break;
    for (int id : members[best]) {
      fake[id] = additive ? 1 : 0;
      left[id] = additive ? 0 : 1;
    }
    out += additive ? " +@" : " -@";
    out += cats[best];
    applied[best] = true;
  }
  std::vector<const CommandSpec*> top;
  for (const CommandSpec& s : t.All()) top.push_back(&s);
  auto by_name = [](const CommandSpec* a, const CommandSpec* b) { return a->name < b->name; };
  std::sort(top.begin(), top.end(), by_name);
  for (const CommandSpec* s : top) {
    if (allowed_[s->acl_id] != fake[s->acl_id]) {
      out += allowed_[s->acl_id] ? " +" : " -";
      out += s->name;
      // As "+cmd" does: its subcommands too.
      fake[s->acl_id] = allowed_[s->acl_id];
      for (const CommandSpec& sub : s->subcommands) fake[sub.acl_id] = allowed_[s->acl_id];
    }
    std::vector<const CommandSpec*> subs;
    for (const CommandSpec& sub : s->subcommands) subs.push_back(&sub);
    std::sort(subs.begin(), subs.end(), by_name);
    for (const CommandSpec* sub : subs) {
      if (allowed_[sub->acl_id] != fake[sub->acl_id]) {
        out += allowed_[sub->acl_id] ? " +" : " -";
        out += sub->name;
        fake[sub->acl_id] = allowed_[sub->acl_id];
      }
    }
    // Its first arguments, in the order given, while the command is not allowed whole.
    if (!allowed_[s->acl_id] && static_cast<size_t>(s->acl_id) < first_args_.size()) {
      for (const std::string& a : first_args_[s->acl_id]) {
        out += " +";
        out += s->name;
        out += '|';
        out += a;
      }
    }
  }
  return out;
}

std::string Selector::Describe() const {
  std::string out = DescribeKeys();
  if (!out.empty()) out += ' ';
  if (!all_channels_) out += "resetchannels ";
  const std::string channels = DescribeChannels();
  if (!channels.empty()) out += channels + " ";
  out += DescribeCommands();
  return out;
}

std::string User::Describe() const {
  std::string out;
  for (const std::string& f : Flags()) {
    out += f;
    out += ' ';
  }
  for (const std::string& h : passwords_) {
    out += '#';
    out += h;
    out += ' ';
  }
  out += root_.Describe();
  for (const Selector& s : selectors_) {
    out += " (";
    out += s.Describe();
    out += ')';
  }
  return out;
}

bool User::PasswordOk(std::string_view password) const {
  // The hash is always computed and every stored hash compared: the time taken does not tell
  // which part failed.
  const std::string hash = HashPassword(password);
  bool ok = false;
  for (const std::string& h : passwords_) ok = HashEquals(hash, h) || ok;
  return enabled_ && (nopass_ || ok);
}

bool Selector::KeyAllowed(std::string_view key, uint8_t perms) const {
  if (all_keys_) return true;
  for (const KeyPattern& k : keys_) {
    if ((k.perms & perms) == perms && k.Matches(key)) return true;
  }
  return false;
}

bool Selector::ChannelAllowed(std::string_view channel, bool is_pattern) const {
  if (all_channels_) return true;
  for (const std::string& p : channels_) {
    if (is_pattern ? p == channel : shard::GlobMatch(p, channel)) return true;
  }
  return false;
}

// --- Users ---

Users Users::WithDefault(std::string_view requirepass) {
  Users u;
  User* d = u.FindOrCreate("default");
  for (std::string_view r : {"on", "nopass", "~*", "&*", "+@all"}) d->ApplyRule(r);
  u.SetRequirePass(requirepass);
  return u;
}

Users Users::Clone() const {
  Users out;
  for (const auto& [name, user] : users_) out.users_[name] = std::make_unique<User>(*user);
  return out;
}

User* Users::Find(std::string_view name) const {
  auto it = users_.find(name);
  return it == users_.end() ? nullptr : it->second.get();
}

User* Users::FindOrCreate(std::string_view name) {
  auto it = users_.find(name);
  if (it != users_.end()) return it->second.get();
  auto user = std::make_unique<User>(std::string(name));
  User* raw = user.get();
  users_.emplace(std::string(name), std::move(user));
  return raw;
}

User* Users::Retire(std::string_view name) {
  auto it = users_.find(name);
  if (it == users_.end()) return nullptr;
  std::unique_ptr<User> user = std::move(it->second);
  users_.erase(it);
  // Whoever still points at it may do nothing more.
  for (std::string_view r : {"reset", "off"}) user->ApplyRule(r);
  retired_.push_back(std::move(user));
  return retired_.back().get();
}

void Users::SetRequirePass(std::string_view pass) {
  User* d = FindOrCreate("default");
  d->ApplyRule("resetpass");
  if (pass.empty()) {
    d->ApplyRule("nopass");
  } else {
    d->ApplyRule(std::string(">") + std::string(pass));
  }
}

std::optional<std::string> Users::Parse(std::string_view text, std::string_view file, Users* out) {
  Users users = WithDefault("");
  std::vector<std::string> seen;
  std::string errors;  // Redis's: one sentence per bad line, all of them
  const std::string at = std::string(file) + ":";
  auto error = [&](int line_no, std::string_view why) {
    errors += at + std::to_string(line_no) + ": " + std::string(why) +
              (!why.empty() && why.back() == '.' ? " " : ". ");
  };
  int line_no = 0;
  while (!text.empty()) {
    line_no++;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    std::vector<std::string_view> words;
    size_t pos = 0;
    while (pos < line.size()) {
      while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) pos++;
      size_t end = pos;
      while (end < line.size() && line[end] != ' ' && line[end] != '\t') end++;
      if (end > pos) words.push_back(line.substr(pos, end - pos));
      pos = end;
    }
    if (words.size() < 2 || words[0] != "user") {
      errors += at + std::to_string(line_no) +
                " should start with user keyword followed by the username. ";
      continue;
    }
    const std::string name(words[1]);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      errors +=
          "WARNING: Duplicate user '" + name + "' found on line " + std::to_string(line_no) + ". ";
      continue;
    }
    seen.push_back(name);
    std::vector<std::string> rules;
    const std::vector<std::string_view> given(words.begin() + 2, words.end());
    if (auto err = MergeSelectorArgs(given, &rules)) {
      error(line_no, *err);  // (Redis 7.0.15 crashes on such a line)
      continue;
    }
    User fresh(name);
    std::optional<std::string> bad;
    for (const std::string& rule : rules) {
      if ((bad = fresh.ApplyRule(rule))) break;
    }
    if (bad) {
      error(line_no, *bad);
      continue;
    }
    *users.FindOrCreate(name) = fresh;
  }
  if (!errors.empty()) {
    return errors +
           "WARNING: ACL errors detected, no change to the previously active ACL rules was "
           "performed";
  }
  *out = std::move(users);
  return std::nullopt;
}

std::string Users::Serialize() const {
  std::string out;
  for (const auto& [name, user] : users_) {
    out += "user " + name + " " + user->Describe() + "\n";
  }
  return out;
}

// --- the check ---

std::optional<Denial> Selector::Check(const CommandSpec& spec, const CommandSpec& sub, CmdArgs args,
                                      size_t* pos) const {
  if (pos != nullptr) *pos = 0;
  // AUTH, HELLO, QUIT and RESET are never refused (Redis's CMD_NO_AUTH): a user may always
  // switch to another.
  if (!CommandAllowed(sub) && !(sub.flags & kNoAuth) && !FirstArgAllowed(sub, args)) {
    return Denial{Denial::kCommand, sub.name};
  }
  if (!(spec.flags & kPubSub)) {
    // Keys: read for a read-only command, read and write for anything else (Redis asks for
    // what each key spec says; deadbolt's table has no key specs, so a write needs both).
    if (all_keys_) return std::nullopt;
    const uint8_t perms = (spec.flags & kReadOnly) ? kKeyRead : kKeyReadWrite;
    std::optional<Denial> denial;
    spec.ForEachKey(args, [&](int i) {
      if (!denial && !KeyAllowed(args[i], perms)) {
        denial = Denial{Denial::kKey, std::string(args[i])};
        if (pos != nullptr) *pos = static_cast<size_t>(i);
      }
    });
    return denial;
  }
  // Pub/sub: channels, never keys (SPUBLISH's channel routes like a key, as in Redis).
  const std::string& n = spec.name;
  if (n == "publish" || n == "spublish") {
    if (args.size() > 1 && !ChannelAllowed(args[1], false)) {
      if (pos != nullptr) *pos = 1;
      return Denial{Denial::kChannel, std::string(args[1])};
    }
  } else if (n == "subscribe" || n == "ssubscribe" || n == "psubscribe") {
    for (size_t i = 1; i < args.size(); i++) {
      if (!ChannelAllowed(args[i], n == "psubscribe")) {
        if (pos != nullptr) *pos = i;
        return Denial{Denial::kChannel, std::string(args[i])};
      }
    }
  }
  return std::nullopt;
}

namespace {

// A user with selectors: allowed when the root or one selector allows the call; else Redis's
// most relevant refusal (the worse reason, then the later argument).
[[gnu::noinline]] std::optional<Denial> CheckWithSelectors(const User& user,
                                                           const CommandSpec& spec,
                                                           const CommandSpec& sub, CmdArgs args) {
  size_t pos = 0;
  std::optional<Denial> worst = user.root().Check(spec, sub, args, &pos);
  for (const Selector& s : user.selectors()) {
    if (!worst) break;
    size_t p = 0;
    std::optional<Denial> d = s.Check(spec, sub, args, &p);
    if (!d) {
      worst.reset();
    } else if (d->reason > worst->reason || (d->reason == worst->reason && p > pos)) {
      worst = std::move(d);
      pos = p;
    }
  }
  return worst;
}

}  // namespace

std::optional<Denial> Check(const User& user, const CommandSpec& spec, const CommandSpec& sub,
                            CmdArgs args) {
  // Without selectors (the usual case) the root's answer is the answer: a tail call.
  if (user.selectors().empty()) [[likely]]
    return user.root().Check(spec, sub, args, nullptr);
  return CheckWithSelectors(user, spec, sub, args);
}

std::string DenialError(const Denial& d) {
  switch (d.reason) {
    case Denial::kCommand:
      return errors::NoPermCommand(d.object);
    case Denial::kKey:
      return std::string(errors::kNoPermKey);
    case Denial::kChannel:
      return std::string(errors::kNoPermChannel);
  }
  return {};
}

std::string DenialDryRun(const Denial& d) {
  switch (d.reason) {
    case Denial::kCommand:
      return "This user has no permissions to run the '" + d.object + "' command";
    case Denial::kKey:
      return "This user has no permissions to access the '" + d.object + "' key";
    case Denial::kChannel:
      return "This user has no permissions to access the '" + d.object + "' channel";
  }
  return {};
}

std::string_view DenialScriptError(const Denial& d) {
  switch (d.reason) {
    case Denial::kCommand:
      return errors::kScriptNoPermCommand;
    case Denial::kKey:
      return errors::kScriptNoPermKey;
    case Denial::kChannel:
      return errors::kScriptNoPermChannel;
  }
  return {};
}

std::string DenialAtExec(const Denial& d) {
  std::string out(errors::kNoPermAtExec);
  switch (d.reason) {
    case Denial::kCommand:
      out += errors::kNoPermAtExecCommand;
      break;
    case Denial::kKey:
      out += errors::kNoPermAtExecKey;
      break;
    case Denial::kChannel:
      out += errors::kNoPermAtExecChannel;
      break;
  }
  return out;
}

std::string ScriptCallRefusal(const User& user, CmdArgs args, int64_t now_ms) {
  if (args.empty()) return {};
  const CommandSpec* spec = CommandTable::Get().Find(args[0]);
  if (spec == nullptr) return {};  // the caller refuses an unknown command its own way
  const CommandSpec* sub = spec;
  if (!spec->subcommands.empty() && args.size() > 1) {
    if (const CommandSpec* s = CommandTable::FindSubcommand(*spec, args[1])) sub = s;
  }
  const std::optional<Denial> denial = Check(user, *spec, *sub, args);
  if (!denial) return {};
  LogEntry e;
  e.reason = std::string(DenialReason(*denial));
  e.context = "lua";
  e.object = denial->object;
  e.username = user.name();
  e.updated_ms = now_ms;
  AclLog::Get().Add(std::move(e));
  return "ERR " + std::string(DenialScriptError(*denial));
}

std::string_view DenialReason(const Denial& d) {
  switch (d.reason) {
    case Denial::kCommand:
      return "command";
    case Denial::kKey:
      return "key";
    case Denial::kChannel:
      return "channel";
  }
  return {};
}

}  // namespace deadbolt::server::acl
