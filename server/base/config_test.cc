#include "server/base/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace deadbolt::server {
namespace {

std::optional<std::string> Parse(std::vector<std::string> args, Config* c) {
  std::vector<char*> argv = {const_cast<char*>("deadbolt-server")};
  for (auto& a : args) argv.push_back(a.data());
  return Config::ParseArgs(static_cast<int>(argv.size()), argv.data(), c);
}

TEST(ConfigTest, Defaults) {
  Config c;
  EXPECT_EQ(c.port, 6379);
  EXPECT_EQ(c.bind, "127.0.0.1");
  EXPECT_EQ(c.databases, 16);
  EXPECT_EQ(c.proto_max_bulk_len, 512LL * 1024 * 1024);
}

TEST(ConfigTest, ParsesFlagsBothForms) {
  Config c;
  EXPECT_EQ(Parse({"--port", "7000", "--threads=3", "--requirepass", "s3cret",
                   "--proto-max-bulk-len", "2mb"},
                  &c),
            std::nullopt);
  EXPECT_EQ(c.port, 7000);
  EXPECT_EQ(c.threads, 3);
  EXPECT_EQ(c.requirepass, "s3cret");
  EXPECT_EQ(c.proto_max_bulk_len, 2 * 1024 * 1024);
}

TEST(ConfigTest, RejectsBadFlags) {
  Config c;
  EXPECT_NE(Parse({"--port", "notanumber"}, &c), std::nullopt);
  EXPECT_NE(Parse({"--port", "70000"}, &c), std::nullopt);
  EXPECT_NE(Parse({"--nosuchflag", "1"}, &c), std::nullopt);
  EXPECT_NE(Parse({"--port"}, &c), std::nullopt);
  EXPECT_NE(Parse({"stray"}, &c), std::nullopt);
}

TEST(ConfigTest, ParseMemory) {
  EXPECT_EQ(ParseMemory("100"), 100);
  EXPECT_EQ(ParseMemory("1k"), 1000);
  EXPECT_EQ(ParseMemory("1kb"), 1024);
  EXPECT_EQ(ParseMemory("512mb"), 512LL * 1024 * 1024);
  EXPECT_EQ(ParseMemory("1GB"), 1024LL * 1024 * 1024);
  EXPECT_EQ(ParseMemory("x"), std::nullopt);
  EXPECT_EQ(ParseMemory("-1"), std::nullopt);
}

TEST(ConfigTest, SetAndGet) {
  Config c;
  EXPECT_EQ(c.Set("requirepass", "pw"), std::nullopt);
  EXPECT_EQ(c.requirepass, "pw");
  EXPECT_EQ(c.Set("HZ", "50"), std::nullopt);
  EXPECT_EQ(c.hz, 50);
  auto err = c.Set("hz", "0");
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(c.hz, 50);
  EXPECT_NE(c.Set("port", "1"), std::nullopt);  // immutable at runtime
  EXPECT_EQ(*c.Set("nosuch", "1"),
            "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'");
  auto got = c.Get("databases");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (std::pair<std::string, std::string>{"databases", "16"}));
  EXPECT_GT(c.Get("*").size(), 5u);
  EXPECT_TRUE(c.Get("nosuch*").empty());
}

// Every setting that takes one of a few names: each name, in any case, is read back in lower
// case through --flag (Parse sets immutable ones too), and a wrong name gets Redis's list.
TEST(ConfigTest, NamedValuesRoundTripAndListTheChoices) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> kChoices = {
      {"pipeline-order", {"sent", "key"}},
      {"pin", {"auto", "yes", "no"}},
      {"appendfsync", {"everysec", "always", "no"}},
      {"maxmemory-policy",
       {"volatile-lru", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-random",
        "noeviction"}},
      {"loglevel", {"debug", "verbose", "notice", "warning", "nothing"}},
      {"enable-debug-command", {"no", "yes", "local"}},
      {"tls-auth-clients", {"no", "yes", "optional"}},
  };
  for (const auto& [name, names] : kChoices) {
    std::string list;
    for (const auto& n : names) {
      Config c;
      std::string upper = n;
      for (char& ch : upper) ch = static_cast<char>(toupper(ch));
      ASSERT_EQ(Parse({"--" + name, upper}, &c), std::nullopt) << name << " " << n;
      ASSERT_EQ(c.Get(name).size(), 1u) << name;
      EXPECT_EQ(c.Get(name)[0].second, n) << name;
      list += (list.empty() ? "" : ", ") + n;
    }
    Config c;
    auto err = Parse({"--" + name, "bogus"}, &c);
    ASSERT_TRUE(err.has_value()) << name;
    EXPECT_NE(err->find("argument(s) must be one of the following: " + list), std::string::npos)
        << *err;
  }
}

