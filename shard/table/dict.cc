#include "shard/table/dict.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

#include "shard/table/random.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace deadbolt::shard {

namespace {

// Fixed so that runs are reproducible. Keys come from clients, so a deployment that fears
// hash-flooding can make this per process.
constexpr uint64_t kHashSeed = 0x9e3779b97f4a7c15ULL;

size_t NextPowerOfTwo(size_t n) { return std::bit_ceil(std::max<size_t>(n, 1)); }

}  // namespace

Dict::~Dict() { Clear(); }

uint64_t Dict::Hash(std::string_view key) {
  return XXH3_64bits_withSeed(key.data(), key.size(), kHashSeed);
}

uint64_t Dict::Rev(uint64_t v) {
  // Bit reversal by swapping ever smaller groups of bits.
  v = ((v >> 1) & 0x5555555555555555ULL) | ((v & 0x5555555555555555ULL) << 1);
  v = ((v >> 2) & 0x3333333333333333ULL) | ((v & 0x3333333333333333ULL) << 2);
  v = ((v >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((v & 0x0f0f0f0f0f0f0f0fULL) << 4);
  return __builtin_bswap64(v);
}

EntryLink* Dict::AllocBuckets(size_t n) {
  // calloc rather than new[](): memory fresh from the OS is known to be zero and is not written
  // again, so a large new table costs page faults spread over the rehash instead of one long
  // memset when the resize starts.
  void* p = std::calloc(n, sizeof(EntryLink));
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<EntryLink*>(p);
}

void Dict::FreeBuckets(Table* t) {
  std::free(t->buckets);
  *t = Table{};
}

Dict::Pos Dict::FindLink(std::string_view key, uint64_t hash) {
  if (rehashing()) RehashSteps(1);
  for (int t = 0; t < 2; ++t) {
    Table& tb = t_[t];
    if (tb.buckets != nullptr) {
      const uint64_t idx = hash & tb.mask;
      // Buckets of the old table below rehash_idx_ have been moved and are empty.
      if (t == 1 || !rehashing() || idx >= static_cast<uint64_t>(rehash_idx_)) {
        for (EntryLink* link = &tb.buckets[idx]; link->get() != nullptr;
             link = link->get()->next_link()) {
          if (link->get()->KeyEquals(key)) return Pos{link, t};
        }
      }
    }
    if (!rehashing()) break;
  }
  return Pos{};
}

const Entry* Dict::Find(std::string_view key, uint64_t hash) const {
  for (int t = 0; t < 2; ++t) {
    const Table& tb = t_[t];
    if (tb.buckets != nullptr) {
      for (const Entry* e = tb.buckets[hash & tb.mask].get(); e != nullptr; e = e->next()) {
        if (e->KeyEquals(key)) return e;
      }
    }
    if (!rehashing()) break;
  }
  return nullptr;
}

void Dict::Prefetch(const uint64_t* hashes, size_t n) const {
  const int tables = rehashing() ? 2 : 1;
  for (int t = 0; t < tables; ++t) {
    const Table& tb = t_[t];
    if (tb.buckets == nullptr) continue;
    for (size_t i = 0; i < n; ++i) __builtin_prefetch(&tb.buckets[hashes[i] & tb.mask]);
  }
  // By now the first buckets asked for have come in (the rest are on their way): ask for the
  // entries they point at. An entry is packed (header, key, value, expiry) and starts anywhere in a
  // line: a 40- or 48-byte one (a 17-byte key, as redis-benchmark's) often spills into the next
  // line, whose miss then came in the key's compare. Its 48th byte's line too, then; for small
  // entries that is the same line, or a neighbour, at no measurable cost.
  for (int t = 0; t < tables; ++t) {
    const Table& tb = t_[t];
    if (tb.buckets == nullptr) continue;
    for (size_t i = 0; i < n; ++i) {
      if (const Entry* e = tb.buckets[hashes[i] & tb.mask].get()) {
        __builtin_prefetch(e);
        __builtin_prefetch(reinterpret_cast<const char*>(e) + 47);
      }
    }
  }
}

void Dict::Insert(Entry* e, uint64_t hash) {
  // As Redis's dictAdd: inserts also drive the rehash, so that it finishes long before the
  // new table fills up.
  if (rehashing()) RehashSteps(1);
  if (!rehashing()) {
    if (t_[0].buckets == nullptr) {
      t_[0].buckets = AllocBuckets(kInitialSize);
      t_[0].mask = kInitialSize - 1;
    } else if (t_[0].used >= t_[0].size()) {
      StartResize(NextPowerOfTwo(t_[0].used + 1));
    }
  }
  Table& tb = t_[rehashing() ? 1 : 0];
  EntryLink* bucket = &tb.buckets[hash & tb.mask];
  e->set_next(bucket->get());
  bucket->set(e);
  ++tb.used;
}

Entry* Dict::Replace(Pos pos, Entry* e) {
  Entry* old = pos.link->get();
  e->set_next(old->next());
  pos.link->set(e);
  old->set_next(nullptr);
  return old;
}

Entry* Dict::Unlink(Pos pos) {
  Entry* old = pos.link->get();
  pos.link->set(old->next());
  old->set_next(nullptr);
  --t_[pos.table].used;
  return old;
}

void Dict::MaybeShrink() {
  if (rehashing() || t_[0].buckets == nullptr) return;
  const size_t size = t_[0].size();
  const size_t used = t_[0].used;
  // Like Redis, a table never shrinks below kInitialSize buckets (only Clear frees it), so a
  // key set and deleted over and over does not allocate a table each time.
  if (size > kInitialSize && used * 10 < size) {
    StartResize(std::max(kInitialSize, NextPowerOfTwo(used + 1)));
  }
}

void Dict::StartResize(size_t new_size) {
  t_[1].buckets = AllocBuckets(new_size);
  t_[1].mask = new_size - 1;
  t_[1].used = 0;
  rehash_idx_ = 0;
  FinishRehashIfDone();
}

void Dict::FinishRehashIfDone() {
  if (!rehashing() || t_[0].used != 0) return;
  FreeBuckets(&t_[0]);
  t_[0] = t_[1];
  t_[1] = Table{};
  rehash_idx_ = -1;
}

bool Dict::RehashSteps(size_t n) {
  if (!rehashing()) return false;
  size_t empty_visits = n * 10;
  Table& from = t_[0];
  Table& to = t_[1];
  while (n-- > 0 && from.used != 0) {
    while (from.buckets[rehash_idx_].get() == nullptr) {
      ++rehash_idx_;
      if (--empty_visits == 0) return true;
    }
    Entry* e = from.buckets[rehash_idx_].get();
    while (e != nullptr) {
      Entry* next = e->next();
      EntryLink* bucket = &to.buckets[Hash(e->key()) & to.mask];
      e->set_next(bucket->get());
      bucket->set(e);
      --from.used;
      ++to.used;
      e = next;
    }
    from.buckets[rehash_idx_].set(nullptr);
    ++rehash_idx_;
  }
  FinishRehashIfDone();
  return rehashing();
}

void Dict::Clear() {
  for (Table& t : t_) {
    for (size_t i = 0; i < t.size(); ++i) {
      Entry* e = t.buckets[i].get();
      while (e != nullptr) {
        Entry* next = e->next();
        free_entry_(e);
        e = next;
      }
    }
    FreeBuckets(&t);
  }
  rehash_idx_ = -1;
}

Entry* Dict::Random(uint64_t* rng) const {
  if (size() == 0) return nullptr;
  Entry* head = nullptr;
  if (rehashing()) {
    // Buckets of t_[0] below rehash_idx_ are empty: draw from the rest of both tables.
    const uint64_t start = static_cast<uint64_t>(rehash_idx_);
    const uint64_t span = t_[0].size() + t_[1].size() - start;
    while (head == nullptr) {
      const uint64_t h = start + NextRandom(rng) % span;
      head = h >= t_[0].size() ? t_[1].buckets[h - t_[0].size()].get() : t_[0].buckets[h].get();
    }
  } else {
    while (head == nullptr) head = t_[0].buckets[NextRandom(rng) & t_[0].mask].get();
  }
  size_t len = 0;
  for (Entry* e = head; e != nullptr; e = e->next()) ++len;
  size_t pick = NextRandom(rng) % len;
  Entry* e = head;
  while (pick-- > 0) e = e->next();
  return e;
}

size_t Dict::MaxChainLength() const {
  size_t best = 0;
  for (const Table& t : t_) {
    for (size_t i = 0; i < t.size(); ++i) {
      size_t len = 0;
      for (const Entry* e = t.buckets[i].get(); e != nullptr; e = e->next()) ++len;
      best = std::max(best, len);
    }
  }
  return best;
}

}  // namespace deadbolt::shard
