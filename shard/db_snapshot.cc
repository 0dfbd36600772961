// A key's value seen whole: Db::Snapshot, View and Restore (copying a key out of one Db and into
// another with its TTL: RENAME, COPY, MOVE across shards, DUMP/RESTORE, the journal), and OBJECT
// and MEMORY USAGE (the value as Redis 7.0 would describe it; RESTORE's IDLETIME).

#include <bit>
#include <memory>
#include <optional>
#include <string_view>

#include "shard/base/numeric.h"
#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/types/hash_value.h"
#include "shard/types/list_value.h"
#include "shard/types/packed_growth.h"
#include "shard/types/set_value.h"
#include "shard/types/stream_value.h"
#include "shard/types/zset_value.h"

namespace deadbolt::shard {

std::optional<KeySnapshot> Db::Snapshot(std::string_view key, int64_t now_ms) {
  KeySnapshot snap;
  snap.type = Type(key, now_ms);
  if (snap.type == ValueType::kNone) return std::nullopt;
  // Reading the value below stamps the key's access clock; a copy is not an access (the
  // journal's rewrite copies every key): put the clock back afterwards.
  const uint64_t hash = Dict::Hash(key);
  const uint16_t clock = impl_->dict.Find(key, hash)->access_clock();
  struct RestoreClock {
    Dict& dict;
    std::string_view key;
    uint64_t hash;
    uint16_t clock;
    ~RestoreClock() {
      if (Dict::Pos pos = dict.FindLink(key, hash)) pos.entry()->Touch(clock);
    }
  } restore_clock{impl_->dict, key, hash, clock};
  switch (snap.type) {
    case ValueType::kNone:
      return std::nullopt;
    case ValueType::kString: {
      auto v = Get(key, now_ms);
      if (!v.ok()) return std::nullopt;
      snap.str = std::string(*v);
      LockRecordOf(key, &snap.lock_token, &snap.lock_holds);
      break;
    }
    case ValueType::kHash: {
      auto all = HGetAll(key, now_ms);
      if (!all.ok()) return std::nullopt;
      for (const auto& [f, v] : *all) snap.fields.emplace_back(std::string(f), std::string(v));
      break;
    }
    case ValueType::kZSet: {
      ZRangeSpec all;
      auto members = ZRange(key, all, now_ms);
      if (!members.ok()) return std::nullopt;
      snap.fields.reserve(members->size());
      for (const auto& [m, s] : *members) snap.fields.emplace_back(std::string(m), ZScoreBytes(s));
      break;
    }
    case ValueType::kList: {
      auto all = ListRange(key, 0, -1, now_ms);
      if (!all.ok()) return std::nullopt;
      for (std::string_view v : *all) snap.members.emplace_back(v);
      break;
    }
    case ValueType::kSet: {
      auto all = SetMembers(key, now_ms);
      if (!all.ok()) return std::nullopt;
      snap.members = std::move(*all);
      break;
    }
    case ValueType::kStream: {
      uint64_t h;
      Dict::Pos pos = impl_->Lookup(key, now_ms, &h);
      if (!pos) return std::nullopt;
      snap.stream = StreamOf(pos.entry())->Serialize();
      break;
    }
  }
  int64_t at = ExpireTime(key, now_ms);
  snap.expire_at_ms = at >= 0 ? at : -1;
  return snap;
}

bool Db::View(std::string_view key, int64_t now_ms, KeyView* out) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return false;
  const Entry* e = pos.entry();
  out->fields.clear();
  out->zscores.clear();
  out->members.clear();
  out->stream = {};
  out->lock_token = 0;
  out->lock_holds = 0;
  // A packed value rebuilds a UUID's text in a scratch buffer that the next member reuses: such
  // views are kept as copies in impl_->view_members (a deque: its strings never move).
  auto KeepForView = [&](std::string_view m) -> std::string_view {
    if (m.size() != PackedItem::kUuidTextLen) return m;
    return impl_->view_members.emplace_back(m);
  };
  if (e->kind() == Entry::Kind::kZSet) {
    // The score bytes point into zscores: filled first, so that it does not move. Little
    // endian, as ZScoreBytes (the machines deadbolt runs on are).
    static_assert(std::endian::native == std::endian::little);
    out->type = ValueType::kZSet;
    out->str = {};
    const ZSetValue& z = *e->zset();
    out->zscores.reserve(z.size());
    z.ForEach([&](std::string_view, double s) {
      out->zscores.push_back(s);
      return true;
    });
    out->fields.reserve(z.size());
    size_t i = 0;
    impl_->view_members.clear();
    z.ForEach([&](std::string_view m, double) {
      out->fields.emplace_back(
          KeepForView(m),
          std::string_view(reinterpret_cast<const char*>(&out->zscores[i++]), sizeof(double)));
      return true;
    });
  } else if (e->kind() == Entry::Kind::kHash) {
    out->type = ValueType::kHash;
    out->str = {};
    e->hash()->ForEach(
        [&](std::string_view f, std::string_view v) { out->fields.emplace_back(f, v); });
  } else if (e->kind() == Entry::Kind::kList) {
    out->type = ValueType::kList;
    out->str = {};
    impl_->view_members.clear();
    ListOf(e)->ForEach([&](std::string_view v) { out->members.push_back(KeepForView(v)); });
  } else if (e->kind() == Entry::Kind::kSet) {
    // A set's members are views into its table or packed bytes, except an intset's (inline in
    // the Entry or not), which are formatted, and packed UUIDs: those are kept in
    // impl_->view_members (valid as the other views are).
    out->type = ValueType::kSet;
    out->str = {};
    const SetView set = SetOf(e);
    if (set.is_intset()) {
      impl_->view_members.clear();
      set.ForEach([&](std::string_view m) { impl_->view_members.emplace_back(m); });
      for (const std::string& m : impl_->view_members) out->members.push_back(m);
    } else {
      impl_->view_members.clear();
      set.ForEach([&](std::string_view m) { out->members.push_back(KeepForView(m)); });
    }
  } else if (e->kind() == Entry::Kind::kStream) {
    // Serialized into the view storage (a deque: the string never moves).
    out->type = ValueType::kStream;
    out->str = {};
    impl_->view_members.clear();
    out->stream = impl_->view_members.emplace_back(StreamOf(e)->Serialize());
  } else {
    out->type = ValueType::kString;
    out->str = e->string_value();
    if (!impl_->locks.empty()) LockRecordOf(key, &out->lock_token, &out->lock_holds);
  }
  out->expire_at_ms = e->has_expire() ? e->expire_at() : -1;
  return true;
}

