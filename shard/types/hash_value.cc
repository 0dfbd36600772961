#include "shard/types/hash_value.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "shard/table/random.h"
#include "shard/types/value_kinds.h"

namespace deadbolt::shard {

namespace {

// Largest packed area: kMaxPackedEntries pairs of the longest packable field and value.
constexpr size_t kMaxPackedBytes =
    HashValue::kMaxPackedEntries * (2 + 2 * HashValue::kMaxPackedLen);

// Room to give a packed hash that needs `need` bytes and has `capacity`: doubling (amortized
// O(1) growth), never past the largest packed area unless `need` is, and rounded so that the
// block fills its allocator size class (blocks are multiples of 16 bytes).
size_t GrowCapacity(size_t capacity, size_t need, size_t header) {
  size_t cap = std::max(need, std::min(capacity * 2, kMaxPackedBytes));
  return ((header + cap + 15) & ~size_t{15}) - header;
}

bool IsPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace

HashValue* HashValue::Create(size_t bytes) {
  bytes = ((sizeof(HashValue) + bytes + 15) & ~size_t{15}) - sizeof(HashValue);
  void* block = ::operator new(sizeof(HashValue) + bytes);
  return new (block) HashValue(static_cast<uint32_t>(bytes));
}

HashValue* HashValue::CreateTable() {
  void* block = ::operator new(sizeof(HashValue) + sizeof(Dict));
  auto* h = new (block) HashValue(kTableForm);
  new (h->table()) Dict(&DestroyEntry);
  return h;
}

HashValue::~HashValue() {
  if (!packed()) table()->~Dict();
}

size_t HashValue::AllocatedBytes() const {
  if (packed()) return sizeof(HashValue) + capacity_;
  size_t bytes = sizeof(HashValue) + sizeof(Dict) + table()->bucket_bytes();
  table()->ForEach([&](const Entry* e) {
    bytes += e->block_size();
    return true;
  });
  return bytes;
}

std::optional<HashValue::PackedPos> HashValue::PackedFind(std::string_view field) const {
  const char* d = data();
  for (size_t p = 0; p < used_;) {
    const size_t flen = static_cast<unsigned char>(d[p]);
    const size_t v = p + 1 + flen;
    const size_t end = v + 1 + static_cast<unsigned char>(d[v]);
    if (flen == field.size() && (flen == 0 || std::memcmp(d + p + 1, field.data(), flen) == 0)) {
      return PackedPos{p, v, end};
    }
    p = end;
  }
  return std::nullopt;
}

std::pair<std::string_view, std::string_view> HashValue::Random(uint64_t* rng) const {
  if (!packed()) {
    const Entry* e = table()->Random(rng);
    return {e->key(), e->string_value()};
  }
  size_t pick = NextRandom(rng) % count_;  // (a packed hash is small: a walk to it is cheap)
  std::pair<std::string_view, std::string_view> out;
  ForEach([&](std::string_view f, std::string_view v) {
    if (pick-- == 0) out = {f, v};
  });
  return out;
}

std::optional<std::string_view> HashValue::Get(std::string_view field) const {
  if (packed()) {
    std::optional<PackedPos> pos = PackedFind(field);
    if (!pos) return std::nullopt;
    return PackedAt(pos->value);
  }
  const Entry* e = table()->Find(field, Dict::Hash(field));
  if (e == nullptr) return std::nullopt;
  return e->string_value();
}

HashValue* HashValue::ToTable(const HashValue* h) {
  std::unique_ptr<HashValue> t(CreateTable());
  Dict* d = t->table();
  h->ForEach([&](std::string_view f, std::string_view v) {
    d->Insert(Entry::MakeString(f, v, Entry::kNoExpire), Dict::Hash(f));
  });
  t->count_ = h->count_;
  return t.release();
}

HashValue* HashValue::ToPacked(const HashValue* h, size_t capacity) {
  HashValue* p = Create(capacity);
  char* d = p->data();
  size_t at = 0;
  h->ForEach([&](std::string_view f, std::string_view v) {
    d[at] = static_cast<char>(f.size());
    if (!f.empty()) std::memcpy(d + at + 1, f.data(), f.size());
    at += 1 + f.size();
    d[at] = static_cast<char>(v.size());
    if (!v.empty()) std::memcpy(d + at + 1, v.data(), v.size());
    at += 1 + v.size();
  });
  p->used_ = static_cast<uint32_t>(at);
  p->count_ = h->count_;
  return p;
}

HashValue* HashValue::MaybeRepack(const HashValue* h) {
  if (h->count_ > kMaxPackedEntries / 2 || !IsPowerOfTwo(h->count_)) return nullptr;
  size_t bytes = 0;
  bool fits = true;
  h->ForEach([&](std::string_view f, std::string_view v) {
    fits = fits && Packable(f, v);
    bytes += PackedSize(f, v);
  });
  if (!fits) return nullptr;
  return ToPacked(h, bytes);
}

HashValue* HashValue::Set(HashValue* h, std::string_view field, std::string_view value,
                          bool* added) {
  if (h->packed()) {
    if (Packable(field, value)) return PackedSet(h, field, value, added);
    // This pair does not fit the packed form: switch to a table, then set it there.
    std::unique_ptr<HashValue> t(ToTable(h));
    TableSet(t.get(), field, value, added);
    return t.release();
  }
  TableSet(h, field, value, added);
  return h;
}

HashValue* HashValue::PackedSet(HashValue* h, std::string_view field, std::string_view value,
                                bool* added) {
  std::optional<PackedPos> pos = h->PackedFind(field);
  *added = !pos;
  if (pos) {
    const size_t old_len = pos->end - pos->value - 1;
    if (old_len == value.size()) {  // in place: HINCRBY 1 -> 2, a lock token refreshed, ...
      if (!value.empty()) std::memcpy(h->data() + pos->value + 1, value.data(), value.size());
      return h;
    }
    const size_t used = h->used_ - old_len + value.size();
    char* d;
    HashValue* out = h;
    if (used <= h->capacity_) {
      d = h->data();
      std::memmove(d + pos->end + value.size() - old_len, d + pos->end, h->used_ - pos->end);
    } else {
      out = Create(GrowCapacity(h->capacity_, used, sizeof(HashValue)));
      out->count_ = h->count_;
      d = out->data();
      std::memcpy(d, h->data(), pos->value);
      std::memcpy(d + pos->value + 1 + value.size(), h->data() + pos->end, h->used_ - pos->end);
    }
    d[pos->value] = static_cast<char>(value.size());
    if (!value.empty()) std::memcpy(d + pos->value + 1, value.data(), value.size());
    out->used_ = static_cast<uint32_t>(used);
    return out;
  }
  if (h->count_ >= kMaxPackedEntries) {
    std::unique_ptr<HashValue> t(ToTable(h));
    TableSet(t.get(), field, value, added);
    return t.release();
  }
  const size_t need = h->used_ + PackedSize(field, value);
  HashValue* out = h;
  if (need > h->capacity_) {
    out = Create(GrowCapacity(h->capacity_, need, sizeof(HashValue)));
    std::memcpy(out->data(), h->data(), h->used_);
    out->used_ = h->used_;
    out->count_ = h->count_;
  }
  char* d = out->data() + out->used_;
  d[0] = static_cast<char>(field.size());
  if (!field.empty()) std::memcpy(d + 1, field.data(), field.size());
  d += 1 + field.size();
  d[0] = static_cast<char>(value.size());
  if (!value.empty()) std::memcpy(d + 1, value.data(), value.size());
  out->used_ = static_cast<uint32_t>(need);
  ++out->count_;
  return out;
}

void HashValue::TableSet(HashValue* h, std::string_view field, std::string_view value,
                         bool* added) {
  Dict* d = h->table();
  const uint64_t hash = Dict::Hash(field);
  Dict::Pos pos = d->FindLink(field, hash);
  *added = !pos;
  if (!pos) {
    d->Insert(Entry::MakeString(field, value, Entry::kNoExpire), hash);
    ++h->count_;
    return;
  }
  Entry* e = pos.entry();
  if (e->kind() == Entry::Kind::kInlineString && e->string_value().size() == value.size()) {
    if (!value.empty()) std::memcpy(e->inline_value_data(), value.data(), value.size());
    return;
  }
  DestroyEntry(d->Replace(pos, Entry::MakeString(field, value, Entry::kNoExpire)));
}

HashValue* HashValue::Del(HashValue* h, std::string_view field, bool* removed) {
  if (h->packed()) {
    std::optional<PackedPos> pos = h->PackedFind(field);
    *removed = static_cast<bool>(pos);
    if (!pos) return h;
    char* d = h->data();
    std::memmove(d + pos->begin, d + pos->end, h->used_ - pos->end);
    h->used_ -= static_cast<uint32_t>(pos->end - pos->begin);
    --h->count_;
    // Give back room once three quarters of a larger block are unused.
    if (h->capacity_ > 256 && size_t{h->used_} * 4 < h->capacity_) {
      HashValue* small = Create(size_t{h->used_} * 2);
      std::memcpy(small->data(), h->data(), h->used_);
      small->used_ = h->used_;
      small->count_ = h->count_;
      return small;
    }
    return h;
  }
  Dict* d = h->table();
  Dict::Pos pos = d->FindLink(field, Dict::Hash(field));
  *removed = static_cast<bool>(pos);
  if (!pos) return h;
  DestroyEntry(d->Unlink(pos));
  --h->count_;
  d->MaybeShrink();
  HashValue* packed = MaybeRepack(h);
  return packed != nullptr ? packed : h;
}

}  // namespace deadbolt::shard
