#include "shard/base/hyperloglog.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace deadbolt::shard::hll {

namespace {

constexpr uint8_t kDense = 0;
constexpr uint8_t kSparse = 1;
constexpr size_t kDenseBytes = kDenseSize - kHeader;
constexpr int kZeroMax = 64;      // registers in one ZERO
constexpr int kXZeroMax = 16384;  // in one XZERO
constexpr int kValMax = 32;       // the highest value a VAL holds
constexpr int kValRunMax = 4;     // registers in one VAL
constexpr uint64_t kSeed = 0xadc83b19ULL;

// --- the sparse opcodes ---
bool IsZero(uint8_t b) { return (b & 0xc0) == 0x00; }
bool IsXZero(uint8_t b) { return (b & 0xc0) == 0x40; }
bool IsVal(uint8_t b) { return (b & 0x80) != 0; }
int ZeroLen(uint8_t b) { return (b & 0x3f) + 1; }
int XZeroLen(const uint8_t* p) { return (((p[0] & 0x3f) << 8) | p[1]) + 1; }
int ValValue(uint8_t b) { return ((b >> 2) & 0x1f) + 1; }
int ValLen(uint8_t b) { return (b & 0x3) + 1; }
uint8_t MakeZero(int len) { return static_cast<uint8_t>(len - 1); }
void MakeXZero(uint8_t* p, int len) {
  p[0] = static_cast<uint8_t>(((len - 1) >> 8) | 0x40);
  p[1] = static_cast<uint8_t>((len - 1) & 0xff);
}
uint8_t MakeVal(int value, int len) {
  return static_cast<uint8_t>(0x80 | ((value - 1) << 2) | (len - 1));
}
// A zero run of `len` registers, as ZERO or XZERO; returns the bytes written.
int PutZeros(uint8_t* p, int len) {
  if (len > kZeroMax) {
    MakeXZero(p, len);
    return 2;
  }
  p[0] = MakeZero(len);
  return 1;
}

// --- dense registers: register i at bit i*6, least significant bits first ---
uint8_t DenseGet(const uint8_t* regs, int i) {
  const size_t byte = static_cast<size_t>(i) * 6 / 8;
  const int shift = (i * 6) & 7;
  unsigned v = regs[byte] >> shift;
  if (byte + 1 < kDenseBytes) v |= static_cast<unsigned>(regs[byte + 1]) << (8 - shift);
  return static_cast<uint8_t>(v & 63);
}
void DenseSet(uint8_t* regs, int i, uint8_t value) {
  const size_t byte = static_cast<size_t>(i) * 6 / 8;
  const int shift = (i * 6) & 7;
  regs[byte] = static_cast<uint8_t>((regs[byte] & ~(63u << shift)) | (value << shift));
  if (byte + 1 < kDenseBytes) {
    const int rest = 8 - shift;
    regs[byte + 1] = static_cast<uint8_t>((regs[byte + 1] & ~(63u >> rest)) | (value >> rest));
  }
}

uint8_t* Bytes(std::string* v) { return reinterpret_cast<uint8_t*>(v->data()); }
const uint8_t* Bytes(std::string_view v) { return reinterpret_cast<const uint8_t*>(v.data()); }

// MurmurHash64A (Austin Appleby's, public domain), reading 8-byte blocks little endian.
uint64_t Murmur64A(const uint8_t* data, size_t len, uint64_t seed) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  uint64_t h = seed ^ (len * m);
  const uint8_t* end = data + (len - (len & 7));
  for (; data != end; data += 8) {
    uint64_t k = 0;
    for (int i = 7; i >= 0; i--) k = (k << 8) | data[i];
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  switch (len & 7) {
    case 7:
      h ^= uint64_t{data[6]} << 48;
      [[fallthrough]];
    case 6:
      h ^= uint64_t{data[5]} << 40;
      [[fallthrough]];
    case 5:
      h ^= uint64_t{data[4]} << 32;
      [[fallthrough]];
    case 4:
      h ^= uint64_t{data[3]} << 24;
      [[fallthrough]];
    case 3:
      h ^= uint64_t{data[2]} << 16;
      [[fallthrough]];
    case 2:
      h ^= uint64_t{data[1]} << 8;
      [[fallthrough]];
    case 1:
      h ^= uint64_t{data[0]};
      h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

// Calls fn(value, run) for each run of a checked sparse body, in register order.
template <typename Fn>
void ForEachRun(std::string_view v, Fn&& fn) {
  const uint8_t* p = Bytes(v) + kHeader;
  const uint8_t* end = Bytes(v) + v.size();
  while (p < end) {
    if (IsZero(*p)) {
      fn(0, ZeroLen(*p));
      p++;
    } else if (IsXZero(*p)) {
      fn(0, XZeroLen(p));
      p += 2;
    } else {
      fn(ValValue(*p), ValLen(*p));
      p++;
    }
  }
}

// Ertl's sigma and tau, iterated until they stop changing.
double Sigma(double x) {
  if (x == 1.0) return INFINITY;
  double y = 1.0;
  double z = x;
  double before;
  do {
    x *= x;
    before = z;
    z += x * y;
    y += y;
  } while (before != z);
  return z;
}

double Tau(double x) {
  if (x == 0.0 || x == 1.0) return 0.0;
  double y = 1.0;
  double z = 1 - x;
  double before;
  do {
    x = std::sqrt(x);
    before = z;
    y *= 0.5;
    z -= std::pow(1 - x, 2) * y;
  } while (before != z);
  return z / 3;
}

// histogram[v]: how many registers hold v (64 slots: a crafted dense value may hold up to 63).
uint64_t Estimate(const int* histogram) {
  constexpr double kAlphaInf = 0.721347520444481703680;  // 1 / (2 ln 2)
  const double m = kRegisters;
  double z = m * Tau((m - histogram[kQ + 1]) / m);
  for (int j = kQ; j >= 1; --j) {
    z += histogram[j];
    z *= 0.5;
  }
  z += m * Sigma(histogram[0] / m);
  return static_cast<uint64_t>(std::llround(kAlphaInf * m * m / z));
}

// Redis's hllSparseSet, step for step, so that the bytes come out the same.
bool SparseSet(std::string* v, int index, uint8_t value, size_t sparse_max) {
  if (value > kValMax) {
    ToDense(v);
    return Set(v, index, value, sparse_max);
  }
  uint8_t* base = Bytes(v) + kHeader;
  size_t end = v->size() - kHeader;
  // Step 1: the opcode covering `index`, and the one before it.
  size_t p = 0;
  size_t prev = SIZE_MAX;
  int first = 0;  // the first register p covers
  int span = 0;
  while (p < end) {
    size_t oplen = 1;
    if (IsZero(base[p])) {
      span = ZeroLen(base[p]);
    } else if (IsVal(base[p])) {
      span = ValLen(base[p]);
    } else {
      span = XZeroLen(base + p);
      oplen = 2;
    }
    if (index <= first + span - 1) break;
    prev = p;
    p += oplen;
    first += span;
  }
  // Check() made sure the runs cover every register.
  const bool is_zero = IsZero(base[p]);
  const bool is_xzero = IsXZero(base[p]);
  const bool is_val = IsVal(base[p]);
  // Step 2: the cases that change the opcode in place.
  bool in_place = false;
  if (is_val) {
    if (ValValue(base[p]) >= value) return false;
    in_place = span == 1;
  }
  if (is_zero && span == 1) in_place = true;
  if (in_place) {
    base[p] = MakeVal(value, 1);
  } else {
    // Step 3: the run split around `index`: up to five bytes for the old one or two.
    uint8_t seq[5];
    int n = 0;
    const int last = first + span - 1;
    if (is_zero || is_xzero) {
      if (index != first) n += PutZeros(seq + n, index - first);
      seq[n++] = MakeVal(value, 1);
      if (index != last) n += PutZeros(seq + n, last - index);
    } else {
      const int current = ValValue(base[p]);
      if (index != first) seq[n++] = MakeVal(current, index - first);
      seq[n++] = MakeVal(value, 1);
      if (index != last) seq[n++] = MakeVal(current, last - index);
    }
    const int oldlen = is_xzero ? 2 : 1;
    const int delta = n - oldlen;
    if (delta > 0 && v->size() + static_cast<size_t>(delta) > sparse_max) {
      ToDense(v);
      return Set(v, index, value, sparse_max);
    }
    v->replace(kHeader + p, static_cast<size_t>(oldlen), reinterpret_cast<const char*>(seq),
               static_cast<size_t>(n));
    base = Bytes(v) + kHeader;
    end = v->size() - kHeader;
  }
  // Step 4: adjacent VALs of one value merge, scanning up to five opcodes from the one before.
  size_t q = prev == SIZE_MAX ? 0 : prev;
  int scan = 5;
  while (q < end && scan--) {
    if (IsXZero(base[q])) {
      q += 2;
      continue;
    }
    if (IsZero(base[q])) {
      q++;
      continue;
    }
    if (q + 1 < end && IsVal(base[q + 1]) && ValValue(base[q]) == ValValue(base[q + 1])) {
      const int len = ValLen(base[q]) + ValLen(base[q + 1]);
      if (len <= kValRunMax) {
        base[q + 1] = MakeVal(ValValue(base[q]), len);
        v->erase(kHeader + q, 1);
        base = Bytes(v) + kHeader;
        end--;
        continue;  // the merged run may merge with the next one too
      }
    }
    q++;
  }
  return true;
}

}  // namespace

Status Check(std::string_view v) {
  if (v.size() < kHeader || std::memcmp(v.data(), "HYLL", 4) != 0) return Status::kNotHll;
  const uint8_t encoding = Bytes(v)[4];
  if (encoding == kDense) return v.size() == kDenseSize ? Status::kOk : Status::kNotHll;
  if (encoding != kSparse) return Status::kNotHll;
  const uint8_t* p = Bytes(v) + kHeader;
  const uint8_t* end = Bytes(v) + v.size();
  int64_t covered = 0;
  while (p < end && covered <= kRegisters) {
    if (IsZero(*p)) {
      covered += ZeroLen(*p);
      p++;
    } else if (IsXZero(*p)) {
      if (p + 1 >= end) return Status::kCorrupt;
      covered += XZeroLen(p);
      p += 2;
    } else {
      covered += ValLen(*p);
      p++;
    }
  }
  return covered == kRegisters && p == end ? Status::kOk : Status::kCorrupt;
}

std::string Empty() {
  std::string v(kHeader + 2, '\0');
  std::memcpy(v.data(), "HYLL", 4);
  v[4] = static_cast<char>(kSparse);
  static_assert(kRegisters <= kXZeroMax);
  MakeXZero(Bytes(&v) + kHeader, kRegisters);
  return v;
}

bool IsDense(std::string_view v) { return Bytes(v)[4] == kDense; }

void Hash(std::string_view element, int* index, uint8_t* value) {
  uint64_t h = Murmur64A(Bytes(element), element.size(), kSeed);
  *index = static_cast<int>(h & (kRegisters - 1));
  h >>= kP;
  h |= uint64_t{1} << kQ;  // so that the count ends, at kQ + 1
  *value = static_cast<uint8_t>(__builtin_ctzll(h) + 1);
}

bool Set(std::string* v, int index, uint8_t value, size_t sparse_max) {
  if (!IsDense(*v)) return SparseSet(v, index, value, sparse_max);
  uint8_t* regs = Bytes(v) + kHeader;
  if (DenseGet(regs, index) >= value) return false;
  DenseSet(regs, index, value);
  return true;
}

bool Add(std::string* v, std::string_view element, size_t sparse_max) {
  int index;
  uint8_t value;
  Hash(element, &index, &value);
  return Set(v, index, value, sparse_max);
}

void SetDenseRegister(char* dense, int index, uint8_t value) {
  DenseSet(reinterpret_cast<uint8_t*>(dense) + kHeader, index, value);
}

void ToDense(std::string* v) {
  if (IsDense(*v)) return;
  std::string dense(kDenseSize, '\0');
  std::memcpy(dense.data(), v->data(), kHeader);  // the magic and the cached count
  dense[4] = static_cast<char>(kDense);
  uint8_t* regs = Bytes(&dense) + kHeader;
  int i = 0;
  ForEachRun(*v, [&](int value, int run) {
    if (value != 0) {
      for (int k = 0; k < run; k++) DenseSet(regs, i + k, static_cast<uint8_t>(value));
    }
    i += run;
  });
  *v = std::move(dense);
}

void MaxInto(std::string_view v, uint8_t* regs) {
  if (IsDense(v)) {
    const uint8_t* r = Bytes(v) + kHeader;
    for (int i = 0; i < kRegisters; i++) regs[i] = std::max(regs[i], DenseGet(r, i));
    return;
  }
  int i = 0;
  ForEachRun(v, [&](int value, int run) {
    if (value != 0) {
      for (int k = 0; k < run; k++) {
        regs[i + k] = std::max(regs[i + k], static_cast<uint8_t>(value));
      }
    }
    i += run;
  });
}

uint64_t Count(std::string_view v) {
  int histogram[64] = {0};
  if (IsDense(v)) {
    const uint8_t* r = Bytes(v) + kHeader;
    for (int i = 0; i < kRegisters; i++) histogram[DenseGet(r, i)]++;
  } else {
    ForEachRun(v, [&](int value, int run) { histogram[value] += run; });
  }
  return Estimate(histogram);
}

uint64_t CountRegisters(const uint8_t* regs) {
  int histogram[64] = {0};
  for (int i = 0; i < kRegisters; i++) histogram[regs[i] & 63]++;
  return Estimate(histogram);
}

std::optional<uint64_t> Cached(std::string_view v) {
  const uint8_t* card = Bytes(v) + 8;
  if (card[7] & 0x80) return std::nullopt;
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | card[i];
  return n;
}

void SetCached(char* header, uint64_t count) {
  for (int i = 0; i < 8; i++) header[8 + i] = static_cast<char>((count >> (8 * i)) & 0xff);
}

void Invalidate(char* header) { header[15] = static_cast<char>(header[15] | 0x80); }

std::string DecodeSparse(std::string_view v) {
  std::string out;
  const uint8_t* p = Bytes(v) + kHeader;
  const uint8_t* end = Bytes(v) + v.size();
  while (p < end) {
    if (!out.empty()) out += ' ';
    if (IsZero(*p)) {
      out += "z:" + std::to_string(ZeroLen(*p));
      p++;
    } else if (IsXZero(*p)) {
      out += "Z:" + std::to_string(XZeroLen(p));
      p += 2;
    } else {
      out += "v:" + std::to_string(ValValue(*p)) + "," + std::to_string(ValLen(*p));
      p++;
    }
  }
  return out;
}

uint8_t Register(std::string_view v, int index) {
  if (IsDense(v)) return DenseGet(Bytes(v) + kHeader, index);
  int i = 0;
  uint8_t found = 0;
  ForEachRun(v, [&](int value, int run) {
    if (index >= i && index < i + run) found = static_cast<uint8_t>(value);
    i += run;
  });
  return found;
}

}  // namespace deadbolt::shard::hll
