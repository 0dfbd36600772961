// Db: the bitmap commands (GETBIT, SETBIT, BITCOUNT, BITPOS, BITOP's result) on string values, with
// Redis 7.2's semantics: bit 0 is the most significant bit of the first byte, a missing key reads
// as zero bits, and a range counts from the end when negative.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shard/db.h"
#include "shard/db_impl.h"

namespace deadbolt::shard {

namespace {

int BitAt(const unsigned char* p, int64_t i) { return (p[i >> 3] >> (7 - (i & 7))) & 1; }

int64_t CountBytes(const unsigned char* p, int64_t n) {
  int64_t count = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, sizeof(w));
    count += __builtin_popcountll(w);
  }
  for (; i < n; i++) count += __builtin_popcount(p[i]);
  return count;
}

// The set bits among bits [first, last].
int64_t CountBits(const unsigned char* p, int64_t first, int64_t last) {
  int64_t count = 0;
  for (; first <= last && (first & 7) != 0; first++) count += BitAt(p, first);
  for (; last >= first && (last & 7) != 7; last--) count += BitAt(p, last);
  if (first <= last) count += CountBytes(p + (first >> 3), ((last + 1) >> 3) - (first >> 3));
  return count;
}

// The first bit equal to `bit` among bits [first, last], or -1. Whole bytes (and words) that
// hold only the other value are skipped at once.
int64_t FindBit(const unsigned char* p, int64_t first, int64_t last, int bit) {
  for (; first <= last && (first & 7) != 0; first++) {
    if (BitAt(p, first) == bit) return first;
  }
  if (first <= last) {
    const unsigned char other = bit ? 0x00 : 0xff;
    const uint64_t other_word = bit ? 0 : ~uint64_t{0};
    int64_t byte = first >> 3;
    const int64_t whole_end = (last + 1) >> 3;  // bytes [byte, whole_end) are in range whole
    for (; byte + 8 <= whole_end; byte += 8) {
      uint64_t w;
      std::memcpy(&w, p + byte, sizeof(w));
      if (w != other_word) break;
    }
    while (byte < whole_end && p[byte] == other) byte++;
    first = byte << 3;
  }
  for (; first <= last; first++) {
    if (BitAt(p, first) == bit) return first;
  }
  return -1;
}

// The range over a string of `len` bytes, as bits [*first, *last]; false when it is empty.
// `reversed_negatives_empty`: BITCOUNT's rule that a start after its end, both negative, is
// empty before they are clamped (BITPOS clamps them first).
bool ResolveBits(const Db::BitRange& r, int64_t len, bool reversed_negatives_empty, int64_t* first,
                 int64_t* last) {
  const int64_t total = r.bits ? len * 8 : len;
  int64_t start = 0;
  int64_t end = total - 1;
  if (r.given) {
    start = r.start;
    if (r.end_given) end = r.end;
    if (reversed_negatives_empty && start < 0 && end < 0 && start > end) return false;
    if (start < 0) start = std::max<int64_t>(0, total + start);
    if (end < 0) end = std::max<int64_t>(0, total + end);
    if (end >= total) end = total - 1;
  }
  if (start > end) return false;
  *first = r.bits ? start : start * 8;
  *last = r.bits ? end : end * 8 + 7;
  return true;
}

}  // namespace

OpResult<int> Db::GetBit(std::string_view key, uint64_t offset, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return 0;
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  const std::string_view s = e->string_value();
  if ((offset >> 3) >= s.size()) return 0;
  return BitAt(reinterpret_cast<const unsigned char*>(s.data()), static_cast<int64_t>(offset));
}

