#include "server/cmdtable/command.h"

#include <cstdint>
#include <string_view>

namespace deadbolt::server {

namespace {

// As Redis 7.0 describes subcommands (what COMMAND shows and ACL checks; a subcommand runs by its
// container's handler and flags): every HELP is loading and stale only, has no keys, and keeps
// only the container's topical categories (@slow with @connection, @scripting, @keyspace, ...);
// a subcommand in @admin has the admin flag.
void AsRedisSubcommand(CommandSpec& sub) {
  const std::string_view name(sub.name);
  if (name.substr(name.find('|') + 1) == "help") {
    sub.flags = kLoading | kStale;
    sub.first_key = sub.last_key = sub.key_step = 0;
    std::erase_if(sub.acl_categories, [](const std::string& c) {
      return c == "@admin" || c == "@dangerous" || c == "@read" || c == "@write" || c == "@pubsub";
    });
    return;
  }
  for (const std::string& c : sub.acl_categories) {
    if (c == "@admin") sub.flags |= kAdmin;
  }
}

}  // namespace

CommandTable::CommandTable() {
  RegisterServerCommands(this);
  RegisterClientCommands(this);
  RegisterCommandCommands(this);
  RegisterAclCommands(this);
  RegisterStringCommands(this);
  RegisterKeyCommands(this);
  RegisterHashCommands(this);
  RegisterZSetCommands(this);
  RegisterZSetAlgebraCommands(this);
  RegisterListCommands(this);
  RegisterSetCommands(this);
  RegisterBitmapCommands(this);
  RegisterHllCommands(this);
  RegisterGeoCommands(this);
  RegisterStreamCommands(this);
  RegisterStreamGroupCommands(this);
  RegisterSortCommands(this);
  RegisterMPopCommands(this);
  RegisterLockCommands(this);
  RegisterNativeLockCommands(this);
  RegisterScriptCommands(this);
  RegisterPubSubCommands(this);
  RegisterTransactionCommands(this);
  RegisterPersistenceCommands(this);
  RegisterSlowlogCommands(this);
  RegisterMonitorCommands(this);
  RegisterObjectCommands(this);
  RegisterDebugCommands(this);
  RegisterClusterCommands(this);
  // Redis marks denyoom every command that may grow memory, which includes every command that
  // can create a key: each of them may create one (--restart-delay refuses them).
  static constexpr std::string_view kCheapSlow[] = {"set",    "setex",  "psetex",  "getset", "del",
                                                    "unlink", "getdel", "delifeq", "delex"};
  for (CommandSpec& s : all_) {
    if (s.flags & kDenyOom) s.flags |= kMayCreate;
    if (s.flags & kFast) s.flags |= kTimedInRuns;
    if (!s.subcommands.empty()) s.flags |= kContainer;
    for (CommandSpec& sub : s.subcommands) AsRedisSubcommand(sub);
    for (std::string_view name : kCheapSlow) {
      if (s.name == name) s.flags |= kTimedInRuns;
    }
  }
  Index();
  for (CommandSpec& s : all_) {
    s.stats_slot = static_cast<uint32_t>(stats_specs_.size());
    stats_specs_.push_back(&s);
  }
  for (CommandSpec& s : all_) {
    for (CommandSpec& sub : s.subcommands) {
      sub.stats_slot = static_cast<uint32_t>(stats_specs_.size());
      stats_specs_.push_back(&sub);
    }
  }
}

namespace {

// A hash of the name with every byte OR 0x20, which maps each upper-case letter to its lower
// case (and leaves the letters, digits, '.', '|' and '-' of command names as they are). Other
// bytes may collide once folded; Find's exact comparison sorts those out.
inline uint32_t FoldedNameHash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
  for (char c : s) h = (h ^ static_cast<unsigned char>(c | 0x20)) * 0x100000001b3ULL;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

}  // namespace

void CommandTable::Index() {
  by_acl_id_.clear();
  for (CommandSpec& s : all_) {
    s.acl_id = static_cast<int>(by_acl_id_.size());
    by_acl_id_.push_back(&s);
    for (CommandSpec& sub : s.subcommands) {
      sub.acl_id = static_cast<int>(by_acl_id_.size());
      by_acl_id_.push_back(&sub);
    }
  }
  size_t cap = 16;
  while (cap < all_.size() * 4) cap *= 2;
  by_name_.assign(cap, NameSlot{});
  name_mask_ = cap - 1;
  for (size_t i = 0; i < all_.size(); i++) {
    const uint32_t h = FoldedNameHash(all_[i].name);
    size_t j = h & name_mask_;
    while (by_name_[j].index != 0) j = (j + 1) & name_mask_;
    by_name_[j] = NameSlot{h, static_cast<uint32_t>(i + 1)};
  }
}

const CommandSpec* CommandTable::FindFullName(std::string_view name) const {
  const size_t bar = name.find('|');
  const CommandSpec* top = Find(name.substr(0, bar));
  if (top == nullptr || bar == std::string_view::npos) return top;
  return FindSubcommand(*top, name.substr(bar + 1));
}

CommandSpec ConnCommand(std::string name, int arity, uint32_t flags, ConnHandler h,
                        std::vector<std::string> acl, int first_key, int last_key, int key_step) {
  CommandSpec s;
  s.name = std::move(name);
  s.arity = arity;
  s.flags = flags;
  s.first_key = first_key;
  s.last_key = last_key;
  s.key_step = key_step;
  s.conn_handler = h;
  s.acl_categories = std::move(acl);
  return s;
}

CommandSpec KeyContainer(std::string name, uint32_t flags, ShardHandler h,
                         std::vector<std::string> sub_acl,
                         std::initializer_list<SubcommandDef> subs) {
  CommandSpec spec;
  spec.name = std::move(name);
  spec.arity = -2;
  spec.flags = flags;
  spec.first_key = 2;
  spec.last_key = 2;
  spec.key_step = 1;
  spec.shard_handler = h;
  for (const SubcommandDef& d : subs) {
    CommandSpec sub;
    sub.name = spec.name + "|" + d.name;
    sub.arity = d.arity;
    sub.flags = d.flags;
    sub.first_key = sub.last_key = 2;
    sub.key_step = 1;
    sub.acl_categories = sub_acl;
    spec.subcommands.push_back(std::move(sub));
  }
  spec.acl_categories = {"@slow"};
  return spec;
}

CommandSpec Key1(std::string name, int arity, uint32_t flags, ShardHandler h,
                 std::vector<std::string> acl) {
  CommandSpec s;
  s.name = std::move(name);
  s.arity = arity;
  s.flags = flags;
  s.first_key = 1;
  s.last_key = 1;
  s.key_step = 1;
  s.shard_handler = h;
  s.acl_categories = std::move(acl);
  return s;
}

CommandSpec MultiKeyCommand(std::string name, int arity, uint32_t flags, ConnHandler across,
                            ShardHandler one_shard, std::vector<std::string> acl, int first_key,
                            int last_key, int key_step) {
  CommandSpec s = ConnCommand(std::move(name), arity, flags | kMultiKey, across, std::move(acl),
                              first_key, last_key, key_step);
  s.shard_handler = one_shard;
  return s;
}

const CommandSpec* CommandTable::Find(std::string_view name) const {
  const uint32_t h = FoldedNameHash(name);
  for (size_t j = h & name_mask_;; j = (j + 1) & name_mask_) {
    const NameSlot& slot = by_name_[j];
    if (slot.index == 0) return nullptr;
    if (slot.hash == h) {
      const CommandSpec& spec = all_[slot.index - 1];
      if (NameMatches(name, spec)) return &spec;
    }
  }
}

const CommandSpec* CommandTable::FindSubcommand(const CommandSpec& parent, std::string_view sub) {
  const size_t prefix = parent.name.size() + 1;  // "client|"
  for (const CommandSpec& s : parent.subcommands) {
    if (s.name.size() != prefix + sub.size()) continue;
    bool same = true;
    for (size_t i = 0; i < sub.size() && same; i++) {
      char c = sub[i];
      if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
      same = c == s.name[prefix + i];
    }
    if (same) return &s;
  }
  return nullptr;
}

}  // namespace deadbolt::server
