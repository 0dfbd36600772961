#include "server/cmd_util.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

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

}  // namespace
}  // namespace deadbolt::server