// Every flag the command line takes is in --help (--max-multibulk-len was missing).
TEST(ConfigTest, TlsFlags) {
  Config c;
  EXPECT_EQ(c.tls_port, 0);
  EXPECT_EQ(c.tls_auth_clients, "yes");  // Redis's default
  ASSERT_EQ(Parse({"--tls-port", "6380", "--tls-cert-file", "s.crt", "--tls-key-file=s.key",
                   "--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "OPTIONAL",
                   "--tls-protocols", "TLSv1.3", "--tls-ciphersuites", "TLS_AES_128_GCM_SHA256",
                   "--tls-ciphers", "HIGH"},
                  &c),
            std::nullopt);
  EXPECT_EQ(c.tls_port, 6380);
  EXPECT_EQ(c.tls_cert_file, "s.crt");
  EXPECT_EQ(c.tls_key_file, "s.key");
  EXPECT_EQ(c.tls_ca_cert_file, "ca.crt");
  EXPECT_EQ(c.tls_auth_clients, "optional");
  EXPECT_EQ(c.tls_protocols, "TLSv1.3");
  EXPECT_EQ(c.tls_ciphersuites, "TLS_AES_128_GCM_SHA256");
  EXPECT_EQ(c.tls_ciphers, "HIGH");
  auto got = c.Get("tls-port");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].second, "6380");
  EXPECT_NE(Parse({"--tls-auth-clients", "maybe"}, &c), std::nullopt);
  EXPECT_NE(Parse({"--tls-port", "70000"}, &c), std::nullopt);
  // Fixed at start.
  auto err = c.Set("tls-port", "6381");
  ASSERT_TRUE(err.has_value());
  EXPECT_NE(err->find("can't set immutable config"), std::string::npos);
  // The rest may change at run time (the server then builds a new context).
  EXPECT_EQ(c.Set("tls-cert-file", "s2.crt"), std::nullopt);
  EXPECT_EQ(c.tls_cert_file, "s2.crt");
  for (const char* name : {"tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-auth-clients",
                           "tls-protocols", "tls-ciphersuites", "tls-ciphers", "TLS-KEY-FILE"}) {
    EXPECT_TRUE(IsTlsContextSetting(name)) << name;
  }
  EXPECT_FALSE(IsTlsContextSetting("tls-port"));
  EXPECT_FALSE(IsTlsContextSetting("maxmemory"));
}

TEST(ConfigTest, HelpListsEveryFlag) {
  const std::string usage = Config::Usage();
  auto listed = [&](const std::string& flag) {
    for (size_t at = usage.find(flag); at != std::string::npos; at = usage.find(flag, at + 1)) {
      char next = at + flag.size() < usage.size() ? usage[at + flag.size()] : '\n';
      if (next == ' ' || next == ']' || next == '\n') return true;
    }
    return false;
  };
  int flags = 0;
  for (const auto& [name, value] : Config().Get("*")) {
    bool no_effect = false;  // Redis's parameters that change nothing: listed in README.md
    for (const auto& p : NoEffectParams()) no_effect = no_effect || name == p.first;
    if (no_effect) continue;
    Config c;
    if (Parse({"--" + name + "=" + value}, &c) != std::nullopt) continue;  // not a flag
    flags++;
    EXPECT_TRUE(listed("--" + name)) << "--" << name << " is missing from --help";
  }
  EXPECT_GT(flags, 15);
}

TEST(ConfigTest, PinFlags) {
  Config c;
  EXPECT_EQ(c.pin, Config::Pin::kAuto);
  ASSERT_EQ(Parse({"--no-pin"}, &c), std::nullopt);  // the flag before --pin, kept
  EXPECT_EQ(c.pin, Config::Pin::kNo);
  ASSERT_EQ(Parse({"--pin", "YES"}, &c), std::nullopt);
  EXPECT_EQ(c.pin, Config::Pin::kYes);
  EXPECT_EQ(c.Get("pin")[0].second, "yes");
  EXPECT_NE(Parse({"--pin", "sometimes"}, &c), std::nullopt);
}

