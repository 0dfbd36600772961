#include <gtest/gtest.h>

#include <string>

#include "shard/base/slot.h"
#include "shard/base/test_util.h"

namespace deadbolt::shard {
namespace {

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
