#pragma once
// One key of a Db: a single allocation holding the chain link, the key, the expire time (only
// when the key has one) and the value (string bytes inline, or a pointer to a value object).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace deadbolt::shard {

class HashValue;   // shard/types/hash_value.h
class ZSetValue;   // shard/types/zset_value.h
class HeapString;  // shard/table/heap_string.h
class Entry;

// One word of a Dict's chains: a bucket, or an Entry's link to the next entry. The pointer is
// kept in the low 48 bits, which hold every user-space address on x86-64 (4-level page tables,
// and 5-level ones unless mmap is asked for more) and AArch64 (48-bit VA); Entry::Allocate checks
// every block it gets. An Entry's own link keeps the key's access clock in the 16 high bits:
// set() changes the pointer and leaves them alone, so relinking never loses a key's clock. A
// bucket's high bits stay zero. Zeroed memory is a valid null link (the Dict callocs buckets).
class EntryLink {
 public:
  static constexpr uintptr_t kPtrMask = (uintptr_t{1} << 48) - 1;
  Entry* get() const { return reinterpret_cast<Entry*>(w_ & kPtrMask); }
  void set(Entry* e) { w_ = (w_ & ~kPtrMask) | reinterpret_cast<uintptr_t>(e); }
  uint16_t tag() const { return static_cast<uint16_t>(w_ >> 48); }
  void set_tag(uint16_t t) { w_ = (w_ & kPtrMask) | (uintptr_t{t} << 48); }

 private:
  uintptr_t w_ = 0;
};
static_assert(sizeof(EntryLink) == sizeof(void*) && sizeof(void*) == 8);

// Owned by the Dict that links it, on the shard's reactor thread; never shared across threads.
//
// Memory layout (one block from operator new, no padding, unaligned fields read with memcpy):
//
//   offset 0   next                   chain link of the Dict bucket (8 bytes, EntryLink): the
//                                     next entry's address in the low 48 bits, the key's
//                                     access clock in the high 16 (below)
//   offset 8   uint8  flags           kind (3 bits) | has-expire | wide-expire | wide-lengths
//                                     | inline-value
//   offset 9   lengths                short: u8 key_len, u8 value_len        (2 bytes)
//                                     wide:  u32 key_len, u32 value_len      (8 bytes)
//   then       expire_at (unix ms)    none, 6 bytes (48-bit, values < 2^48, i.e. until year
//                                     10889) or 8 bytes (any other int64)
//   then       key bytes
//   then       value area             kInlineString: the string bytes
//                                     other kinds: an 8-byte owning pointer, or with the
//                                     inline-value flag the value's own bytes (a small intset,
//                                     shard/types/set_value.h), which shard/types/ reads
//
// A lock key "lock:123456" (11 bytes) holding a 36-byte uuid with a TTL takes
// 8 + 1 + 2 + 6 + 11 + 36 = 64 bytes: one 64-byte allocator size class.
//
// The access clock (maxmemory-policy *-lru, OBJECT IDLETIME) costs no byte: it is the time of
// the key's last access in units of 1024 ms (a shift, where 1000 ms took a multiply), modulo
// 2^16 (ClockAt), in the link's high bits. Idle times are computed modulo the wrap, 2^16 units
// (18.6 hours): a key idle for longer looks as idle as its idle time less a multiple of 18.6
// hours. Redis keeps 24 bits at 1000 ms (194 days); its OBJECT IDLETIME wraps too.
//
// The layout is fixed when the entry is built. Changes that keep the layout (a new value of the
// same length, a new expire time of the same width) are done in place; others build a new entry
// (Rebuild, MakeString) that the Dict swaps in with Replace.
//
// Entry knows the strings (inline and HeapString) it holds. A value object of another kind (a
// hash) is an owning pointer it stores but does not look into: shard/types/ builds such entries
// (MakeObject) and frees them with their value (DestroyEntry, shard/types/value_kinds.h).
class Entry {
 public:
  // kHash, kZSet, kList and kSet hold a value object of shard/types/.
  enum class Kind : uint8_t {
    kInlineString = 0,
    kHeapString = 1,
    kHash = 2,
    kZSet = 3,
    kList = 4,
    kSet = 5,
    kStream = 6,
  };
  static constexpr int64_t kNoExpire = INT64_MIN;  // expire_at() of a key without a TTL

  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  // Builders. Each returns one new allocation; free it with DestroyEntry
  // (shard/types/value_kinds.h), or with FreeShell when it owns no value object.
  static Entry* MakeString(std::string_view key, std::string_view value, int64_t expire_at);
  // Takes ownership of `str`.
  static Entry* MakeHeapString(std::string_view key, HeapString* str, int64_t expire_at);
  // An entry of an object kind (kHash) holding `object`, which it owns from then on. If this
  // throws, `object` is still the caller's. (shard/types/ wraps it: MakeHashEntry.)
  static Entry* MakeObject(Kind kind, std::string_view key, void* object, int64_t expire_at);
  // An entry of an object kind whose value is `bytes`, kept in the entry itself instead of a
  // separate block (has_inline_value(); shard/types/ wraps it: MakeSetEntry for a small intset).
  // It owns nothing else: FreeShell frees it.
  static Entry* MakeInlineObject(Kind kind, std::string_view key, std::string_view bytes,
                                 int64_t expire_at);
  // A copy of `old` with another expire time. The value object (if any) moves to the new entry:
  // free `old` with FreeShell afterwards, not Destroy.
  static Entry* Rebuild(const Entry* old, int64_t expire_at);

