#include "shard/table/entry.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "shard/table/heap_string.h"

namespace deadbolt::shard {

namespace {

constexpr size_t kShortLimit = std::numeric_limits<uint8_t>::max();
constexpr size_t kWideLimit = std::numeric_limits<uint32_t>::max();

void Store32(char* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }

// The 48-bit form is written byte by byte (little endian) so it does not depend on the host.
void Store48(char* p, uint64_t v) {
  for (int i = 0; i < 6; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

bool NeedsWideLengths(size_t key_len, size_t value_area_len) {
  return key_len > kShortLimit || value_area_len > kShortLimit;
}

}  // namespace

size_t Entry::BlockSize(size_t key_len, size_t value_area_len, int64_t expire_at) {
  size_t lengths = NeedsWideLengths(key_len, value_area_len) ? 8 : 2;
  return kHeaderOffset + 1 + lengths + ExpireWidth(expire_at) + key_len + value_area_len;
}

Entry* Entry::Allocate(Kind kind, std::string_view key, size_t value_area_len, int64_t at,
                       bool inline_value) {
  // Keys are bounded by the protocol's bulk limit (512 MiB by default); values past 4 GiB never
  // come here (MakeString stores them as a HeapString).
  if (key.size() > kWideLimit || value_area_len > kWideLimit) throw std::bad_alloc();
  const bool wide = NeedsWideLengths(key.size(), value_area_len);
  const size_t size = BlockSize(key.size(), value_area_len, at);
  void* block = ::operator new(size);
  if ((reinterpret_cast<uintptr_t>(block) & ~EntryLink::kPtrMask) != 0) [[unlikely]] {
    // EntryLink keeps the access clock above bit 48: an address there cannot be linked.
    std::fprintf(stderr, "deadbolt: the allocator returned %p, above the 48-bit address space\n",
                 block);
    std::abort();
  }
  Entry* e = new (block) Entry();
  char* p = e->bytes() + kHeaderOffset;
  uint8_t flags = static_cast<uint8_t>(kind);
  const size_t ew = ExpireWidth(at);
  if (ew != 0) flags |= kHasExpire;
  if (ew == 8) flags |= kWideExpire;
  if (wide) flags |= kWideLengths;
  if (inline_value) flags |= kInlineValue;
  p[0] = static_cast<char>(flags);
  if (wide) {
    Store32(p + 1, static_cast<uint32_t>(key.size()));
    Store32(p + 5, static_cast<uint32_t>(value_area_len));
  } else {
    p[1] = static_cast<char>(key.size());
    p[2] = static_cast<char>(value_area_len);
  }
  e->SetExpireInPlace(at);
  if (!key.empty()) std::memcpy(e->bytes() + e->key_offset(), key.data(), key.size());
  return e;
}

Entry* Entry::MakeString(std::string_view key, std::string_view value, int64_t expire_at) {
  if (value.size() > kWideLimit) {
    return MakeHeapString(key, HeapString::Create(value, value.size()), expire_at);
  }
  Entry* e = Allocate(Kind::kInlineString, key, value.size(), expire_at);
  if (!value.empty()) std::memcpy(e->value_area(), value.data(), value.size());
  return e;
}

Entry* Entry::MakeHeapString(std::string_view key, HeapString* str, int64_t expire_at) {
  Entry* e;
  try {
    e = Allocate(Kind::kHeapString, key, sizeof(void*), expire_at);
  } catch (...) {
    HeapString::Destroy(str);
    throw;
  }
  e->StorePtr(str);
  return e;
}

Entry* Entry::MakeObject(Kind kind, std::string_view key, void* object, int64_t expire_at) {
  Entry* e = Allocate(kind, key, sizeof(void*), expire_at);
  e->StorePtr(object);
  return e;
}

Entry* Entry::MakeInlineObject(Kind kind, std::string_view key, std::string_view bytes,
                               int64_t expire_at) {
  Entry* e = Allocate(kind, key, bytes.size(), expire_at, /*inline_value=*/true);
  if (!bytes.empty()) std::memcpy(e->value_area(), bytes.data(), bytes.size());
  return e;
}

Entry* Entry::Rebuild(const Entry* old, int64_t expire_at) {
  Entry* e = Allocate(old->kind(), old->key(), old->value_area_len(), expire_at,
                      old->has_inline_value());
  if (old->value_area_len() != 0) {
    std::memcpy(e->value_area(), old->value_area(), old->value_area_len());
  }
  e->next_.set_tag(old->access_clock());  // the same key: its last access stays
  return e;
}

void Entry::FreeShell(Entry* e) {
  e->~Entry();
  ::operator delete(static_cast<void*>(e));
}

void Entry::SetExpireInPlace(int64_t at) {
  char* p = bytes() + expire_offset();
  switch (expire_width()) {
    case 6:
      Store48(p, static_cast<uint64_t>(at));
      break;
    case 8:
      std::memcpy(p, &at, sizeof at);
      break;
    default:
      break;
  }
}

std::string_view Entry::HeapStringView() const { return heap_string()->view(); }

void Entry::StorePtr(void* p) { std::memcpy(value_area(), &p, sizeof p); }

}  // namespace deadbolt::shard
