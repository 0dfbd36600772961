#pragma once
// The hash table of one Db: chained buckets of Entry, power-of-two sizes, incremental rehash.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "shard/table/entry.h"

namespace deadbolt::shard {

// Owned by one Db, on the shard's reactor thread. A chained hash table of Entry blocks (the
// Entry holds its own chain link, so an entry costs exactly one allocation) over a bucket array of
// pointers whose size is a power of two.
//
// Resizing is incremental, as in Redis's dict: a resize allocates the new bucket array and then
// every FindLink (and RehashSteps) moves one bucket from the old array to the new one, so no
// single operation ever pays for a whole rehash. The table grows when it holds as many entries as
// buckets and shrinks when fewer than 1/10 of its buckets would be used.
//
// Scan walks buckets with Redis's reverse-binary cursor: every entry present for the whole walk
// is visited at least once, even if the table grows, shrinks or rehashes between steps.
//
// The Dict owns the entries linked into it and frees those it drops (Clear, Scan, the destructor)
// with the function it was built with: it knows the Entry layout, not the value kinds behind it
// (the keyspace passes DestroyEntry, shard/types/value_kinds.h). Entries never move in memory; a
// Pos (a place in a bucket chain) stays valid until the next call that moves entries between
// buckets: FindLink, Insert (each does one rehash step while a resize is under way), RehashSteps,
// Clear. Replace and Unlink move nothing else.
class Dict {
 public:
  // Where an entry is linked: `link` is the bucket or the previous entry's link that points at
  // the entry.
  struct Pos {
    EntryLink* link = nullptr;
    int table = 0;
    explicit operator bool() const { return link != nullptr; }
    Entry* entry() const { return link->get(); }
  };

  // Frees an entry and whatever it owns.
  using FreeEntryFn = void (*)(Entry*);

  explicit Dict(FreeEntryFn free_entry) : free_entry_(free_entry) {}
  ~Dict();
  Dict(const Dict&) = delete;
  Dict& operator=(const Dict&) = delete;

  static uint64_t Hash(std::string_view key);

  size_t size() const { return t_[0].used + t_[1].used; }
  size_t bucket_count() const { return t_[0].size() + t_[1].size(); }
  bool rehashing() const { return rehash_idx_ >= 0; }
  // Bytes held by the bucket arrays.
  size_t bucket_bytes() const { return bucket_count() * sizeof(EntryLink); }

  // Does one rehash step, then finds the entry for `key` (hash from Hash(key)).
  Pos FindLink(std::string_view key, uint64_t hash);
  // Finds without rehashing (and without changing anything).
  const Entry* Find(std::string_view key, uint64_t hash) const;
  // Asks the CPU for the keys' buckets, then for the first entry of each bucket, without waiting
  // for either: a batch of lookups about to run then overlaps its cache misses instead of taking
  // them one after another. Changes nothing.
  void Prefetch(const uint64_t* hashes, size_t n) const;
  // Does one rehash step, then links a new entry. Its key must not be in the table.
  void Insert(Entry* e, uint64_t hash);
  // Puts `e` (same key) where pos's entry was; returns the old entry, now unlinked.
  Entry* Replace(Pos pos, Entry* e);
  // Unlinks pos's entry and returns it; the caller frees it.
  Entry* Unlink(Pos pos);
  // Starts shrinking the table if it is mostly empty and no resize is under way.
  void MaybeShrink();
  // Moves up to `n` buckets to the new table (visiting at most 10*n empty ones). Returns true
  // while a rehash is still under way.
  bool RehashSteps(size_t n);
  // Frees all entries and bucket arrays.
  void Clear();

  // One step of a scan from `cursor`: calls fn(Entry*) for each entry of the bucket(s) the
  // cursor names. If fn returns true, the entry is unlinked and destroyed. Adds the number of
  // buckets looked at to *visited. Returns the next cursor; 0 when the scan is complete.
  template <typename Fn>
  uint64_t Scan(uint64_t cursor, Fn&& fn, size_t* visited);

  // Buckets the next Scan step will look at: 1, or during a rehash 1 + large/small table size.
  size_t ScanStepCost() const {
    if (!rehashing()) return 1;
    const size_t a = t_[0].size(), b = t_[1].size();
    return 1 + (a > b ? a / b : b / a);
  }

  // Calls fn(const Entry*) for every entry until it returns false. fn must not change the Dict.
  template <typename Fn>
  void ForEach(Fn&& fn) const;

  // A random entry (nullptr when empty): a random non-empty bucket, then a random entry of its
  // chain, as Redis's dictGetRandomKey. `rng` is a splitmix64 state.
  Entry* Random(uint64_t* rng) const;

  // Longest chain in the tables; for tests.
  size_t MaxChainLength() const;

 private:
  struct Table {
    EntryLink* buckets = nullptr;
    uint64_t mask = 0;
    size_t used = 0;
    size_t size() const { return buckets == nullptr ? 0 : static_cast<size_t>(mask) + 1; }
  };
  static constexpr size_t kInitialSize = 4;

  static EntryLink* AllocBuckets(size_t n);
  static void FreeBuckets(Table* t);
  static uint64_t Rev(uint64_t v);
  void StartResize(size_t new_size);
  void FinishRehashIfDone();

  // One bucket of one table: unlinks (and destroys) the entries fn returns true for.
  template <typename Fn>
  void ScanBucket(int table, uint64_t idx, Fn& fn);

  Table t_[2];
  int64_t rehash_idx_ = -1;  // next bucket of t_[0] to move; -1 when not rehashing
  FreeEntryFn free_entry_;
};

template <typename Fn>
void Dict::ScanBucket(int table, uint64_t idx, Fn& fn) {
  Table& t = t_[table];
  EntryLink* link = &t.buckets[idx];
  while (link->get() != nullptr) {
    Entry* e = link->get();
    if (fn(e)) {
      link->set(e->next());
      --t.used;
      free_entry_(e);
    } else {
      link = e->next_link();
    }
  }
}

template <typename Fn>
uint64_t Dict::Scan(uint64_t cursor, Fn&& fn, size_t* visited) {
  if (size() == 0) return 0;
  uint64_t v = cursor;
  if (!rehashing()) {
    const uint64_t m0 = t_[0].mask;
    ScanBucket(0, v & m0, fn);
    ++*visited;
    // Increment the reversed cursor: set the bits above the mask, reverse, add one, reverse.
    v |= ~m0;
    v = Rev(Rev(v) + 1);
    return v;
  }
  // During a rehash: the bucket of the small table, then every bucket of the large table that
  // its entries can be rehashed to (those whose low bits equal the small bucket's index).
  const int small = t_[0].size() <= t_[1].size() ? 0 : 1;
  const int large = 1 - small;
  const uint64_t m0 = t_[small].mask;
  const uint64_t m1 = t_[large].mask;
  ScanBucket(small, v & m0, fn);
  ++*visited;
  do {
    ScanBucket(large, v & m1, fn);
    ++*visited;
    // Increment the bits of the large mask that the small mask does not cover (reversed).
    v |= ~m1;
    v = Rev(Rev(v) + 1);
  } while ((v & (m0 ^ m1)) != 0);
  return v;
}

template <typename Fn>
void Dict::ForEach(Fn&& fn) const {
  for (int t = 0; t < 2; ++t) {
    const Table& tb = t_[t];
    for (size_t i = 0; i < tb.size(); ++i) {
      for (const Entry* e = tb.buckets[i].get(); e != nullptr; e = e->next()) {
        if (!fn(e)) return;
      }
    }
  }
}

}  // namespace deadbolt::shard
