#include "shard/types/value_kinds.h"

#include <gtest/gtest.h>

#include <memory>

#include "shard/table/heap_string.h"
#include "shard/types/hash_value.h"
#include "shard/types/zset_value.h"

namespace deadbolt::shard {
namespace {

struct EntryDeleter {
  void operator()(Entry* e) const { DestroyEntry(e); }
};
using EntryPtr = std::unique_ptr<Entry, EntryDeleter>;

TEST(ValueKindsTest, TypeOfEveryKind) {
  EntryPtr inline_str(Entry::MakeString("k", "v", Entry::kNoExpire));
  EXPECT_EQ(TypeOf(inline_str.get()), ValueType::kString);
  EntryPtr heap_str(Entry::MakeHeapString("k", HeapString::Create("v", 100), 5));
  EXPECT_EQ(TypeOf(heap_str.get()), ValueType::kString);
  EntryPtr hash(MakeHashEntry("k", HashValue::Create(), 5));
  EXPECT_EQ(TypeOf(hash.get()), ValueType::kHash);
  EntryPtr zset(MakeZSetEntry("k", ZSetValue::Create(), 5));
  EXPECT_EQ(TypeOf(zset.get()), ValueType::kZSet);
}

// DestroyEntry frees the value object with the entry, whatever its kind (ASan reports a leak or
// a double free otherwise); FreeShell after Rebuild leaves it to the new entry.
TEST(ValueKindsTest, DestroyEntryFreesTheValueObject) {
  HeapString* s = HeapString::Create("hello", 100);
  Entry* e = Entry::MakeHeapString("key", s, Entry::kNoExpire);
  Entry* r = Entry::Rebuild(e, 123);
  Entry::FreeShell(e);  // must not free `s`
  EXPECT_EQ(r->heap_string(), s);
  DestroyEntry(r);  // frees `s`

  HashValue* h = HashValue::Create(16);
  bool added;
  EXPECT_EQ(HashValue::Set(h, "f", "v", &added), h);  // fits: set in place
  EntryPtr he(MakeHashEntry("h", h, 77));
  EXPECT_EQ(he->kind(), Entry::Kind::kHash);
  EXPECT_FALSE(he->is_string());
  EXPECT_EQ(he->hash()->Get("f"), "v");
  EXPECT_EQ(he->expire_at(), 77);
  EntryPtr rebuilt(Entry::Rebuild(he.get(), Entry::kNoExpire));
  Entry::FreeShell(he.release());  // the HashValue now belongs to `rebuilt`
  EXPECT_EQ(rebuilt->hash(), h);
  EXPECT_FALSE(rebuilt->has_expire());
}

}  // namespace
}  // namespace deadbolt::shard
