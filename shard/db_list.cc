// Db: the list commands (LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LINSERT
// LTRIM LPOS LMOVE), with Redis 7's t_list.c semantics. The value is a ListValue
// (list_value.h), changed in place; the key's TTL covers the whole list.

#include <memory>
#include <string>
#include <vector>

#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/types/list_value.h"

namespace deadbolt::shard {

namespace {

// Redis's LRANGE/LTRIM index rules: [start, stop] of a list of `len`, negative from the end,
// clamped. False when the range is empty.
bool NormalizeRange(int64_t len, int64_t* start, int64_t* stop) {
  if (*start < 0) *start += len;
  if (*stop < 0) *stop += len;
  if (*start < 0) *start = 0;
  if (*start > *stop || *start >= len) return false;
  if (*stop >= len) *stop = len - 1;
  return true;
}

}  // namespace

OpStatus Db::ListCheckType(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (pos && pos.entry()->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  return OpStatus::kOk;
}

OpResult<int64_t> Db::ListPush(std::string_view key, std::span<const std::string_view> values,
                               ListEnd end, bool only_if_exists, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) {
    if (only_if_exists || values.empty()) return int64_t{0};
    auto list = std::make_unique<ListValue>();
    for (std::string_view v : values) {
      if (end == ListEnd::kLeft) {
        list->PushFront(v);
      } else {
        list->PushBack(v);
      }
    }
    const auto n = static_cast<int64_t>(list->size());
    impl_->Add(MakeListEntry(key, list.release(), Entry::kNoExpire), hash);
    return n;
  }
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  ListValue* list = ListOf(e);
  for (std::string_view v : values) {
    if (end == ListEnd::kLeft) {
      list->PushFront(v);
    } else {
      list->PushBack(v);
    }
  }
  impl_->Edited(
      pos,
      KeyEdit{
          .op = KeyEdit::Op::kListPush, .end = end, .items = values, .size_after = list->size()});
  return static_cast<int64_t>(list->size());
}

OpResult<std::vector<std::string>> Db::ListPop(std::string_view key, ListEnd end, size_t count,
                                               int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  ListValue* list = ListOf(e);
  std::vector<std::string> out;
  while (out.size() < count && list->size() > 0) {
    out.push_back(end == ListEnd::kLeft ? list->PopFront() : list->PopBack());
  }
  if (out.empty()) return out;
  if (list->size() == 0) {
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
  } else {
    impl_->Edited(pos, KeyEdit{.op = KeyEdit::Op::kListPop,
                               .end = end,
                               .first = out.size(),
                               .items = {},
                               .size_after = list->size()});
  }
  return out;
}

OpResult<int64_t> Db::ListLen(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  return static_cast<int64_t>(ListOf(e)->size());
}

OpResult<std::vector<std::string>> Db::ListRange(std::string_view key, int64_t start,
                                                 int64_t stop, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::vector<std::string> out;
  if (!pos) return out;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  const ListValue* list = ListOf(e);
  if (!NormalizeRange(static_cast<int64_t>(list->size()), &start, &stop)) return out;
  out.reserve(static_cast<size_t>(stop - start + 1));
  list->ForRange(static_cast<size_t>(start), static_cast<size_t>(stop) + 1,
                 [&](std::string_view v) { out.emplace_back(v); });
  return out;
}

OpResult<std::string> Db::ListIndex(std::string_view key, int64_t index, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  const ListValue* list = ListOf(e);
  const auto len = static_cast<int64_t>(list->size());
  if (index < 0) index += len;
  if (index < 0 || index >= len) return OpStatus::kKeyNotFound;
  return list->At(static_cast<size_t>(index));
}

OpStatus Db::ListSet(std::string_view key, int64_t index, std::string_view value,
                     int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kNoSuchKey;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  ListValue* list = ListOf(e);
  const auto len = static_cast<int64_t>(list->size());
  if (index < 0) index += len;
  if (index < 0 || index >= len) return OpStatus::kOutOfRange;
  list->Set(static_cast<size_t>(index), value);
  impl_->Modified(pos);
  return OpStatus::kOk;
}

OpResult<int64_t> Db::ListRem(std::string_view key, int64_t count, std::string_view value,
                              int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  ListValue* list = ListOf(e);
  const size_t removed = list->Remove(count, value);
  if (removed == 0) return int64_t{0};
  if (list->size() == 0) {
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
  } else {
    impl_->Modified(pos);
  }
  return static_cast<int64_t>(removed);
}

OpResult<int64_t> Db::ListInsert(std::string_view key, bool before, std::string_view pivot,
                                 std::string_view value, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  ListValue* list = ListOf(e);
  size_t at = 0;
  bool found = false;
  list->ForEach([&](std::string_view v) {
    if (found) return;
    if (v == pivot) {
      found = true;
    } else {
      ++at;
    }
  });
  if (!found) return int64_t{-1};
  list->Insert(before ? at : at + 1, value);
  impl_->Modified(pos);
  return static_cast<int64_t>(list->size());
}

OpStatus Db::ListTrim(std::string_view key, int64_t start, int64_t stop, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kOk;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  ListValue* list = ListOf(e);
  if (!NormalizeRange(static_cast<int64_t>(list->size()), &start, &stop)) {
    impl_->Remove(pos, Impl::Change::kDeleted);
    impl_->dict.MaybeShrink();
    return OpStatus::kOk;
  }
  if (start == 0 && static_cast<size_t>(stop) + 1 == list->size()) return OpStatus::kOk;
  list->Trim(static_cast<size_t>(start), static_cast<size_t>(stop) + 1);
  impl_->Edited(pos, KeyEdit{.op = KeyEdit::Op::kListTrim,
                             .first = static_cast<uint64_t>(start),
                             .last = static_cast<uint64_t>(stop),
                             .items = {},
                             .size_after = list->size()});
  return OpStatus::kOk;
}

OpResult<std::vector<int64_t>> Db::ListPos(std::string_view key, std::string_view element,
                                           int64_t rank, int64_t count, int64_t maxlen,
                                           int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  std::vector<int64_t> out;
  if (!pos) return out;
  const Entry* e = pos.entry();
  if (e->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  const ListValue* list = ListOf(e);
  const auto len = static_cast<int64_t>(list->size());
  uint64_t skip = rank > 0 ? static_cast<uint64_t>(rank) - 1 : static_cast<uint64_t>(-(rank + 1));
  auto visit = [&](int64_t i, std::string_view v) {
    if (v != element) return true;
    if (skip > 0) {
      --skip;
      return true;
    }
    out.push_back(i);
    return count == 0 || static_cast<int64_t>(out.size()) < count;
  };
  const int64_t look = maxlen == 0 || maxlen > len ? len : maxlen;
  if (rank > 0) {
    if (list->packed()) {  // one walk, not one per index
      int64_t i = 0;
      bool go = true;
      list->ForRange(0, static_cast<size_t>(look), [&](std::string_view v) {
        if (go) go = visit(i, v);
        ++i;
      });
    } else {
      for (int64_t i = 0; i < look && visit(i, list->At(static_cast<size_t>(i))); ++i) {
      }
    }
  } else {
    for (int64_t n = 0; n < look && visit(len - 1 - n, list->At(static_cast<size_t>(len - 1 - n)));
         ++n) {
    }
  }
  return out;
}

OpResult<std::string> Db::ListMove(std::string_view src, std::string_view dst, ListEnd from,
                                   ListEnd to, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(src, now_ms, &hash);
  if (!pos) return OpStatus::kKeyNotFound;
  if (pos.entry()->kind() != Entry::Kind::kList) return OpStatus::kWrongType;
  if (src == dst) {  // a rotation, in place: the key (and its TTL) stays
    ListValue* list = ListOf(pos.entry());
    std::string v = from == ListEnd::kLeft ? list->PopFront() : list->PopBack();
    if (to == ListEnd::kLeft) {
      list->PushFront(v);
    } else {
      list->PushBack(v);
    }
    if (list->size() == 1) {  // the same list (an edit's pop would empty it)
      impl_->Modified(pos);
      return v;
    }
    const std::string_view pushed[1] = {v};
    impl_->Edited(pos, KeyEdit{.op = KeyEdit::Op::kListPop,
                               .end = from,
                               .first = 1,
                               .items = {},
                               .size_after = list->size() - 1});
    impl_->Edited(
        pos,
        KeyEdit{
            .op = KeyEdit::Op::kListPush, .end = to, .items = pushed, .size_after = list->size()});
    return v;
  }
  if (ListCheckType(dst, now_ms) != OpStatus::kOk) return OpStatus::kWrongType;
  auto popped = ListPop(src, from, 1, now_ms);
  if (!popped.ok() || popped->empty()) return OpStatus::kKeyNotFound;
  std::string v = std::move(popped->front());
  const std::string_view one[1] = {v};
  ListPush(dst, one, to, false, now_ms);
  return v;
}

}  // namespace deadbolt::shard
