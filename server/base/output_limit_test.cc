#include "server/base/output_limit.h"

#include <gtest/gtest.h>

namespace deadbolt::server {
namespace {

TEST(OutputLimitTest, ParseAndFormatAsRedis) {
  OutputBufferLimits l;
  EXPECT_EQ(l.Format(), "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
  EXPECT_EQ(l.Parse("normal 8mb 4mb 10"), std::nullopt);
  EXPECT_EQ(l.normal, (OutputBufferLimit{8 << 20, 4 << 20, 10}));
  EXPECT_EQ(l.Parse("Normal 1kb 2 3 replica 1 1 1"), std::nullopt);
  EXPECT_EQ(l.Format(), "normal 1024 2 3 slave 1 1 1 pubsub 33554432 8388608 60");
  EXPECT_EQ(l.Parse("pubsub 1 2 3  slave 4 5 6"), std::nullopt);  // extra spaces
  EXPECT_EQ(l.pubsub, (OutputBufferLimit{1, 2, 3}));
  EXPECT_EQ(l.replica, (OutputBufferLimit{4, 5, 6}));
}

TEST(OutputLimitTest, BadValuesChangeNothing) {
  OutputBufferLimits l;
  const std::string before = l.Format();
  EXPECT_EQ(l.Parse("foo 1 2 3"), "Invalid client class specified in buffer limit configuration.");
  EXPECT_EQ(l.Parse("normal 1 2"), "Wrong number of arguments in buffer limit configuration.");
  EXPECT_EQ(l.Parse("normal x 2 3"),
            "Error in hard, soft or soft_seconds setting in buffer limit configuration.");
  EXPECT_EQ(l.Parse("normal 1 2 -1"),
            "Error in hard, soft or soft_seconds setting in buffer limit configuration.");
  EXPECT_EQ(l.Parse("normal 1 2 3 pubsub 1 2"),  // the first group is not applied either
            "Wrong number of arguments in buffer limit configuration.");
  EXPECT_EQ(l.Format(), before);
}

TEST(OutputLimitTest, HardAndSoftLimits) {
  OutputLimitState s;
  const OutputBufferLimit limit{1000, 100, 10};
  EXPECT_FALSE(s.Over(limit, 99, 0));
  EXPECT_TRUE(s.Over(limit, 1000, 0));      // the hard limit: at once
  EXPECT_FALSE(s.Over(limit, 100, 5000));   // over the soft limit from now on...
  EXPECT_FALSE(s.Over(limit, 500, 15000));  // ...for 10 s: still allowed
  EXPECT_TRUE(s.Over(limit, 500, 15001));   // longer: closed
  EXPECT_FALSE(s.Over(limit, 50, 16000));   // under again: the clock restarts
  EXPECT_FALSE(s.Over(limit, 200, 17000));
  EXPECT_FALSE(s.Over(limit, 200, 27000));
  EXPECT_FALSE(s.Over(OutputBufferLimit{}, size_t{1} << 40, 0));  // no limits
}

TEST(ClientEvictionLimitTest, BytesPercentOffAndFloor) {
  EXPECT_EQ(ClientEvictionLimit(0, 0), 0);                      // off
  EXPECT_EQ(ClientEvictionLimit(0, 1 << 30), 0);
  EXPECT_EQ(ClientEvictionLimit(10 << 20, 0), 10 << 20);        // bytes
  EXPECT_EQ(ClientEvictionLimit(-10, 1000 << 20), 100 << 20);   // 10% of maxmemory
  EXPECT_EQ(ClientEvictionLimit(-10, 0), 0);                    // a percentage of no maxmemory
  EXPECT_EQ(ClientEvictionLimit(1000, 0), 128 * 1024);          // never under 128 KiB, as Redis
  EXPECT_EQ(ClientEvictionLimit(-1, 1 << 20), 128 * 1024);
}

TEST(ClientMemoryBoardTest, OthersAddUpAndSkipSelf) {
  ClientMemoryBoard::Publish(0, 100, 60);
  ClientMemoryBoard::Publish(1, 200, 150);
  ClientMemoryBoard::Publish(2, 300, 90);
  int64_t total = 0, biggest = 0;
  ClientMemoryBoard::Others(1, 3, &total, &biggest);
  EXPECT_EQ(total, 400);
  EXPECT_EQ(biggest, 90);
  ClientMemoryBoard::Others(2, 2, &total, &biggest);  // only reactors 0 and 1 exist
  EXPECT_EQ(total, 300);
  EXPECT_EQ(biggest, 150);
  for (int i = 0; i < 3; i++) ClientMemoryBoard::Publish(i, 0, 0);
}

}  // namespace
}  // namespace deadbolt::server