TEST(ConfigTest, ReactorCpusPinOnlyWhenACpuIsLeftFreeUnlessAsked) {
  const std::vector<int> none = {-1, -1};
  // Every CPU the process may use has a reactor: auto leaves them to the scheduler.
  EXPECT_EQ(ReactorCpus(Config::Pin::kAuto, 2, {0, 1}), none);
  EXPECT_EQ(ReactorCpus(Config::Pin::kAuto, 4, {0, 1}), std::vector<int>(4, -1));
  // A CPU is left free: auto pins, to the CPUs allowed (taskset -c 2,5,7), in order.
  EXPECT_EQ(ReactorCpus(Config::Pin::kAuto, 2, {2, 5, 7}), (std::vector<int>{2, 5}));
  EXPECT_EQ(ReactorCpus(Config::Pin::kAuto, 1, {0, 1}), std::vector<int>{0});
  // yes pins always, wrapping round when there are more reactors than CPUs; no never does.
  EXPECT_EQ(ReactorCpus(Config::Pin::kYes, 2, {0, 1}), (std::vector<int>{0, 1}));
  EXPECT_EQ(ReactorCpus(Config::Pin::kYes, 3, {4, 6}), (std::vector<int>{4, 6, 4}));
  EXPECT_EQ(ReactorCpus(Config::Pin::kNo, 1, {0, 1, 2}), std::vector<int>{-1});
  // The allowed set unknown: nothing pinned.
  EXPECT_EQ(ReactorCpus(Config::Pin::kYes, 2, {}), none);
}

// A parameter deadbolt honours is not also in the table of those it only stores: CONFIG GET
// would report it twice, and README.md would call it one of no effect.
TEST(ConfigTest, NoParameterIsBothHonouredAndOfNoEffect) {
  std::map<std::string, int> seen;
  for (const auto& [name, value] : Config().Get("*")) seen[name]++;
  for (const auto& [name, n] : seen) EXPECT_EQ(n, 1) << name;
  for (const char* honoured :
       {"maxmemory", "maxmemory-policy", "maxmemory-samples", "protected-mode",
        "client-output-buffer-limit", "busy-reply-threshold", "maxmemory-clients"}) {
    for (const auto& p : NoEffectParams()) EXPECT_NE(std::string(p.first), honoured);
  }
}

TEST(ConfigTest, MaxmemoryClientsBytesOrPercent) {
  Config c;
  EXPECT_EQ(c.maxmemory_clients, 0);
  EXPECT_EQ(c.Get("maxmemory-clients")[0].second, "0");
  EXPECT_EQ(c.Set("maxmemory-clients", "10%"), std::nullopt);
  EXPECT_EQ(c.maxmemory_clients, -10);
  EXPECT_EQ(c.Get("maxmemory-clients")[0].second, "10%");
  EXPECT_EQ(c.Set("maxmemory-clients", "64mb"), std::nullopt);
  EXPECT_EQ(c.Get("maxmemory-clients")[0].second, "67108864");
  const std::string prefix =
      "ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - ";
  EXPECT_EQ(c.Set("maxmemory-clients", "101%"),
            prefix + "percentage argument must be less or equal to 100");
  for (const char* bad : {"abc", "-5", "1.5%", "%", "-1%"}) {
    EXPECT_EQ(c.Set("maxmemory-clients", bad), prefix + "argument must be a memory or percent value")
        << bad;
  }
  EXPECT_EQ(c.maxmemory_clients, 64 << 20);
}

TEST(ConfigTest, MaxmemoryPolicyAndSamples) {
  Config c;
  EXPECT_EQ(c.maxmemory_policy, Config::MaxmemoryPolicy::kNoEviction);
  EXPECT_EQ(c.maxmemory_samples, 5);
  EXPECT_EQ(c.Set("maxmemory-policy", "VOLATILE-TTL"), std::nullopt);
  EXPECT_EQ(c.maxmemory_policy, Config::MaxmemoryPolicy::kVolatileTtl);
  EXPECT_EQ(c.Get("maxmemory-policy")[0].second, "volatile-ttl");
  EXPECT_TRUE(c.Set("maxmemory-policy", "lfu").has_value());
  EXPECT_EQ(c.maxmemory_policy, Config::MaxmemoryPolicy::kVolatileTtl);
  EXPECT_EQ(c.Set("maxmemory-samples", "10"), std::nullopt);
  EXPECT_EQ(c.maxmemory_samples, 10);
  EXPECT_TRUE(c.Set("maxmemory-samples", "0").has_value());
  EXPECT_TRUE(c.Set("maxmemory-samples", "65").has_value());
  EXPECT_EQ(c.Set("maxmemory-policy", "noeviction"), std::nullopt);
  EXPECT_EQ(c.maxmemory_policy, Config::MaxmemoryPolicy::kNoEviction);
}

}  // namespace
}  // namespace deadbolt::server