  // Frees the entry's own block only: what an inline string needs, or an entry whose value
  // object was moved elsewhere. An entry that owns a value object is freed with DestroyEntry.
  static void FreeShell(Entry* e);

  Entry* next() const { return next_.get(); }
  EntryLink* next_link() { return &next_; }
  void set_next(Entry* n) { next_.set(n); }

  // --- the access clock ---
  static constexpr int kClockShift = 10;
  static constexpr int64_t kClockUnitMs = int64_t{1} << kClockShift;
  static constexpr int64_t kClockPeriod = int64_t{1} << 16;  // in units: it wraps after this
  // Units since the epoch (the clock before the wrap).
  static int64_t ClockUnits(int64_t now_ms) {
    return static_cast<int64_t>(static_cast<uint64_t>(now_ms) >> kClockShift);
  }
  // The clock at a time: its unit count modulo 2^16.
  static uint16_t ClockAt(int64_t now_ms) { return static_cast<uint16_t>(ClockUnits(now_ms)); }
  // Units from `then` to `now`, modulo the wrap: 0 .. 65535.
  static int64_t ClockDistance(uint16_t then, uint16_t now) {
    return static_cast<uint16_t>(now - then);
  }
  uint16_t access_clock() const { return next_.tag(); }
  // One compare per lookup; the store only when the clock moved on (a key read again within
  // the same second leaves its cache line clean).
  void Touch(uint16_t clock) {
    if (next_.tag() != clock) next_.set_tag(clock);
  }
  // Idle time at now_ms in clock units, modulo the wrap.
  int64_t IdleUnits(int64_t now_ms) const { return ClockDistance(access_clock(), ClockAt(now_ms)); }

  Kind kind() const { return static_cast<Kind>(flags() & kKindMask); }
  bool is_string() const { return kind() == Kind::kInlineString || kind() == Kind::kHeapString; }

  std::string_view key() const { return {key_data(), key_len()}; }
  bool KeyEquals(std::string_view k) const {
    return k.size() == key_len() && BytesEqual(k.data(), key_data(), k.size());
  }

