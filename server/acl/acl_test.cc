#include "server/acl/acl.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/acl/acl_log.h"

namespace deadbolt::server::acl {
namespace {

User Make(std::vector<std::string> rules) {
  User u("u");
  for (const std::string& r : rules) {
    auto err = u.ApplyRule(r);
    EXPECT_FALSE(err) << r << ": " << *err;
  }
  return u;
}

std::optional<Denial> CheckCall(const User& u, std::vector<std::string_view> args) {
  const CommandSpec* spec = CommandTable::Get().Find(args[0]);
  EXPECT_NE(spec, nullptr) << args[0];
  const CommandSpec* sub = spec;
  if (!spec->subcommands.empty() && args.size() > 1) {
    if (const CommandSpec* s = CommandTable::FindSubcommand(*spec, args[1])) sub = s;
  }
  return Check(u, *spec, *sub, CmdArgs(args.data(), args.size()));
}

TEST(AclUserTest, NewUserIsOffAndMayDoNothing) {
  User u("x");
  EXPECT_EQ(u.Describe(), "off resetchannels -@all");
  EXPECT_FALSE(u.unrestricted());
  EXPECT_FALSE(u.PasswordOk("anything"));
}

TEST(AclUserTest, DefaultUserIsUnrestricted) {
  Users users = Users::WithDefault("");
  EXPECT_TRUE(users.Default()->unrestricted());
  EXPECT_EQ(users.Default()->Describe(), "on nopass ~* &* +@all");
  users.SetRequirePass("secret");
  EXPECT_TRUE(users.Default()->PasswordOk("secret"));
  EXPECT_FALSE(users.Default()->PasswordOk("other"));
  EXPECT_TRUE(users.Default()->unrestricted());
}

TEST(AclUserTest, PasswordsAreStoredHashed) {
  User u = Make({"on", ">pw1"});
  ASSERT_EQ(u.password_hashes().size(), 1u);
  // SHA-256("pw1"), as Redis 7.0 shows it.
  EXPECT_EQ(u.password_hashes()[0],
            "c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8");
  EXPECT_TRUE(u.PasswordOk("pw1"));
  EXPECT_FALSE(u.PasswordOk("pw2"));
  EXPECT_FALSE(u.ApplyRule("<pw1"));
  EXPECT_FALSE(u.PasswordOk("pw1"));
  EXPECT_EQ(*u.ApplyRule("<pw1"),
            "The password you are trying to remove from the user does not exist");
  EXPECT_EQ(*u.ApplyRule("#abc"),
            "The password hash must be exactly 64 characters and contain only lowercase "
            "hexadecimal characters");
  EXPECT_FALSE(u.ApplyRule("nopass"));
  EXPECT_TRUE(u.PasswordOk("whatever"));
  EXPECT_FALSE(u.ApplyRule("off"));
  EXPECT_FALSE(u.PasswordOk("whatever"));  // a disabled user opens to nothing
}

TEST(AclUserTest, DescribeMatchesRedis) {
  EXPECT_EQ(Make({"on", ">pw1", "~lock:app1:*", "+@all", "-@dangerous"}).Describe(),
            "on #c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8 "
            "~lock:app1:* resetchannels +@all -@dangerous");
  EXPECT_EQ(Make({"%R~r:*", "%W~w:*", "&chan*", "-@all", "+@read"}).Describe(),
            "off %R~r:* %W~w:* resetchannels &chan* -@all +@read");
  EXPECT_EQ(Make({"on", "nopass", "~a", "%R~b", "%RW~c", "allchannels", "+@all"}).Describe(),
            "on nopass ~a %R~b ~c &* +@all");
}

TEST(AclUserTest, CommandRulesCollapseAsRedisDoes) {
  struct Case {
    std::vector<std::string> rules;
    std::string commands;
  };
  const Case cases[] = {
      {{"-@all", "+@read", "-get", "+get"}, "-@all +@read"},
      {{"-@all", "+get"}, "-@all +get"},
      {{"-@all", "+@read", "-get"}, "-@all +@read -get"},
      {{"-@all", "+set", "-set"}, "-@all"},
      {{"-@all", "+set", "+get", "-set"}, "-@all +get"},
      {{"+@all", "-get", "+get"}, "+@all"},
      {{"-@all", "+client|setname"}, "-@all +client|setname"},
      {{"-@all", "+@hash", "-hget", "+@hash"}, "-@all +@hash"},
      {{"+@all", "-@dangerous", "+@dangerous"}, "+@all"},
      {{"-@all", "+get", "+@read"}, "-@all +@read"},
      {{"-@all", "+GET"}, "-@all +get"},
      {{"+@read", "+@all"}, "+@all"},
      {{"-@all", "+client", "-client|setname"}, "-@all +client -client|setname"},
      // The biggest category first; one that overlaps what is done fits no more.
      {{"-@all", "+@read", "+@write"}, "-@all +@write +@read"},
      {{"-@all", "+@fast", "+@slow"}, "-@all +@slow +@fast"},
      {{"-@all", "+@read", "+@hash"},
       "-@all +@read +hdel +hincrby +hincrbyfloat +hmset +hset +hsetnx"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Make(c.rules).DescribeCommands(), c.commands);
  }
}

TEST(AclUserTest, BadRulesAreRefused) {
  User u("u");
  EXPECT_EQ(*u.ApplyRule("badrule"), "Syntax error");
  EXPECT_EQ(*u.ApplyRule("+nocmd"), "Unknown command or category name in ACL");
  EXPECT_EQ(*u.ApplyRule("+@nocat"), "Unknown command or category name in ACL");
  EXPECT_EQ(*u.ApplyRule("+client|nosub"), "Unknown command or category name in ACL");
  EXPECT_EQ(*u.ApplyRule("%X~a"), "Syntax error");
  EXPECT_FALSE(u.ApplyRule("allkeys"));
  EXPECT_TRUE(u.ApplyRule("~more").has_value());
  EXPECT_FALSE(u.ApplyRule("allchannels"));
  EXPECT_TRUE(u.ApplyRule("&more").has_value());
}

TEST(AclCheckTest, KeysCommandsAndChannels) {
  User app1 = Make({"on", ">pw", "~lock:app1:*", "&news*", "+@all", "-@dangerous"});
  EXPECT_FALSE(app1.unrestricted());
  EXPECT_FALSE(CheckCall(app1, {"set", "lock:app1:x", "t"}));
  auto d = CheckCall(app1, {"set", "lock:app2:x", "t"});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Denial::kKey);
  EXPECT_EQ(d->object, "lock:app2:x");
  EXPECT_EQ(DenialError(*d),
            "NOPERM this user has no permissions to access one of the keys used as arguments");
  d = CheckCall(app1, {"flushall"});
  ASSERT_TRUE(d);
  EXPECT_EQ(DenialError(*d), "NOPERM this user has no permissions to run the 'flushall' command");
  EXPECT_EQ(DenialDryRun(*d), "This user has no permissions to run the 'flushall' command");
  d = CheckCall(app1, {"config", "get", "maxmemory"});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->object, "config|get");
  EXPECT_FALSE(CheckCall(app1, {"publish", "news1", "m"}));
  d = CheckCall(app1, {"publish", "other", "m"});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Denial::kChannel);
  // SPUBLISH's channel routes like a key but is checked as a channel only, as in Redis.
  EXPECT_FALSE(CheckCall(app1, {"spublish", "news1", "m"}));
  EXPECT_TRUE(CheckCall(app1, {"spublish", "lock:app1:x", "m"}));
  // A prefix pattern: the prefix itself, anything after it, nothing shorter.
  EXPECT_FALSE(CheckCall(app1, {"get", "lock:app1:"}));
  EXPECT_TRUE(CheckCall(app1, {"get", "lock:app1"}));
  EXPECT_TRUE(CheckCall(app1, {"get", "xlock:app1:y"}));
  // PSUBSCRIBE needs the pattern itself, not one it matches.
  EXPECT_FALSE(CheckCall(app1, {"psubscribe", "news*"}));
  EXPECT_TRUE(CheckCall(app1, {"psubscribe", "news1*"}));
  // Every key of a multi-key command.
  EXPECT_TRUE(CheckCall(app1, {"mget", "lock:app1:a", "lock:app2:b"}));
  // EVAL's declared keys.
  EXPECT_TRUE(CheckCall(app1, {"eval", "return 1", "1", "lock:app2:x"}));
  EXPECT_FALSE(CheckCall(app1, {"eval", "return 1", "1", "lock:app1:x"}));
}

