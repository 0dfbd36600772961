#pragma once
// The value of a sorted set key (ZADD ...): members ordered by (score, member bytes), packed
// while small, a skiplist with a member table when large.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "shard/table/dict.h"
#include "shard/table/entry.h"
#include "shard/types/packed_growth.h"

namespace deadbolt::shard {

// Owned by the Entry that points at it, on the shard's reactor thread.
//
// Order: by score, then by member bytes (unsigned, a shorter prefix first), as Redis's zslInsert
// and zzlInsert. Scores are never NaN (the callers refuse it). The packed form stores -0 as 0, as
// Redis 7.0's listpack does (it keeps scores as text).
//
// Two forms, switched by size with the limits of Redis's defaults (zset-max-listpack-entries 128,
// zset-max-listpack-value 64):
//
//  * packed: at most kMaxPackedEntries members of at most kMaxPackedLen bytes. One allocation:
//    this header, then the members in order, each as a PackedItem (shard/types/packed_growth.h:
//    [u8 len][member bytes], a UUID in 16 bytes) and its 8-byte score. At
//    this size a scan of a few cache lines beats any index: lookups, ranks and range bounds walk
//    the array; an insert or removal is one memmove. A 10-member semaphore is one block.
//  * skiplist: Redis's choice, kept for the same reasons over a B-tree: rank queries (ZRANK,
//    ZRANGE by index, ZREMRANGEBYRANK) are O(log n) through the spans stored on each link, range
//    walks in both directions follow forward and backward pointers, and an insert or removal
//    touches O(log n) pointers without moving any other node (a B-tree moves members between
//    nodes and needs per-node counts for ranks; more code for the same bounds). Beside it, the
//    keyspace's own Dict maps member -> score (an Entry keyed by the member, its 8-byte value the
//    score): ZSCORE and ZADD's lookup are O(1), ZSCAN uses the Dict's reverse-binary cursor, and
//    ZRANDMEMBER its Random. Skiplist nodes point at those entries for their member bytes, so a
//    member is stored once.
//
// A set becomes a skiplist when a member would break a packed limit, and becomes packed again
// when ZREM brings it down to a power of two of at most kMaxPackedEntries / 2 members that all
// fit (the gap keeps a set hovering around one size from switching back and forth).
//
// Mutations that need another block (a packed set outgrowing its room, a change of form) build a
// new ZSetValue and return it: the caller then owns both, keeps the returned one and deletes `z`.
class ZSetValue {
 public:
  static constexpr size_t kMaxPackedEntries = 128;
  static constexpr size_t kMaxPackedLen = 64;
  static constexpr int kMaxLevel = 32;

  ZSetValue(const ZSetValue&) = delete;
  ZSetValue& operator=(const ZSetValue&) = delete;
  ~ZSetValue();
  static void operator delete(void* p) { ::operator delete(p); }

  // An empty packed set with room for `bytes` of packed members (see PackedSize).
  static ZSetValue* Create(size_t bytes = 0);
  static size_t PackedSize(std::string_view member) {
    return PackedItem::EncodedSize(member) + 8;
  }
  static bool Packable(std::string_view member) { return member.size() <= kMaxPackedLen; }

  size_t size() const { return count_; }
  bool packed() const { return capacity_ != kTableForm; }
  // Bytes of this block and everything it owns; for tests and reports.
  size_t AllocatedBytes() const;

  std::optional<double> Score(std::string_view member) const;
  // Adds `member` or moves it to `score`; *added tells whether it is new. Returns the set to keep.
  [[nodiscard]] static ZSetValue* Set(ZSetValue* z, std::string_view member, double score,
                                      bool* added);
  // Removes `member` if present (*removed tells). Returns the set to keep, as Set.
  [[nodiscard]] static ZSetValue* Del(ZSetValue* z, std::string_view member, bool* removed);

