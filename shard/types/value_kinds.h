#pragma once
// The kinds of value an Entry holds, in one place: what TYPE calls each, and what frees it. The
// table (shard/table/) stores a value object as an owning pointer without looking into it; this
// file is where the value types meet it. A new value type (sorted set, list, set) adds its
// Entry::Kind, a case in TypeOf and DestroyEntry, and a builder like MakeHashEntry.

#include <cstdint>
#include <string_view>

#include "shard/table/entry.h"
#include "shard/types/set_value.h"
#include "shard/types/value_type.h"

namespace deadbolt::shard {

class HashValue;
class ZSetValue;
class ListValue;
class StreamValue;

// Pure functions over entries, called on the thread that owns them (the shard's reactor).

inline ValueType TypeOf(const Entry* e) {
  switch (e->kind()) {
    case Entry::Kind::kHash:
      return ValueType::kHash;
    case Entry::Kind::kZSet:
      return ValueType::kZSet;
    case Entry::Kind::kList:
      return ValueType::kList;
    case Entry::Kind::kSet:
      return ValueType::kSet;
    case Entry::Kind::kStream:
      return ValueType::kStream;
    case Entry::Kind::kInlineString:
    case Entry::Kind::kHeapString:
      break;
  }
  return ValueType::kString;
}

// Frees `e` and the value object it owns (a HeapString, a HashValue). The keyspace's Dict and a
// large hash's Dict are built with it.
void DestroyEntry(Entry* e);

// A new entry for a hash key. Takes ownership of `hash`, also when it throws.
Entry* MakeHashEntry(std::string_view key, HashValue* hash, int64_t expire_at);

// A new entry for a sorted set key. Takes ownership of `zset`, also when it throws.
Entry* MakeZSetEntry(std::string_view key, ZSetValue* zset, int64_t expire_at);
// A new entry for a list key / a set key. Each takes ownership of its value, also when it throws.
// A set that FitsInline() is copied into the entry (Entry::MakeInlineObject) and freed.
Entry* MakeListEntry(std::string_view key, ListValue* list, int64_t expire_at);
Entry* MakeSetEntry(std::string_view key, SetValue* set, int64_t expire_at);
// A new entry for a set key holding a copy of `set`, which must FitsInline(); `set` stays the
// caller's.
Entry* MakeInlineSetEntry(std::string_view key, const SetValue& set, int64_t expire_at);
// A new entry for a stream key; takes ownership of `stream`, also when it throws.
Entry* MakeStreamEntry(std::string_view key, StreamValue* stream, int64_t expire_at);
// The value object of a kStream entry.
inline StreamValue* StreamOf(const Entry* e) { return static_cast<StreamValue*>(e->object()); }
// The value object of a kList entry.
inline ListValue* ListOf(const Entry* e) { return static_cast<ListValue*>(e->object()); }
// The value of a kSet entry, inline or not.
inline SetView SetOf(const Entry* e) {
  if (e->has_inline_value()) return SetView(e->inline_value());
  return SetView(static_cast<const SetValue*>(e->object()));
}
// The block of a kSet entry without an inline value.
inline SetValue* SetBlockOf(const Entry* e) { return static_cast<SetValue*>(e->object()); }

}  // namespace deadbolt::shard
