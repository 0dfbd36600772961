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
      "users.acl", &users);
  ASSERT_FALSE(err) << *err;
  EXPECT_EQ(users.Serialize(),
            "user app1 on #c592df4a86933b92addc9842402ddf198c638ea9be58916ee6e3734e1e3152f8 "
            "~lock:app1:* resetchannels +@all -@dangerous\n"
            "user default on nopass ~* &* +@all\n");
  Users again;
  ASSERT_FALSE(Users::Parse(users.Serialize(), "users.acl", &again));
  EXPECT_EQ(again.Serialize(), users.Serialize());
  // Redis 7.0.15's words, checked against it; every bad line is reported, and nothing changes.
  constexpr char kNoChange[] =
      "WARNING: ACL errors detected, no change to the previously active ACL rules was performed";
  EXPECT_EQ(*Users::Parse("user x badrule\n", "u.acl", &again),
            std::string("u.acl:1: Syntax error. ") + kNoChange);
  EXPECT_EQ(
      *Users::Parse("nope\n", "u.acl", &again),
      std::string("u.acl:1 should start with user keyword followed by the username. ") + kNoChange);
  EXPECT_EQ(*Users::Parse("user a on\nuser a off\n", "u.acl", &again),
            std::string("WARNING: Duplicate user 'a' found on line 2. ") + kNoChange);
  EXPECT_EQ(*Users::Parse("user x badrule\n\nuser y on\nfoo\n", "u.acl", &again),
            std::string("u.acl:1: Syntax error. u.acl:4 should start with user keyword followed "
                        "by the username. ") +
                kNoChange);
  EXPECT_EQ(again.Serialize(), users.Serialize());
}

TEST(AclFirstArgTest, AllowsOneFirstArgumentAsRedisDoes) {
  User u = Make({"on", "~*", "-@all", "+select|0", "+select|SIX", "+select|six"});
  EXPECT_EQ(u.DescribeCommands(), "-@all +select|0 +select|SIX");  // case kept, compared without
  EXPECT_FALSE(CheckCall(u, {"select", "0"}));
  EXPECT_FALSE(CheckCall(u, {"select", "six"}));
  EXPECT_EQ(CheckCall(u, {"select", "1"})->object, "select");
  EXPECT_EQ(CheckCall(u, {"get", "0"})->object, "get");
  // A command allowed or refused whole, alone or by category, forgets its first arguments.
  ASSERT_FALSE(u.ApplyRule("+@connection"));
  EXPECT_EQ(u.DescribeCommands(), "-@all +@connection");
  ASSERT_FALSE(u.ApplyRule("-select"));
  EXPECT_EQ(CheckCall(u, {"select", "0"})->object, "select");
  ASSERT_FALSE(u.ApplyRule("+select|5"));
  ASSERT_FALSE(u.ApplyRule("-@all"));
  EXPECT_EQ(CheckCall(u, {"select", "5"})->object, "select");
  User all = Make({"+@all", "+select|5"});
  EXPECT_EQ(all.DescribeCommands(), "+@all");
  User sel = Make({"-@all", "+select|5", "(+select|7 ~x)"});
  EXPECT_EQ(sel.Describe(), "off resetchannels -@all +select|5 (~x resetchannels -@all +select|7)");
  EXPECT_FALSE(CheckCall(sel, {"select", "7"}));
}

TEST(AclFirstArgTest, BadFirstArgRules) {
  User u("u");
  EXPECT_EQ(*u.ApplyRule("-select|0"), "Unknown command or category name in ACL");
  EXPECT_EQ(*u.ApplyRule("+select|"), "Syntax error");
  EXPECT_EQ(*u.ApplyRule("+client|setname|x"),
            "Allowing first-arg of a subcommand is not supported");
  EXPECT_EQ(*u.ApplyRule("+client|nosuch"), "Unknown command or category name in ACL");
  EXPECT_EQ(*u.ApplyRule("+nosuch|x"), "Unknown command or category name in ACL");
  EXPECT_EQ(*u.ApplyRule("+select|0|1"), "Unknown command or category name in ACL");
}

