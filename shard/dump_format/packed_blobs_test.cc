// The packed encodings inside DUMP payloads (packed_blobs.h): listpacks with every entry encoding
// (written here from the format, as listpack.c lays them out), ziplists with both previous-length
// forms, intsets of each width; and every header, length and terminator that does not match the
// bytes is refused.

#include "shard/dump_format/packed_blobs.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace deadbolt::shard::dump {
namespace {

using Strings = std::vector<std::string>;

void PutLe(std::string* out, uint64_t v, int n) {
  for (int i = 0; i < n; i++) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// An entry's length written backwards, as lpEncodeBacklen does.
std::string Backlen(uint64_t l) {
  int n = l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3 : l < 268435455 ? 4 : 5;
  std::string out(n, '\0');
  for (int i = 0; i < n; i++) {
    unsigned char b = (l >> (7 * i)) & 127;
    if (i + 1 < n) b |= 128;
    out[n - 1 - i] = static_cast<char>(b);
  }
  return out;
}

struct Item {
  bool is_int;
  int64_t v;
  std::string s;
};

std::string ListpackEntry(const Item& it) {
  std::string e;
  if (it.is_int) {
    const int64_t v = it.v;
    if (v >= 0 && v <= 127) {
      e.push_back(static_cast<char>(v));
    } else if (v >= -4096 && v <= 4095) {
      const uint64_t u = static_cast<uint64_t>(v) & 0x1FFF;
      e.push_back(static_cast<char>(0xC0 | (u >> 8)));
      e.push_back(static_cast<char>(u & 0xFF));
    } else {
      const int w = v >= INT16_MIN && v <= INT16_MAX   ? 2
                    : v >= -(1 << 23) && v < (1 << 23) ? 3
                    : v >= INT32_MIN && v <= INT32_MAX ? 4
                                                       : 8;
      e.push_back(static_cast<char>(w == 2 ? 0xF1 : w == 3 ? 0xF2 : w == 4 ? 0xF3 : 0xF4));
      PutLe(&e, static_cast<uint64_t>(v), w);
    }
  } else {
    const size_t n = it.s.size();
    if (n < 64) {
      e.push_back(static_cast<char>(0x80 | n));
    } else if (n < 4096) {
      e.push_back(static_cast<char>(0xE0 | (n >> 8)));
      e.push_back(static_cast<char>(n & 0xFF));
    } else {
      e.push_back(static_cast<char>(0xF0));
      PutLe(&e, n, 4);
    }
    e += it.s;
  }
  return e + Backlen(e.size());
}

std::string Listpack(const std::vector<Item>& items, int count = -1) {
  std::string body;
  for (const Item& it : items) body += ListpackEntry(it);
  std::string out;
  PutLe(&out, 6 + body.size() + 1, 4);
  PutLe(&out, count >= 0 ? count : items.size(), 2);
  return out + body + "\xff";
}

Item I(int64_t v) { return {true, v, ""}; }
Item S(std::string s) { return {false, 0, std::move(s)}; }

TEST(Listpack, EveryEncodingReads) {
  const std::vector<Item> items = {I(0),
                                   I(127),
                                   I(128),
                                   I(-1),
                                   I(-4096),
                                   I(4095),
                                   I(-4097),
                                   I(32767),
                                   I(-32768),
                                   I(32768),
                                   I(-8388608),
                                   I(8388607),
                                   I(8388608),
                                   I(INT32_MIN),
                                   I(INT32_MAX),
                                   I(INT64_MIN),
                                   I(INT64_MAX),
                                   S(""),
                                   S("abc"),
                                   S(std::string(63, 'a')),
                                   S(std::string(64, 'b')),
                                   S(std::string(4095, 'c')),
                                   S(std::string(4096, 'd')),
                                   S(std::string(20000, 'e'))};
  Strings got;
  ASSERT_TRUE(ReadListpack(Listpack(items), &got));
  ASSERT_EQ(got.size(), items.size());
  for (size_t i = 0; i < items.size(); i++) {
    EXPECT_EQ(got[i], items[i].is_int ? std::to_string(items[i].v) : items[i].s) << i;
  }
  got.clear();
  EXPECT_TRUE(ReadListpack(Listpack(items, 65535), &got));  // a count too big to keep
}

TEST(Listpack, RefusesWhatDoesNotAddUp) {
  const std::string good = Listpack({S("ab"), I(5), I(-300)});
  Strings got;
  ASSERT_TRUE(ReadListpack(good, &got));
  EXPECT_FALSE(ReadListpack(Listpack({S("ab"), I(5)}, 3), &got));  // the count
  std::string bad = good;
  bad[0]++;  // total bytes
  EXPECT_FALSE(ReadListpack(bad, &got));
  bad = good;
  bad.back() = '\x00';  // terminator
  EXPECT_FALSE(ReadListpack(bad, &got));
  bad = good;
  bad[6 + 3]++;  // the first entry's backlen
  EXPECT_FALSE(ReadListpack(bad, &got));
  bad = good;
  bad[6] = static_cast<char>(0x85);  // the first string claims 5 bytes
  EXPECT_FALSE(ReadListpack(bad, &got));
  bad = good;
  bad[6] = static_cast<char>(0xF7);  // an unused encoding
  EXPECT_FALSE(ReadListpack(bad, &got));
  for (size_t cut = 0; cut < good.size(); cut++) {  // every truncation, its header fixed
    std::string t = good.substr(0, cut) + "\xff";
    if (t.size() >= 4) t[0] = static_cast<char>(t.size()), t[1] = t[2] = t[3] = 0;
    Strings g;
    EXPECT_FALSE(ReadListpack(t, &g) && g.size() == 3 && t != good) << cut;
  }
  EXPECT_FALSE(ReadListpack("", &got));
}

// A ziplist entry: the previous entry's length (1 byte, or 0xFE and 4), then encoding and data.
std::string ZipEntry(size_t prev, const std::string& enc_and_data) {
  std::string e;
  if (prev < 254) {
    e.push_back(static_cast<char>(prev));
  } else {
    e.push_back(static_cast<char>(0xFE));
    PutLe(&e, prev, 4);
  }
  return e + enc_and_data;
}

std::string Ziplist(const std::vector<std::string>& encoded, int count = -1) {
  std::string body;
  size_t prev = 0, last = 10;
  for (const std::string& enc : encoded) {
    last = 10 + body.size();
    std::string e = ZipEntry(prev, enc);
    body += e;
    prev = e.size();
  }
  std::string out;
  PutLe(&out, 10 + body.size() + 1, 4);
  PutLe(&out, last, 4);
  PutLe(&out, count >= 0 ? count : encoded.size(), 2);
  return out + body + "\xff";
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

TEST(Ziplist, EveryEncodingReads) {
  const std::string s300(300, 's'), s20000(20000, 't');
  const std::vector<std::string> enc = {
      Bytes({0x03}) + "abc",
      Bytes({0x41, 0x2C}) + s300,                      // 14-bit length, big endian (300)
      Bytes({0x80, 0x00, 0x00, 0x4E, 0x20}) + s20000,  // 32-bit, big endian
      Bytes({0xF1}),                                   // immediate 0
      Bytes({0xFD}),                                   // immediate 12
      Bytes({0xFE, 0x80}),                             // int8 -128
      Bytes({0xC0, 0x00, 0x80}),                       // int16 -32768
      Bytes({0xF0, 0xFF, 0xFF, 0x7F}),                 // int24 8388607
      Bytes({0xD0, 0x00, 0x00, 0x00, 0x80}),           // int32 INT32_MIN
      Bytes({0xE0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}),  // int64 max
  };
  Strings got;
  ASSERT_TRUE(ReadZiplist(Ziplist(enc), &got));
  EXPECT_EQ(got, (Strings{"abc", s300, s20000, "0", "12", "-128", "-32768", "8388607",
                          "-2147483648", "9223372036854775807"}));
}

TEST(Ziplist, RefusesWhatDoesNotAddUp) {
  const std::vector<std::string> enc = {Bytes({0x02}) + "ab", Bytes({0xF5})};
  Strings got;
  ASSERT_TRUE(ReadZiplist(Ziplist(enc), &got));
  EXPECT_EQ(got, (Strings{"ab", "4"}));
  EXPECT_FALSE(ReadZiplist(Ziplist(enc, 3), &got));  // the count
  std::string bad = Ziplist(enc);
  bad[4]++;  // the last entry's offset
  EXPECT_FALSE(ReadZiplist(bad, &got));
  bad = Ziplist(enc);
  bad[14]++;  // the second entry's previous length
  EXPECT_FALSE(ReadZiplist(bad, &got));
  bad = Ziplist(enc);
  bad[15] = static_cast<char>(0xC1);  // no such integer encoding
  EXPECT_FALSE(ReadZiplist(bad, &got));
  EXPECT_FALSE(ReadZiplist(Ziplist({Bytes({0x05}) + "ab"}), &got));  // a string past the end
}

std::string Intset(int width, const std::vector<int64_t>& v) {
  std::string out;
  PutLe(&out, width, 4);
  PutLe(&out, v.size(), 4);
  for (int64_t x : v) PutLe(&out, static_cast<uint64_t>(x), width);
  return out;
}

TEST(Intset, EachWidthReadsAndOrderIsChecked) {
  Strings got;
  ASSERT_TRUE(ReadIntset(Intset(2, {-32768, -1, 0, 32767}), &got));
  EXPECT_EQ(got, (Strings{"-32768", "-1", "0", "32767"}));
  got.clear();
  ASSERT_TRUE(ReadIntset(Intset(4, {INT32_MIN, 7}), &got));
  EXPECT_EQ(got, (Strings{"-2147483648", "7"}));
  got.clear();
  ASSERT_TRUE(ReadIntset(Intset(8, {INT64_MIN, INT64_MAX}), &got));
  EXPECT_EQ(got, (Strings{"-9223372036854775808", "9223372036854775807"}));
  EXPECT_FALSE(ReadIntset(Intset(2, {3, 3}), &got));  // not strictly ascending
  EXPECT_FALSE(ReadIntset(Intset(2, {3, 1}), &got));
  EXPECT_FALSE(ReadIntset(Intset(3, {1}), &got));                   // no such width
  EXPECT_FALSE(ReadIntset(Intset(2, {1, 2}).substr(0, 11), &got));  // fewer bytes than claimed
  EXPECT_FALSE(ReadIntset("", &got));
}

}  // namespace
}  // namespace deadbolt::shard::dump
