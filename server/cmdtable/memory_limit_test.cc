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

TEST(MemoryLimitTest, EvictedBytesCountUntilTheAllocatorGrows) {
  constexpr int64_t kMax = 1000;
  MemoryLimit::Update(0, 0);
  EXPECT_TRUE(MemoryLimit::Update(kMax, 1500));
  EXPECT_TRUE(MemoryLimit::StillOver(kMax));
  MemoryLimit::NoteEvicted(300, kMax);  // 1500 - 300: still over
  EXPECT_TRUE(MemoryLimit::Over());
  MemoryLimit::NoteEvicted(250, kMax);  // 1500 - 550 = 950: under
  EXPECT_FALSE(MemoryLimit::StillOver(kMax));
  EXPECT_FALSE(MemoryLimit::Over());
  // The allocator kept the freed blocks: the same measurement stays under.
  EXPECT_FALSE(MemoryLimit::Update(kMax, 1500));
  EXPECT_EQ(MemoryLimit::slack(), 550u);
  // It gave 100 bytes back: those are no longer slack.
  EXPECT_FALSE(MemoryLimit::Update(kMax, 1400));
  EXPECT_EQ(MemoryLimit::slack(), 450u);
  // It grew: the writes used the room up, a fresh verdict.
  EXPECT_TRUE(MemoryLimit::Update(kMax, 1401));
  EXPECT_EQ(MemoryLimit::slack(), 0u);
  EXPECT_FALSE(MemoryLimit::Update(0, 1401));  // no limit
}

}  // namespace
}  // namespace deadbolt::server
