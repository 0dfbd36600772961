#pragma once
// HyperLogLog values (PFADD PFCOUNT PFMERGE) in Redis's string format, byte for byte, so that a
// value copied from Redis with GET and written here with SET (or the reverse) counts the same:
//
//   "HYLL" | encoding (0 dense, 1 sparse) | 3 unused bytes | cached count (8 bytes, little
//   endian; its top bit set when stale) | registers
//
// 16,384 six-bit registers (an element's register is the low 14 bits of its 64-bit MurmurHash2,
// its value one more than the trailing zeros of the other 50). Dense: the registers packed, 12,288
// bytes. Sparse: runs of registers, one or two bytes each (ZERO: up to 64 zero registers; XZERO:
// up to 16,384; VAL: up to 4 registers of one value, at most 32). A sparse value becomes dense
// when a register needs more than 32 or its size would pass the sparse limit (Redis's
// hll-sparse-max-bytes, 3,000). The count is Ertl's estimator over the registers' histogram
// ("New cardinality estimation algorithms for HyperLogLog sketches", 2017), as Redis 7 computes it.
//
// Pure functions on bytes: any thread. Values must have passed Check() before the others see them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deadbolt::shard::hll {

inline constexpr int kP = 14;
inline constexpr int kRegisters = 1 << kP;
inline constexpr int kQ = 64 - kP;  // the hash bits that give a register's value
inline constexpr size_t kHeader = 16;
inline constexpr size_t kDenseSize = kHeader + kRegisters * 6 / 8;
inline constexpr size_t kSparseMaxBytes = 3000;

enum class Status {
  kOk,
  kNotHll,   // not "HYLL" with a known encoding, or dense of the wrong size (Redis: WRONGTYPE)
  kCorrupt,  // sparse runs that do not cover the registers exactly (Redis: INVALIDOBJ)
};
Status Check(std::string_view v);

// A new value: sparse, every register zero, a cached count of 0 (Redis's createHLLObject).
std::string Empty();
bool IsDense(std::string_view v);

// The register an element lands in and the value it offers it.
void Hash(std::string_view element, int* index, uint8_t* value);
// Raises register `index` to `value`; false if it was already as high. Does not touch the cache.
bool Set(std::string* v, int index, uint8_t value, size_t sparse_max = kSparseMaxBytes);
// PFADD's step for one element: true if a register grew.
bool Add(std::string* v, std::string_view element, size_t sparse_max = kSparseMaxBytes);
// The same on a dense value's bytes (header included), in place.
void SetDenseRegister(char* dense, int index, uint8_t value);
// A sparse value rewritten dense (header kept but for its encoding); a dense one is left.
void ToDense(std::string* v);

// Raises regs[i] (kRegisters of them) to each register of v.
void MaxInto(std::string_view v, uint8_t* regs);
// The estimate of a value's registers (the cache is not read), and of a plain register array.
uint64_t Count(std::string_view v);
uint64_t CountRegisters(const uint8_t* regs);

// The cached count, unless stale.
std::optional<uint64_t> Cached(std::string_view v);
void SetCached(char* header, uint64_t count);
void Invalidate(char* header);

// PFDEBUG DECODE of a sparse value: "z:<run>" (ZERO), "Z:<run>" (XZERO), "v:<value>,<run>" (VAL),
// space separated.
std::string DecodeSparse(std::string_view v);
// A register's value (tests, PFDEBUG).
uint8_t Register(std::string_view v, int index);

}  // namespace deadbolt::shard::hll
