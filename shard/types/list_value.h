#pragma once
// The value of a list key (LPUSH ...): a sequence of strings, packed while small, a deque when
// large.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "shard/types/packed_growth.h"

namespace deadbolt::shard {

// Owned by the Entry that points at it, on the shard's reactor thread.
//
// Two forms, switched by size with the limits of Redis 7.2's small lists (a listpack of at most
// 128 entries of at most 64 bytes, the defaults hash-max-listpack-* use too):
//
//  * packed: the elements back to back in one buffer, each a PackedItem
//    (shard/types/packed_growth.h): [u8 len][bytes], 1 byte of overhead per element, and a
//    36-character UUID in 16 bytes. A fair lock's queue (a handful of UUIDs) is one small block.
//    Pushes at the tail append; pushes and pops at the head move at most 8 KiB; lookups by index
//    walk the lengths (at most 128 steps).
//  * large: a std::deque<std::string>. Why not a quicklist (a chain of packed nodes)? A deque
//    gives O(1) push and pop at both ends and O(1) LINDEX/LSET/LRANGE start, which a chain of
//    nodes only approaches with node-level bookkeeping; what a quicklist saves is memory per
//    element of large lists (~8 vs ~32 bytes), and no lock client builds large lists: they are
//    queues of waiters. The form is private to this class, so a node chain can replace it later.
//
// A list becomes large when it would hold more than kMaxPackedEntries elements or an element
// longer than kMaxPackedLen, and packed again when it shrinks to kMaxPackedEntries / 2 elements
// that all fit (the gap keeps a list hovering around one size from switching back and forth; at
// that size the check is at most 64 steps, so it costs O(1)).
class ListValue {
 public:
  static constexpr size_t kMaxPackedEntries = 128;
  static constexpr size_t kMaxPackedLen = 64;

  ListValue() = default;
  ListValue(const ListValue&) = delete;
  ListValue& operator=(const ListValue&) = delete;

  size_t size() const { return count_; }
  bool packed() const { return big_ == nullptr; }
  // Bytes this value owns (approximate for the deque); for tests and reports.
  size_t AllocatedBytes() const;

  void PushFront(std::string_view v);
  void PushBack(std::string_view v);
  // Both need size() > 0.
  std::string PopFront();
  std::string PopBack();
  // A copy of the element at index i (< size()).
  std::string At(size_t i) const;
  // Replaces the element at index i (< size()).
  void Set(size_t i, std::string_view v);
  // Inserts v before index i (<= size(); size() appends).
  void Insert(size_t i, std::string_view v);
  // LREM: removes up to |count| elements equal to v, from the head when count > 0, from the tail
  // when count < 0, all of them when count == 0. Returns how many went.
  size_t Remove(int64_t count, std::string_view v);
  // Keeps the elements [start, stop) (start <= stop <= size()) and drops the rest.
  void Trim(size_t start, size_t stop);

  // Calls fn(element) for the elements [start, stop), in order. The view is valid during the
  // call only (a packed UUID is rebuilt in a scratch buffer).
  template <typename Fn>
  void ForRange(size_t start, size_t stop, Fn&& fn) const;
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    ForRange(0, count_, fn);
  }

 private:
  // Packed form: the offset of element i's length byte (i <= count_: count_ gives the end).
  size_t Offset(size_t i) const;
  std::string_view PackedAt(size_t off, char* scratch) const {
    return PackedItem::Decode(packed_.data() + off, scratch);
  }
  size_t PackedSizeAt(size_t off) const { return PackedItem::SizeAt(packed_.data() + off); }
  static void Append(std::string* buf, std::string_view v) { PackedItem::Append(buf, v); }
  // After a growth: switch to the large form if v does not fit or there are too many elements.
  void GrowthCheck(std::string_view v);
  // After a shrink: switch back to the packed form if it is time to.
  void ShrinkCheck();
  void ToLarge();

  uint32_t count_ = 0;
  std::string packed_;                            // packed form: PackedItems
  std::unique_ptr<std::deque<std::string>> big_;  // large form
};

template <typename Fn>
void ListValue::ForRange(size_t start, size_t stop, Fn&& fn) const {
  if (!packed()) {
    for (size_t i = start; i < stop; ++i) fn(std::string_view((*big_)[i]));
    return;
  }
  char scratch[PackedItem::kUuidTextLen];
  size_t off = Offset(start);
  for (size_t i = start; i < stop; ++i) {
    fn(PackedAt(off, scratch));
    off += PackedSizeAt(off);
  }
}

}  // namespace deadbolt::shard