TEST(AclCheckTest, ReadOnlyPatterns) {
  User u = Make({"on", "nopass", "%R~r:*", "+@all"});
  EXPECT_FALSE(CheckCall(u, {"get", "r:1"}));
  EXPECT_TRUE(CheckCall(u, {"set", "r:1", "v"}));
  EXPECT_TRUE(CheckCall(u, {"get", "w:1"}));
}

TEST(AclCheckTest, SubcommandRules) {
  User u = Make({"on", "nopass", "allkeys", "-@all", "+client", "-client|kill"});
  EXPECT_FALSE(CheckCall(u, {"client", "setname", "x"}));
  EXPECT_TRUE(CheckCall(u, {"client", "kill", "id", "1"}));
  EXPECT_TRUE(CheckCall(u, {"get", "k"}));
}

TEST(AclCheckTest, NativeLockCommandsHaveCategories) {
  User writer = Make({"on", "nopass", "allkeys", "-@all", "+@write"});
  EXPECT_FALSE(CheckCall(writer, {"delifeq", "k", "t"}));
  User reader = Make({"on", "nopass", "allkeys", "-@all", "+@read"});
  EXPECT_TRUE(CheckCall(reader, {"delifeq", "k", "t"}));
}

TEST(AclUsersTest, FileRoundTrip) {
  Users users;
  auto err = Users::Parse(
      "user default on nopass ~* &* +@all\n"
      "\n"
      "user app1 on #c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8 "
      "~lock:app1:* resetchannels +@all -@dangerous\n",
      &users);
  ASSERT_FALSE(err) << *err;
  EXPECT_EQ(users.Serialize(),
            "user app1 on #c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8 "
            "~lock:app1:* resetchannels +@all -@dangerous\n"
            "user default on nopass ~* &* +@all\n");
  Users again;
  ASSERT_FALSE(Users::Parse(users.Serialize(), &again));
  EXPECT_EQ(again.Serialize(), users.Serialize());
  EXPECT_TRUE(Users::Parse("user x badrule\n", &again).has_value());
  EXPECT_TRUE(Users::Parse("nope\n", &again).has_value());
  EXPECT_TRUE(Users::Parse("user a on\nuser a off\n", &again).has_value());
}

