// Db: the set commands (SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SSCAN and
// the store of SINTERSTORE/SUNIONSTORE/SDIFFSTORE), with Redis 7's t_set.c semantics. The value
// is a SetValue (set_value.h), or a small intset inline in the key's Entry; reads see both
// through SetView (SetOf), changes go through SetEdit. The key's TTL covers the whole set. The
// set algebra itself (SINTER ...) is computed by the commands from SetMembers of each key, as
// the keys may live on several shards.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "shard/base/glob.h"
#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/table/random.h"
#include "shard/types/set_value.h"

namespace deadbolt::shard {

namespace {

// A series of changes to the set of pos's key. A block-held set is changed where it is (the
// Entry's pointer follows it, as SetValue::Add moves it); an inline intset is copied into a
// block (SetValue::FromInline), which the edit owns, at the first change that changes
// something (an SADD of members already there, an SREM of absent ones, allocate nothing).
// Commit then gives the key the Entry its result calls for: inline when it FitsInline(), else
// holding the block (MakeSetEntry's rule), swapping a new Entry in when the form or the inline
// bytes changed.
class SetEdit {
 public:
  explicit SetEdit(Entry* e) : e_(e) {
    if (!e->has_inline_value()) set_ = SetBlockOf(e);
  }
  ~SetEdit() { delete owned_; }
  SetEdit(const SetEdit&) = delete;
  SetEdit& operator=(const SetEdit&) = delete;

  size_t size() const { return set_ ? set_->size() : SetOf(e_).size(); }
  std::string Random(uint64_t* rng) const {
    return set_ ? set_->Random(rng) : SetOf(e_).Random(rng);
  }
  bool Add(std::string_view m) {
    if (set_ == nullptr) {
      if (SetOf(e_).Contains(m)) return false;
      Materialize();
    }
    bool added;
    Take(SetValue::Add(set_, m, &added));
    return added;
  }
  bool Remove(std::string_view m) {
    if (set_ == nullptr) {
      if (!SetOf(e_).Contains(m)) return false;
      Materialize();
    }
    bool removed;
    Take(SetValue::Remove(set_, m, &removed));
    return removed;
  }
  // After a change that left the set non-empty: the key's Entry holds the result, and the
  // change is reported, as an edit of `op` with `items` (KeyEdit).
  template <typename ImplT>
  void Commit(ImplT& impl, Dict::Pos pos, KeyEdit::Op op, std::span<const std::string_view> items) {
    const size_t size_after = set_->size();
    if (set_->FitsInline()) {
      // The new Entry copies the bytes; Swap then frees the old one (and a block it held).
      impl.Swap(pos, MakeInlineSetEntry(e_->key(), *set_, e_->expire_at()));
    } else if (owned_ != nullptr) {
      SetValue* s = owned_;
      owned_ = nullptr;  // MakeSetEntry takes it, also when it throws
      impl.Swap(pos, MakeSetEntry(e_->key(), s, e_->expire_at()));
    }
    impl.Edited(pos, KeyEdit{.op = op, .items = items, .size_after = size_after});
  }

 private:
  void Materialize() {
    owned_ = SetValue::FromInline(e_->inline_value());
    set_ = owned_;
  }
  void Take(SetValue* next) {
    set_ = next;
    if (owned_ != nullptr) {
      owned_ = next;  // Add/Remove freed the block it replaced
    } else {
      e_->set_object(next);
    }
  }

  Entry* e_;
  SetValue* set_ = nullptr;    // null: still the Entry's inline intset, unchanged
  SetValue* owned_ = nullptr;  // the block copied from the inline intset
};

// A new set of `members`.
SetValue* NewSet(auto members) {
  SetValue* set = SetValue::Create();
  try {
    for (std::string_view m : members) {
      bool added;
      set = SetValue::Add(set, m, &added);
    }
  } catch (...) {
    delete set;
    throw;
  }
  return set;
}

}  // namespace

OpResult<int64_t> Db::SetAdd(std::string_view key, std::span<const std::string_view> members,
                             int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) {
    if (members.empty()) return int64_t{0};
    SetValue* set = NewSet(members);
    const auto n = static_cast<int64_t>(set->size());
    impl_->Add(MakeSetEntry(key, set, Entry::kNoExpire), hash);
    return n;
  }
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  SetEdit edit(e);
  int64_t added = 0;
  for (std::string_view m : members) added += edit.Add(m) ? 1 : 0;
  if (added > 0) edit.Commit(*impl_, pos, KeyEdit::Op::kSetAdd, members);
  return added;
}

