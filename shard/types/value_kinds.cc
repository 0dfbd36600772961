#include "shard/types/value_kinds.h"

#include "shard/table/heap_string.h"
#include "shard/types/hash_value.h"
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
    case Entry::Kind::kList:  // reserved: no entry of these kinds is built yet (issue 13)
    case Entry::Kind::kSet:
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

}  // namespace deadbolt::shard
