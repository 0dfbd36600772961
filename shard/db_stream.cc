// Db: the stream commands without consumer groups (XADD XTRIM XLEN XRANGE XREVRANGE XDEL XSETID,
// and what XREAD reads), with Redis 7.0's t_stream.c semantics. The value is a StreamValue
// (stream_value.h), changed in place; the key's TTL covers the whole stream.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shard/db.h"
#include "shard/db_impl.h"
#include "shard/types/stream_value.h"

namespace deadbolt::shard {

namespace {

size_t Trim(StreamValue* s, const StreamTrim& trim) {
  switch (trim.by) {
    case StreamTrim::By::kMaxLen:
      return s->TrimMaxLen(trim.maxlen, trim.limit);
    case StreamTrim::By::kMinId:
      return s->TrimMinId(trim.minid, trim.limit);
    case StreamTrim::By::kNone:
      break;
  }
  return 0;
}

}  // namespace

OpResult<StreamId> Db::XAdd(std::string_view key, const XAddSpec& spec,
                            std::span<const std::string_view> fields, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (pos && pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  if (!pos && spec.nomkstream) return OpStatus::kKeyNotFound;
  StreamValue empty;
  const StreamValue& cur = pos ? *StreamOf(pos.entry()) : empty;
  const StreamId last = cur.last_id();
  if (last == StreamId::Max()) return OpStatus::kStreamExhausted;
  StreamId id;
  switch (spec.id_mode) {
    case XAddSpec::IdMode::kAuto: {
      // Now's millisecond, or one past the last ID when the clock is not past it.
      const auto ms = static_cast<uint64_t>(now_ms < 0 ? 0 : now_ms);
      id = last;
      if (last.ms >= ms) {
        id.Incr();
      } else {
        id = {ms, 0};
      }
      break;
    }
    case XAddSpec::IdMode::kAutoSeq:
      id = spec.id;
      if (last.ms == spec.id.ms) {
        if (last.seq == UINT64_MAX) return OpStatus::kStreamIdTooSmall;
        id.seq = last.seq + 1;
      }
      break;
    case XAddSpec::IdMode::kExplicit:
      id = spec.id;
      break;
  }
  if (id <= last) return OpStatus::kStreamIdTooSmall;
  StreamValue::Fields values(fields.begin(), fields.end());
  StreamValue* s;
  if (!pos) {
    auto owned = std::make_unique<StreamValue>();
    s = owned.get();
    s->Append(id, std::move(values));
    Trim(s, spec.trim);
    impl_->Add(MakeStreamEntry(key, owned.release(), Entry::kNoExpire), hash);
    return id;
  }
  s = StreamOf(pos.entry());
  s->Append(id, std::move(values));
  Trim(s, spec.trim);
  impl_->Modified(pos);
  return id;
}

OpResult<int64_t> Db::XTrim(std::string_view key, const StreamTrim& trim, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  if (pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  const size_t n = Trim(StreamOf(pos.entry()), trim);
  if (n > 0) impl_->Modified(pos);
  return static_cast<int64_t>(n);
}

OpResult<int64_t> Db::XLen(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  if (pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  return static_cast<int64_t>(StreamOf(pos.entry())->size());
}

OpResult<std::optional<std::vector<StreamEntryOut>>> Db::XRange(std::string_view key,
                                                                StreamId start, StreamId end,
                                                                size_t count, bool rev,
                                                                int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return std::optional<std::vector<StreamEntryOut>>();
  if (pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  std::vector<StreamEntryOut> out;
  if (start <= end) {
    const StreamValue::Entries& entries = StreamOf(pos.entry())->entries();
    auto Emit = [&](const auto& it) {
      out.push_back({it->first, it->second});
      return count == 0 || out.size() < count;
    };
    if (!rev) {
      for (auto it = entries.lower_bound(start); it != entries.end() && it->first <= end; ++it) {
        if (!Emit(it)) break;
      }
    } else {
      for (auto it = std::make_reverse_iterator(entries.upper_bound(end));
           it != entries.rend() && it->first >= start; ++it) {
        if (!Emit(it)) break;
      }
    }
  }
  return std::optional<std::vector<StreamEntryOut>>(std::move(out));
}

OpResult<int64_t> Db::XDel(std::string_view key, std::span<const StreamId> ids, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  if (pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  StreamValue* s = StreamOf(pos.entry());
  int64_t n = 0;
  for (StreamId id : ids) n += s->Delete(id) ? 1 : 0;
  if (n > 0) impl_->Modified(pos);
  return n;
}

OpStatus Db::XSetId(std::string_view key, StreamId id, int64_t entries_added, StreamId max_deleted,
                    int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return OpStatus::kNoSuchKey;
  if (pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  StreamValue* s = StreamOf(pos.entry());
  // (Redis 7.0 does not hold the ID to the largest deleted one; 7.2 does.)
  if (s->size() > 0) {
    if (id < s->entries().rbegin()->first) return OpStatus::kStreamSetIdBelowTop;
    if (entries_added >= 0 && s->size() > static_cast<uint64_t>(entries_added)) {
      return OpStatus::kStreamEntriesAddedTooSmall;
    }
  }
  s->SetLastId(id);
  if (entries_added >= 0) s->SetEntriesAdded(static_cast<uint64_t>(entries_added));
  if (!max_deleted.IsZero()) s->SetMaxDeletedId(max_deleted);
  impl_->Modified(pos);
  return OpStatus::kOk;
}

OpResult<std::optional<StreamId>> Db::XLastId(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return std::optional<StreamId>();
  if (pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  return std::optional<StreamId>(StreamOf(pos.entry())->last_id());
}

}  // namespace deadbolt::shard
