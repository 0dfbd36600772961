#include "server/commands/cmd_util.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/config.h"
#include "server/core/server.h"

namespace deadbolt::server {
namespace {

// StringToInt64 follows Redis's string2ll exactly; it takes a shortcut for 18 digits or fewer.
TEST(StringToInt64Test, AcceptsWhatString2llAccepts) {
  int64_t v = 42;
  EXPECT_TRUE(StringToInt64("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(StringToInt64("30000", &v));
  EXPECT_EQ(v, 30000);
  EXPECT_TRUE(StringToInt64("-7", &v));
  EXPECT_EQ(v, -7);
  EXPECT_TRUE(StringToInt64("999999999999999999", &v));  // 18 digits
  EXPECT_EQ(v, 999999999999999999LL);
  EXPECT_TRUE(StringToInt64("-999999999999999999", &v));
  EXPECT_EQ(v, -999999999999999999LL);
  EXPECT_TRUE(StringToInt64("1000000000000000000", &v));  // 19 digits
  EXPECT_EQ(v, 1000000000000000000LL);
  EXPECT_TRUE(StringToInt64("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_TRUE(StringToInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
}

TEST(StringToInt64Test, RefusesEverythingElse) {
  int64_t v = 42;
  for (const char* s : {"", "-", "-0", "00", "01", "+1", " 1", "1 ", "1a", "a", "1.5",
                        "9223372036854775808", "-9223372036854775809", "18446744073709551616",
                        "99999999999999999999", "123456789012345678901", "12345678901234567x"}) {
    EXPECT_FALSE(StringToInt64(s, &v)) << s;
  }
  EXPECT_EQ(v, 42);
}

TEST(ConstantTimeEqualsTest, EqualOnlyWhenSame) {
  EXPECT_TRUE(ConstantTimeEquals("secret", "secret"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("secreT", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("Secret", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("secre", "secret"));         // a prefix
  EXPECT_FALSE(ConstantTimeEquals("secrets", "secret"));       // longer
  EXPECT_FALSE(ConstantTimeEquals("secretsecret", "secret"));  // the secret twice (cyclic read)
  EXPECT_FALSE(ConstantTimeEquals("", "secret"));
  EXPECT_FALSE(ConstantTimeEquals("x", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0", 2), "a"));
  EXPECT_TRUE(ConstantTimeEquals(std::string_view("a\0b", 3), std::string_view("a\0b", 3)));
  std::string big(100000, 'p');
  EXPECT_TRUE(ConstantTimeEquals(big, big));
  std::string other = big;
  other[0] = 'q';
  EXPECT_FALSE(ConstantTimeEquals(other, big));
  other = big;
  other.back() = 'q';
  EXPECT_FALSE(ConstantTimeEquals(other, big));
}

// A multi-key command's keys, split by shard and walked in bounded chunks: every key of a shard
// exactly once, in argument order, at most kChunkKeys per step.
TEST(ShardedKeysTest, ChunksCoverEachShardsKeysOnceInOrder) {
  Config config;
  config.threads = 2;
  Server server(config);
  const size_t n = 3 * ShardedKeys::kChunkKeys + 17;
  std::vector<std::string> storage;
  storage.reserve(n + 1);
  storage.push_back("exists");
  for (size_t i = 0; i < n; i++) storage.push_back("key:" + std::to_string(i));
  std::vector<std::string_view> args(storage.begin(), storage.end());
  ShardedKeys keys(CmdArgs(args.data(), args.size()), 1, 1, server);
  ASSERT_EQ(keys.size(), n);
  ASSERT_EQ(keys.shards(), (std::vector<int>{0, 1}));
  size_t total = 0;
  for (int shard : keys.shards()) {
    std::vector<size_t> all, chunked;
    keys.ForEachOn(shard, [&](size_t i) { all.push_back(i); });
    size_t cursor = 0;
    int steps = 0;
    bool more = true;
    while (more) {
      size_t in_step = 0;
      more = keys.ForEachChunkOn(shard, &cursor, [&](size_t i) {
        chunked.push_back(i);
        in_step++;
      });
      EXPECT_LE(in_step, ShardedKeys::kChunkKeys);
      ASSERT_LT(++steps, 100);
    }
    EXPECT_EQ(chunked, all);
    EXPECT_EQ(steps, static_cast<int>((all.size() + ShardedKeys::kChunkKeys - 1) /
                                      ShardedKeys::kChunkKeys));
    for (size_t i : all) {
      EXPECT_EQ(keys.owner(i), shard);
      EXPECT_EQ(server.ShardOf(keys.key(i)), shard);
    }
    // Once done, a further step does nothing.
    EXPECT_FALSE(keys.ForEachChunkOn(shard, &cursor, [&](size_t) { ADD_FAILURE(); }));
    total += all.size();
  }
  EXPECT_EQ(total, n);
}

}  // namespace
}  // namespace deadbolt::server