TEST(AclUsersTest, RetiredUserStaysValid) {
  Users users = Users::WithDefault("");
  User* u = users.FindOrCreate("app");
  ASSERT_FALSE(u->ApplyRule("on"));
  ASSERT_FALSE(u->ApplyRule("+@all"));
  User* retired = users.Retire("app");
  EXPECT_EQ(retired, u);
  EXPECT_EQ(users.Find("app"), nullptr);
  EXPECT_FALSE(u->enabled());
  EXPECT_FALSE(u->unrestricted());
}

TEST(AclLogTest, GroupsLikeEntries) {
  AclLog log;
  LogEntry e;
  e.reason = "key";
  e.context = "toplevel";
  e.object = "k";
  e.username = "u";
  e.updated_ms = 1000;
  log.Add(e);
  e.updated_ms = 2000;
  log.Add(e);
  e.object = "other";
  log.Add(e);
  auto entries = log.Newest(10);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].object, "other");
  EXPECT_EQ(entries[1].count, 2u);
  e.object = "k";
  e.updated_ms = 2000 + 61 * 1000;  // over a minute later: a new entry
  log.Add(e);
  EXPECT_EQ(log.Newest(10).size(), 3u);
  log.Reset();
  EXPECT_TRUE(log.Newest(10).empty());
}

}  // namespace
}  // namespace deadbolt::server::acl
