// Bitmap commands of Db (GETBIT, SETBIT, BITCOUNT, BITPOS), against Redis 7.2's bitops.c
// behaviour. Time is a plain int64 that the tests advance.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "shard/db.h"

namespace deadbolt::shard {
namespace {

using Range = Db::BitRange;

Range Bytes(int64_t start, int64_t end) { return Range{true, true, false, start, end}; }
Range Bits(int64_t start, int64_t end) { return Range{true, true, true, start, end}; }
Range From(int64_t start) { return Range{true, false, false, start, 0}; }

class DbBitmapTest : public ::testing::Test {
 protected:
  void Put(std::string_view key, std::string_view value) {
    ASSERT_TRUE(db.Set(key, value, SetOptions{}, now)->written);
  }
  std::string Value(std::string_view key) { return std::string(*db.Get(key, now)); }
  Db db;
  int64_t now = 1'000'000;
};

TEST_F(DbBitmapTest, SetBitCreatesAndPadsWithZeroBytes) {
  EXPECT_EQ(*db.SetBit("k", 7, true, now), 0);
  EXPECT_EQ(Value("k"), std::string("\x01", 1));
  EXPECT_EQ(*db.SetBit("k", 8 * 100, true, now), 0);  // grown past the inline size
  std::string want(101, '\0');
  want[0] = '\x01';
  want[100] = '\x80';
  EXPECT_EQ(Value("k"), want);
  EXPECT_EQ(*db.SetBit("k", 7, false, now), 1);
  EXPECT_EQ(*db.SetBit("k", 7, false, now), 0);
  // Clearing a bit of a missing key still creates it, as long as the bit needs.
  EXPECT_EQ(*db.SetBit("z", 20, false, now), 0);
  EXPECT_EQ(Value("z"), std::string(3, '\0'));
}

TEST_F(DbBitmapTest, GetBitReadsMostSignificantFirst) {
  Put("k", "`");  // 0110 0000
  EXPECT_EQ(*db.GetBit("k", 0, now), 0);
  EXPECT_EQ(*db.GetBit("k", 1, now), 1);
  EXPECT_EQ(*db.GetBit("k", 2, now), 1);
  EXPECT_EQ(*db.GetBit("k", 3, now), 0);
  EXPECT_EQ(*db.GetBit("k", 8, now), 0);  // past the end
  EXPECT_EQ(*db.GetBit("k", uint64_t{1} << 40, now), 0);
  EXPECT_EQ(*db.GetBit("missing", 3, now), 0);
}

TEST_F(DbBitmapTest, SetBitKeepsTheTtl) {
  SetOptions o;
  o.expire = SetOptions::Expire::kAt;
  o.expire_at_ms = now + 5000;
  ASSERT_TRUE(db.Set("k", "a", o, now)->written);
  ASSERT_TRUE(db.SetBit("k", 800, true, now).ok());
  EXPECT_EQ(db.Pttl("k", now), 5000);
  now += 5001;
  EXPECT_EQ(*db.GetBit("k", 800, now), 0);  // expired with it
}

TEST_F(DbBitmapTest, WrongType) {
  ASSERT_TRUE(db.HSet("h", "f", "v", now).ok());
  EXPECT_EQ(db.GetBit("h", 0, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.SetBit("h", 0, true, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.BitCount("h", Range{}, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.BitPos("h", 1, Range{}, now).status(), OpStatus::kWrongType);
}

TEST_F(DbBitmapTest, BitCountRanges) {
  Put("k", "foobar");  // Redis's own example: 26 bits, 4 in [1,1], 6 in [5,30] bits
  EXPECT_EQ(*db.BitCount("k", Range{}, now), 26);
  EXPECT_EQ(*db.BitCount("k", Bytes(0, 0), now), 4);
  EXPECT_EQ(*db.BitCount("k", Bytes(1, 1), now), 6);
  EXPECT_EQ(*db.BitCount("k", Bytes(1, -1), now), 22);
  EXPECT_EQ(*db.BitCount("k", Bits(5, 30), now), 17);
  EXPECT_EQ(*db.BitCount("k", Bytes(-100, 100), now), 26);
  // Both negative and reversed: empty, before any clamping (which would make it byte 0).
  EXPECT_EQ(*db.BitCount("k", Bytes(-50, -100), now), 0);
  EXPECT_EQ(*db.BitCount("k", Bytes(-100, -50), now), 4);  // clamped to byte 0
  EXPECT_EQ(*db.BitCount("k", Bytes(3, 1), now), 0);
  EXPECT_EQ(*db.BitCount("missing", Bytes(0, -1), now), 0);
  Put("e", "");
  EXPECT_EQ(*db.BitCount("e", Range{}, now), 0);
}

TEST_F(DbBitmapTest, BitPosAsRedisDocuments) {
  Put("k", std::string("\xff\xf0\x00", 3));
  EXPECT_EQ(*db.BitPos("k", 0, Range{}, now), 12);
  Put("k", std::string("\x00\xff\xf0", 3));
  EXPECT_EQ(*db.BitPos("k", 1, From(0), now), 8);
  EXPECT_EQ(*db.BitPos("k", 1, From(2), now), 16);
  EXPECT_EQ(*db.BitPos("k", 1, Bits(7, 15), now), 8);
  Put("k", std::string("\x00\x00\x00", 3));
  EXPECT_EQ(*db.BitPos("k", 1, Range{}, now), -1);
  // No clear bit: without an end the string goes on with zeros; with one, none is found.
  Put("k", std::string("\xff\xff", 2));
  EXPECT_EQ(*db.BitPos("k", 0, Range{}, now), 16);
  EXPECT_EQ(*db.BitPos("k", 0, From(1), now), 16);
  EXPECT_EQ(*db.BitPos("k", 0, Bytes(0, -1), now), -1);
  EXPECT_EQ(*db.BitPos("missing", 0, Range{}, now), 0);
  EXPECT_EQ(*db.BitPos("missing", 1, Bytes(2, 3), now), -1);
  Put("e", "");
  EXPECT_EQ(*db.BitPos("e", 0, Range{}, now), -1);          // an empty range holds neither
  EXPECT_EQ(*db.BitPos("k", 1, Bytes(-100, -50), now), 0);  // both clamped to byte 0
}

TEST_F(DbBitmapTest, BitOpResultPadsShorterSourcesWithZeros) {
  using Op = Db::BitOp;
  const std::string a("\xff\x0f\xf0", 3), b("\x3c", 1);
  EXPECT_EQ(Db::BitOpResult(Op::kAnd, {a, b}), std::string("\x3c\x00\x00", 3));
  EXPECT_EQ(Db::BitOpResult(Op::kOr, {b, a}), std::string("\xff\x0f\xf0", 3));
  EXPECT_EQ(Db::BitOpResult(Op::kXor, {a, b, b}), a);
  EXPECT_EQ(Db::BitOpResult(Op::kXor, {a, b}), std::string("\xc3\x0f\xf0", 3));
  EXPECT_EQ(Db::BitOpResult(Op::kNot, {a}), std::string("\x00\xf0\x0f", 3));
  EXPECT_EQ(Db::BitOpResult(Op::kAnd, {a, ""}), std::string(3, '\0'));  // a missing key
  EXPECT_EQ(Db::BitOpResult(Op::kOr, {"", ""}), "");
  // A missing key's view has no bytes at all (UBSan: nothing is copied from it).
  EXPECT_EQ(Db::BitOpResult(Op::kOr, {std::string_view(), b}), b);
}

TEST_F(DbBitmapTest, BitFieldOverflowRules) {
  using Op = Db::BitFieldOp;
  auto op = [](Op::Kind kind, bool is_signed, int bits, uint64_t offset, int64_t value,
               Op::Overflow overflow = Op::Overflow::kWrap) {
    return Op{kind, is_signed, bits, offset, value, overflow};
  };
  using V = std::vector<std::optional<int64_t>>;
  const auto kSet = Op::Kind::kSet, kIncr = Op::Kind::kIncrBy, kGet = Op::Kind::kGet;
  const auto kSat = Op::Overflow::kSat, kFail = Op::Overflow::kFail;
  // A field at a far offset pads the new key; SET answers the old value, INCRBY the new.
  EXPECT_EQ(*db.BitField("k", {op(kSet, false, 8, 100, 255), op(kIncr, false, 8, 100, 10)}, now),
            (V{0, 9}));
  EXPECT_EQ(*db.StrLen("k", now), 14);
  EXPECT_EQ(*db.BitField("k", {op(kIncr, false, 8, 100, 300, kSat)}, now), (V{255}));
  EXPECT_EQ(*db.BitField("k", {op(kIncr, false, 8, 100, 1, kFail)}, now), (V{std::nullopt}));
  EXPECT_EQ(*db.BitField("k", {op(kGet, true, 8, 100, 0)}, now), (V{-1}));
  // Unsigned SET takes its value as unsigned: -1 is past the maximum.
  EXPECT_EQ(*db.BitField("k", {op(kSet, false, 8, 0, -1, kSat), op(kGet, false, 8, 0, 0)}, now),
            (V{0, 255}));
  EXPECT_EQ(*db.BitField("k", {op(kSet, true, 8, 0, 200), op(kGet, true, 8, 0, 0)}, now),
            (V{-1, -56}));
  EXPECT_EQ(*db.BitField("k", {op(kSet, true, 8, 0, -200, kSat), op(kGet, true, 8, 0, 0)}, now),
            (V{-56, -128}));
  // 64-bit signed wraps and saturates at int64's ends.
  EXPECT_EQ(*db.BitField("k", {op(kSet, true, 64, 0, INT64_MIN), op(kIncr, true, 64, 0, -1)}, now),
            (V{-128 * (int64_t{1} << 56) + 0, INT64_MAX}));
  EXPECT_EQ(*db.BitField("k", {op(kIncr, true, 64, 0, 1, kSat)}, now), (V{INT64_MAX}));
  // Reads only: a missing key is zeros and is not created; a write FAILing still creates it.
  EXPECT_EQ(*db.BitField("m", {op(kGet, false, 16, 3, 0)}, now), (V{0}));
  EXPECT_FALSE(db.Exists("m", now));
  EXPECT_EQ(*db.BitField("m", {op(kIncr, false, 2, 100, 9, kFail)}, now), (V{std::nullopt}));
  EXPECT_EQ(*db.StrLen("m", now), 13);
  ASSERT_TRUE(db.HSet("h", "f", "v", now).ok());
  EXPECT_EQ(db.BitField("h", {op(kGet, false, 8, 0, 0)}, now).status(), OpStatus::kWrongType);
}

// The word-at-a-time counting and search, against a bit-by-bit reading of the same range, over
// random strings (long enough to hold whole words) and ranges.
TEST_F(DbBitmapTest, FastPathsMatchBitByBit) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; round++) {
    const int len = static_cast<int>(rng() % 40);
    std::string s(static_cast<size_t>(len), '\0');
    const int density = static_cast<int>(rng() % 4);  // mostly 0s, mixed, mostly 1s, all 1s
    for (char& c : s) {
      unsigned v = rng() & 0xff;
      if (density == 0) v &= rng() & rng();
      if (density == 2) v |= rng() | rng();
      if (density == 3) v = 0xff;
      c = static_cast<char>(v);
    }
    Put("k", s);
    const bool bits = rng() % 2;
    const int64_t total = bits ? len * 8 : len;
    const int64_t start = static_cast<int64_t>(rng() % 100) - 50;
    const int64_t end = static_cast<int64_t>(rng() % 100) - 50;
    const Range r{true, true, bits, start, end};
    // The range as Redis resolves it, in bits.
    int64_t a = start < 0 ? std::max<int64_t>(0, total + start) : start;
    int64_t b = end < 0 ? std::max<int64_t>(0, total + end) : end;
    if (b >= total) b = total - 1;
    const bool empty = a > b;
    if (!bits) {
      a *= 8;
      b = b * 8 + 7;
    }
    auto bit_at = [&](int64_t i) {
      return (static_cast<unsigned char>(s[i / 8]) >> (7 - i % 8)) & 1;
    };
    int64_t ones = 0;
    int64_t first[2] = {-1, -1};
    for (int64_t i = a; !empty && i <= b; i++) {
      const int v = bit_at(i);
      ones += v;
      if (first[v] < 0) first[v] = i;
    }
    const bool reversed_negatives = start < 0 && end < 0 && start > end;
    SCOPED_TRACE(testing::Message()
                 << "len " << len << " bits " << bits << " range " << start << ".." << end);
    EXPECT_EQ(*db.BitCount("k", r, now), reversed_negatives || empty ? 0 : ones);
    EXPECT_EQ(*db.BitPos("k", 1, r, now), empty ? -1 : first[1]);
    EXPECT_EQ(*db.BitPos("k", 0, r, now), empty ? -1 : first[0]);
  }
}

}  // namespace
}  // namespace deadbolt::shard