bool Db::Restore(std::string_view key, const KeySnapshot& snap, bool replace, int64_t now_ms,
                 bool with_lock_record) {
  if (Exists(key, now_ms)) {
    if (!replace) return false;
    Del(key, now_ms);
  }
  if (snap.expire_at_ms >= 0 && snap.expire_at_ms <= now_ms) return true;  // gone by now
  switch (snap.type) {
    case ValueType::kNone:
      return true;
    case ValueType::kZSet: {
      ZOwnedMembers members;
      members.reserve(snap.fields.size());
      for (const auto& [m, s] : snap.fields) {
        if (s.size() == 8) members.emplace_back(m, ZScoreFromBytes(s));
      }
      ZStore(key, members, now_ms);
      if (snap.expire_at_ms >= 0) ExpireAt(key, snap.expire_at_ms, ExpireCond::kNone, now_ms);
      return true;
    }
    case ValueType::kList:
    case ValueType::kSet: {
      std::vector<std::string_view> vs(snap.members.begin(), snap.members.end());
      if (vs.empty()) return true;
      if (snap.type == ValueType::kList) {
        ListPush(key, vs, ListEnd::kRight, false, now_ms);
      } else {
        SetAdd(key, vs, now_ms);
      }
      if (snap.expire_at_ms >= 0) ExpireAt(key, snap.expire_at_ms, ExpireCond::kNone, now_ms);
      return true;
    }
    case ValueType::kStream: {
      auto stream = std::make_unique<StreamValue>();
      if (!StreamValue::Parse(snap.stream, stream.get())) return true;  // (checked when read)
      uint64_t hash;
      impl_->Lookup(key, now_ms, &hash);
      impl_->Add(MakeStreamEntry(key, stream.release(), Entry::kNoExpire), hash);
      if (snap.expire_at_ms >= 0) ExpireAt(key, snap.expire_at_ms, ExpireCond::kNone, now_ms);
      return true;
    }
    case ValueType::kString: {
      SetOptions opts;
      if (snap.expire_at_ms >= 0) {
        opts.expire = SetOptions::Expire::kAt;
        opts.expire_at_ms = snap.expire_at_ms;
      }
      Set(key, snap.str, opts, now_ms);
      if (with_lock_record && snap.lock_token != 0) {
        SetLockRecord(key, snap.lock_token, snap.lock_holds);
      }
      return true;
    }
    case ValueType::kHash: {
      std::vector<std::string_view> fv;
      fv.reserve(snap.fields.size() * 2);
      for (const auto& [f, v] : snap.fields) {
        fv.push_back(f);
        fv.push_back(v);
      }
      HSet(key, std::span<const std::string_view>(fv.data(), fv.size()), now_ms);
      if (snap.expire_at_ms >= 0) ExpireAt(key, snap.expire_at_ms, ExpireCond::kNone, now_ms);
      return true;
    }
  }
  return true;
}

