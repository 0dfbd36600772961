// Db: the set commands (SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SSCAN and
// the store of SINTERSTORE/SUNIONSTORE/SDIFFSTORE), with Redis 7's t_set.c semantics. The value
// is a SetValue (set_value.h): a change that moves it to another block stores the new one in the
// key's Entry (Entry::set_object); the key's TTL covers the whole set. The set
// algebra itself (SINTER ...) is computed by the commands from SetMembers of each key, as the
// keys may live on several shards.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "shard/base/glob.h"
#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/types/set_value.h"

namespace deadbolt::shard {

namespace {

// Adds or removes m in the set `e` holds, keeping the Entry's pointer on the block to keep.
bool AddTo(Entry* e, std::string_view m) {
  bool added;
  e->set_object(SetValue::Add(SetOf(e), m, &added));
  return added;
}
bool RemoveFrom(Entry* e, std::string_view m) {
  bool removed;
  e->set_object(SetValue::Remove(SetOf(e), m, &removed));
  return removed;
}

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

uint64_t NextRandom(uint64_t* state) {  // splitmix64
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
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
  int64_t added = 0;
  for (std::string_view m : members) added += AddTo(e, m) ? 1 : 0;
  if (added > 0) impl_->Modified(pos);
  return added;
}

OpResult<int64_t> Db::SetRem(std::string_view key, std::span<const std::string_view> members,
                             int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  int64_t removed = 0;
  for (std::string_view m : members) {
    removed += RemoveFrom(e, m) ? 1 : 0;
    if (SetOf(e)->size() == 0) break;
  }
  if (removed == 0) return removed;
  if (SetOf(e)->size() == 0) {
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
  } else {
    impl_->Modified(pos);
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
  out.reserve(SetOf(e)->size());
  SetOf(e)->ForEach([&](std::string_view m) { out.emplace_back(m); });
  return out;
}

OpResult<bool> Db::SetIsMember(std::string_view key, std::string_view member, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return false;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  return SetOf(e)->Contains(member);
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
  for (size_t i = 0; i < members.size(); ++i) out[i] = SetOf(e)->Contains(members[i]);
  return out;
}

OpResult<int64_t> Db::SetCard(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kSet) return OpStatus::kWrongType;
  return static_cast<int64_t>(SetOf(e)->size());
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
  if (count >= SetOf(e)->size()) {
    SetOf(e)->ForEach([&](std::string_view m) { out.emplace_back(m); });
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
    return out;
  }
  while (out.size() < count) {
    out.push_back(SetOf(e)->Random(&impl_->rng));
    RemoveFrom(e, out.back());
  }
  impl_->Modified(pos);
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
  const SetValue* set = SetOf(e);
  if (count < 0) {
    const uint64_t n = static_cast<uint64_t>(-(count + 1)) + 1;
    out.reserve(n);
    for (uint64_t i = 0; i < n; ++i) out.push_back(set->Random(&impl_->rng));
    return out;
  }
  std::vector<std::string> all;
  all.reserve(set->size());
  set->ForEach([&](std::string_view m) { all.emplace_back(m); });
  if (static_cast<uint64_t>(count) >= all.size()) return all;
  // A partial Fisher-Yates shuffle: `count` distinct picks.
  for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
    const size_t j = i + NextRandom(&impl_->rng) % (all.size() - i);
    std::swap(all[i], all[j]);
  }
  all.resize(static_cast<size_t>(count));
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
  result.cursor = SetOf(e)->Scan(cursor, count, [&](std::string_view m) {
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
