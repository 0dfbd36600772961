#pragma once
// The value of a set key (SADD ...): distinct strings; an intset or a packed array while small,
// a hash table when large.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "shard/table/dict.h"
#include "shard/table/entry.h"

namespace deadbolt::shard {

// Owned by the Entry that points at it, on the shard's reactor thread.
//
// Three forms, with the limits of Redis 7.2's defaults:
//
//  * ints (Redis's intset): every member is an integer in canonical form (as Redis's string2ll:
//    no '+', no leading zeros, fits int64) and there are at most kMaxIntsetEntries of them.
//    Sorted, in one buffer of fixed-width little-endian slots of 2, 4 or 8 bytes: the width of
//    the widest member (adding a wider one rewrites the buffer wider). Lookups are binary
//    searches; members come out in ascending order, as Redis's.
//  * packed (Redis 7.2's listpack set): at most kMaxPackedEntries members of at most
//    kMaxPackedLen bytes each, [u8 len][bytes] back to back in insertion order; lookups scan.
//  * table: a Dict of Entry blocks (the member as the key, an empty value): the keyspace's own
//    chained table with incremental rehash, Redis's SCAN cursor and a fair random pick.
//
// A set only ever moves towards the table form (ints -> packed when a non-integer arrives and
// everything fits, ints or packed -> table when a limit is passed), never back, as in Redis.
class SetValue {
 public:
  static constexpr size_t kMaxIntsetEntries = 512;  // set-max-intset-entries
  static constexpr size_t kMaxPackedEntries = 128;  // set-max-listpack-entries
  static constexpr size_t kMaxPackedLen = 64;       // set-max-listpack-value

  enum class Form : uint8_t { kInts, kPacked, kTable };

  SetValue() = default;
  ~SetValue();
  SetValue(const SetValue&) = delete;
  SetValue& operator=(const SetValue&) = delete;

  // The canonical integer `s` spells, as Redis's string2ll (what an intset may hold).
  static std::optional<int64_t> CanonicalInt(std::string_view s);

  size_t size() const { return count_; }
  Form form() const { return form_; }
  // Bytes of this value and everything it owns; for tests and reports.
  size_t AllocatedBytes() const;

  bool Contains(std::string_view m) const;
  // True if m was not there.
  bool Add(std::string_view m);
  // True if m was there.
  bool Remove(std::string_view m);
  // A member picked at random (size() > 0); `rng` is a splitmix64 state.
  std::string Random(uint64_t* rng) const;

  // Calls fn(member) for every member: ascending for ints, insertion order when packed. The view
  // is valid during the call only.
  template <typename Fn>
  void ForEach(Fn&& fn) const;

  // One SSCAN step, as Redis 7's scanGenericCommand: a small set (ints, packed) returns all its
  // members and cursor 0 whatever the cursor; a table visits buckets from `cursor` until it has
  // seen `count` members or made 10 * count steps. Returns the next cursor (0 when done).
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, size_t count, Fn&& fn) const;

 private:
  int64_t IntAt(size_t i) const;
  void IntSetAt(size_t i, int64_t v);
  // Index of the first member >= v.
  size_t IntLowerBound(int64_t v) const;
  void IntInsert(int64_t v);
  std::optional<size_t> PackedFind(std::string_view m) const;
  void ToPacked();
  void ToTable();
  static int WidthOf(int64_t v) {
    if (v >= INT16_MIN && v <= INT16_MAX) return 2;
    if (v >= INT32_MIN && v <= INT32_MAX) return 4;
    return 8;
  }

  Form form_ = Form::kInts;
  uint8_t width_ = 2;    // ints: bytes per member
  uint32_t count_ = 0;
  std::string blob_;     // ints: count_ slots of width_ bytes; packed: [u8 len][bytes]...
  std::unique_ptr<Dict> table_;  // table form
};

template <typename Fn>
void SetValue::ForEach(Fn&& fn) const {
  switch (form_) {
    case Form::kInts: {
      char buf[24];
      for (size_t i = 0; i < count_; ++i) {
        const int64_t v = IntAt(i);
        // Formats v without the locale: digits from the end.
        char* end = buf + sizeof buf;
        char* p = end;
        uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
        do {
          *--p = static_cast<char>('0' + u % 10);
          u /= 10;
        } while (u != 0);
        if (v < 0) *--p = '-';
        fn(std::string_view(p, static_cast<size_t>(end - p)));
      }
      return;
    }
    case Form::kPacked:
      for (size_t off = 0; off < blob_.size();) {
        const size_t len = static_cast<unsigned char>(blob_[off]);
        fn(std::string_view(blob_.data() + off + 1, len));
        off += 1 + len;
      }
      return;
    case Form::kTable:
      table_->ForEach([&](const Entry* e) {
        fn(e->key());
        return true;
      });
      return;
  }
}

template <typename Fn>
uint64_t SetValue::Scan(uint64_t cursor, size_t count, Fn&& fn) const {
  if (form_ != Form::kTable) {
    ForEach(fn);
    return 0;
  }
  if (count == 0) count = 1;
  size_t seen = 0;
  size_t steps_left = count > SIZE_MAX / 10 ? SIZE_MAX : count * 10;
  size_t visited = 0;
  auto visit = [&](Entry* e) {
    ++seen;
    fn(e->key());
    return false;  // keep it
  };
  do {
    cursor = table_->Scan(cursor, visit, &visited);
  } while (cursor != 0 && --steps_left > 0 && seen < count);
  return cursor;
}

}  // namespace deadbolt::shard
