#pragma once
// The value of a set key (SADD ...): distinct strings; an intset or a packed array while small,
// a hash table when large.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "shard/table/dict.h"
#include "shard/table/entry.h"
#include "shard/types/packed_growth.h"

namespace deadbolt::shard {

// The sorted slots of an intset (fixed-width little-endian integers of 2, 4 or 8 bytes), where
// ever they are: a SetValue block or an inline Entry. A view: valid while they do not change.
struct IntSlots {
  const char* data;
  uint8_t width;
  size_t count;

  int64_t At(size_t i) const {
    const char* p = data + i * width;
    if (width == 2) {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    if (width == 4) {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  // Index of the first member >= v.
  size_t LowerBound(int64_t v) const {
    size_t lo = 0, hi = count;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (At(mid) < v) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
  bool Has(int64_t v) const {
    const size_t at = LowerBound(v);
    return at < count && At(at) == v;
  }
  // Member i as text, formatted into buf (24 bytes) without the locale.
  std::string_view Format(size_t i, char* buf) const {
    const int64_t v = At(i);
    char* end = buf + 24;
    char* p = end;
    uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      *--p = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) *--p = '-';
    return {p, static_cast<size_t>(end - p)};
  }
};

// Owned by the Entry that points at it, on the shard's reactor thread.
//
// Three forms, with the limits of Redis 7.2's defaults:
//
//  * ints (Redis's intset): every member is an integer in canonical form (as Redis's string2ll:
//    no '+', no leading zeros, fits int64) and there are at most kMaxIntsetEntries of them.
//    Sorted, in fixed-width little-endian slots of 2, 4 or 8 bytes: the width of the widest
//    member (adding a wider one rewrites them wider). Lookups are binary searches; members come
//    out in ascending order, as Redis's.
//  * packed (Redis 7.2's listpack set): at most kMaxPackedEntries members of at most
//    kMaxPackedLen bytes each, back to back in insertion order as PackedItems
//    (shard/types/packed_growth.h: [u8 len][bytes], a UUID in 16 bytes); lookups scan.
//  * table: a Dict of Entry blocks (the member as the key, an empty value): the keyspace's own
//    chained table with incremental rehash, Redis's SCAN cursor and a fair random pick.
//
// One allocation, as Redis's intset: this 8-byte header, then the slots or the packed items
// (the table form: a pointer to its Dict). The block is the header plus what it holds rounded
// up to 8 bytes, no more: a 10-member intset of 4-byte slots is one 48-byte block, where a
// header object with a std::string beside it took 48 + 64 bytes (bench/RESULTS.md, "Memory per
// small collection"). So a change that needs more room, or frees 8 bytes, moves the set to a
// new block: Add and Remove return the block to keep (and free the old one); the Entry's
// pointer is updated by the caller (shard/db_set.cc). At these sizes the copy costs about what
// the insert's memmove or the packed scan does.
//
// A set only ever moves towards the table form (ints -> packed when a non-integer arrives and
// everything fits, ints or packed -> table when a limit is passed), never back, as in Redis.
//
// Inline: a small intset (FitsInline: at most kMaxInlineBytes as [u8 width][slots]) is not kept
// in a SetValue block at all but in the key's Entry (Entry::MakeInlineObject; MakeSetEntry in
// value_kinds.h decides), so a 10-member set of short integers is one 64-byte Entry instead of a
// 32-byte Entry and a 48-byte block (bench/RESULTS.md, "Memory per small collection"). Reads go
// through SetView, which covers both; a change copies the inline intset into a SetValue
// (FromInline), edits it, and the caller builds the key's new Entry (shard/db_set.cc).
class SetValue {
 public:
  static constexpr size_t kMaxIntsetEntries = 512;  // set-max-intset-entries
  static constexpr size_t kMaxPackedEntries = 128;  // set-max-listpack-entries
  static constexpr size_t kMaxPackedLen = 64;       // set-max-listpack-value
  // Largest inline intset, width byte included: below 256 keeps the Entry's short lengths.
  static constexpr size_t kMaxInlineBytes = 255;

  enum class Form : uint8_t { kInts, kPacked, kTable };

  // An empty set (an intset); free it with delete.
  static SetValue* Create();
  ~SetValue();
  SetValue(const SetValue&) = delete;
  SetValue& operator=(const SetValue&) = delete;
  static void operator delete(void* p) { ::operator delete(p); }

  // The canonical integer `s` spells, as Redis's string2ll (what an intset may hold).
  static std::optional<int64_t> CanonicalInt(std::string_view s);

  size_t size() const { return count_; }
  Form form() const { return form_; }
  // Bytes of this value and everything it owns; for tests and reports.
  size_t AllocatedBytes() const;

  bool Contains(std::string_view m) const;

  // An intset small enough to live in its key's Entry, and those bytes: [u8 width][slots].
  bool FitsInline() const { return form_ == Form::kInts && InlineSize() <= kMaxInlineBytes; }
  size_t InlineSize() const { return 1 + used(); }
  void WriteInline(char* out) const {
    out[0] = static_cast<char>(width_);
    if (count_ != 0) std::memcpy(out + 1, data(), used());
  }
  // A new intset block holding the inline intset `bytes` (as WriteInline wrote them).
  static SetValue* FromInline(std::string_view bytes);

  // Adds m; *added tells whether it was not there. Returns the set to keep: `s`, or a new block
  // that replaces it (`s` is freed then). If it throws, `s` is as it was.
  [[nodiscard]] static SetValue* Add(SetValue* s, std::string_view m, bool* added);
  // Removes m; *removed tells whether it was there. Returns the set to keep, as Add (a block
  // that cannot shrink is a bad_alloc, as anywhere else).
  [[nodiscard]] static SetValue* Remove(SetValue* s, std::string_view m, bool* removed);
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
  SetValue(Form form, uint8_t width) : form_(form), width_(width) {}

  // Bytes of data() in a block that holds `used` bytes: rounded up so the block is a multiple
  // of 8.
  static size_t Room(size_t used) { return ((sizeof(SetValue) + used + 7) & ~size_t{7}) -
                                           sizeof(SetValue); }
  static SetValue* Allocate(Form form, uint8_t width, size_t used);
  // `s` (ints or packed) with room for `used` bytes: itself when its block already has exactly
  // that room, else a copy of its header and first min(used, size) bytes in a new block (`s`
  // freed).
  static SetValue* Resize(SetValue* s, size_t used);
  size_t used() const { return form_ == Form::kInts ? size_t{count_} * width_ : used_; }
  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  Dict* table() const {
    Dict* t;
    std::memcpy(&t, data(), sizeof t);
    return t;
  }

  IntSlots ints() const { return {data(), width_, count_}; }
  int64_t IntAt(size_t i) const { return ints().At(i); }
  void IntSetAt(size_t i, int64_t v);
  size_t IntLowerBound(int64_t v) const { return ints().LowerBound(v); }
  static SetValue* IntInsert(SetValue* s, int64_t v);
  std::optional<size_t> PackedFind(std::string_view m) const;
  // New blocks holding s's members (s is left as it is): packed with `extra` bytes of room more,
  // or a table.
  static SetValue* ToPacked(const SetValue* s, size_t extra);
  static SetValue* ToTable(const SetValue* s);
  static int WidthOf(int64_t v) {
    if (v >= INT16_MIN && v <= INT16_MAX) return 2;
    if (v >= INT32_MIN && v <= INT32_MAX) return 4;
    return 8;
  }

  Form form_;
  uint8_t width_;      // ints: bytes per member
  uint16_t used_ = 0;  // packed: bytes of items (at most 128 * 65)
  uint32_t count_ = 0;
  // Followed by the slots (ints), the items (packed) or a Dict* (table).
};

static_assert(sizeof(SetValue) == 8, "the header Room() counts");

template <typename Fn>
void SetValue::ForEach(Fn&& fn) const {
  switch (form_) {
    case Form::kInts: {
      char buf[24];
      for (size_t i = 0; i < count_; ++i) fn(ints().Format(i, buf));
      return;
    }
    case Form::kPacked: {
      char scratch[PackedItem::kUuidTextLen];
      for (size_t off = 0; off < used_; off += PackedItem::SizeAt(data() + off)) {
        fn(PackedItem::Decode(data() + off, scratch));
      }
      return;
    }
    case Form::kTable:
      table()->ForEach([&](const Entry* e) {
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
    cursor = table()->Scan(cursor, visit, &visited);
  } while (cursor != 0 && --steps_left > 0 && seen < count);
  return cursor;
}

// A read-only view of a set key's value, wherever it is: a SetValue block, or an intset inline
// in the key's Entry (SetOf in value_kinds.h builds it). Valid until the set changes. Used on
// the shard's reactor thread.
class SetView {
 public:
  explicit SetView(const SetValue* set) : set_(set) {}
  // An inline intset: [u8 width][slots], as SetValue::WriteInline wrote them.
  explicit SetView(std::string_view inline_bytes)
      : ints_{inline_bytes.data() + 1, static_cast<uint8_t>(inline_bytes[0]),
              (inline_bytes.size() - 1) / static_cast<uint8_t>(inline_bytes[0])} {}

  bool is_inline() const { return set_ == nullptr; }
  // The block, when not inline.
  const SetValue* block() const { return set_; }
  bool is_intset() const { return set_ == nullptr || set_->form() == SetValue::Form::kInts; }
  size_t size() const { return set_ ? set_->size() : ints_.count; }
  bool Contains(std::string_view m) const {
    if (set_) return set_->Contains(m);
    std::optional<int64_t> v = SetValue::CanonicalInt(m);
    return v && ints_.Has(*v);
  }
  // Bytes of the value outside the Entry (0 inline); for reports.
  size_t AllocatedBytes() const { return set_ ? set_->AllocatedBytes() : 0; }
  // As SetValue's.
  std::string Random(uint64_t* rng) const;
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (set_) return set_->ForEach(fn);
    char buf[24];
    for (size_t i = 0; i < ints_.count; ++i) fn(ints_.Format(i, buf));
  }
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, size_t count, Fn&& fn) const {
    if (set_) return set_->Scan(cursor, count, fn);
    ForEach(fn);
    return 0;
  }

 private:
  const SetValue* set_ = nullptr;
  IntSlots ints_{nullptr, 2, 0};
};

}  // namespace deadbolt::shard