OpResult<int> Db::SetBit(std::string_view key, uint64_t offset, bool on, int64_t now_ms) {
  const size_t byte = static_cast<size_t>(offset >> 3);
  const unsigned char mask = static_cast<unsigned char>(0x80u >> (offset & 7));
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) {
    const char value = on ? static_cast<char>(mask) : '\0';
    impl_->Add(Impl::MakePaddedString(key, byte + 1, byte, std::string_view(&value, 1)), hash);
    return 0;
  }
  if (!pos.entry()->is_string()) return OpStatus::kWrongType;
  const size_t old_len = pos.entry()->string_value().size();
  const size_t len = std::max(old_len, byte + 1);
  unsigned char* p = reinterpret_cast<unsigned char*>(impl_->GrowString(pos, len));
  const int old = (p[byte] & mask) ? 1 : 0;
  // A bit set to the value it had changes nothing (as Redis: WATCH does not see it either).
  if (len == old_len && old == static_cast<int>(on)) return old;
  p[byte] = on ? (p[byte] | mask) : (p[byte] & ~mask);
  impl_->Modified(pos);
  return old;
}

OpResult<int64_t> Db::BitCount(std::string_view key, const BitRange& range, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  const std::string_view s = e->string_value();
  int64_t first, last;
  if (!ResolveBits(range, static_cast<int64_t>(s.size()), true, &first, &last)) return int64_t{0};
  return CountBits(reinterpret_cast<const unsigned char*>(s.data()), first, last);
}

OpResult<int64_t> Db::BitPos(std::string_view key, int bit, const BitRange& range, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{bit ? -1 : 0};
  const Entry* e = pos.entry();
  if (!e->is_string()) return OpStatus::kWrongType;
  const std::string_view s = e->string_value();
  int64_t first, last;
  if (!ResolveBits(range, static_cast<int64_t>(s.size()), false, &first, &last)) {
    return int64_t{-1};
  }
  const int64_t at = FindBit(reinterpret_cast<const unsigned char*>(s.data()), first, last, bit);
  // No clear bit in the range: without an end, the string goes on with zero bits.
  if (at < 0 && bit == 0 && !range.end_given) return last + 1;
  return at;
}

namespace {

// A field of `bits` bits at bit `offset` of `p` (`len` bytes, zeros past them), high bit first.
uint64_t ReadField(const unsigned char* p, size_t len, uint64_t offset, int bits) {
  uint64_t v = 0;
  for (int i = 0; i < bits; i++) {
    const uint64_t at = offset + static_cast<uint64_t>(i);
    const int bit = (at >> 3) < len ? BitAt(p, static_cast<int64_t>(at)) : 0;
    v = (v << 1) | static_cast<uint64_t>(bit);
  }
  return v;
}

void WriteField(unsigned char* p, uint64_t offset, int bits, uint64_t v) {
  for (int i = 0; i < bits; i++) {
    const uint64_t at = offset + static_cast<uint64_t>(i);
    const unsigned char mask = static_cast<unsigned char>(0x80u >> (at & 7));
    if ((v >> (bits - 1 - i)) & 1) {
      p[at >> 3] |= mask;
    } else {
      p[at >> 3] &= static_cast<unsigned char>(~mask);
    }
  }
}

// A field's bits as the value it holds: sign-extended for a signed type.
int64_t FieldValue(uint64_t raw, const Db::BitFieldOp& op) {
  if (!op.is_signed || op.bits == 64) return static_cast<int64_t>(raw);
  const uint64_t sign = uint64_t{1} << (op.bits - 1);
  return static_cast<int64_t>((raw ^ sign) - sign);
}

// What a write stores: `target` (exact) if the type holds it, else as the overflow rule says.
// False: FAIL, nothing written.
bool Fit(__int128 target, const Db::BitFieldOp& op, uint64_t* raw) {
  const __int128 max =
      op.is_signed ? (__int128{1} << (op.bits - 1)) - 1 : (__int128{1} << op.bits) - 1;
  const __int128 min = op.is_signed ? -(__int128{1} << (op.bits - 1)) : 0;
  const uint64_t mask = op.bits == 64 ? ~uint64_t{0} : (uint64_t{1} << op.bits) - 1;
  if (target < min || target > max) {
    if (op.overflow == Db::BitFieldOp::Overflow::kFail) return false;
    if (op.overflow == Db::BitFieldOp::Overflow::kSat) target = target < min ? min : max;
  }
  *raw = static_cast<uint64_t>(target) & mask;  // (WRAP: the low bits, two's complement)
  return true;
}

// Runs `ops` on the `len` bytes at `p` (writable, and long enough for every write when one is
// among them). Returns whether a write changed a byte.
bool RunBitField(unsigned char* p, size_t len, const std::vector<Db::BitFieldOp>& ops,
                 std::vector<std::optional<int64_t>>* out) {
  using Kind = Db::BitFieldOp::Kind;
  bool changed = false;
  for (const Db::BitFieldOp& op : ops) {
    const uint64_t old_raw = ReadField(p, len, op.offset, op.bits);
    const int64_t old = FieldValue(old_raw, op);
    if (op.kind == Kind::kGet) {
      out->push_back(old);
      continue;
    }
    // SET's value is read as the type reads it: an unsigned type takes it as unsigned 64 bits
    // (so -1 is over any unsigned maximum, as in Redis).
    const __int128 target =
        op.kind == Kind::kSet
            ? (op.is_signed ? __int128{op.value} : __int128{static_cast<uint64_t>(op.value)})
            : __int128{old} + op.value;
    uint64_t raw;
    if (!Fit(target, op, &raw)) {
      out->push_back(std::nullopt);
      continue;
    }
    WriteField(p, op.offset, op.bits, raw);
    changed = changed || raw != old_raw;
    out->push_back(op.kind == Kind::kSet ? old : FieldValue(raw, op));
  }
  return changed;
}

}  // namespace

