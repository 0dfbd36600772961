#include "shard/base/numeric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace deadbolt::shard {
namespace {

TEST(NumericTest, ParseInt64IsStrict) {
  int64_t v = 99;
  EXPECT_TRUE(ParseInt64("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(ParseInt64("-1", &v));
  EXPECT_EQ(v, -1);
  EXPECT_TRUE(ParseInt64("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "01", "-0", "00", "1a", "9223372036854775808",
                          "-9223372036854775809", "99999999999999999999", "1.0", "0x10"}) {
    EXPECT_FALSE(ParseInt64(bad, &v)) << bad;
  }
  EXPECT_FALSE(ParseInt64(std::string("1\0", 2), &v));
}

TEST(NumericTest, ParseLongDouble) {
  long double v = 0;
  EXPECT_TRUE(ParseLongDouble("1.5", &v));
  EXPECT_EQ(v, 1.5L);
  EXPECT_TRUE(ParseLongDouble("-3e2", &v));
  EXPECT_EQ(v, -300.0L);
  EXPECT_TRUE(ParseLongDouble("10", &v));
  EXPECT_TRUE(ParseLongDouble("0x10", &v));  // strtold accepts hex, as in Redis
  EXPECT_EQ(v, 16.0L);
  EXPECT_TRUE(ParseLongDouble("inf", &v));  // accepted; an increment by it is then refused
  EXPECT_TRUE(std::isinf(v));
  for (const char* bad : {"", " 1", "1 ", "abc", "nan", "1e999999", "1e-999999", "1.2.3", "--1"}) {
    EXPECT_FALSE(ParseLongDouble(bad, &v)) << bad;
  }
  EXPECT_FALSE(ParseLongDouble(std::string("1\0", 2), &v));
  EXPECT_FALSE(ParseLongDouble(std::string(6000, '1'), &v));
}

TEST(NumericTest, FormatLongDoubleHuman) {
  EXPECT_EQ(FormatLongDoubleHuman(10.5L + 0.1L), "10.6");
  EXPECT_EQ(FormatLongDoubleHuman(5.0e3L + 2.0e2L), "5200");
  EXPECT_EQ(FormatLongDoubleHuman(3.0L), "3");
  EXPECT_EQ(FormatLongDoubleHuman(-0.0L), "0");
  EXPECT_EQ(FormatLongDoubleHuman(-1.25L), "-1.25");
  EXPECT_EQ(FormatLongDoubleHuman(0.1L), "0.1");
  EXPECT_EQ(FormatLongDoubleHuman(1e20L), "100000000000000000000");
  // 17 decimals, so tiny values round away.
  EXPECT_EQ(FormatLongDoubleHuman(1e-18L), "0");
  EXPECT_EQ(FormatLongDoubleHuman(1.7e-17L), "0.00000000000000002");
}

TEST(NumericTest, FormatInt64) {
  EXPECT_EQ(FormatInt64(0), "0");
  EXPECT_EQ(FormatInt64(-42), "-42");
  EXPECT_EQ(FormatInt64(INT64_MIN), "-9223372036854775808");
}

}  // namespace
}  // namespace deadbolt::shard
