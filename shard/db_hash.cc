// Db: the hash commands (HSET HSETNX HGET HMGET HDEL HEXISTS HINCRBY HINCRBYFLOAT HLEN HSTRLEN
// HGETALL/HKEYS/HVALS HSCAN), with Redis 7's t_hash.c semantics. The value is a HashValue
// (hash_value.h); the key's TTL covers the whole hash.

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "shard/base/glob.h"
#include "shard/base/numeric.h"
#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/table/random.h"
#include "shard/types/hash_value.h"

namespace deadbolt::shard {

namespace {

// A series of HashValue mutations on one hash. Each mutation may return a new block (see
// HashValue); the edit keeps the latest and frees the ones in between, never the original (which
// belongs to the key's Entry until Commit).
class HashEdit {
 public:
  explicit HashEdit(HashValue* original) : original_(original), current_(original) {}
  ~HashEdit() {
    if (current_ != original_) delete current_;
  }
  HashEdit(const HashEdit&) = delete;
  HashEdit& operator=(const HashEdit&) = delete;

  HashValue* get() const { return current_; }
  bool Set(std::string_view field, std::string_view value) {
    bool added;
    Take(HashValue::Set(current_, field, value, &added));
    return added;
  }
  bool Del(std::string_view field) {
    bool removed;
    Take(HashValue::Del(current_, field, &removed));
    return removed;
  }
  // Hands the latest block to the caller (who must store it; see StoreHash).
  HashValue* Release() {
    HashValue* h = current_;
    current_ = original_;
    return h;
  }

 private:
  void Take(HashValue* next) {
    if (next == current_) return;
    if (current_ != original_) delete current_;
    current_ = next;
  }

  HashValue* original_;
  HashValue* current_;
};

// Makes `h` (the result of editing pos's hash) the key's value and reports the change, as an
// edit of `op` with `items` (KeyEdit). A new block gets a new Entry (same key and TTL); Swap
// frees the old Entry and the old HashValue. (ImplT is Db::Impl, deduced: the name is private
// to Db.)
template <typename ImplT>
void StoreHash(ImplT& impl, Dict::Pos pos, HashValue* h, KeyEdit::Op op,
               std::span<const std::string_view> items) {
  Entry* e = pos.entry();
  if (e->hash() != h) impl.Swap(pos, MakeHashEntry(e->key(), h, e->expire_at()));
  impl.Edited(pos, KeyEdit{.op = op, .items = items, .size_after = h->size()});
}

// Adds a new hash key holding the pairs fv[0], fv[1], ... (fields and values alternating).
// Returns the number of distinct fields.
template <typename ImplT>
int64_t AddHash(ImplT& impl, std::string_view key, uint64_t hash,
                std::span<const std::string_view> fv) {
  // Room for all pairs up front when they will stay packed: one allocation in the common case.
  size_t bytes = 0;
  bool packable = fv.size() / 2 <= HashValue::kMaxPackedEntries;
  for (size_t i = 0; packable && i + 1 < fv.size(); i += 2) {
    packable = HashValue::Packable(fv[i], fv[i + 1]);
    bytes += HashValue::PackedSize(fv[i], fv[i + 1]);
  }
  std::unique_ptr<HashValue> owner(HashValue::Create(packable ? bytes : 0));
  HashEdit edit(owner.get());
  for (size_t i = 0; i + 1 < fv.size(); i += 2) edit.Set(fv[i], fv[i + 1]);
  HashValue* h = edit.Release();
  if (h == owner.get()) {
    owner.release();  // the Entry takes it
  } else {
    owner.reset();  // replaced by a bigger block or a table
  }
  const int64_t n = static_cast<int64_t>(h->size());
  impl.Add(MakeHashEntry(key, h, Entry::kNoExpire), hash);
  return n;
}

// Sets one field of the hash at pos (which must hold a hash), or of a new hash if pos is empty.
template <typename ImplT>
void SetOneField(ImplT& impl, Dict::Pos pos, uint64_t hash, std::string_view key,
                 std::string_view field, std::string_view value) {
  if (!pos) {
    const std::string_view fv[2] = {field, value};
    AddHash(impl, key, hash, fv);
    return;
  }
  HashEdit edit(pos.entry()->hash());
  edit.Set(field, value);
  const std::string_view fv[2] = {field, value};
  StoreHash(impl, pos, edit.Release(), KeyEdit::Op::kHashSet, fv);
}

}  // namespace

OpResult<int64_t> Db::HSet(std::string_view key, std::string_view field, std::string_view value,
                           int64_t now_ms) {
  const std::string_view fv[2] = {field, value};
  return HSet(key, fv, now_ms);
}

OpResult<int64_t> Db::HSet(std::string_view key, std::span<const std::string_view> field_values,
                           int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) {
    if (field_values.size() < 2) return int64_t{0};  // never an empty hash
    return AddHash(*impl_, key, hash, field_values);
  }
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  HashEdit edit(e->hash());
  int64_t added = 0;
  for (size_t i = 0; i + 1 < field_values.size(); i += 2) {
    added += edit.Set(field_values[i], field_values[i + 1]) ? 1 : 0;
  }
  StoreHash(*impl_, pos, edit.Release(), KeyEdit::Op::kHashSet,
            field_values.first(field_values.size() & ~size_t{1}));
  return added;
}

