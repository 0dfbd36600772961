#include "shard/table/heap_string.h"

#include <cstring>
#include <new>

namespace deadbolt::shard {

namespace {
constexpr size_t kGreedyLimit = size_t{1} << 20;  // 1 MiB, as Redis's SDS_MAX_PREALLOC
}  // namespace

HeapString* HeapString::Create(std::string_view s, size_t capacity) {
  if (capacity < s.size()) capacity = s.size();
  void* block = ::operator new(sizeof(HeapString) + capacity);
  auto* str = new (block) HeapString(s.size(), capacity);
  if (!s.empty()) std::memcpy(str->data(), s.data(), s.size());
  return str;
}

void HeapString::Destroy(HeapString* s) {
  if (s == nullptr) return;
  s->~HeapString();
  ::operator delete(static_cast<void*>(s));
}

size_t HeapString::GreedyCapacity(size_t len) {
  return len < kGreedyLimit ? len * 2 : len + kGreedyLimit;
}

HeapString* HeapString::Reserve(HeapString* s, size_t len) {
  if (len <= s->capacity_) return s;
  HeapString* grown = Create(s->view(), GreedyCapacity(len));
  Destroy(s);
  return grown;
}

void HeapString::Resize(size_t len) {
  if (len > size_) std::memset(data() + size_, 0, len - size_);
  size_ = len;
}

}  // namespace deadbolt::shard
