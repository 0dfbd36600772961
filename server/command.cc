#include "server/command.h"

#include <absl/strings/ascii.h>

namespace deadbolt::server {

const CommandTable& CommandTable::Get() {
  static const CommandTable* table = new CommandTable();
  return *table;
}

CommandTable::CommandTable() {
  RegisterServerCommands(this);
  RegisterStringCommands(this);
  RegisterKeyCommands(this);
  RegisterHashCommands(this);
  RegisterLockCommands(this);
  RegisterNativeLockCommands(this);
  RegisterScriptCommands(this);
  RegisterPubSubCommands(this);
  RegisterTransactionCommands(this);
  RegisterPersistenceCommands(this);
  // Redis marks denyoom every command that may grow memory, which includes every command that
  // can create a key: each of them may create one (--restart-delay refuses them).
  for (CommandSpec& s : all_) {
    if (s.flags & kDenyOom) s.flags |= kMayCreate;
  }
  Index();
}

void CommandTable::Index() {
  for (size_t i = 0; i < all_.size(); i++) by_name_[all_[i].name] = i;
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

CommandSpec MultiKeyCommand(std::string name, int arity, uint32_t flags, ConnHandler across,
                            ShardHandler one_shard, std::vector<std::string> acl, int first_key,
                            int last_key, int key_step) {
  CommandSpec s = ConnCommand(std::move(name), arity, flags | kMultiKey, across, std::move(acl),
                              first_key, last_key, key_step);
  s.shard_handler = one_shard;
  return s;
}

const CommandSpec* CommandTable::Find(std::string_view name) const {
  char buf[32];
  if (name.size() > sizeof(buf)) return nullptr;
  for (size_t i = 0; i < name.size(); i++) buf[i] = absl::ascii_tolower(name[i]);
  auto it = by_name_.find(absl::string_view(buf, name.size()));
  return it == by_name_.end() ? nullptr : &all_[it->second];
}

}  // namespace deadbolt::server
