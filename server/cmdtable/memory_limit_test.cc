#include "server/cmdtable/memory_limit.h"

#include <gtest/gtest.h>

#include "server/base/error_strings.h"

namespace deadbolt::server {
namespace {

const CommandSpec& Spec(std::string_view name) {
  const CommandSpec* s = CommandTable::Get().Find(name);
  EXPECT_NE(s, nullptr) << name;
  return *s;
}

TEST(MemoryLimitTest, RefusesWhatMayGrowTheDataAsRedis) {
  for (const char* grows : {"set", "setnx", "getset", "incr", "hset", "hincrby", "lpush", "zadd",
                            "sadd", "lock.acquire", "append", "mset"}) {
    EXPECT_EQ(OomRefusal(Spec(grows), false, false), errors::kOom) << grows;
  }
  for (const char* runs : {"get", "del", "unlink", "pexpire", "expire", "delifeq", "lock.release",
                           "lock.extend", "hdel", "ping", "exists", "multi", "evalsha"}) {
    EXPECT_EQ(OomRefusal(Spec(runs), false, false), std::nullopt) << runs;
  }
}

TEST(MemoryLimitTest, InsideMultiOnlyExecDiscardQuitAndResetRun) {
  EXPECT_EQ(OomRefusal(Spec("get"), true, false), errors::kOom);
  EXPECT_EQ(OomRefusal(Spec("del"), true, false), errors::kOom);
  EXPECT_EQ(OomRefusal(Spec("discard"), true, false), std::nullopt);
  EXPECT_EQ(OomRefusal(Spec("quit"), true, false), std::nullopt);
  EXPECT_EQ(OomRefusal(Spec("reset"), true, false), std::nullopt);
  EXPECT_EQ(OomRefusal(Spec("exec"), true, false), std::nullopt);
  EXPECT_EQ(OomRefusal(Spec("exec"), true, true), errors::kOom);  // a SET waits in the queue
}

TEST(MemoryLimitTest, RefreshComparesWithTheProcessMemory) {
  EXPECT_GT(UsedMemoryBytes(), 0u);
  EXPECT_TRUE(MemoryLimit::Refresh(1));
  EXPECT_TRUE(MemoryLimit::Over());
  EXPECT_FALSE(MemoryLimit::Refresh(int64_t{1} << 50));
  EXPECT_FALSE(MemoryLimit::Refresh(0));  // no limit
  EXPECT_FALSE(MemoryLimit::Over());
}

}  // namespace
}  // namespace deadbolt::server
