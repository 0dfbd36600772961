#include "shard/types/set_value.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "shard/table/random.h"
#include "shard/types/packed_growth.h"
#include "shard/types/value_kinds.h"

namespace deadbolt::shard {

namespace {


}  // namespace

SetValue* SetValue::Create() { return Allocate(Form::kInts, 2, 0); }

SetValue* SetValue::Allocate(Form form, uint8_t width, size_t used) {
  void* block = ::operator new(sizeof(SetValue) + Room(used));
  return new (block) SetValue(form, width);
}

SetValue::~SetValue() {
  if (form_ == Form::kTable) delete table();
}

SetValue* SetValue::Resize(SetValue* s, size_t used) {
  if (Room(used) == Room(s->used())) return s;
  SetValue* n = Allocate(s->form_, s->width_, used);
  n->used_ = s->used_;
  n->count_ = s->count_;
  std::memcpy(n->data(), s->data(), std::min(used, s->used()));
  delete s;
  return n;
}

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

SetValue* SetValue::FromInline(std::string_view bytes) {
  const auto width = static_cast<uint8_t>(bytes[0]);
  SetValue* s = Allocate(Form::kInts, width, bytes.size() - 1);
  s->count_ = static_cast<uint32_t>((bytes.size() - 1) / width);
  if (bytes.size() > 1) std::memcpy(s->data(), bytes.data() + 1, bytes.size() - 1);
  return s;
}

size_t SetValue::AllocatedBytes() const {
  if (form_ != Form::kTable) return sizeof(SetValue) + Room(used());
  size_t bytes = sizeof(SetValue) + sizeof(Dict*) + sizeof(Dict) + table()->bucket_bytes();
  table()->ForEach([&](const Entry* e) {
    bytes += e->block_size();
    return true;
  });
  return bytes;
}

void SetValue::IntSetAt(size_t i, int64_t v) {
  char* p = data() + i * width_;
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

SetValue* SetValue::IntInsert(SetValue* s, int64_t v) {
  const int w = WidthOf(v);
  if (w > s->width_) {  // every slot rewritten wider, into a new block
    SetValue* n = Allocate(Form::kInts, static_cast<uint8_t>(w), (size_t{s->count_} + 1) * w);
    n->count_ = s->count_;
    for (size_t i = 0; i < s->count_; ++i) n->IntSetAt(i, s->IntAt(i));
    delete s;
    s = n;
  } else {
    s = Resize(s, (size_t{s->count_} + 1) * s->width_);
  }
  const size_t at = s->IntLowerBound(v);
  char* d = s->data();
  std::memmove(d + (at + 1) * s->width_, d + at * s->width_, (s->count_ - at) * s->width_);
  s->IntSetAt(at, v);
  ++s->count_;
  return s;
}

std::optional<size_t> SetValue::PackedFind(std::string_view m) const {
  if (m.size() > kMaxPackedLen) return std::nullopt;
  char enc[PackedItem::kMaxEncoded];
  const size_t n = PackedItem::Encode(m, enc);
  for (size_t off = 0; off < used_; off += PackedItem::SizeAt(data() + off)) {
    if (PackedItem::Equals(data() + off, enc, n)) return off;
  }
  return std::nullopt;
}

SetValue* SetValue::ToPacked(const SetValue* s, size_t extra) {
  size_t bytes = 0;
  s->ForEach([&](std::string_view m) { bytes += PackedItem::EncodedSize(m); });
  SetValue* n = Allocate(Form::kPacked, 0, bytes + extra);
  s->ForEach([&](std::string_view m) { n->used_ += PackedItem::Encode(m, n->data() + n->used_); });
  n->count_ = s->count_;
  return n;
}

SetValue* SetValue::ToTable(const SetValue* s) {
  auto t = std::make_unique<Dict>(&DestroyEntry);
  s->ForEach([&](std::string_view m) {
    t->Insert(Entry::MakeString(m, {}, Entry::kNoExpire), Dict::Hash(m));
  });
  SetValue* n = Allocate(Form::kTable, 0, sizeof(Dict*));
  Dict* raw = t.release();
  std::memcpy(n->data(), &raw, sizeof raw);
  n->count_ = s->count_;
  return n;
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
      return table()->Find(m, Dict::Hash(m)) != nullptr;
  }
  return false;
}

SetValue* SetValue::Add(SetValue* s, std::string_view m, bool* added) {
  *added = !s->Contains(m);
  if (!*added) return s;
  if (s->form_ == Form::kInts) {
    std::optional<int64_t> v = CanonicalInt(m);
    if (v && s->count_ < kMaxIntsetEntries) return IntInsert(s, *v);
  }
  const bool fits = m.size() <= kMaxPackedLen && s->count_ < kMaxPackedEntries;
  if (s->form_ == Form::kInts && !CanonicalInt(m) && fits) {
    // Integers print in at most 20 bytes: they all fit.
    char enc[PackedItem::kMaxEncoded];
    const size_t n = PackedItem::Encode(m, enc);
    SetValue* p = ToPacked(s, n);
    std::memcpy(p->data() + p->used_, enc, n);
    p->used_ = static_cast<uint16_t>(p->used_ + n);
    ++p->count_;
    delete s;
    return p;
  }
  if (s->form_ == Form::kPacked && fits) {
    char enc[PackedItem::kMaxEncoded];
    const size_t n = PackedItem::Encode(m, enc);
    s = Resize(s, s->used_ + n);
    std::memcpy(s->data() + s->used_, enc, n);
    s->used_ = static_cast<uint16_t>(s->used_ + n);
    ++s->count_;
    return s;
  }
  SetValue* t = s;
  if (s->form_ != Form::kTable) t = ToTable(s);
  try {
    t->table()->Insert(Entry::MakeString(m, {}, Entry::kNoExpire), Dict::Hash(m));
  } catch (...) {
    if (t != s) delete t;
    throw;
  }
  ++t->count_;
  if (t != s) delete s;
  return t;
}

SetValue* SetValue::Remove(SetValue* s, std::string_view m, bool* removed) {
  *removed = false;
  switch (s->form_) {
    case Form::kInts: {
      std::optional<int64_t> v = CanonicalInt(m);
      if (!v) return s;
      const size_t at = s->IntLowerBound(*v);
      if (at >= s->count_ || s->IntAt(at) != *v) return s;
      char* d = s->data();
      std::memmove(d + at * s->width_, d + (at + 1) * s->width_,
                   (s->count_ - at - 1) * s->width_);
      *removed = true;
      const size_t keep = (size_t{s->count_} - 1) * s->width_;
      s = Resize(s, keep);
      --s->count_;
      return s;
    }
    case Form::kPacked: {
      std::optional<size_t> off = s->PackedFind(m);
      if (!off) return s;
      const size_t n = PackedItem::SizeAt(s->data() + *off);
      char* d = s->data();
      std::memmove(d + *off, d + *off + n, s->used_ - *off - n);
      *removed = true;
      const size_t keep = s->used_ - n;
      s = Resize(s, keep);
      s->used_ = static_cast<uint16_t>(keep);
      --s->count_;
      return s;
    }
    case Form::kTable: {
      Dict* t = s->table();
      Dict::Pos pos = t->FindLink(m, Dict::Hash(m));
      if (!pos) return s;
      DestroyEntry(t->Unlink(pos));
      *removed = true;
      --s->count_;
      t->MaybeShrink();
      return s;
    }
  }
  return s;
}

std::string SetValue::Random(uint64_t* rng) const {
  if (form_ == Form::kTable) return std::string(table()->Random(rng)->key());
  size_t pick = NextRandom(rng) % count_;
  std::string out;
  ForEach([&](std::string_view m) {
    if (pick-- == 0) out = std::string(m);
  });
  return out;
}

std::string SetView::Random(uint64_t* rng) const {
  if (set_) return set_->Random(rng);
  char buf[24];
  return std::string(ints_.Format(NextRandom(rng) % ints_.count, buf));
}

}  // namespace deadbolt::shard
