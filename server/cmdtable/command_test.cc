#include "server/cmdtable/command.h"

#include <gtest/gtest.h>

#include <set>

namespace deadbolt::server {
namespace {

TEST(CommandTableTest, FindIsCaseInsensitive) {
  const auto& t = CommandTable::Get();
  ASSERT_NE(t.Find("get"), nullptr);
  EXPECT_EQ(t.Find("GET"), t.Find("get"));
  EXPECT_EQ(t.Find("gEt"), t.Find("get"));
  EXPECT_EQ(t.Find("nosuchcommand"), nullptr);
  EXPECT_EQ(t.Find(std::string(100, 'x')), nullptr);
}

TEST(CommandTableTest, FindsEveryCommandInAnyCase) {
  const auto& t = CommandTable::Get();
  for (const auto& s : t.All()) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(t.Find(s.name), &s);
    std::string upper = s.name, mixed = s.name;
    for (size_t i = 0; i < upper.size(); i++) {
      if (upper[i] >= 'a' && upper[i] <= 'z') upper[i] -= 'a' - 'A';
      if (i % 2 == 0) mixed[i] = upper[i];
    }
    EXPECT_EQ(t.Find(upper), &s);
    EXPECT_EQ(t.Find(mixed), &s);
    // Shorter, longer, or one byte off: not this command.
    EXPECT_NE(t.Find(s.name.substr(0, s.name.size() - 1)), &s);
    EXPECT_NE(t.Find(s.name + "x"), &s);
    std::string off = s.name;
    off.back() = off.back() == 'z' ? 'y' : 'z';
    EXPECT_NE(t.Find(off), &s);
  }
}

TEST(CommandTableTest, FindFoldsOnlyLetters) {
  const auto& t = CommandTable::Get();
  ASSERT_NE(t.Find("lock.acquire"), nullptr);
  // Bytes that equal a name's byte once OR-ed with 0x20, without being its upper case.
  EXPECT_EQ(t.Find(std::string("lock\x0e" "acquire")), nullptr);  // '.' is 0x2e
  EXPECT_EQ(t.Find("GE\x54"), t.Find("get"));                     // 0x54 is 'T'
  EXPECT_EQ(t.Find(""), nullptr);
  EXPECT_EQ(t.Find(std::string("get\0", 4)), nullptr);
}

TEST(CommandTableTest, EveryCommandIsWellFormed) {
  std::set<std::string> names;
  for (const auto& s : CommandTable::Get().All()) {
    SCOPED_TRACE(s.name);
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate";
    EXPECT_NE(s.arity, 0);
    // At least one handler. Both only for commands with keys: the shard handler when all keys
    // sit on one shard, the connection handler when they span shards.
    EXPECT_TRUE(s.shard_handler || s.conn_handler);
    if (s.shard_handler && s.conn_handler) {
      EXPECT_TRUE(s.has_keys());
    }
    for (char c : s.name) EXPECT_FALSE(c >= 'A' && c <= 'Z');
    if (s.first_key > 0) {
      EXPECT_GE(s.key_step, 1);
      EXPECT_TRUE(s.last_key < 0 || s.last_key >= s.first_key);
    }
    // A command whose keys can span shards needs a connection handler for that case.
    if (s.shard_handler && !s.conn_handler && s.first_key > 0) {
      EXPECT_EQ(s.last_key, s.first_key) << "multi-key command without a conn handler";
    }
    EXPECT_FALSE(s.acl_categories.empty());
  }
}

TEST(CommandTableTest, ArityFollowsRedisConvention) {
  const auto& t = CommandTable::Get();
  const CommandSpec* get = t.Find("get");
  ASSERT_NE(get, nullptr);
  EXPECT_TRUE(get->ArityOk(2));
  EXPECT_FALSE(get->ArityOk(1));
  EXPECT_FALSE(get->ArityOk(3));
  const CommandSpec* set = t.Find("set");
  ASSERT_NE(set, nullptr);
  EXPECT_FALSE(set->ArityOk(2));
  EXPECT_TRUE(set->ArityOk(3));
  EXPECT_TRUE(set->ArityOk(9));
}

TEST(CommandTableTest, KeyPositions) {
  const auto& t = CommandTable::Get();
  std::vector<std::string_view> args = {"mset", "a", "1", "b", "2"};
  std::vector<int> keys;
  t.Find("mset")->ForEachKey(CmdArgs(args.data(), args.size()), [&](int i) { keys.push_back(i); });
  EXPECT_EQ(keys, (std::vector<int>{1, 3}));
  keys.clear();
  std::vector<std::string_view> del = {"del", "a", "b", "c"};
  t.Find("del")->ForEachKey(CmdArgs(del.data(), del.size()), [&](int i) { keys.push_back(i); });
  EXPECT_EQ(keys, (std::vector<int>{1, 2, 3}));
}

// CLIENT LIST's cmd= comes from here: the table's own name, in any case of the client's, and
// null (shown as NULL) for anything else, so a client's bytes never reach another's reply.
TEST(CommandTableTest, FindSubcommand) {
  const auto& t = CommandTable::Get();
  const CommandSpec* client = t.Find("client");
  ASSERT_NE(client, nullptr);
  const CommandSpec* list = CommandTable::FindSubcommand(*client, "LiSt");
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->name, "client|list");
  EXPECT_EQ(CommandTable::FindSubcommand(*client, "\n\n"), nullptr);
  EXPECT_EQ(CommandTable::FindSubcommand(*client, "list\n"), nullptr);
  EXPECT_EQ(CommandTable::FindSubcommand(*client, ""), nullptr);
  EXPECT_EQ(CommandTable::FindSubcommand(*client, "client|list"), nullptr);
  const CommandSpec* config = t.Find("config");
  ASSERT_NE(config, nullptr);
  ASSERT_NE(CommandTable::FindSubcommand(*config, "GET"), nullptr);
  EXPECT_EQ(CommandTable::FindSubcommand(*config, "GET")->name, "config|get");
  EXPECT_EQ(CommandTable::FindSubcommand(*t.Find("get"), "x"), nullptr);  // no subcommands
  // Every subcommand is found by its own name, in upper case too.
  for (const CommandSpec& spec : t.All()) {
    for (const CommandSpec& sub : spec.subcommands) {
      std::string name = sub.name.substr(spec.name.size() + 1);
      for (char& c : name) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
      EXPECT_EQ(CommandTable::FindSubcommand(spec, name), &sub) << sub.name;
    }
  }
}

// A subcommand has no subcommands of its own: COMMAND DOCS and COMMAND INFO nest them, and
// redis-cli (which reads COMMAND DOCS) crashed on a container whose subcommands were built by
// copying the container after earlier ones had been added to it.
TEST(CommandTableTest, SubcommandsHaveNoSubcommands) {
  for (const CommandSpec& spec : CommandTable::Get().All()) {
    for (const CommandSpec& sub : spec.subcommands) {
      EXPECT_TRUE(sub.subcommands.empty()) << sub.name;
    }
  }
}

}  // namespace
}  // namespace deadbolt::server
