#pragma once
// The items of the packed forms (a small list's, set's or sorted set's buffer): how one value is
// stored, with 36-character UUIDs in 16 bytes, and room in a buffer without doubling.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace deadbolt::shard {

// Makes room for `extra` more bytes in `buf`, growing it to the size needed rounded up to 16
// bytes, not to twice its capacity: the values lock clients keep are small and mostly built one
// element at a time, and doubling left up to half of each buffer unused (a 10-UUID list took a
// 640-byte block for 370 bytes; bench/RESULTS.md, "Memory per small collection"). A packed
// buffer is at most a few KB, so copying it on a growth costs about what the insert does.
// Called by the thread that owns the value (the shard's reactor).
inline void ReserveExact(std::string* buf, size_t extra) {
  const size_t need = buf->size() + extra;
  if (need <= buf->capacity()) return;
  std::string grown;
  grown.reserve((need + 15) & ~size_t{15});
  grown.append(*buf);
  buf->swap(grown);
}

// One packed item: a tag byte, then the stored bytes. A tag up to kMaxPackedItemLen is the
// length of the value's bytes, stored as they are. kTagUuidLower / kTagUuidUpper: the value is
// a UUID in its canonical text form (36 characters, 8-4-4-4-12 hex digits, hyphens between),
// every letter lower case (upper case), stored as its 16 bytes; reading it back rebuilds the
// same text. Lock clients name their waiters and holders with such UUIDs (Redisson's fair-lock
// queue, redis-semaphore's members), so a 10-member value takes 170 bytes instead of 370. A
// UUID of mixed case is stored as it is. Each text has exactly one encoding, so two values are
// equal exactly when their encodings are (lookups compare encodings, never decode).
//
// Stateless helpers; used by the owner of the buffer (the shard's reactor thread).
class PackedItem {
 public:
  static constexpr size_t kMaxPackedItemLen = 64;  // the packed forms' value limit
  static constexpr uint8_t kTagUuidLower = 0xf0;
  static constexpr uint8_t kTagUuidUpper = 0xf1;
  static constexpr size_t kUuidTextLen = 36;
  static constexpr size_t kMaxEncoded = 1 + kMaxPackedItemLen;

  // Encodes v (v.size() <= kMaxPackedItemLen) into out; returns the encoded size.
  static size_t Encode(std::string_view v, char* out) {
    uint8_t tag;
    if (v.size() == kUuidTextLen && UuidCase(v, &tag)) {
      out[0] = static_cast<char>(tag);
      for (size_t i = 0, o = 1; i < kUuidTextLen; i += 2, ++o) {
        if (i == 8 || i == 13 || i == 18 || i == 23) ++i;  // skip the hyphen
        out[o] = static_cast<char>((Nibble(v[i]) << 4) | Nibble(v[i + 1]));
      }
      return 17;
    }
    out[0] = static_cast<char>(v.size());
    if (!v.empty()) std::memcpy(out + 1, v.data(), v.size());
    return 1 + v.size();
  }
  // The size Encode gives v.
  static size_t EncodedSize(std::string_view v) {
    uint8_t tag;
    return v.size() == kUuidTextLen && UuidCase(v, &tag) ? 17 : 1 + v.size();
  }
  // The size of the item stored at p (tag included).
  static size_t SizeAt(const char* p) {
    const auto tag = static_cast<uint8_t>(p[0]);
    return 1 + (tag >= kTagUuidLower ? 16 : tag);
  }
  // The value of the item at p: a view of the buffer, or of `scratch` (kUuidTextLen bytes) for
  // a UUID. Valid while both are.
  static std::string_view Decode(const char* p, char* scratch) {
    const auto tag = static_cast<uint8_t>(p[0]);
    if (tag < kTagUuidLower) return {p + 1, tag};
    const char* digits = tag == kTagUuidLower ? "0123456789abcdef" : "0123456789ABCDEF";
    for (size_t i = 0, o = 0; i < 16; ++i) {
      if (o == 8 || o == 13 || o == 18 || o == 23) scratch[o++] = '-';
      const auto b = static_cast<unsigned char>(p[1 + i]);
      scratch[o++] = digits[b >> 4];
      scratch[o++] = digits[b & 15];
    }
    return {scratch, kUuidTextLen};
  }
  // True if the item at p holds exactly the encoding `enc` (of `enc_size` bytes).
  static bool Equals(const char* p, const char* enc, size_t enc_size) {
    return p[0] == enc[0] && SizeAt(p) == enc_size &&
           std::memcmp(p + 1, enc + 1, enc_size - 1) == 0;
  }
  // Appends v's encoding to buf (growing it as ReserveExact does).
  static void Append(std::string* buf, std::string_view v) {
    char enc[kMaxEncoded];
    const size_t n = Encode(v, enc);
    ReserveExact(buf, n);
    buf->append(enc, n);
  }

 private:
  static int Nibble(char c) {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
  }
  // True if v (36 bytes) is a canonical UUID of one case; *tag says which.
  static bool UuidCase(std::string_view v, uint8_t* tag) {
    bool lower = false, upper = false;
    for (size_t i = 0; i < kUuidTextLen; ++i) {
      const char c = v[i];
      if (i == 8 || i == 13 || i == 18 || i == 23) {
        if (c != '-') return false;
      } else if (c >= 'a' && c <= 'f') {
        lower = true;
      } else if (c >= 'A' && c <= 'F') {
        upper = true;
      } else if (c < '0' || c > '9') {
        return false;
      }
    }
    if (lower && upper) return false;
    *tag = upper ? kTagUuidUpper : kTagUuidLower;
    return true;
  }
};

}  // namespace deadbolt::shard