  bool has_expire() const { return (flags() & kHasExpire) != 0; }
  int64_t expire_at() const {  // kNoExpire when the key has no TTL
    const char* p = bytes() + expire_offset();
    switch (expire_width()) {
      case 6: {
        uint64_t v = 0;  // 48-bit little endian
        if constexpr (std::endian::native == std::endian::little) {
          std::memcpy(&v, p, 6);  // two loads, where the byte loop took 40 instructions
        } else {
          for (int i = 0; i < 6; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
        }
        return static_cast<int64_t>(v);
      }
      case 8: {
        int64_t v;
        std::memcpy(&v, p, sizeof v);
        return v;
      }
      default:
        return kNoExpire;
    }
  }
  // Redis's rule (keyIsExpired): a key is expired once now is past its expire time.
  bool IsExpired(int64_t now_ms) const { return has_expire() && now_ms > expire_at(); }
  // True if the expire time `at` (or kNoExpire) fits this entry's layout, so that
  // SetExpireInPlace can store it.
  bool ExpireFitsInPlace(int64_t at) const { return ExpireWidth(at) == expire_width(); }
  void SetExpireInPlace(int64_t at);

  // The string value (kInlineString or kHeapString).
  std::string_view string_value() const {
    if (kind() == Kind::kHeapString) return HeapStringView();
    return {value_area(), value_area_len()};
  }
  // kInlineString only: the writable bytes of the value (string_value().size() of them).
  char* inline_value_data() { return value_area(); }
  // kHeapString only.
  HeapString* heap_string() const { return static_cast<HeapString*>(LoadPtr()); }
  void set_heap_string(HeapString* s) { StorePtr(s); }
  // kHash only.
  HashValue* hash() const { return static_cast<HashValue*>(LoadPtr()); }
  ZSetValue* zset() const { return static_cast<ZSetValue*>(LoadPtr()); }
  // Any object kind (not a string) without has_inline_value(): the value object it owns, for
  // shard/types/ to cast.
  void* object() const { return LoadPtr(); }
  // An object kind built by MakeInlineObject: the value is these bytes of the entry.
  bool has_inline_value() const { return (flags() & kInlineValue) != 0; }
  std::string_view inline_value() const { return {value_area(), value_area_len()}; }
  // Any object kind: the value object that replaces the one it held (which is then the
  // caller's; a set that moved to a bigger block, shard/types/set_value.h).
  void set_object(void* p) { StorePtr(p); }

  // Bytes of this block as requested from the allocator (without value objects).
  size_t block_size() const { return value_offset() + value_area_len(); }

  // Size of the block an entry with these parts takes; for tests and memory reports.
  static size_t BlockSize(size_t key_len, size_t value_area_len, int64_t expire_at);

 private:
  static constexpr uint8_t kKindMask = 0x07;
  static constexpr uint8_t kHasExpire = 0x08;
  static constexpr uint8_t kWideExpire = 0x10;
  static constexpr uint8_t kWideLengths = 0x20;
  static constexpr uint8_t kInlineValue = 0x40;
  static constexpr size_t kHeaderOffset = sizeof(Entry*);
  static constexpr int64_t kCompactExpireLimit = int64_t{1} << 48;

  Entry() = default;

  // 0 (no TTL), 6 (48-bit) or 8 bytes.
  static size_t ExpireWidth(int64_t at) {
    if (at == kNoExpire) return 0;
    return (at >= 0 && at < kCompactExpireLimit) ? 6 : 8;
  }
  static Entry* Allocate(Kind kind, std::string_view key, size_t value_area_len, int64_t at,
                         bool inline_value = false);

  const char* bytes() const { return reinterpret_cast<const char*>(this); }
  char* bytes() { return reinterpret_cast<char*>(this); }
  uint8_t flags() const { return static_cast<uint8_t>(bytes()[kHeaderOffset]); }
  bool wide_lengths() const { return (flags() & kWideLengths) != 0; }
  size_t lengths_width() const { return wide_lengths() ? 8 : 2; }
  size_t expire_width() const {
    if (!has_expire()) return 0;
    return (flags() & kWideExpire) ? 8 : 6;
  }
  size_t key_len() const {
    const char* p = bytes() + kHeaderOffset;
    return wide_lengths() ? Load32(p + 1) : static_cast<unsigned char>(p[1]);
  }
  size_t value_area_len() const {
    const char* p = bytes() + kHeaderOffset;
    return wide_lengths() ? Load32(p + 5) : static_cast<unsigned char>(p[2]);
  }
  // memcmp(a, b, n) == 0, inline for the short keys locks use: two overlapping loads of 8 (or 4)
  // bytes from each side cover 4 to 16 bytes without reading past either, four cover 17 to 32
  // (redis-benchmark's `key:__rand_int__` names, zero-padded, are 16 and more).
  static bool BytesEqual(const char* a, const char* b, size_t n) {
    if (n > 16 && n <= 32) {  // the first 16 and the last 16, which overlap
      uint64_t a0, a1, a2, a3, b0, b1, b2, b3;
      std::memcpy(&a0, a, 8);
      std::memcpy(&b0, b, 8);
      std::memcpy(&a1, a + 8, 8);
      std::memcpy(&b1, b + 8, 8);
      std::memcpy(&a2, a + n - 16, 8);
      std::memcpy(&b2, b + n - 16, 8);
      std::memcpy(&a3, a + n - 8, 8);
      std::memcpy(&b3, b + n - 8, 8);
      return ((a0 ^ b0) | (a1 ^ b1) | (a2 ^ b2) | (a3 ^ b3)) == 0;
    }
    if (n >= 8 && n <= 16) {
      uint64_t a0, a1, b0, b1;
      std::memcpy(&a0, a, 8);
      std::memcpy(&b0, b, 8);
      std::memcpy(&a1, a + n - 8, 8);
      std::memcpy(&b1, b + n - 8, 8);
      return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    if (n >= 4 && n < 8) {
      uint32_t a0, a1, b0, b1;
      std::memcpy(&a0, a, 4);
      std::memcpy(&b0, b, 4);
      std::memcpy(&a1, a + n - 4, 4);
      std::memcpy(&b1, b + n - 4, 4);
      return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    return n == 0 || std::memcmp(a, b, n) == 0;
  }
  static uint32_t Load32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  std::string_view HeapStringView() const;
  size_t expire_offset() const { return kHeaderOffset + 1 + lengths_width(); }
  size_t key_offset() const { return expire_offset() + expire_width(); }
  size_t value_offset() const { return key_offset() + key_len(); }
  const char* key_data() const { return bytes() + key_offset(); }
  char* value_area() { return bytes() + value_offset(); }
  const char* value_area() const { return bytes() + value_offset(); }
  void* LoadPtr() const {
    void* p;
    std::memcpy(&p, value_area(), sizeof p);
    return p;
  }
  void StorePtr(void* p);

  EntryLink next_;
  // Followed by the flags, lengths, expire, key and value bytes described above.
};

}  // namespace deadbolt::shard
