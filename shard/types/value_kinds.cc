#include "shard/types/value_kinds.h"

#include "shard/table/heap_string.h"
#include "shard/types/hash_value.h"

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
    case Entry::Kind::kZSet:  // reserved: no entry of these kinds is built yet (issue 13)
    case Entry::Kind::kList:
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

}  // namespace deadbolt::shard