OpResult<bool> Db::HSetNx(std::string_view key, std::string_view field, std::string_view value,
                          int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (pos) {
    const Entry* e = pos.entry();
    if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
    if (e->hash()->Get(field)) return false;
  }
  SetOneField(*impl_, pos, hash, key, field, value);
  return true;
}

OpResult<std::string_view> Db::HGet(std::string_view key, std::string_view field, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  std::optional<std::string_view> v = e->hash()->Get(field);
  if (!v) return OpStatus::kKeyNotFound;
  return *v;
}

OpResult<std::vector<std::optional<std::string_view>>> Db::HMGet(
    std::string_view key, std::span<const std::string_view> fields, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::vector<std::optional<std::string_view>> out(fields.size());
  if (!pos) return out;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  for (size_t i = 0; i < fields.size(); ++i) out[i] = e->hash()->Get(fields[i]);
  return out;
}

OpResult<int64_t> Db::HDel(std::string_view key, std::span<const std::string_view> fields,
                           int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  HashEdit edit(e->hash());
  int64_t removed = 0;
  for (std::string_view f : fields) {
    removed += edit.Del(f) ? 1 : 0;
    if (edit.get()->size() == 0) break;
  }
  if (removed == 0) return removed;
  if (edit.get()->size() == 0) {
    // The last field went: the key goes (the edit frees any block it made).
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
    return removed;
  }
  StoreHash(*impl_, pos, edit.Release(), KeyEdit::Op::kHashDel, fields);
  return removed;
}

OpResult<bool> Db::HExists(std::string_view key, std::string_view field, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return false;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  return e->hash()->Get(field).has_value();
}

OpResult<int64_t> Db::HIncrBy(std::string_view key, std::string_view field, int64_t delta,
                              int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  int64_t old = 0;
  if (pos) {
    const Entry* e = pos.entry();
    if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
    std::optional<std::string_view> v = e->hash()->Get(field);
    if (v && !ParseInt64(*v, &old)) return OpStatus::kHashValueNotInteger;
  }
  if ((delta < 0 && old < 0 && delta < INT64_MIN - old) ||
      (delta > 0 && old > 0 && delta > INT64_MAX - old)) {
    return OpStatus::kIncrOverflow;
  }
  const int64_t result = old + delta;
  SetOneField(*impl_, pos, hash, key, field, FormatInt64(result));
  return result;
}

OpResult<std::string> Db::HIncrByFloat(std::string_view key, std::string_view field,
                                       long double delta, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  long double old = 0;
  if (pos) {
    const Entry* e = pos.entry();
    if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
    std::optional<std::string_view> v = e->hash()->Get(field);
    if (v && !ParseLongDouble(*v, &old)) return OpStatus::kHashValueNotFloat;
  }
  const long double result = old + delta;
  if (std::isnan(result) || std::isinf(result)) return OpStatus::kNanOrInf;
  std::string text = FormatLongDoubleHuman(result);
  SetOneField(*impl_, pos, hash, key, field, text);
  return text;
}

OpResult<int64_t> Db::HLen(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  return static_cast<int64_t>(e->hash()->size());
}

OpResult<int64_t> Db::HStrLen(std::string_view key, std::string_view field, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  std::optional<std::string_view> v = e->hash()->Get(field);
  return static_cast<int64_t>(v ? v->size() : 0);
}

OpResult<HashPairs> Db::HGetAll(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  HashPairs pairs;
  if (!pos) return pairs;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  pairs.reserve(e->hash()->size());
  e->hash()->ForEach([&](std::string_view f, std::string_view v) { pairs.emplace_back(f, v); });
  return pairs;
}

OpResult<HashPairs> Db::HRandField(std::string_view key, int64_t count, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  HashPairs out;
  if (!pos) return out;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  const HashValue& h = *e->hash();
  if (count == 0) return out;
  if (count < 0) {  // may repeat (the caller bounds -count)
    const uint64_t n = static_cast<uint64_t>(-(count + 1)) + 1;
    out.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
    for (uint64_t i = 0; i < n; ++i) out.push_back(h.Random(&impl_->rng));
    return out;
  }
  out.reserve(std::min<size_t>(h.size(), static_cast<size_t>(count)));
  h.ForEach([&](std::string_view f, std::string_view v) { out.emplace_back(f, v); });
  if (static_cast<uint64_t>(count) < out.size()) {
    KeepRandom(&out, static_cast<size_t>(count), &impl_->rng);
  }
  return out;
}

OpResult<HScanResult> Db::HScan(std::string_view key, uint64_t cursor, std::string_view pattern,
                                size_t count, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  HScanResult result;
  if (!pos) return result;
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  const bool all = pattern == "*";
  result.cursor = e->hash()->Scan(cursor, count, [&](std::string_view f, std::string_view v) {
    if (all || GlobMatch(pattern, f)) result.pairs.emplace_back(f, v);
  });
  return result;
}

}  // namespace deadbolt::shard
