#pragma once
// A string value that lives outside its Entry: one that APPEND or SETRANGE grew.

#include <cstddef>
#include <string_view>

namespace deadbolt::shard {

// Owned by the Entry that points at it, on the shard's reactor thread. A string with spare
// capacity, for values that grow in place: a header followed by the bytes, in one allocation.
// Strings start inline in their Entry; APPEND or SETRANGE moves one here once it outgrows
// kMaxInlineGrow, so that repeated appends cost amortized O(1) as with Redis's sds.
class HeapString {
 public:
  // Strings that APPEND/SETRANGE grow past this size move out of the entry.
  static constexpr size_t kMaxInlineGrow = 64;

  HeapString(const HeapString&) = delete;
  HeapString& operator=(const HeapString&) = delete;

  // A new string holding `s` with room for at least `capacity` bytes.
  static HeapString* Create(std::string_view s, size_t capacity);
  static void Destroy(HeapString* s);
  // Makes room for `len` bytes, growing greedily (double below 1 MiB, then +1 MiB). Returns the
  // string, which may have moved (the old pointer is then invalid).
  static HeapString* Reserve(HeapString* s, size_t len);
  // The capacity Reserve picks for a string that must hold `len` bytes.
  static size_t GreedyCapacity(size_t len);

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view view() const { return {data(), size_}; }
  // Sets the length (<= capacity); bytes added are zeroed.
  void Resize(size_t len);

 private:
  HeapString(size_t size, size_t capacity) : size_(size), capacity_(capacity) {}
  size_t size_;
  size_t capacity_;
  // Followed by capacity_ bytes.
};

}  // namespace deadbolt::shard