OpResult<int64_t> Db::SetRem(std::string_view key, std::span<const std::string_view> members,
                             int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  SetEdit edit(e);
  int64_t removed = 0;
  for (std::string_view m : members) {
    removed += edit.Remove(m) ? 1 : 0;
    if (edit.size() == 0) break;
  }
  if (removed == 0) return removed;
  if (edit.size() == 0) {
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
  } else {
    edit.Commit(*impl_, pos, KeyEdit::Op::kSetRem, members);
  }
  return removed;
}

OpResult<std::vector<std::string>> Db::SetMembers(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::vector<std::string> out;
  if (!pos) return out;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  const SetView set = SetOf(e);
  out.reserve(set.size());
  set.ForEach([&](std::string_view m) { out.emplace_back(m); });
  return out;
}

OpResult<bool> Db::SetIsMember(std::string_view key, std::string_view member, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return false;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  return SetOf(e).Contains(member);
}

OpResult<std::vector<bool>> Db::SetMIsMember(std::string_view key,
                                             std::span<const std::string_view> members,
                                             int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::vector<bool> out(members.size(), false);
  if (!pos) return out;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  const SetView set = SetOf(e);
  for (size_t i = 0; i < members.size(); ++i) out[i] = set.Contains(members[i]);
  return out;
}

OpResult<int64_t> Db::SetCard(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  return static_cast<int64_t>(SetOf(e).size());
}

OpResult<std::vector<std::string>> Db::SetPop(std::string_view key, size_t count,
                                              int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::vector<std::string> out;
  if (!pos) return OpStatus::kKeyNotFound;
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  if (count == 0) return out;
  if (count >= SetOf(e).size()) {
    SetOf(e).ForEach([&](std::string_view m) { out.emplace_back(m); });
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
    return out;
  }
  SetEdit edit(e);
  while (out.size() < count) {
    out.push_back(edit.Random(&impl_->rng));
    edit.Remove(out.back());
  }
  std::vector<std::string_view> popped;
  if (impl_->observed()) popped.assign(out.begin(), out.end());
  edit.Commit(*impl_, pos, KeyEdit::Op::kSetRem, popped);
  return out;
}

OpResult<std::vector<std::string>> Db::SetRandMember(std::string_view key, int64_t count,
                                                     int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::vector<std::string> out;
  if (!pos) return out;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  const SetView set = SetOf(e);
  if (count < 0) {
    const uint64_t n = static_cast<uint64_t>(-(count + 1)) + 1;
    out.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));  // n: the caller's
    for (uint64_t i = 0; i < n; ++i) out.push_back(set.Random(&impl_->rng));
    return out;
  }
  std::vector<std::string> all;
  all.reserve(set.size());
  set.ForEach([&](std::string_view m) { all.emplace_back(m); });
  if (static_cast<uint64_t>(count) >= all.size()) return all;
  KeepRandom(&all, static_cast<size_t>(count), &impl_->rng);
  return all;
}

OpResult<SScanResult> Db::SetScan(std::string_view key, uint64_t cursor, std::string_view pattern,
                                  size_t count, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  SScanResult result;
  if (!pos) return result;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  const bool all = pattern == "*";
  result.cursor = SetOf(e).Scan(cursor, count, [&](std::string_view m) {
    if (all || GlobMatch(pattern, m)) result.members.emplace_back(m);
  });
  return result;
}

int64_t Db::SetStore(std::string_view key, std::span<const std::string> members, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (members.empty()) {
    if (pos) {
      impl_->Remove(pos, Impl::Change::kDeleted);
      impl_->dict.MaybeShrink();
    }
    return 0;
  }
  SetValue* set = NewSet(members);
  const auto n = static_cast<int64_t>(set->size());
  Entry* e = MakeSetEntry(key, set, Entry::kNoExpire);
  if (pos) {
    impl_->Overwrite(pos, e);
  } else {
    impl_->Add(e, hash);
  }
  return n;
}

}  // namespace deadbolt::shard
