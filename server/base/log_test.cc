#include "server/base/log.h"

#include <gtest/gtest.h>

namespace deadbolt::server {
namespace {

TEST(LogRateLimiterTest, BurstPerWindowThenCountsTheRest) {
  LogRateLimiter limiter(60000, 3);
  uint64_t left_out = 99;
  for (int i = 0; i < 3; i++) {
    EXPECT_TRUE(limiter.Allow(1000 + i, &left_out));
    EXPECT_EQ(left_out, 0u);
  }
  for (int i = 0; i < 1000; i++) EXPECT_FALSE(limiter.Allow(2000 + i, &left_out));
  EXPECT_FALSE(limiter.Allow(60999, &left_out));  // the window started at 1000
  EXPECT_TRUE(limiter.Allow(61000, &left_out));
  EXPECT_EQ(left_out, 1001u);  // what the last window left out
  EXPECT_TRUE(limiter.Allow(61001, &left_out));
  EXPECT_EQ(left_out, 0u);
}

TEST(LogRateLimiterTest, AFloodWritesAtMostBurstLinesPerWindow) {
  LogRateLimiter limiter(60000, 10);
  uint64_t left_out = 0;
  int written = 0;
  // A million lines over ten minutes: ten windows.
  for (int64_t i = 0; i < 1000000; i++) {
    if (limiter.Allow(i * 600000 / 1000000, &left_out)) written++;
  }
  EXPECT_EQ(written, 10 * 10);
}

TEST(LogRateLimiterTest, ClockGoingBackStartsANewWindow) {
  LogRateLimiter limiter(1000, 1);
  uint64_t left_out = 0;
  EXPECT_TRUE(limiter.Allow(5000, &left_out));
  EXPECT_FALSE(limiter.Allow(5001, &left_out));
  EXPECT_TRUE(limiter.Allow(10, &left_out));  // not stuck until 6000 of a clock gone back
  EXPECT_EQ(left_out, 1u);
}

}  // namespace
}  // namespace deadbolt::server
