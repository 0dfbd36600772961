#include "protocol/reply_builder.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>

namespace deadbolt::protocol {
namespace {

std::string_view operator""_sv(const char* s, size_t n) { return std::string_view(s, n); }

// Runs `write` against a fresh builder speaking `resp` and returns the bytes it appended.
template <typename F>
std::string Build(int resp, F write) {
  std::string out = "prefix";  // the builder appends; it never touches what is already there
  ReplyBuilder rb(&out, resp);
  write(rb);
  EXPECT_EQ(out.substr(0, 6), "prefix");
  return out.substr(6);
}

// Expects `write` to produce `resp2` in RESP2 and `resp3` in RESP3.
template <typename F>
void ExpectBytes(F write, std::string_view resp2, std::string_view resp3) {
  EXPECT_EQ(Build(2, write), resp2);
  EXPECT_EQ(Build(3, write), resp3);
}

TEST(ReplyBuilder, Ok) {
  ExpectBytes([](ReplyBuilder& rb) { rb.Ok(); }, "+OK\r\n", "+OK\r\n");
}

TEST(ReplyBuilder, SimpleString) {
  ExpectBytes([](ReplyBuilder& rb) { rb.SimpleString("PONG"); }, "+PONG\r\n", "+PONG\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.SimpleString(""); }, "+\r\n", "+\r\n");
  // CR/LF cannot appear in a simple string; they become spaces so the framing survives.
  ExpectBytes([](ReplyBuilder& rb) { rb.SimpleString("a\r\nb"); }, "+a  b\r\n", "+a  b\r\n");
}

TEST(ReplyBuilder, Error) {
  ExpectBytes([](ReplyBuilder& rb) { rb.Error("ERR syntax error"); }, "-ERR syntax error\r\n",
              "-ERR syntax error\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Error("WRONGTYPE Operation against a key"); },
              "-WRONGTYPE Operation against a key\r\n", "-WRONGTYPE Operation against a key\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Error("ERR bad\r\nthing\rhere\n"); },
              "-ERR bad  thing here \r\n", "-ERR bad  thing here \r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Error("ERR a\0b"_sv); }, "-ERR a\0b\r\n"_sv,
              "-ERR a\0b\r\n"_sv);
  ExpectBytes([](ReplyBuilder& rb) { rb.Error(""); }, "-\r\n", "-\r\n");
}

TEST(ReplyBuilder, Integer) {
  ExpectBytes([](ReplyBuilder& rb) { rb.Integer(0); }, ":0\r\n", ":0\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Integer(1); }, ":1\r\n", ":1\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Integer(-1); }, ":-1\r\n", ":-1\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Integer(30000); }, ":30000\r\n", ":30000\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Integer(INT64_MAX); }, ":9223372036854775807\r\n",
              ":9223372036854775807\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Integer(INT64_MIN); }, ":-9223372036854775808\r\n",
              ":-9223372036854775808\r\n");
}

TEST(ReplyBuilder, IntegerMatchesToStringEverywhere) {
  std::mt19937_64 rng(42);
  std::string out;
  ReplyBuilder rb(&out);
  for (int i = 0; i < 10000; ++i) {
    const int64_t v = static_cast<int64_t>(rng()) >> (rng() % 64);
    out.clear();
    rb.Integer(v);
    ASSERT_EQ(out, std::string(":").append(std::to_string(v)).append("\r\n"));
  }
}

TEST(ReplyBuilder, Bulk) {
  ExpectBytes([](ReplyBuilder& rb) { rb.Bulk("hello"); }, "$5\r\nhello\r\n", "$5\r\nhello\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Bulk(""); }, "$0\r\n\r\n", "$0\r\n\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Bulk("a\r\n\0b"_sv); }, "$5\r\na\r\n\0b\r\n"_sv,
              "$5\r\na\r\n\0b\r\n"_sv);
  const std::string big(100000, 'x');
  const std::string want = std::string("$100000\r\n").append(big).append("\r\n");
  ExpectBytes([&](ReplyBuilder& rb) { rb.Bulk(big); }, want, want);
}

TEST(ReplyBuilder, Null) {
  ExpectBytes([](ReplyBuilder& rb) { rb.Null(); }, "$-1\r\n", "_\r\n");
}

TEST(ReplyBuilder, NullArray) {
  ExpectBytes([](ReplyBuilder& rb) { rb.NullArray(); }, "*-1\r\n", "_\r\n");
}

TEST(ReplyBuilder, ArrayHeader) {
  ExpectBytes([](ReplyBuilder& rb) { rb.ArrayHeader(0); }, "*0\r\n", "*0\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.ArrayHeader(3); }, "*3\r\n", "*3\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.ArrayHeader(123456); }, "*123456\r\n", "*123456\r\n");
}

TEST(ReplyBuilder, MapHeader) {
  ExpectBytes([](ReplyBuilder& rb) { rb.MapHeader(2); }, "*4\r\n", "%2\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.MapHeader(0); }, "*0\r\n", "%0\r\n");
}

TEST(ReplyBuilder, SetHeader) {
  ExpectBytes([](ReplyBuilder& rb) { rb.SetHeader(3); }, "*3\r\n", "~3\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.SetHeader(0); }, "*0\r\n", "~0\r\n");
}

TEST(ReplyBuilder, PushHeader) {
  ExpectBytes([](ReplyBuilder& rb) { rb.PushHeader(3); }, "*3\r\n", ">3\r\n");
}

TEST(ReplyBuilder, Double) {
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(1.5); }, "$3\r\n1.5\r\n", ",1.5\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(10); }, "$2\r\n10\r\n", ",10\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(-0.25); }, "$5\r\n-0.25\r\n", ",-0.25\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(0.1); }, "$3\r\n0.1\r\n", ",0.1\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(INFINITY); }, "$3\r\ninf\r\n", ",inf\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(-INFINITY); }, "$4\r\n-inf\r\n", ",-inf\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(NAN); }, "$3\r\nnan\r\n", ",nan\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(-NAN); }, "$3\r\nnan\r\n", ",nan\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Double(1e300); }, "$6\r\n1e+300\r\n", ",1e+300\r\n");
}

