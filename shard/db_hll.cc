// Db: the HyperLogLog commands' logic (PFADD, PFCOUNT, PFMERGE's reads and write, PFDEBUG) on
// string values in Redis's HLL format; the format itself is shard/base/hyperloglog.h.

#include <string>
#include <string_view>

#include "shard/base/hyperloglog.h"
#include "shard/db.h"
#include "shard/db_impl.h"

namespace deadbolt::shard {

namespace {

// The value at pos as an HLL: kOk, or why it is not one.
OpStatus CheckHll(const Entry* e) {
  if (!e->is_string()) return OpStatus::kWrongType;
  switch (hll::Check(e->string_value())) {
    case hll::Status::kOk:
      return OpStatus::kOk;
    case hll::Status::kNotHll:
      return OpStatus::kNotHll;
    case hll::Status::kCorrupt:
      return OpStatus::kCorruptHll;
  }
  return OpStatus::kNotHll;
}

}  // namespace

OpResult<int> Db::PfAdd(std::string_view key, const std::string_view* elements, size_t n,
                        int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) {
    std::string v = hll::Empty();
    for (size_t i = 0; i < n; i++) hll::Add(&v, elements[i]);
    hll::Invalidate(v.data());  // as Redis, even with no elements
    impl_->Add(Impl::MakePaddedString(key, v.size(), 0, v), hash);
    return 1;
  }
  if (OpStatus s = CheckHll(pos.entry()); s != OpStatus::kOk) return s;
  const std::string_view old = pos.entry()->string_value();
  if (hll::IsDense(old)) {
    // In place: a dense value keeps its size.
    char* p = impl_->GrowString(pos, old.size());
    std::string_view dense(p, hll::kDenseSize);
    bool grew = false;
    for (size_t i = 0; i < n; i++) {
      int index;
      uint8_t value;
      hll::Hash(elements[i], &index, &value);
      if (hll::Register(dense, index) >= value) continue;
      hll::SetDenseRegister(p, index, value);
      grew = true;
    }
    if (!grew) return 0;
    hll::Invalidate(p);
    impl_->Modified(pos);
    return 1;
  }
  std::string v(old);
  bool grew = false;
  for (size_t i = 0; i < n; i++) grew = hll::Add(&v, elements[i]) || grew;
  if (!grew) return 0;
  hll::Invalidate(v.data());
  impl_->ReplaceValueKeepTtl(pos, v);
  return 1;
}

OpResult<int64_t> Db::PfCount(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return 0;
  const OpStatus s = CheckHll(pos.entry());
  if (s != OpStatus::kOk && s != OpStatus::kCorruptHll) return s;
  const std::string_view v = pos.entry()->string_value();
  // A fresh cached count is answered without reading the registers, as Redis does (even when
  // they are damaged).
  if (auto cached = hll::Cached(v)) return static_cast<int64_t>(*cached);
  if (s != OpStatus::kOk) return s;
  const uint64_t count = hll::Count(v);
  char* p = impl_->GrowString(pos, v.size());
  hll::SetCached(p, count);
  impl_->Modified(pos);
  return static_cast<int64_t>(count);
}

OpStatus Db::PfMaxInto(std::string_view key, int64_t now_ms, uint8_t* regs, bool* dense) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kOk;
  if (OpStatus s = CheckHll(pos.entry()); s != OpStatus::kOk) return s;
  const std::string_view v = pos.entry()->string_value();
  if (hll::IsDense(v)) *dense = true;
  hll::MaxInto(v, regs);
  return OpStatus::kOk;
}

OpStatus Db::PfStore(std::string_view key, const uint8_t* regs, bool dense, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::string v;
  if (pos) {
    if (OpStatus s = CheckHll(pos.entry()); s != OpStatus::kOk) return s;
    v = std::string(pos.entry()->string_value());
  } else {
    v = hll::Empty();
  }
  if (dense) hll::ToDense(&v);
  for (int i = 0; i < hll::kRegisters; i++) {
    if (regs[i] != 0) hll::Set(&v, i, regs[i]);
  }
  hll::Invalidate(v.data());
  if (pos) {
    impl_->ReplaceValueKeepTtl(pos, v);
  } else {
    impl_->Add(Impl::MakePaddedString(key, v.size(), 0, v), hash);
  }
  return OpStatus::kOk;
}

OpResult<std::string> Db::PfDebugValue(std::string_view key, bool to_dense, bool* converted,
                                       int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  if (OpStatus s = CheckHll(pos.entry()); s != OpStatus::kOk) return s;
  std::string v(pos.entry()->string_value());
  *converted = false;
  if (to_dense && !hll::IsDense(v)) {
    hll::ToDense(&v);
    impl_->ReplaceValueKeepTtl(pos, v);
    *converted = true;
  }
  return v;
}

}  // namespace deadbolt::shard
