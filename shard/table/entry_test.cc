#include "shard/table/entry.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "shard/table/heap_string.h"

namespace deadbolt::shard {
namespace {

// For entries that own no value object (inline strings); shard/types/value_kinds_test.cc tests
// the others.
struct EntryDeleter {
  void operator()(Entry* e) const { Entry::FreeShell(e); }
};
using EntryPtr = std::unique_ptr<Entry, EntryDeleter>;

TEST(EntryTest, LockKeyFitsIn64Bytes) {
  // "lock:123456" + a 36-char uuid + a TTL: the case the layout is tuned for.
  const std::string uuid = "123e4567-e89b-12d3-a456-426614174000";
  ASSERT_EQ(uuid.size(), 36u);
  EntryPtr e(Entry::MakeString("lock:123456", uuid, 1'700'000'000'000));
  EXPECT_EQ(e->block_size(), 64u);
  EXPECT_EQ(Entry::BlockSize(11, 36, 1'700'000'000'000), 64u);
  // Without a TTL the expire field is not stored at all.
  EXPECT_EQ(Entry::BlockSize(11, 36, Entry::kNoExpire), 58u);
  // A time past 2^48 ms needs the 8-byte form.
  EXPECT_EQ(Entry::BlockSize(11, 36, int64_t{1} << 50), 66u);
}

TEST(EntryTest, RoundTripsEveryLayout) {
  const std::string long_key(300, 'k');
  const std::string long_value(1000, 'v');
  const int64_t expires[] = {Entry::kNoExpire, 0,         1,  (int64_t{1} << 48) - 1,
                             int64_t{1} << 48, INT64_MAX, -5, 1'700'000'000'123};
  const std::string keys[] = {"", "k", long_key};
  const std::string values[] = {"", "value", long_value, std::string("a\0b", 3)};
  for (const auto& key : keys) {
    for (const auto& value : values) {
      for (int64_t at : expires) {
        EntryPtr e(Entry::MakeString(key, value, at));
        EXPECT_EQ(e->key(), key);
        EXPECT_EQ(e->string_value(), value);
        EXPECT_EQ(e->has_expire(), at != Entry::kNoExpire);
        EXPECT_EQ(e->expire_at(), at);
        EXPECT_EQ(e->kind(), Entry::Kind::kInlineString);
        EXPECT_TRUE(e->KeyEquals(key));
        EXPECT_FALSE(e->KeyEquals(key + "x"));
        EXPECT_EQ(e->block_size(), Entry::BlockSize(key.size(), value.size(), at));
      }
    }
  }
}

// KeyEquals compares short keys with overlapping word loads: every length, a difference at
// every position.
TEST(EntryTest, KeyEqualsAtEveryLengthAndPosition) {
  for (size_t len = 0; len <= 40; ++len) {
    std::string key;
    for (size_t i = 0; i < len; ++i) key.push_back(static_cast<char>('a' + (i * 7) % 26));
    EntryPtr e(Entry::MakeString(key, "v", Entry::kNoExpire));
    SCOPED_TRACE(len);
    EXPECT_TRUE(e->KeyEquals(key));
    for (size_t i = 0; i < len; ++i) {
      std::string other = key;
      other[i] ^= 0x01;
      EXPECT_FALSE(e->KeyEquals(other)) << i;
      other[i] = static_cast<char>(key[i] ^ 0x80);
      EXPECT_FALSE(e->KeyEquals(other)) << i;
    }
    if (len > 0) {
      EXPECT_FALSE(e->KeyEquals(key.substr(0, len - 1)));
    }
    EXPECT_FALSE(e->KeyEquals(key + "a"));
  }
}

TEST(EntryTest, ExpireInPlaceOnlyWithinTheSameWidth) {
  EntryPtr e(Entry::MakeString("k", "v", 1000));
  EXPECT_TRUE(e->ExpireFitsInPlace(5000));
  EXPECT_FALSE(e->ExpireFitsInPlace(Entry::kNoExpire));
  EXPECT_FALSE(e->ExpireFitsInPlace(int64_t{1} << 60));
  e->SetExpireInPlace(5000);
  EXPECT_EQ(e->expire_at(), 5000);
  EXPECT_EQ(e->string_value(), "v");
  EXPECT_FALSE(e->IsExpired(5000));  // expired only once now is past the time
  EXPECT_TRUE(e->IsExpired(5001));

  EntryPtr plain(Entry::MakeString("k", "v", Entry::kNoExpire));
  EXPECT_TRUE(plain->ExpireFitsInPlace(Entry::kNoExpire));
  EXPECT_FALSE(plain->ExpireFitsInPlace(1));
  EXPECT_FALSE(plain->IsExpired(INT64_MAX));
}

TEST(EntryTest, RebuildMovesTheValueObject) {
  HeapString* s = HeapString::Create("hello", 100);
  Entry* e = Entry::MakeHeapString("key", s, Entry::kNoExpire);
  EXPECT_EQ(e->string_value(), "hello");
  EXPECT_TRUE(e->is_string());
  Entry* r = Entry::Rebuild(e, 123);
  Entry::FreeShell(e);  // must not free `s`
  EXPECT_EQ(r->heap_string(), s);
  EXPECT_EQ(r->string_value(), "hello");
  EXPECT_EQ(r->expire_at(), 123);
  EXPECT_EQ(r->key(), "key");
  HeapString::Destroy(r->heap_string());  // `s` once (ASan reports a leak or double free)
  Entry::FreeShell(r);
}

TEST(HeapStringTest, GrowsGreedily) {
  HeapString* s = HeapString::Create("ab", 2);
  EXPECT_EQ(s->capacity(), 2u);
  s = HeapString::Reserve(s, 3);
  EXPECT_EQ(s->capacity(), 6u);
  EXPECT_EQ(s->view(), "ab");
  s->Resize(5);
  EXPECT_EQ(s->view(), std::string("ab\0\0\0", 5));
  HeapString* same = HeapString::Reserve(s, 6);
  EXPECT_EQ(same, s);
  EXPECT_EQ(HeapString::GreedyCapacity(size_t{4} << 20), (size_t{5} << 20));
  HeapString::Destroy(s);
}

}  // namespace
}  // namespace deadbolt::shard
