#include "shard/types/value_kinds.h"

#include "shard/table/heap_string.h"
#include "shard/types/hash_value.h"
#include "shard/types/list_value.h"
#include "shard/types/set_value.h"
#include "shard/types/stream_value.h"
#include "shard/types/zset_value.h"

namespace deadbolt::shard {

void DestroyEntry(Entry* e) {
  if (e == nullptr) return;
  switch (e->kind()) {
    case Entry::Kind::kInlineString:
      break;
    case Entry::Kind::kHeapString:
      HeapString::Destroy(e->heap_string());
      break;
    case Entry::Kind::kHash:
      delete e->hash();
      break;
    case Entry::Kind::kZSet:
      delete e->zset();
      break;
    case Entry::Kind::kList:
      delete ListOf(e);
      break;
    case Entry::Kind::kSet:
      if (!e->has_inline_value()) delete SetBlockOf(e);
      break;
    case Entry::Kind::kStream:
      delete StreamOf(e);
      break;
  }
  Entry::FreeShell(e);
}

Entry* MakeHashEntry(std::string_view key, HashValue* hash, int64_t expire_at) {
  try {
    return Entry::MakeObject(Entry::Kind::kHash, key, hash, expire_at);
  } catch (...) {
    delete hash;
    throw;
  }
}

Entry* MakeZSetEntry(std::string_view key, ZSetValue* zset, int64_t expire_at) {
  try {
    return Entry::MakeObject(Entry::Kind::kZSet, key, zset, expire_at);
  } catch (...) {
    delete zset;
    throw;
  }
}

Entry* MakeListEntry(std::string_view key, ListValue* list, int64_t expire_at) {
  try {
    return Entry::MakeObject(Entry::Kind::kList, key, list, expire_at);
  } catch (...) {
    delete list;
    throw;
  }
}

Entry* MakeStreamEntry(std::string_view key, StreamValue* stream, int64_t expire_at) {
  try {
    return Entry::MakeObject(Entry::Kind::kStream, key, stream, expire_at);
  } catch (...) {
    delete stream;
    throw;
  }
}

Entry* MakeInlineSetEntry(std::string_view key, const SetValue& set, int64_t expire_at) {
  char bytes[SetValue::kMaxInlineBytes];
  set.WriteInline(bytes);
  return Entry::MakeInlineObject(Entry::Kind::kSet, key, {bytes, set.InlineSize()}, expire_at);
}

Entry* MakeSetEntry(std::string_view key, SetValue* set, int64_t expire_at) {
  try {
    if (set->FitsInline()) {
      Entry* e = MakeInlineSetEntry(key, *set, expire_at);
      delete set;
      return e;
    }
    return Entry::MakeObject(Entry::Kind::kSet, key, set, expire_at);
  } catch (...) {
    delete set;
    throw;
  }
}

}  // namespace deadbolt::shard