TEST(AclCheckTest, AuthIsNeverRefused) {
  // As Redis (CMD_NO_AUTH): a user without any command may still switch to another.
  User u = Make({"on", "nopass", "-@all"});
  EXPECT_FALSE(CheckCall(u, {"auth", "x", "y"}));
  EXPECT_FALSE(CheckCall(u, {"hello", "3"}));
  EXPECT_FALSE(CheckCall(u, {"reset"}));
  EXPECT_TRUE(CheckCall(u, {"ping"}));
}

// The selector tests' user, as Redis 7.0.15 took it and printed it.
User SelectorUser() {
  return Make(
      {"on", "~root:*", "+@all", "-@dangerous", "(~sel:* +get %R~ro:* &ch*)", "(+set ~w:*)"});
}

TEST(AclSelectorTest, DescribedAsRedisDoes) {
  User u = SelectorUser();
  EXPECT_EQ(u.Describe(),
            "on ~root:* resetchannels +@all -@dangerous (~sel:* %R~ro:* resetchannels &ch* -@all "
            "+get) (~w:* resetchannels -@all +set)");
  ASSERT_EQ(u.selectors().size(), 2u);
  EXPECT_EQ(u.selectors()[0].DescribeCommands(), "-@all +get");
  EXPECT_EQ(u.selectors()[0].DescribeKeys(), "~sel:* %R~ro:*");
  EXPECT_EQ(u.selectors()[0].DescribeChannels(), "&ch*");
  EXPECT_EQ(u.DescribeKeys(), "~root:*");  // the root's
  // Spaces inside are skipped; an empty selector is one; "~*" after patterns is allkeys.
  User v = Make({"(  ~b*   +get  )", "()", "(~a* ~*)", "(allkeys allchannels allcommands)"});
  EXPECT_EQ(v.Describe(),
            "off resetchannels -@all (~b* resetchannels -@all +get) (resetchannels -@all) "
            "(~* resetchannels -@all) (~* &* +@all)");
  EXPECT_FALSE(v.unrestricted());  // only the root selector counts for the hot path
  ASSERT_FALSE(v.ApplyRule("clearselectors"));
  EXPECT_EQ(v.Describe(), "off resetchannels -@all");
  ASSERT_FALSE(v.ApplyRule("(~x*)"));
  ASSERT_FALSE(v.ApplyRule("reset"));
  EXPECT_EQ(v.Describe(), "off sanitize-payload resetchannels -@all");
}

TEST(AclSelectorTest, BadSelectorsAreRefused) {
  User u = SelectorUser();
  const std::string before = u.Describe();
  EXPECT_EQ(*u.ApplyRule("(on)"), "Syntax error");  // a user's flag, not a selector's
  EXPECT_EQ(*u.ApplyRule("(~a* >pw)"), "Syntax error");
  EXPECT_EQ(*u.ApplyRule("(~a* reset)"), "Syntax error");
  EXPECT_EQ(*u.ApplyRule("(clearselectors)"), "Syntax error");
  EXPECT_EQ(*u.ApplyRule("(+nocmd)"), "Unknown command or category name in ACL");
  EXPECT_EQ(*u.ApplyRule("x)"), "Syntax error");
  EXPECT_EQ(*u.ApplyRule("(x"), "Syntax error");
  EXPECT_EQ(*u.ApplyRule("(~* ~a*)"),
            "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does "
            "not have any effect. Try 'resetkeys' to start with an empty list of patterns");
  EXPECT_EQ(u.Describe(), before);  // a bad selector adds nothing
}

TEST(AclSelectorTest, SplitSelectorsAreMerged) {
  std::vector<std::string> out;
  EXPECT_FALSE(MergeSelectorArgs({"on", "(~a*", "+get)", "(~b*)", "~c*"}, &out));
  EXPECT_EQ(out, (std::vector<std::string>{"on", "(~a* +get)", "(~b*)", "~c*"}));
  EXPECT_FALSE(MergeSelectorArgs({"(", "~a*", "x)", ")"}, &out));
  EXPECT_EQ(out, (std::vector<std::string>{"( ~a* x)", ")"}));
  EXPECT_EQ(*MergeSelectorArgs({"on", "(~a*", "+get"}, &out),
            "Unmatched parenthesis in acl selector starting at '(~a*'.");
  EXPECT_EQ(*MergeSelectorArgs({"(~a*)x"}, &out),
            "Unmatched parenthesis in acl selector starting at '(~a*)x'.");
  EXPECT_EQ(*MergeSelectorArgs({"("}, &out),
            "Unmatched parenthesis in acl selector starting at '('.");
}