// --- OBJECT, MEMORY USAGE, RESTORE ... IDLETIME ---
void Db::SetIdle(std::string_view key, int64_t idle_seconds, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->LookupNoTouch(key, now_ms, &hash);
  if (!pos) return;
  // The clock wraps after 2^16 units: longer idle times are the longest it can say.
  constexpr int64_t kMaxIdleMs = (Entry::kClockPeriod - 1) * Entry::kClockUnitMs;
  const int64_t idle_ms = idle_seconds >= kMaxIdleMs / 1000 ? kMaxIdleMs : idle_seconds * 1000;
  pos.entry()->Touch(Entry::ClockAt(now_ms - idle_ms));
}

std::optional<Db::ObjectInfo> Db::Object(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->LookupNoTouch(key, now_ms, &hash);  // as Redis: not an access
  if (!pos) return std::nullopt;
  const Entry* e = pos.entry();
  // The entry: its header, key and (inline) value; an estimate of the allocator's block.
  ObjectInfo info{"raw", 16 + key.size(), false, e->access_clock(),
                  e->IdleUnits(now_ms) * Entry::kClockUnitMs / 1000};
  switch (e->kind()) {
    case Entry::Kind::kInlineString:
    case Entry::Kind::kHeapString: {
      // Redis's rules for a value SET stores: a canonical integer that fits a long is "int"
      // (0..9999 shared), up to 44 bytes "embstr", longer "raw".
      std::string_view v = e->string_value();
      info.bytes += v.size();
      int64_t n;
      if (v.size() <= 20 && ParseInt64(v, &n)) {
        info.encoding = "int";
        info.shared_int = n >= 0 && n < 10000;
      } else {
        info.encoding = v.size() <= 44 ? "embstr" : "raw";
      }
      break;
    }
    case Entry::Kind::kHash: {
      auto* h = static_cast<const HashValue*>(e->object());
      info.encoding = h->packed() ? "listpack" : "hashtable";
      info.bytes += h->AllocatedBytes();
      break;
    }
    case Entry::Kind::kZSet: {
      auto* z = static_cast<const ZSetValue*>(e->object());
      info.encoding = z->packed() ? "listpack" : "skiplist";
      info.bytes += z->AllocatedBytes();
      break;
    }
    case Entry::Kind::kList: {
      // Redis 7.0 keeps every list in a quicklist.
      info.encoding = "quicklist";
      info.bytes += static_cast<const ListValue*>(e->object())->AllocatedBytes();
      break;
    }
    case Entry::Kind::kSet: {
      // Redis 7.0 has intset and hashtable (7.2 adds listpack for small sets).
      // A small intset lives in the Entry: its bytes, and no block.
      const SetView s = SetOf(e);
      if (e->has_inline_value()) info.bytes += e->inline_value().size();
      info.encoding = s.is_intset() ? "intset" : "hashtable";
      info.bytes += s.AllocatedBytes();
      break;
    }
    case Entry::Kind::kStream:
      info.encoding = "stream";
      info.bytes += StreamOf(e)->AllocatedBytes();
      break;
  }
  return info;
}

}  // namespace deadbolt::shard
