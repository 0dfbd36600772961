#pragma once
// The value of a hash key (HSET ...): field -> value, packed while small, a table when large.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "shard/table/dict.h"
#include "shard/table/entry.h"

namespace deadbolt::shard {

// Owned by the Entry that points at it, on the shard's reactor thread.
//
// Two forms, switched by size with the limits of Redis's defaults (hash-max-listpack-entries 128,
// hash-max-listpack-value 64):
//
//  * packed: at most kMaxPackedEntries pairs, every field and value at most kMaxPackedLen bytes.
//    One allocation: this header, then the pairs back to back in insertion order, each as
//    [u8 field_len][field bytes][u8 value_len][value bytes]. A Redisson lock (one ~40-byte field
//    holding a small counter) is a single 64-byte block. Lookups scan the pairs (comparing
//    lengths first); at this size that is a few cache lines, cheaper than hashing, and the
//    overhead is 2 bytes per pair.
//  * table: a Dict of Entry blocks (the field as the key, the value as an inline string): the
//    keyspace's own chained table, with incremental rehash and the reverse-binary SCAN cursor.
//
// A hash becomes a table when a pair would break a packed limit, and becomes packed again when
// HDEL brings it down to a power of two of at most kMaxPackedEntries / 2 pairs that all fit (the
// gap between the two sizes keeps a hash that hovers around one size from switching back and
// forth; checking only at powers of two keeps the check amortized O(1)).
//
// Mutations that need another block (a packed hash outgrowing its room or shrinking well below
// it, a change of form) build a new HashValue and return it: the caller then owns both, keeps the
// returned one and deletes `h` (Db does it by swapping in a new Entry, which frees the old one).
class HashValue {
 public:
  static constexpr size_t kMaxPackedEntries = 128;
  static constexpr size_t kMaxPackedLen = 64;

  HashValue(const HashValue&) = delete;
  HashValue& operator=(const HashValue&) = delete;
  ~HashValue();
  // Blocks are variable-sized (allocated by Create); `delete h` frees one.
  static void operator delete(void* p) { ::operator delete(p); }

  // An empty packed hash with room for `bytes` of packed pairs (see PackedSize).
  static HashValue* Create(size_t bytes = 0);
  // Bytes one pair takes in the packed form.
  static size_t PackedSize(std::string_view field, std::string_view value) {
    return 2 + field.size() + value.size();
  }
  // True if a pair of these lengths may live in the packed form.
  static bool Packable(std::string_view field, std::string_view value) {
    return field.size() <= kMaxPackedLen && value.size() <= kMaxPackedLen;
  }

  size_t size() const { return count_; }
  bool packed() const { return capacity_ != kTableForm; }
  // Bytes of this block and everything it owns (entries, buckets); for tests and reports.
  size_t AllocatedBytes() const;

  std::optional<std::string_view> Get(std::string_view field) const;
  // A pair picked at random (size() > 0); `rng` is a splitmix64 state.
  std::pair<std::string_view, std::string_view> Random(uint64_t* rng) const;

  // Sets `field` to `value`; *added tells whether the field is new. Returns the hash to keep
  // (h itself, or a new one: see the class comment).
  [[nodiscard]] static HashValue* Set(HashValue* h, std::string_view field, std::string_view value,
                                      bool* added);
  // Removes `field` if present (*removed tells). Returns the hash to keep, as Set.
  [[nodiscard]] static HashValue* Del(HashValue* h, std::string_view field, bool* removed);

  // Calls fn(field, value) for every pair: in insertion order when packed.
  template <typename Fn>
  void ForEach(Fn&& fn) const;

  // One HSCAN step, as Redis 7.0's scanGenericCommand: a packed hash returns all its pairs and
  // cursor 0 whatever the cursor; a table visits buckets from `cursor` until it has seen `count`
  // elements (a field and its value count as two, as in Redis) or made 10 * count steps.
  // Calls fn(field, value) for every pair visited; returns the next cursor (0 when done).
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, size_t count, Fn&& fn);

 private:
  static constexpr uint32_t kTableForm = UINT32_MAX;  // capacity_ of a table

  explicit HashValue(uint32_t capacity) : capacity_(capacity) {}

  // Packed form: the pairs start right after the header.
  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  // Table form: the Dict lives right after the header.
  Dict* table() { return reinterpret_cast<Dict*>(this + 1); }
  const Dict* table() const { return reinterpret_cast<const Dict*>(this + 1); }

  // A packed pair, as offsets into data().
  struct PackedPos {
    size_t begin;  // the field's length byte
    size_t value;  // the value's length byte
    size_t end;    // just past the value
  };
  std::optional<PackedPos> PackedFind(std::string_view field) const;
  std::string_view PackedAt(size_t len_byte) const {
    return {data() + len_byte + 1, static_cast<unsigned char>(data()[len_byte])};
  }

  static HashValue* CreateTable();
  // A new table (or packed block of `capacity` bytes) holding h's pairs.
  static HashValue* ToTable(const HashValue* h);
  static HashValue* ToPacked(const HashValue* h, size_t capacity);
  // Table form, after a removal: a packed copy if it is time to switch back, else nullptr.
  static HashValue* MaybeRepack(const HashValue* h);

  static HashValue* PackedSet(HashValue* h, std::string_view field, std::string_view value,
                              bool* added);
  static void TableSet(HashValue* h, std::string_view field, std::string_view value, bool* added);

  uint32_t count_ = 0;   // pairs
  uint32_t used_ = 0;    // packed: bytes of data() in use
  uint32_t capacity_;    // packed: bytes of data(); kTableForm for a table
  uint32_t unused_ = 0;  // pads the header to 16 bytes
  // Followed by capacity_ bytes of packed pairs, or by a Dict.
};

static_assert(sizeof(HashValue) % alignof(Dict) == 0, "the Dict after the header is aligned");

template <typename Fn>
void HashValue::ForEach(Fn&& fn) const {
  if (!packed()) {
    table()->ForEach([&](const Entry* e) {
      fn(e->key(), e->string_value());
      return true;
    });
    return;
  }
  for (size_t p = 0; p < used_;) {
    const std::string_view f = PackedAt(p);
    const size_t v = p + 1 + f.size();
    const std::string_view val = PackedAt(v);
    fn(f, val);
    p = v + 1 + val.size();
  }
}

template <typename Fn>
uint64_t HashValue::Scan(uint64_t cursor, size_t count, Fn&& fn) {
  if (packed()) {
    ForEach(fn);
    return 0;
  }
  if (count == 0) count = 1;
  size_t seen = 0;
  size_t steps_left = count > SIZE_MAX / 10 ? SIZE_MAX : count * 10;
  size_t visited = 0;
  auto visit = [&](Entry* e) {
    seen += 2;
    fn(e->key(), e->string_value());
    return false;  // keep it
  };
  do {
    cursor = table()->Scan(cursor, visit, &visited);
  } while (cursor != 0 && --steps_left > 0 && seen < count);
  return cursor;
}

}  // namespace deadbolt::shard
