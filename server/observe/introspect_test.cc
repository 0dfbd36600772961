#include "server/observe/introspect.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace deadbolt::server {
namespace {

TEST(LatencyHistogramTest, BucketsAreOrderedAndTight) {
  // Every value lies in a bucket whose upper bound is at least it and within 1/16 of it.
  size_t last = 0;
  for (uint64_t v = 16; v < (uint64_t{1} << 40); v = v * 17 / 16 + 1) {
    size_t b = LatencyHistogram::Bucket(v);
    EXPECT_GE(b, last);
    last = b;
    uint64_t hi = LatencyHistogram::UpperBound(b);
    EXPECT_GE(hi, v);
    EXPECT_LE(hi - v, v / 16 + 1) << v;
    EXPECT_LT(b, LatencyHistogram::kBuckets);
  }
  EXPECT_EQ(LatencyHistogram::Bucket(0), LatencyHistogram::Bucket(16));
  EXPECT_LT(LatencyHistogram::Bucket(UINT64_MAX), LatencyHistogram::kBuckets);
}

TEST(LatencyHistogramTest, PercentilesMergeAndCopy) {
  LatencyHistogram h;
  EXPECT_EQ(h.total(), 0u);
  EXPECT_EQ(h.Percentile(50), 0u);
  for (int i = 0; i < 99; i++) h.Record(1000);
  h.Record(1000000);
  EXPECT_EQ(h.total(), 100u);
  EXPECT_EQ(h.Percentile(50), LatencyHistogram::UpperBound(LatencyHistogram::Bucket(1000)));
  EXPECT_EQ(h.Percentile(99), LatencyHistogram::UpperBound(LatencyHistogram::Bucket(1000)));
  EXPECT_EQ(h.Percentile(99.9),
            LatencyHistogram::UpperBound(LatencyHistogram::Bucket(1000000)));
  LatencyHistogram copy = h;  // deep
  h.Record(5);
  EXPECT_EQ(copy.total(), 100u);
  copy.Merge(h);
  EXPECT_EQ(copy.total(), 201u);
  EXPECT_EQ(copy.Buckets().size(), 3u);
}

TEST(SlowlogArgsTest, TruncatesAsRedis) {
  std::string long_arg(200, 'x');
  std::vector<std::string_view> args = {"SET", "k", long_arg};
  auto out = SlowlogArgs(args.data(), args.size());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2], std::string(128, 'x') + "... (72 more bytes)");
  std::vector<std::string> many;
  for (int i = 0; i < 40; i++) many.push_back("a" + std::to_string(i));
  std::vector<std::string_view> views(many.begin(), many.end());
  out = SlowlogArgs(views.data(), views.size());
  ASSERT_EQ(out.size(), 32u);
  EXPECT_EQ(out[30], "a30");
  EXPECT_EQ(out[31], "... (9 more arguments)");
  views.resize(32);
  out = SlowlogArgs(views.data(), views.size());
  EXPECT_EQ(out[31], "a31");
}

TEST(SlowlogArgsTest, KeepsNoSecrets) {
  using V = std::vector<std::string>;
  std::vector<std::string_view> setuser = {"ACL", "SETUSER", "app1", "on", ">secret"};
  EXPECT_EQ(SlowlogArgs(setuser.data(), setuser.size()),
            (V{"ACL", "SETUSER", "app1", "(redacted)", "(redacted)"}));
  std::vector<std::string_view> auth = {"AUTH", "app1", "secret"};
  EXPECT_EQ(SlowlogArgs(auth.data(), auth.size()), (V{"AUTH", "(redacted)", "(redacted)"}));
  std::vector<std::string_view> hello = {"HELLO", "3", "AUTH", "app1", "secret"};
  EXPECT_EQ(SlowlogArgs(hello.data(), hello.size()),
            (V{"HELLO", "3", "AUTH", "(redacted)", "(redacted)"}));
}

TEST(MonitorLineTest, EscapesAndRedacts) {
  std::vector<std::string_view> args = {"SET", "k", std::string_view("a \"b\"\n\x01\\\xff", 9)};
  EXPECT_EQ(MonitorLine(1700000000123456, 3, "127.0.0.1:5000", args.data(), args.size()),
            "+1700000000.123456 [3 127.0.0.1:5000] \"SET\" \"k\" \"a \\\"b\\\"\\n\\x01\\\\\\xff\"\r\n");
  std::vector<std::string_view> auth = {"auth", "user", "pw"};
  EXPECT_EQ(MonitorLine(1000000, 0, "p", auth.data(), auth.size()),
            "+1.000000 [0 p] \"auth\" \"(redacted)\" \"(redacted)\"\r\n");
  std::vector<std::string_view> hello = {"HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"};
  EXPECT_EQ(MonitorLine(0, 0, "p", hello.data(), hello.size()),
            "+0.000000 [0 p] \"HELLO\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\" "
            "\"(redacted)\" \"(redacted)\"\r\n");
}

TEST(LatencySeriesTest, MergesBySecondKeepingTheLargest) {
  LatencySeries a, b;
  a.Add(10, 5);
  a.Add(10, 7);  // same second: the larger
  a.Add(12, 3);
  b.Add(11, 9);
  b.Add(12, 4);
  a.Merge(b);
  ASSERT_EQ(a.samples.size(), 3u);
  EXPECT_EQ(a.samples[0].unix_sec, 10);
  EXPECT_EQ(a.samples[0].ms, 7u);
  EXPECT_EQ(a.samples[1].ms, 9u);
  EXPECT_EQ(a.samples[2].ms, 4u);
  EXPECT_EQ(a.max_ms, 9u);
  for (int s = 100; s < 400; s++) a.Add(s, 1);
  EXPECT_EQ(a.samples.size(), LatencySeries::kMaxSamples);
}

TEST(TickClockTest, CountsForward) {
  EXPECT_GT(TickClock::TicksPerUsec(), 0.0);
  uint64_t t0 = TickClock::Now();
  EXPECT_GE(TickClock::Now(), t0);
  EXPECT_NEAR(static_cast<double>(TickClock::ToUsec(TickClock::FromUsec(1000000))), 1e6, 2);
}

}  // namespace
}  // namespace deadbolt::server