TEST(AclSelectorTest, AnySelectorMayAllowTheCall) {
  User u = SelectorUser();
  EXPECT_FALSE(CheckCall(u, {"get", "sel:1"}));        // the first selector
  EXPECT_FALSE(CheckCall(u, {"get", "ro:1"}));         // its read-only pattern
  EXPECT_FALSE(CheckCall(u, {"set", "w:1", "v"}));     // the second
  EXPECT_FALSE(CheckCall(u, {"set", "root:1", "v"}));  // the root
  // Refused by all: Redis's most relevant denial (a channel's, then a key's, then a command's;
  // among equals the later argument's), as Redis 7.0.15 named them in ACL DRYRUN.
  auto denied = [&](std::vector<std::string_view> args) {
    std::optional<Denial> d = CheckCall(u, args);
    return d ? DenialDryRun(*d) : std::string("OK");
  };
  EXPECT_EQ(denied({"set", "ro:1", "v"}), "This user has no permissions to access the 'ro:1' key");
  EXPECT_EQ(denied({"get", "w:1"}), "This user has no permissions to access the 'w:1' key");
  EXPECT_EQ(denied({"mget", "sel:1", "zz"}),
            "This user has no permissions to access the 'sel:1' key");
  EXPECT_EQ(denied({"mget", "zz", "sel:1"}), "This user has no permissions to access the 'zz' key");
  EXPECT_EQ(denied({"mget", "root:1", "sel:1"}),
            "This user has no permissions to access the 'sel:1' key");
  EXPECT_EQ(denied({"publish", "zz", "m"}),
            "This user has no permissions to access the 'zz' channel");
  EXPECT_EQ(denied({"subscribe", "ch1", "zz"}),
            "This user has no permissions to access the 'ch1' channel");
  EXPECT_EQ(denied({"flushall"}), "This user has no permissions to run the 'flushall' command");
  EXPECT_EQ(denied({"eval", "return 1", "1", "zz"}),
            "This user has no permissions to access the 'zz' key");
  // A selector that allows the command but not the key, against one that refuses the command.
  User w = Make({"on", "-@all", "+get", "~a*", "(~b* +set)"});
  EXPECT_EQ(CheckCall(w, {"get", "b"})->reason, Denial::kKey);
  EXPECT_EQ(CheckCall(w, {"set", "a", "v"})->reason, Denial::kKey);
  EXPECT_EQ(CheckCall(w, {"del", "a"})->reason, Denial::kCommand);
  EXPECT_EQ(CheckCall(w, {"del", "a"})->object, "del");
  EXPECT_FALSE(CheckCall(w, {"set", "b", "v"}));
}

TEST(AclSelectorTest, FileRoundTrip) {
  Users users;
  auto err = Users::Parse(
      "user default on nopass ~* &* +@all\n"
      "user s on nopass ~root:* (~a* +get) (  ~b*   +set  )\n",
      "users.acl", &users);
  ASSERT_FALSE(err) << *err;
  EXPECT_EQ(users.Serialize(),
            "user default on nopass ~* &* +@all\n"
            "user s on nopass ~root:* resetchannels -@all (~a* resetchannels -@all +get) "
            "(~b* resetchannels -@all +set)\n");
  Users again;
  ASSERT_FALSE(Users::Parse(users.Serialize(), "users.acl", &again));
  EXPECT_EQ(again.Serialize(), users.Serialize());
  ASSERT_FALSE(Users::Parse("user s on (~a* +get) clearselectors (~x*)\n", "u.acl", &again));
  EXPECT_EQ(again.Find("s")->Describe(), "on resetchannels -@all (~x* resetchannels -@all)");
  EXPECT_EQ(*Users::Parse("user s on (bad)\n", "u.acl", &again),
            "u.acl:1: Syntax error. WARNING: ACL errors detected, no change to the previously "
            "active ACL rules was performed");
  // Redis 7.0.15 crashes on this line; deadbolt refuses the file.
  EXPECT_EQ(*Users::Parse("user default on\nuser s on (~a* +get\n", "u.acl", &again),
            "u.acl:2: Unmatched parenthesis in acl selector starting at '(~a*'. WARNING: ACL "
            "errors detected, no change to the previously active ACL rules was performed");
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
