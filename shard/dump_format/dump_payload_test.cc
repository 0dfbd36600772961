// DUMP payloads (dump_payload.h): payloads redis-server 7.0.15 wrote (one per encoding it uses)
// read back to their values; what deadbolt writes is byte for byte Redis's where Redis writes the
// same encoding, and reads back; older encodings built by hand; and every way a payload can lie:
// a changed byte, a newer version, empty or duplicate contents, NaN scores, LZF that claims more
// than it can hold, and random damage behind a valid checksum (run under the sanitizers).

#include "shard/dump_format/dump_payload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "shard/dump_format/crc64.h"
#include "shard/dump_format/lzf.h"

namespace deadbolt::shard::dump {
namespace {

std::string Hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// Closes a value's bytes with a version and a right checksum.
std::string Close(std::string body, uint16_t version = 10) {
  body.push_back(static_cast<char>(version & 0xFF));
  body.push_back(static_cast<char>(version >> 8));
  const uint64_t crc = Crc64(0, body);
  for (int i = 0; i < 8; i++) body.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  return body;
}

KeySnapshot Decode(const std::string& payload) {
  EXPECT_EQ(CheckFooter(payload), OpStatus::kOk);
  OpResult<KeySnapshot> r = DecodePayload(payload, 1 << 20);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : KeySnapshot{};
}

OpStatus DecodeStatus(const std::string& payload, size_t max_bytes = 1 << 20) {
  return DecodePayload(payload, max_bytes).status();
}

using Pairs = std::vector<std::pair<std::string, std::string>>;
using Strings = std::vector<std::string>;

Pairs Scores(std::vector<std::pair<std::string, double>> v) {
  Pairs out;
  for (auto& [m, s] : v) out.emplace_back(m, ZScoreBytes(s));
  return out;
}

TEST(Crc64, RedisCheckValue) {
  EXPECT_EQ(Crc64(0, "123456789"), 0xe9c6d914c4b8d9caULL);
  EXPECT_EQ(Crc64(0, ""), 0u);
  // The eight-byte path and the byte path agree, at every split.
  std::string s = "The quick brown fox jumps over the lazy dog, twice over and more.";
  for (size_t i = 0; i <= s.size(); i++) {
    EXPECT_EQ(Crc64(Crc64(0, s.substr(0, i)), s.substr(i)), Crc64(0, s));
  }
}

// --- what redis-server 7.0.15 wrote (DUMP, hex) ---

TEST(DumpPayload, ReadsRedisStrings) {
  EXPECT_EQ(Decode(Hex("00066f776e6572310a0063e952d44e892567")).str, "owner1");
  EXPECT_EQ(Decode(Hex("00c139300a009d94ea2793fc08b9")).str, "12345");  // int16
  EXPECT_EQ(Decode(Hex("00c0f90a005e26d130d7a242ab")).str, "-7");       // int8
  EXPECT_EQ(Decode(Hex("000b39393939393939393939390a0023b048fb0edbef7f")).str, "99999999999");
  EXPECT_EQ(Decode(Hex("00000a005d9b5c400f7fa2da")).str, "");
  // LZF, with a reference that overlaps what it copies, and one with literals between.
  EXPECT_EQ(Decode(Hex("00c3094064017878e057000178780a005db7f663bb08625f")).str,
            std::string(100, 'x'));
  std::string s5;
  for (int i = 0; i < 10; i++) s5 += "abcdefghij";
  s5 += "klmnopqrstuvwxyz";
  EXPECT_EQ(Decode(Hex("00c32040740a6162636465666768696a61e050090f6b6c6d6e6f707172737475767778797a"
                       "0a0010ae402b0c441812"))
                .str,
            s5);
}

TEST(DumpPayload, ReadsRedisCollections) {
  KeySnapshot l =
      Decode(Hex("120102171700000005008161028162020101df3802f270110104ff0a00dbba7006c27"
                 "c61a0"));  // quicklist of one listpack: strings, 7-bit, 13-bit, int24
  EXPECT_EQ(l.type, ValueType::kList);
  EXPECT_EQ(l.members, (Strings{"a", "b", "1", "-200", "70000"}));
  const std::string abc = "abcabcabcabcabcabcabcabcabcabcabcabc";
  l =
      Decode(Hex("120102c318405609560000000300a4616263e018020025e01d2503817802ff0a00f87103d1e179"
                 "9249"));  // its listpack LZF-compressed
  EXPECT_EQ(l.members, (Strings{abc, abc, "x"}));

  KeySnapshot set =
      Decode(Hex("0b1c0400000005000000fbffffff010000000200000003000000a08601000a00d365f8"
                 "d8af8752ac"));  // intset
  EXPECT_EQ(set.type, ValueType::kSet);
  EXPECT_EQ(set.members, (Strings{"-5", "1", "2", "3", "100000"}));
  set =
      Decode(Hex("0bc31a2004080000000320030390eefeff40000005200be00000020100000a001f6caf9a17eebd"
                 "0a"));  // a 64-bit intset, LZF-compressed
  EXPECT_EQ(set.members, (Strings{"-70000", "5", "1099511627776"}));
  set = Decode(Hex("02030163016101620a00d51bc2f0968e69c3"));
  EXPECT_EQ(set.members, (Strings{"c", "a", "b"}));
  set = Decode(Hex("0202c002c0010a000b850052aea91fa1"));  // members written as integers
  EXPECT_EQ(set.members, (Strings{"2", "1"}));

  KeySnapshot h = Decode(Hex("10151500000004008266310382763103826632030201ff0a005c5ea813feec1ff5"));
  EXPECT_EQ(h.type, ValueType::kHash);
  EXPECT_EQ(h.fields, (Pairs{{"f1", "v1"}, {"f2", "2"}}));
  h = Decode(Hex("0402026632c0020266310276310a008f78bb39a4504727"));
  EXPECT_EQ(h.fields, (Pairs{{"f2", "2"}, {"f1", "v1"}}));

  KeySnapshot z =
      Decode(Hex("111a1a0000000600816302dffd02816102010181620283322e3504ff0a00a68a1ab1a9"
                 "f2dcc2"));  // listpack: scores as integers and as text
  EXPECT_EQ(z.type, ValueType::kZSet);
  EXPECT_EQ(z.fields, Scores({{"c", -3}, {"a", 1}, {"b", 2.5}}));
  z = Decode(
      Hex("0503016200000000000004400161000000000000f03f0163000000000000f0ff0a009a24ca8fdcb1d0"
          "8c"));  // binary scores, -inf among them
  EXPECT_EQ(z.fields, Scores({{"b", 2.5}, {"a", 1}, {"c", -INFINITY}}));
}

// --- what deadbolt writes ---

TEST(DumpPayload, StringsAreWrittenAsRedisWritesThem) {
  KeySnapshot s;
  s.type = ValueType::kString;
  for (auto [value, hex] : std::vector<std::pair<std::string, std::string>>{
           {"owner1", "00066f776e6572310a0063e952d44e892567"},
           {"12345", "00c139300a009d94ea2793fc08b9"},
           {"-7", "00c0f90a005e26d130d7a242ab"},
           {"99999999999", "000b39393939393939393939390a0023b048fb0edbef7f"},
           {"", "00000a005d9b5c400f7fa2da"}}) {
    s.str = value;
    EXPECT_EQ(EncodePayload(s), Hex(hex)) << value;
  }
}

TEST(DumpPayload, EveryTypeRoundTrips) {
  std::vector<KeySnapshot> cases(5);
  cases[0].type = ValueType::kString;
  cases[0].str = std::string(70000, 'q') + "\r\n\0end";
  cases[1].type = ValueType::kList;
  cases[1].members = {"a", "", "-1", "2147483648", "b", "a"};
  cases[2].type = ValueType::kSet;
  for (int i = 0; i < 20000; i++) cases[2].members.push_back("m" + std::to_string(i));
  cases[3].type = ValueType::kHash;
  cases[3].fields = {{"f", "v"}, {"n", "12"}, {"", "empty field"}};
  cases[4].type = ValueType::kZSet;
  cases[4].fields = Scores({{"x", -INFINITY}, {"y", 0.1}, {"z", 1e300}});
  for (const KeySnapshot& c : cases) {
    const std::string p = EncodePayload(c);
    KeySnapshot back = Decode(p);
    EXPECT_EQ(back.type, c.type);
    EXPECT_EQ(back.str, c.str);
    EXPECT_EQ(back.members, c.members);
    EXPECT_EQ(back.fields, c.fields);
  }
}

// --- encodings Redis 7.0 no longer writes, built by hand ---

TEST(DumpPayload, ReadsOlderEncodings) {
  // A ziplist: "ab", 7 (4-bit immediate), -300 (int16), then its end.
  const std::string zl = Hex("15000000100000000300") + Hex("0002616204f802c0d4feff");
  ASSERT_EQ(zl.size(), 21u);
  std::string body = Hex("0a") + std::string(1, static_cast<char>(zl.size())) + zl;  // list
  EXPECT_EQ(Decode(Close(body)).members, (Strings{"ab", "7", "-300"}));
  body = Hex("0e01") + std::string(1, static_cast<char>(zl.size())) + zl;  // quicklist, one node
  EXPECT_EQ(Decode(Close(body)).members, (Strings{"ab", "7", "-300"}));
  // The plain list, and a sorted set with text scores (RDB_TYPE_ZSET).
  EXPECT_EQ(Decode(Close(Hex("010201610162"))).members, (Strings{"a", "b"}));
  KeySnapshot z = Decode(Close(Hex("0303") + Hex("0161") +
                               "\x03"
                               "1.5" +
                               Hex("0162fe") + Hex("0163ff")));
  EXPECT_EQ(z.fields, Scores({{"a", 1.5}, {"b", INFINITY}, {"c", -INFINITY}}));
  // A quicklist2 node in a plain container holds one element.
  EXPECT_EQ(Decode(Close(Hex("1201010568656c6c6f"))).members, (Strings{"hello"}));
}

TEST(DumpPayload, NewerVersionsReadOlderNot) {
  const std::string body = Hex("00066f776e657231");
  EXPECT_EQ(CheckFooter(Close(body, 10)), OpStatus::kOk);
  EXPECT_EQ(CheckFooter(Close(body, 12)), OpStatus::kOk);
  EXPECT_EQ(CheckFooter(Close(body, 13)), OpStatus::kBadDumpFooter);
  EXPECT_EQ(CheckFooter(Close(body, 0xFFFF)), OpStatus::kBadDumpFooter);
  EXPECT_EQ(CheckFooter(""), OpStatus::kBadDumpFooter);
  EXPECT_EQ(CheckFooter(std::string(9, '\0')), OpStatus::kBadDumpFooter);
}

TEST(DumpPayload, AnyChangedByteFailsTheChecksum) {
  const std::string good =
      Hex("10151500000004008266310382763103826632030201ff0a005c5ea813feec1ff5");
  for (size_t i = 0; i < good.size(); i++) {
    for (int bit = 0; bit < 8; bit++) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      EXPECT_EQ(CheckFooter(bad), OpStatus::kBadDumpFooter) << i << " " << bit;
    }
  }
}

TEST(DumpPayload, RefusesWhatRedisRefuses) {
  const auto bad = [](std::string_view hex) { return DecodeStatus(Close(Hex(hex))); };
  EXPECT_EQ(bad("0200"), OpStatus::kBadDumpData);                      // an empty set
  EXPECT_EQ(bad("0100"), OpStatus::kBadDumpData);                      // an empty list
  EXPECT_EQ(bad("020201610161"), OpStatus::kBadDumpData);              // a set member twice
  EXPECT_EQ(bad("04020161017801610179"), OpStatus::kBadDumpData);      // a hash field twice
  EXPECT_EQ(bad("05010161000000000000f87f"), OpStatus::kBadDumpData);  // a NaN score
  EXPECT_EQ(bad("03010161fd"), OpStatus::kBadDumpData);                // NaN as text
  EXPECT_EQ(bad("0301016103616263"), OpStatus::kBadDumpData);  // a score that is not a number
  EXPECT_EQ(bad("0f00"), OpStatus::kBadDumpData);              // a stream
  EXPECT_EQ(bad("0700"), OpStatus::kBadDumpData);              // a module value
  EXPECT_EQ(bad("0900"), OpStatus::kBadDumpData);              // a zipmap
  EXPECT_EQ(bad("1600"), OpStatus::kBadDumpData);              // a hash with field TTLs (7.4)
  EXPECT_EQ(bad("0005616263"), OpStatus::kBadDumpData);        // a string cut short
  EXPECT_EQ(bad("00c3"), OpStatus::kBadDumpData);              // LZF with no lengths
  EXPECT_EQ(bad("0203016101"), OpStatus::kBadDumpData);        // fewer members than claimed
  EXPECT_EQ(bad("0280ffffffff"), OpStatus::kBadDumpData);      // a count past the bytes
  EXPECT_EQ(bad("1201030161"), OpStatus::kBadDumpData);        // a quicklist container of 3
  EXPECT_EQ(bad("0401016101"), OpStatus::kBadDumpData);        // a field with no value
  EXPECT_EQ(DecodeStatus(Hex("00")), OpStatus::kBadDumpData);  // no footer at all
}

TEST(DumpPayload, DecodingIsBounded) {
  // LZF that claims 100,000 bytes out of 3: refused before anything is allocated for it.
  EXPECT_EQ(DecodeStatus(Close(Hex("00c30380000186a0e0ff00"))), OpStatus::kBadDumpData);
  // A real 100-byte string under a bound of 99, then of 100.
  const std::string x100 = Hex("00c3094064017878e057000178780a005db7f663bb08625f");
  EXPECT_EQ(DecodeStatus(x100, 99), OpStatus::kBadDumpData);
  EXPECT_EQ(DecodeStatus(x100, 100), OpStatus::kOk);
  // The bound counts a collection's strings together.
  KeySnapshot s;
  s.type = ValueType::kSet;
  for (int i = 0; i < 100; i++) s.members.push_back("member" + std::to_string(i));
  size_t total = 0;
  for (const std::string& m : s.members) total += m.size();
  EXPECT_EQ(DecodeStatus(EncodePayload(s), total - 1), OpStatus::kBadDumpData);
  EXPECT_EQ(DecodeStatus(EncodePayload(s), total), OpStatus::kOk);
}

TEST(Lzf, RefusesReferencesOutsideWhatWasProduced) {
  char out[16];
  EXPECT_TRUE(LzfDecompress(Hex("02616263"), out, 3));  // three literals
  EXPECT_EQ(std::string(out, 3), "abc");
  EXPECT_TRUE(LzfDecompress(Hex("026162632002"), out, 6));  // and "abc" again, from 3 back
  EXPECT_EQ(std::string(out, 6), "abcabc");
  EXPECT_FALSE(LzfDecompress(Hex("026162632002"), out, 5));  // more than asked for
  EXPECT_FALSE(LzfDecompress(Hex("026162632002"), out, 7));  // less than asked for
  EXPECT_FALSE(LzfDecompress(Hex("026162632005"), out, 6));  // from 6 back, with 3 produced
  EXPECT_FALSE(LzfDecompress(Hex("026162"), out, 3));        // literals cut short
  EXPECT_FALSE(LzfDecompress(Hex("0261626320"), out, 6));    // a reference cut short
}

// Random damage behind a valid checksum: decoding answers (ok or bad data) and never reads or
// writes out of bounds (the sanitizer build runs this).
TEST(DumpPayload, RandomDamageIsAnswered) {
  std::vector<std::string> seeds = {
      Hex("120102c318405609560000000300a4616263e018020025e01d2503817802ff"),
      Hex("0bc31a2004080000000320030390eefeff40000005200be0000002010000"),
      Hex("10151500000004008266310382763103826632030201ff"),
      Hex("111a1a0000000600816302dffd02816102010181620283322e3504ff"),
      Hex("0503016200000000000004400161000000000000f03f0163000000000000f0ff"),
      Hex("00c32040740a6162636465666768696a61e050090f6b6c6d6e6f707172737475767778797a"),
      Hex("0e01") + std::string(1, '\x15') + Hex("15000000100000000300") +
          Hex("0002616204f802c0d4feff"),
  };
  std::mt19937 rng(12);
  int ok = 0;
  for (int round = 0; round < 20000; round++) {
    std::string body = seeds[round % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; e++) {
      const size_t at = rng() % body.size();
      switch (rng() % 4) {
        case 0:
          body[at] = static_cast<char>(rng());
          break;
        case 1:
          body[at] = static_cast<char>(body[at] ^ (1 << (rng() % 8)));
          break;
        case 2:
          if (at > 0) body.erase(at, 1);
          break;
        default:
          body.insert(at, 1, static_cast<char>(rng()));
      }
    }
    OpResult<KeySnapshot> r = DecodePayload(Close(body), 1 << 16);
    if (r.ok()) ok++;
  }
  EXPECT_GT(ok, 0);  // some damage still reads (a changed string byte)
}

}  // namespace
}  // namespace deadbolt::shard::dump
