#include "shard/types/zset_value.h"

#include <algorithm>
#include <memory>
#include <new>
#include <random>

#include "shard/table/random.h"

namespace deadbolt::shard {

namespace {

constexpr size_t kMaxPackedBytes = ZSetValue::kMaxPackedEntries * (9 + ZSetValue::kMaxPackedLen);

size_t GrowCapacity(size_t capacity, size_t need, size_t header) {
  size_t cap = std::max(need, std::min(capacity * 2, kMaxPackedBytes));
  return ((header + cap + 15) & ~size_t{15}) - header;
}

bool IsPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// A level for a new node: each level above 1 with probability 1/4, as Redis's zslRandomLevel.
uint32_t RandomLevel() {
  static thread_local std::minstd_rand rng(0x5eed);
  uint32_t level = 1;
  while ((rng() & 0xffff) < 0xffff / 4 && level < ZSetValue::kMaxLevel) ++level;
  return level;
}

std::string_view ScoreBytes(const double& score) {
  return {reinterpret_cast<const char*>(&score), sizeof score};
}

}  // namespace

ZSetValue* ZSetValue::Create(size_t bytes) {
  bytes = ((sizeof(ZSetValue) + bytes + 15) & ~size_t{15}) - sizeof(ZSetValue);
  void* block = ::operator new(sizeof(ZSetValue) + bytes);
  return new (block) ZSetValue(static_cast<uint32_t>(bytes));
}

ZSetValue::Node* ZSetValue::NewNode(uint32_t level, double score, Entry* entry) {
  void* block = ::operator new(sizeof(Node) + level * sizeof(Link));
  Node* n = new (block) Node{score, entry, nullptr, level};
  for (uint32_t i = 0; i < level; ++i) n->links()[i] = Link{nullptr, 0};
  return n;
}

ZSetValue* ZSetValue::CreateTable() {
  void* block = ::operator new(sizeof(ZSetValue) + sizeof(Big));
  auto* z = new (block) ZSetValue(kTableForm);
  Big* b = new (z->big()) Big();
  b->head = NewNode(kMaxLevel, 0, nullptr);
  return z;
}

ZSetValue::~ZSetValue() {
  if (packed()) return;
  Big* b = big();
  Node* x = b->head;
  while (x != nullptr) {
    Node* next = x->links()[0].forward;
    ::operator delete(x);
    x = next;
  }
  b->~Big();  // frees the member entries
}

size_t ZSetValue::AllocatedBytes() const {
  if (packed()) return sizeof(ZSetValue) + capacity_;
  const Big* b = big();
  size_t bytes = sizeof(ZSetValue) + sizeof(Big) + b->members.bucket_bytes();
  for (const Node* x = b->head; x != nullptr; x = x->links()[0].forward) {
    bytes += sizeof(Node) + x->level * sizeof(Link);
    if (x->entry != nullptr) bytes += x->entry->block_size();
  }
  return bytes;
}

std::optional<size_t> ZSetValue::PackedFind(std::string_view member) const {
  if (!Packable(member)) return std::nullopt;
  char enc[PackedItem::kMaxEncoded];
  const size_t n = PackedItem::Encode(member, enc);
  for (size_t p = 0; p < used_; p = PackedNext(p)) {
    if (PackedItem::Equals(data() + p, enc, n)) return p;
  }
  return std::nullopt;
}

std::optional<double> ZSetValue::Score(std::string_view member) const {
  if (packed()) {
    std::optional<size_t> p = PackedFind(member);
    if (!p) return std::nullopt;
    return PackedScore(*p);
  }
  const Entry* e = big()->members.Find(member, Dict::Hash(member));
  if (e == nullptr) return std::nullopt;
  return ReadScore(e->string_value().data());
}

std::optional<size_t> ZSetValue::Rank(std::string_view member) const {
  if (packed()) {
    if (!Packable(member)) return std::nullopt;
    char enc[PackedItem::kMaxEncoded];
    const size_t n = PackedItem::Encode(member, enc);
    size_t r = 0;
    for (size_t p = 0; p < used_; p = PackedNext(p), ++r) {
      if (PackedItem::Equals(data() + p, enc, n)) return r;
    }
    return std::nullopt;
  }
  std::optional<double> score = Score(member);
  if (!score) return std::nullopt;
  // Members before it, plus itself.
  return CountWhile([&](std::string_view m, double s) { return Less(s, m, *score, member); });
}

std::pair<std::string, double> ZSetValue::Random(uint64_t* rng) const {
  if (packed()) {
    size_t k = NextRandom(rng) % count_;
    size_t p = 0;
    while (k-- > 0) p = PackedNext(p);
    char scratch[PackedItem::kUuidTextLen];
    return {std::string(PackedMember(p, scratch)), PackedScore(p)};
  }
  const Entry* e = big()->members.Random(rng);
  return {std::string(e->key()), ReadScore(e->string_value().data())};
}

// --- packed form ---

void ZSetValue::PackedRemoveAt(ZSetValue* z, size_t p) {
  const size_t end = z->PackedNext(p);
  char* d = z->data();
  std::memmove(d + p, d + end, z->used_ - end);
  z->used_ -= static_cast<uint32_t>(end - p);
  --z->count_;
}

ZSetValue* ZSetValue::PackedInsert(ZSetValue* z, std::string_view member, double score) {
  if (score == 0) score = 0.0;  // -0 as +0: Redis's listpack keeps a score as text, "0"
  const size_t need = z->used_ + PackedSize(member);
  ZSetValue* out = z;
  if (need > z->capacity_) {
    out = Create(GrowCapacity(z->capacity_, need, sizeof(ZSetValue)));
    std::memcpy(out->data(), z->data(), z->used_);
    out->used_ = z->used_;
    out->count_ = z->count_;
  }
  size_t at = 0;
  char scratch[PackedItem::kUuidTextLen];
  while (at < out->used_ &&
         Less(out->PackedScore(at), out->PackedMember(at, scratch), score, member)) {
    at = out->PackedNext(at);
  }
  char* d = out->data();
  char enc[PackedItem::kMaxEncoded];
  const size_t n = PackedItem::Encode(member, enc);
  std::memmove(d + at + n + 8, d + at, out->used_ - at);
  std::memcpy(d + at, enc, n);
  std::memcpy(d + at + n, &score, 8);
  out->used_ = static_cast<uint32_t>(need);
  ++out->count_;
  return out;
}

ZSetValue* ZSetValue::ToTable(const ZSetValue* z) {
  std::unique_ptr<ZSetValue> t(CreateTable());
  Big* b = t->big();
  z->ForEach([&](std::string_view m, double s) {
    Entry* e = Entry::MakeString(m, ScoreBytes(s), Entry::kNoExpire);
    b->members.Insert(e, Dict::Hash(m));
    t->ListInsert(s, e);
    ++t->count_;
    return true;
  });
  return t.release();
}

ZSetValue* ZSetValue::ToPacked(const ZSetValue* z, size_t capacity) {
  ZSetValue* p = Create(capacity);
  char* d = p->data();
  size_t at = 0;
  z->ForEach([&](std::string_view m, double s) {
    const size_t n = PackedItem::Encode(m, d + at);
    std::memcpy(d + at + n, &s, 8);
    at += n + 8;
    return true;
  });
  p->used_ = static_cast<uint32_t>(at);
  p->count_ = z->count_;
  return p;
}

ZSetValue* ZSetValue::MaybeRepack(const ZSetValue* z) {
  if (z->count_ > kMaxPackedEntries / 2 || !IsPowerOfTwo(z->count_)) return nullptr;
  size_t bytes = 0;
  bool fits = true;
  z->ForEach([&](std::string_view m, double) {
    fits = fits && Packable(m);
    bytes += PackedSize(m);
    return true;
  });
  if (!fits) return nullptr;
  return ToPacked(z, bytes);
}

// --- skiplist ---

void ZSetValue::ListInsert(double score, Entry* entry) {
  Big* b = big();
  const std::string_view member = entry->key();
  Node* update[kMaxLevel];
  size_t rank[kMaxLevel];
  Node* x = b->head;
  for (int i = static_cast<int>(b->level) - 1; i >= 0; --i) {
    rank[i] = i == static_cast<int>(b->level) - 1 ? 0 : rank[i + 1];
    while (x->links()[i].forward != nullptr &&
           Less(x->links()[i].forward->score, x->links()[i].forward->member(), score, member)) {
      rank[i] += x->links()[i].span;
      x = x->links()[i].forward;
    }
    update[i] = x;
  }
  const uint32_t level = RandomLevel();
  if (level > b->level) {
    for (uint32_t i = b->level; i < level; ++i) {
      rank[i] = 0;
      update[i] = b->head;
      update[i]->links()[i].span = count_;
    }
    b->level = level;
  }
  x = NewNode(level, score, entry);
  for (uint32_t i = 0; i < level; ++i) {
    x->links()[i].forward = update[i]->links()[i].forward;
    update[i]->links()[i].forward = x;
    x->links()[i].span = update[i]->links()[i].span - (rank[0] - rank[i]);
    update[i]->links()[i].span = (rank[0] - rank[i]) + 1;
  }
  for (uint32_t i = level; i < b->level; ++i) update[i]->links()[i].span++;
  x->backward = update[0] == b->head ? nullptr : update[0];
  if (x->links()[0].forward != nullptr) {
    x->links()[0].forward->backward = x;
  } else {
    b->tail = x;
  }
}

void ZSetValue::ListDelete(double score, std::string_view member) {
  Big* b = big();
  Node* update[kMaxLevel];
  Node* x = b->head;
  for (int i = static_cast<int>(b->level) - 1; i >= 0; --i) {
    while (x->links()[i].forward != nullptr &&
           Less(x->links()[i].forward->score, x->links()[i].forward->member(), score, member)) {
      x = x->links()[i].forward;
    }
    update[i] = x;
  }
  x = x->links()[0].forward;
  if (x == nullptr || x->score != score || x->member() != member) return;  // not there
  for (uint32_t i = 0; i < b->level; ++i) {
    if (update[i]->links()[i].forward == x) {
      update[i]->links()[i].span += x->links()[i].span - 1;
      update[i]->links()[i].forward = x->links()[i].forward;
    } else {
      update[i]->links()[i].span -= 1;
    }
  }
  if (x->links()[0].forward != nullptr) {
    x->links()[0].forward->backward = x->backward;
  } else {
    b->tail = x->backward;
  }
  while (b->level > 1 && b->head->links()[b->level - 1].forward == nullptr) --b->level;
  ::operator delete(x);
}

const ZSetValue::Node* ZSetValue::ListAt(size_t rank) const {
  const Big* b = big();
  const Node* x = b->head;
  size_t traversed = 0;
  for (int i = static_cast<int>(b->level) - 1; i >= 0; --i) {
    while (x->links()[i].forward != nullptr && traversed + x->links()[i].span <= rank) {
      traversed += x->links()[i].span;
      x = x->links()[i].forward;
    }
    if (traversed == rank) return x;
  }
  return nullptr;
}

// --- mutations ---

ZSetValue* ZSetValue::Set(ZSetValue* z, std::string_view member, double score, bool* added) {
  if (z->packed()) {
    std::optional<size_t> p = z->PackedFind(member);
    *added = !p;
    if (p) {
      if (z->PackedScore(*p) == score) return z;
      PackedRemoveAt(z, *p);  // and put it back where the new score goes
      return PackedInsert(z, member, score);
    }
    if (Packable(member) && z->count_ < kMaxPackedEntries) return PackedInsert(z, member, score);
    std::unique_ptr<ZSetValue> t(ToTable(z));
    bool unused;
    ZSetValue* same = Set(t.get(), member, score, &unused);
    (void)same;  // a table stays itself
    return t.release();
  }
  Big* b = z->big();
  const uint64_t hash = Dict::Hash(member);
  Dict::Pos pos = b->members.FindLink(member, hash);
  *added = !pos;
  if (pos) {
    Entry* e = pos.entry();
    const double old = ReadScore(e->string_value().data());
    if (old == score) return z;
    z->ListDelete(old, member);
    std::memcpy(e->inline_value_data(), &score, 8);
    z->ListInsert(score, e);
    return z;
  }
  Entry* e = Entry::MakeString(member, ScoreBytes(score), Entry::kNoExpire);
  b->members.Insert(e, hash);
  z->ListInsert(score, e);
  ++z->count_;
  return z;
}

ZSetValue* ZSetValue::Del(ZSetValue* z, std::string_view member, bool* removed) {
  if (z->packed()) {
    std::optional<size_t> p = z->PackedFind(member);
    *removed = static_cast<bool>(p);
    if (!p) return z;
    PackedRemoveAt(z, *p);
    if (z->capacity_ > 256 && size_t{z->used_} * 4 < z->capacity_) {
      ZSetValue* small = Create(size_t{z->used_} * 2);
      std::memcpy(small->data(), z->data(), z->used_);
      small->used_ = z->used_;
      small->count_ = z->count_;
      return small;
    }
    return z;
  }
  Big* b = z->big();
  Dict::Pos pos = b->members.FindLink(member, Dict::Hash(member));
  *removed = static_cast<bool>(pos);
  if (!pos) return z;
  Entry* e = pos.entry();
  z->ListDelete(ReadScore(e->string_value().data()), member);
  Entry::FreeShell(b->members.Unlink(pos));
  --z->count_;
  b->members.MaybeShrink();
  ZSetValue* packed = MaybeRepack(z);
  return packed != nullptr ? packed : z;
}

}  // namespace deadbolt::shard
