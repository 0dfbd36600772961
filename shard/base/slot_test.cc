#include <gtest/gtest.h>

#include <string>

#include "shard/base/slot.h"
#include "shard/base/test_util.h"

namespace deadbolt::shard {
namespace {

// The CRC bit by bit, as the polynomial defines it: what the sliced tables must agree with.
uint16_t Crc16BitByBit(std::string_view s) {
  uint16_t crc = 0;
  for (unsigned char c : s) {
    crc = static_cast<uint16_t>(crc ^ (c << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

TEST(SlotTest, SlicedCrcAgreesWithTheBitwiseOneAtEveryLength) {
  EXPECT_EQ(Crc16("123456789"), 0x31C3);
  uint32_t x = 12345;
  for (int len = 0; len <= 70; ++len) {
    for (int trial = 0; trial < 50; ++trial) {
      std::string s(len, '\0');
      for (char& c : s) {
        x = x * 1103515245u + 12345u;
        c = static_cast<char>(x >> 16);
      }
      ASSERT_EQ(Crc16(s), Crc16BitByBit(s)) << "length " << len;
    }
  }
}

TEST(SlotTest, KnownValues) {
  // The CRC16-XMODEM check value: CRC("123456789") == 0x31C3 == 12739 (< 16384).
  EXPECT_EQ(KeySlot("123456789"), 0x31C3);
  EXPECT_EQ(KeySlot("123456789"), 12739);
  EXPECT_EQ(KeySlot("foo"), 12182);
  EXPECT_EQ(KeySlot("bar"), 5061);
  EXPECT_EQ(KeySlot(""), 0);
}

TEST(SlotTest, HashTags) {
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("{user1000}.followers"));
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("abc{foo}def"), KeySlot("foo"));
  // Only the first '{' counts, and the first '}' after it.
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), KeySlot("bar"));
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), KeySlot("{bar"));
  EXPECT_EQ(KeySlot("a{b}c}"), KeySlot("b"));
  // An empty tag, or no closing brace: the whole key is hashed.
  // (Expected values computed independently with Python's binascii.crc_hqx(key, 0) & 16383.)
  EXPECT_EQ(KeySlot("foo{}{bar}"), 8363);
  EXPECT_EQ(KeySlot("{bar"), 4015);
  EXPECT_EQ(KeySlot("{user1000"), 8723);
  EXPECT_EQ(KeySlot("}user1000{"), 12847);
  EXPECT_EQ(KeySlot("user1000"), 3443);
}

TEST(SlotTest, AlwaysInRange) {
  for (int i = 0; i < 100000; ++i) {
    EXPECT_LT(KeySlot(Cat("key:", i)), kNumSlots);
  }
}

}  // namespace
}  // namespace deadbolt::shard