  // 0-based rank in ascending order, nullopt when missing.
  std::optional<size_t> Rank(std::string_view member) const;
  // The number of members, from the lowest, for which before(member, score) is true; `before`
  // must hold for a prefix of the order and not after it (e.g. "score < min").
  template <typename Pred>
  size_t CountWhile(Pred&& before) const;
  // fn(member, score) for ranks first..last (inclusive, last < size()), ascending; descending
  // from last to first when `reverse`. fn returns false to stop. The member's view is valid
  // during the call only (a packed UUID is rebuilt in a scratch buffer).
  template <typename Fn>
  void Range(size_t first, size_t last, bool reverse, Fn&& fn) const;
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (count_ != 0) Range(0, count_ - 1, false, fn);
  }
  // One ZSCAN step, as Redis 7.0: a packed set returns everything and cursor 0; a skiplist scans
  // its member table from `cursor` (count as HSCAN: a member and its score count as two).
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, size_t count, Fn&& fn);
  // A member chosen at random (the set must not be empty); rng is a splitmix64 state.
  std::pair<std::string, double> Random(uint64_t* rng) const;

 private:
  static constexpr uint32_t kTableForm = UINT32_MAX;

  struct Node;
  struct Link {
    Node* forward;
    size_t span;
  };
  struct Node {
    double score;
    Entry* entry;  // in the member table; the member is entry->key()
    Node* backward;
    uint32_t level;
    Link* links() { return reinterpret_cast<Link*>(this + 1); }
    const Link* links() const { return reinterpret_cast<const Link*>(this + 1); }
    std::string_view member() const { return entry->key(); }
  };
  struct Big {
    Dict members{&FreeMember};
    Node* head = nullptr;  // kMaxLevel links, no member
    Node* tail = nullptr;
    uint32_t level = 1;
  };

  explicit ZSetValue(uint32_t capacity) : capacity_(capacity) {}

  char* data() { return reinterpret_cast<char*>(this + 1); }
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  Big* big() { return reinterpret_cast<Big*>(this + 1); }
  const Big* big() const { return reinterpret_cast<const Big*>(this + 1); }

  static void FreeMember(Entry* e) { Entry::FreeShell(e); }
  static double ReadScore(const char* p) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  // (a_score, a) < (b_score, b) in the set's order.
  static bool Less(double as, std::string_view a, double bs, std::string_view b) {
    return as < bs || (as == bs && a < b);
  }

  // Packed: the member at byte p (a view of the block or of `scratch`, kUuidTextLen bytes), its
  // score, and where the next one starts.
  std::string_view PackedMember(size_t p, char* scratch) const {
    return PackedItem::Decode(data() + p, scratch);
  }
  double PackedScore(size_t p) const {
    return ReadScore(data() + p + PackedItem::SizeAt(data() + p));
  }
  size_t PackedNext(size_t p) const { return p + PackedItem::SizeAt(data() + p) + 8; }
  std::optional<size_t> PackedFind(std::string_view member) const;

  static ZSetValue* CreateTable();
  static ZSetValue* ToTable(const ZSetValue* z);
  static ZSetValue* ToPacked(const ZSetValue* z, size_t capacity);
  static ZSetValue* MaybeRepack(const ZSetValue* z);
  static ZSetValue* PackedInsert(ZSetValue* z, std::string_view member, double score);
  static void PackedRemoveAt(ZSetValue* z, size_t p);

  // Skiplist operations (table form).
  static Node* NewNode(uint32_t level, double score, Entry* entry);
  void ListInsert(double score, Entry* entry);
  void ListDelete(double score, std::string_view member);
  // The node at 1-based rank `rank` (1..size()).
  const Node* ListAt(size_t rank) const;

  uint32_t count_ = 0;
  uint32_t used_ = 0;    // packed: bytes of data() in use
  uint32_t capacity_;    // packed: bytes of data(); kTableForm for a skiplist
  uint32_t unused_ = 0;  // pads the header to 16 bytes
};

static_assert(sizeof(ZSetValue) % alignof(Dict) == 0, "the Big after the header is aligned");

template <typename Pred>
size_t ZSetValue::CountWhile(Pred&& before) const {
  size_t n = 0;
  if (packed()) {
    char scratch[PackedItem::kUuidTextLen];
    for (size_t p = 0; p < used_ && before(PackedMember(p, scratch), PackedScore(p));
         p = PackedNext(p)) {
      ++n;
    }
    return n;
  }
  const Node* x = big()->head;
  for (int i = static_cast<int>(big()->level) - 1; i >= 0; --i) {
    while (x->links()[i].forward != nullptr &&
           before(x->links()[i].forward->member(), x->links()[i].forward->score)) {
      n += x->links()[i].span;
      x = x->links()[i].forward;
    }
  }
  return n;
}

template <typename Fn>
void ZSetValue::Range(size_t first, size_t last, bool reverse, Fn&& fn) const {
  if (first > last || last >= count_) return;
  if (packed()) {
    char scratch[PackedItem::kUuidTextLen];
    size_t offsets[kMaxPackedEntries];
    size_t i = 0;
    for (size_t p = 0; p < used_ && i <= last; p = PackedNext(p)) offsets[i++] = p;
    if (!reverse) {
      for (size_t r = first; r <= last; ++r) {
        if (!fn(PackedMember(offsets[r], scratch), PackedScore(offsets[r]))) return;
      }
    } else {
      for (size_t r = last + 1; r-- > first;) {
        if (!fn(PackedMember(offsets[r], scratch), PackedScore(offsets[r]))) return;
      }
    }
    return;
  }
  size_t n = last - first + 1;
  if (!reverse) {
    for (const Node* x = ListAt(first + 1); x != nullptr && n-- > 0; x = x->links()[0].forward) {
      if (!fn(x->member(), x->score)) return;
    }
  } else {
    for (const Node* x = ListAt(last + 1); x != nullptr && n-- > 0; x = x->backward) {
      if (!fn(x->member(), x->score)) return;
    }
  }
}

template <typename Fn>
uint64_t ZSetValue::Scan(uint64_t cursor, size_t count, Fn&& fn) {
  if (packed()) {
    ForEach([&](std::string_view m, double s) {
      fn(m, s);
      return true;
    });
    return 0;
  }
  if (count == 0) count = 1;
  size_t seen = 0;
  size_t steps_left = count > SIZE_MAX / 10 ? SIZE_MAX : count * 10;
  size_t visited = 0;
  auto visit = [&](Entry* e) {
    seen += 2;
    fn(e->key(), ReadScore(e->string_value().data()));
    return false;  // keep it
  };
  do {
    cursor = big()->members.Scan(cursor, visit, &visited);
  } while (cursor != 0 && --steps_left > 0 && seen < count);
  return cursor;
}

}  // namespace deadbolt::shard
