// Db: the hash commands. For now the minimum (HSET of one field, HGET); the hash commands issue
// extends this file.

#include <memory>

#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/value.h"

namespace deadbolt::shard {

OpResult<int64_t> Db::HSet(std::string_view key, std::string_view field, std::string_view value,
                           int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) {
    auto h = std::make_unique<HashValue>();
    h->Set(field, value);
    impl_->Add(Entry::MakeHash(key, h.release(), Entry::kNoExpire), hash);
    return int64_t{1};
  }
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kHash) return OpStatus::kWrongType;
  const bool added = e->hash()->Set(field, value);
  impl_->Modified(pos);
  return int64_t{added ? 1 : 0};
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

}  // namespace deadbolt::shard
