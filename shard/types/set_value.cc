#include "shard/types/set_value.h"

#include <cstring>
#include <utility>

#include "shard/types/value_kinds.h"

namespace deadbolt::shard {

namespace {

uint64_t NextRandom(uint64_t* state) {  // splitmix64, as the keyspace's Dict uses
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void AppendPacked(std::string* buf, std::string_view v) {
  buf->push_back(static_cast<char>(v.size()));
  buf->append(v);
}

}  // namespace

SetValue::~SetValue() = default;

std::optional<int64_t> SetValue::CanonicalInt(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  size_t i = 0;
  const bool neg = s[0] == '-';
  if (neg) i = 1;
  if (i == s.size()) return std::nullopt;
  if (s[i] == '0') {
    if (s.size() == 1) return int64_t{0};
    return std::nullopt;  // leading zero or "-0"
  }
  uint64_t u = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (u > (UINT64_MAX - d) / 10) return std::nullopt;
    u = u * 10 + d;
  }
  if (neg) {
    if (u > uint64_t{1} << 63) return std::nullopt;
    return static_cast<int64_t>(0 - u);
  }
  if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(u);
}

size_t SetValue::AllocatedBytes() const {
  size_t bytes = sizeof(SetValue) + blob_.capacity();
  if (table_) {
    bytes += sizeof(Dict) + table_->bucket_bytes();
    table_->ForEach([&](const Entry* e) {
      bytes += e->block_size();
      return true;
    });
  }
  return bytes;
}

int64_t SetValue::IntAt(size_t i) const {
  const char* p = blob_.data() + i * width_;
  switch (width_) {
    case 2: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

void SetValue::IntSetAt(size_t i, int64_t v) {
  char* p = blob_.data() + i * width_;
  if (width_ == 2) {
    const auto n = static_cast<int16_t>(v);
    std::memcpy(p, &n, 2);
  } else if (width_ == 4) {
    const auto n = static_cast<int32_t>(v);
    std::memcpy(p, &n, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

size_t SetValue::IntLowerBound(int64_t v) const {
  size_t lo = 0, hi = count_;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (IntAt(mid) < v) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

void SetValue::IntInsert(int64_t v) {
  const int w = WidthOf(v);
  if (w > width_) {  // widen every slot (from the end, so nothing is overwritten before read)
    const uint8_t old = width_;
    blob_.resize(size_t{count_} * w);
    for (size_t i = count_; i-- > 0;) {
      width_ = old;
      const int64_t x = IntAt(i);
      width_ = static_cast<uint8_t>(w);
      IntSetAt(i, x);
    }
    width_ = static_cast<uint8_t>(w);
  }
  const size_t at = IntLowerBound(v);
  blob_.insert(at * width_, width_, '\0');
  IntSetAt(at, v);
  ++count_;
}

std::optional<size_t> SetValue::PackedFind(std::string_view m) const {
  for (size_t off = 0; off < blob_.size();) {
    const size_t len = static_cast<unsigned char>(blob_[off]);
    if (len == m.size() && (len == 0 || std::memcmp(blob_.data() + off + 1, m.data(), len) == 0)) {
      return off;
    }
    off += 1 + len;
  }
  return std::nullopt;
}

void SetValue::ToPacked() {
  std::string buf;
  ForEach([&](std::string_view m) { AppendPacked(&buf, m); });
  blob_ = std::move(buf);
  form_ = Form::kPacked;
}

void SetValue::ToTable() {
  auto t = std::make_unique<Dict>(&DestroyEntry);
  ForEach([&](std::string_view m) {
    t->Insert(Entry::MakeString(m, {}, Entry::kNoExpire), Dict::Hash(m));
  });
  table_ = std::move(t);
  std::string().swap(blob_);
  form_ = Form::kTable;
}

bool SetValue::Contains(std::string_view m) const {
  switch (form_) {
    case Form::kInts: {
      std::optional<int64_t> v = CanonicalInt(m);
      if (!v) return false;
      const size_t at = IntLowerBound(*v);
      return at < count_ && IntAt(at) == *v;
    }
    case Form::kPacked:
      return PackedFind(m).has_value();
    case Form::kTable:
      return table_->Find(m, Dict::Hash(m)) != nullptr;
  }
  return false;
}

bool SetValue::Add(std::string_view m) {
  if (form_ == Form::kInts) {
    std::optional<int64_t> v = CanonicalInt(m);
    if (v) {
      const size_t at = IntLowerBound(*v);
      if (at < count_ && IntAt(at) == *v) return false;
      if (count_ < kMaxIntsetEntries) {
        IntInsert(*v);
        return true;
      }
      ToTable();
    } else if (count_ < kMaxPackedEntries && m.size() <= kMaxPackedLen) {
      ToPacked();  // integers print in at most 20 bytes: they all fit
    } else {
      ToTable();
    }
  }
  if (form_ == Form::kPacked) {
    if (PackedFind(m)) return false;
    if (count_ < kMaxPackedEntries && m.size() <= kMaxPackedLen) {
      AppendPacked(&blob_, m);
      ++count_;
      return true;
    }
    ToTable();
  }
  const uint64_t h = Dict::Hash(m);
  if (table_->FindLink(m, h)) return false;
  table_->Insert(Entry::MakeString(m, {}, Entry::kNoExpire), h);
  ++count_;
  return true;
}

bool SetValue::Remove(std::string_view m) {
  switch (form_) {
    case Form::kInts: {
      std::optional<int64_t> v = CanonicalInt(m);
      if (!v) return false;
      const size_t at = IntLowerBound(*v);
      if (at >= count_ || IntAt(at) != *v) return false;
      blob_.erase(at * width_, width_);
      --count_;
      return true;
    }
    case Form::kPacked: {
      std::optional<size_t> off = PackedFind(m);
      if (!off) return false;
      blob_.erase(*off, 1 + m.size());
      --count_;
      return true;
    }
    case Form::kTable: {
      Dict::Pos pos = table_->FindLink(m, Dict::Hash(m));
      if (!pos) return false;
      DestroyEntry(table_->Unlink(pos));
      --count_;
      table_->MaybeShrink();
      return true;
    }
  }
  return false;
}

std::string SetValue::Random(uint64_t* rng) const {
  if (form_ == Form::kTable) return std::string(table_->Random(rng)->key());
  size_t pick = NextRandom(rng) % count_;
  std::string out;
  ForEach([&](std::string_view m) {
    if (pick-- == 0) out = std::string(m);
  });
  return out;
}

}  // namespace deadbolt::shard