TEST(ReplyBuilder, Bool) {
  ExpectBytes([](ReplyBuilder& rb) { rb.Bool(true); }, ":1\r\n", "#t\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Bool(false); }, ":0\r\n", "#f\r\n");
}

TEST(ReplyBuilder, Verbatim) {
  ExpectBytes([](ReplyBuilder& rb) { rb.Verbatim("hello"); }, "$5\r\nhello\r\n",
              "=9\r\ntxt:hello\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Verbatim(""); }, "$0\r\n\r\n", "=4\r\ntxt:\r\n");
  ExpectBytes([](ReplyBuilder& rb) { rb.Verbatim("a\r\nb"); }, "$4\r\na\r\nb\r\n",
              "=8\r\ntxt:a\r\nb\r\n");
}

TEST(ReplyBuilder, BulkArray) {
  const std::string_view items[] = {"SET", "", "a\r\nb"};
  ExpectBytes([&](ReplyBuilder& rb) { rb.BulkArray(items, 3); },
              "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\na\r\nb\r\n",
              "*3\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\na\r\nb\r\n");
  ExpectBytes([&](ReplyBuilder& rb) { rb.BulkArray(nullptr, 0); }, "*0\r\n", "*0\r\n");
}

TEST(ReplyBuilder, NestedReply) {
  // A map of two entries as a client would read it, in both protocols.
  auto write = [](ReplyBuilder& rb) {
    rb.MapHeader(2);
    rb.Bulk("owner");
    rb.Bulk("c1");
    rb.Bulk("ttl");
    rb.Integer(1500);
  };
  ExpectBytes(write, "*4\r\n$5\r\nowner\r\n$2\r\nc1\r\n$3\r\nttl\r\n:1500\r\n",
              "%2\r\n$5\r\nowner\r\n$2\r\nc1\r\n$3\r\nttl\r\n:1500\r\n");
}

TEST(ReplyBuilder, Accessors) {
  std::string a;
  std::string b;
  ReplyBuilder rb(&a);
  EXPECT_EQ(rb.resp(), 2);
  EXPECT_EQ(rb.out(), &a);
  rb.Null();
  rb.set_resp(3);
  EXPECT_EQ(rb.resp(), 3);
  rb.Null();
  rb.set_out(&b);
  EXPECT_EQ(rb.out(), &b);
  rb.Bool(true);
  EXPECT_EQ(a, "$-1\r\n_\r\n");
  EXPECT_EQ(b, "#t\r\n");
}

TEST(FormatDouble, Specials) {
  EXPECT_EQ(FormatDouble(INFINITY), "inf");
  EXPECT_EQ(FormatDouble(-INFINITY), "-inf");
  EXPECT_EQ(FormatDouble(NAN), "nan");
  EXPECT_EQ(FormatDouble(-NAN), "nan");
  EXPECT_EQ(FormatDouble(0.0), "0");
  EXPECT_EQ(FormatDouble(-0.0), "-0");
}

TEST(FormatDouble, IntegralValuesPrintAsIntegers) {
  EXPECT_EQ(FormatDouble(10), "10");
  EXPECT_EQ(FormatDouble(-7), "-7");
  EXPECT_EQ(FormatDouble(1e15), "1000000000000000");
  EXPECT_EQ(FormatDouble(1e17), "100000000000000000");
  EXPECT_EQ(FormatDouble(4611686018427387904.0), "4611686018427387904");  // 2^62
  EXPECT_EQ(FormatDouble(-4611686018427387904.0), "-4611686018427387904");
  // Beyond 2^62, the shortest round-trip form, fixed or scientific, whichever is shorter.
  EXPECT_EQ(FormatDouble(9223372036854775808.0), "9223372036854775808");
  EXPECT_EQ(FormatDouble(1.5e19), "1.5e+19");
  EXPECT_EQ(FormatDouble(1e20), "1e+20");
}

TEST(FormatDouble, Shortest) {
  EXPECT_EQ(FormatDouble(1.5), "1.5");
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(FormatDouble(3.14159), "3.14159");
  EXPECT_EQ(FormatDouble(-2.5), "-2.5");
  EXPECT_EQ(FormatDouble(1e-7), "1e-07");
  EXPECT_EQ(FormatDouble(5e-324), "5e-324");
  EXPECT_EQ(FormatDouble(DBL_MAX), "1.7976931348623157e+308");
  EXPECT_EQ(FormatDouble(-DBL_MIN), "-2.2250738585072014e-308");
}

TEST(FormatDouble, RoundTrips) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    uint64_t bits = rng();
    double v;
    static_assert(sizeof(v) == sizeof(bits));
    std::memcpy(&v, &bits, sizeof(v));
    if (std::isnan(v)) continue;
    const std::string s = FormatDouble(v);
    ASSERT_EQ(std::strtod(s.c_str(), nullptr), v) << s;
    ASSERT_EQ(s.find(".0e"), std::string::npos) << s;
  }
  for (int i = 0; i < 10000; ++i) {
    const double v = static_cast<double>(static_cast<int64_t>(rng() >> 2) - (int64_t{1} << 61));
    const std::string s = FormatDouble(v);
    ASSERT_EQ(std::strtod(s.c_str(), nullptr), v) << s;
    ASSERT_EQ(s.find_first_of(".e"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace deadbolt::protocol