OpResult<std::vector<std::optional<int64_t>>> Db::BitField(std::string_view key,
                                                           const std::vector<BitFieldOp>& ops,
                                                           int64_t now_ms) {
  size_t need = 0;  // bytes every write's field needs
  for (const BitFieldOp& op : ops) {
    if (op.kind != BitFieldOp::Kind::kGet) {
      need = std::max<size_t>(need, static_cast<size_t>((op.offset + op.bits - 1) >> 3) + 1);
    }
  }
  std::vector<std::optional<int64_t>> out;
  out.reserve(ops.size());
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (pos && !pos.entry()->is_string()) return OpStatus::kWrongType;
  if (need == 0) {  // reads only: nothing is written through the pointer
    std::string_view s = pos ? pos.entry()->string_value() : std::string_view();
    RunBitField(reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())), s.size(), ops, &out);
    return out;
  }
  if (!pos) {  // built first, then added: the new key is reported once, whole
    std::string buf(need, '\0');
    RunBitField(reinterpret_cast<unsigned char*>(buf.data()), buf.size(), ops, &out);
    impl_->Add(Impl::MakePaddedString(key, need, 0, buf), hash);
    return out;
  }
  const size_t old_len = pos.entry()->string_value().size();
  const size_t len = std::max(old_len, need);
  auto* p = reinterpret_cast<unsigned char*>(impl_->GrowString(pos, len));
  if (RunBitField(p, len, ops, &out) || len != old_len) impl_->Modified(pos);
  return out;
}

std::string Db::BitOpResult(BitOp op, const std::vector<std::string_view>& sources) {
  size_t len = 0;
  for (std::string_view s : sources) len = std::max(len, s.size());
  std::string out(len, '\0');
  if (sources.empty()) return out;
  auto* r = reinterpret_cast<unsigned char*>(out.data());
  const auto* first = reinterpret_cast<const unsigned char*>(sources[0].data());
  if (op == BitOp::kNot) {
    for (size_t j = 0; j < len; j++) r[j] = static_cast<unsigned char>(~first[j]);
    return out;
  }
  if (!sources[0].empty()) std::memcpy(r, first, sources[0].size());  // (zero past its end)
  for (size_t i = 1; i < sources.size(); i++) {
    const auto* s = reinterpret_cast<const unsigned char*>(sources[i].data());
    const size_t n = sources[i].size();
    switch (op) {
      case BitOp::kAnd:
        for (size_t j = 0; j < n; j++) r[j] &= s[j];
        std::memset(r + n, 0, len - n);  // its padding zeroes the rest
        break;
      case BitOp::kOr:
        for (size_t j = 0; j < n; j++) r[j] |= s[j];
        break;
      case BitOp::kXor:
        for (size_t j = 0; j < n; j++) r[j] ^= s[j];
        break;
      case BitOp::kNot:
        break;
    }
  }
  return out;
}

}  // namespace deadbolt::shard
