// Db: the stream commands (XADD XTRIM XLEN XRANGE XREVRANGE XDEL XSETID, what XREAD reads) and
// their consumer groups (XGROUP XREADGROUP XACK XPENDING XCLAIM XAUTOCLAIM XINFO), with Redis
// 7.0's t_stream.c semantics. The value is a StreamValue (stream_value.h), changed in place; the
// key's TTL covers the whole stream.

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

// Reports a change to pos's stream: as an edit with what changed (StreamValue::TakeChanges)
// when anyone listens, else as a change, forgetting what changed. (ImplT is Db::Impl.)
template <typename ImplT>
void StreamChanged(ImplT& impl, Dict::Pos pos) {
  StreamValue* s = StreamOf(pos.entry());
  if (!impl.observed()) {
    s->ForgetChanges();
    impl.Modified(pos);
    return;
  }
  const std::string changes = s->TakeChanges();
  const std::string_view items[1] = {changes};
  impl.Edited(pos, KeyEdit{.op = KeyEdit::Op::kStream, .items = items, .size_after = s->size()});
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
    s->ForgetChanges();  // a new key: written whole
    impl_->Add(MakeStreamEntry(key, owned.release(), Entry::kNoExpire), hash);
    return id;
  }
  s = StreamOf(pos.entry());
  s->Append(id, std::move(values));
  Trim(s, spec.trim);
  StreamChanged(*impl_, pos);
  return id;
}

bool Db::XApplyChanges(std::string_view key, std::string_view changes, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos || pos.entry()->kind() != Entry::Kind::kStream) return false;
  if (!StreamOf(pos.entry())->ApplyChanges(changes)) return false;
  impl_->Modified(pos);
  return true;
}

OpResult<int64_t> Db::XTrim(std::string_view key, const StreamTrim& trim, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return int64_t{0};
  if (pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  const size_t n = Trim(StreamOf(pos.entry()), trim);
  if (n > 0) StreamChanged(*impl_, pos);
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
  if (n > 0) StreamChanged(*impl_, pos);
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
  StreamChanged(*impl_, pos);
  return OpStatus::kOk;
}

OpResult<std::optional<StreamId>> Db::XLastId(std::string_view key, int64_t now_ms) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  if (!pos) return std::optional<StreamId>();
  if (pos.entry()->kind() != Entry::Kind::kStream) return OpStatus::kWrongType;
  return std::optional<StreamId>(StreamOf(pos.entry())->last_id());
}

// --- consumer groups ---

namespace {

// Redis's streamRangeHasTombstones: whether an entry between start and end (inclusive) may
// have been deleted.
bool RangeHasTombstones(const StreamValue& s, StreamId start, StreamId end) {
  const StreamId del = s.max_deleted_id();
  if (s.size() == 0 || del.IsZero()) return false;
  if (s.first_id() > del) return false;
  return start <= del && del <= end;
}

// Redis's streamEstimateDistanceFromFirstEverEntry: the count of entries added up to `id`, or
// -1 when it cannot be known.
int64_t EstimateEntriesRead(const StreamValue& s, StreamId id) {
  const auto added = static_cast<int64_t>(s.entries_added());
  if (added == 0) return 0;
  if (s.size() == 0 && id <= s.last_id()) return added;
  if (id == s.last_id()) return added;
  if (id > s.last_id()) return -1;
  const StreamId first = s.first_id();
  if (s.max_deleted_id().IsZero() || s.max_deleted_id() < first) {
    if (id < first) return added - static_cast<int64_t>(s.size());
    if (id == first) return added - static_cast<int64_t>(s.size()) + 1;
  }
  return -1;
}

std::optional<int64_t> Lag(const StreamValue& s, const StreamGroup& g) {
  if (s.entries_added() == 0) return 0;
  if (g.entries_read != -1 && !RangeHasTombstones(s, g.last_id, StreamId::Max())) {
    return static_cast<int64_t>(s.entries_added()) - g.entries_read;
  }
  const int64_t read = EstimateEntriesRead(s, g.last_id);
  if (read == -1) return std::nullopt;
  return static_cast<int64_t>(s.entries_added()) - read;
}

StreamConsumer& ConsumerOf(StreamGroup& g, std::string_view name, int64_t now_ms) {
  auto [it, added] = g.consumers.try_emplace(std::string(name));
  it->second.seen_ms = now_ms;
  return it->second;
}

// Moves a pending entry to `to` (Redis's NACK reassignment).
void GiveTo(StreamGroup& g, StreamId id, StreamNack& nack, std::string_view to) {
  if (nack.consumer == to) return;
  if (auto old = g.consumers.find(nack.consumer); old != g.consumers.end()) {
    old->second.pending.erase(id);
  }
  nack.consumer = std::string(to);
  g.consumers[nack.consumer].pending.insert(id);
}

StreamEntryOut EntryAt(const StreamValue& s, StreamId id, bool justid) {
  StreamEntryOut e{id, {}};
  if (!justid) e.fields = s.entries().at(id);
  return e;
}

}  // namespace

StreamValue* Db::FindStream(std::string_view key, int64_t now_ms, void* pos_out, OpStatus* st) {
  uint64_t hash;
  Dict::Pos pos = impl_->Lookup(key, now_ms, &hash);
  *static_cast<Dict::Pos*>(pos_out) = pos;
  if (!pos) {
    *st = OpStatus::kNoSuchKey;
    return nullptr;
  }
  if (pos.entry()->kind() != Entry::Kind::kStream) {
    *st = OpStatus::kWrongType;
    return nullptr;
  }
  *st = OpStatus::kOk;
  return StreamOf(pos.entry());
}

StreamGroup* Db::FindGroup(std::string_view key, std::string_view group, int64_t now_ms, void* pos,
                           OpStatus* st, bool no_key_is_no_group, StreamValue** stream) {
  StreamValue* s = FindStream(key, now_ms, pos, st);
  *stream = s;
  if (!s) {
    if (*st == OpStatus::kNoSuchKey && no_key_is_no_group) *st = OpStatus::kNoGroup;
    return nullptr;
  }
  auto g = s->groups().find(std::string(group));
  if (g == s->groups().end()) {
    *st = OpStatus::kNoGroup;
    return nullptr;
  }
  return &g->second;
}

OpStatus Db::XGroupCreate(std::string_view key, std::string_view group, bool dollar, StreamId id,
                          bool mkstream, int64_t entries_read, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s = FindStream(key, now_ms, &pos, &st);
  if (st == OpStatus::kWrongType) return st;
  if (!s) {
    if (!mkstream) return OpStatus::kNoSuchKey;
    uint64_t hash;
    impl_->Lookup(key, now_ms, &hash);
    auto owned = std::make_unique<StreamValue>();
    owned->groups().emplace(std::string(group), StreamGroup{id, entries_read, {}, {}});
    owned->ForgetChanges();  // a new key: written whole
    impl_->Add(MakeStreamEntry(key, owned.release(), Entry::kNoExpire), hash);
    return OpStatus::kOk;
  }
  if (s->groups().count(std::string(group))) return OpStatus::kBusyGroup;
  if (dollar) id = s->last_id();
  s->groups().emplace(std::string(group), StreamGroup{id, entries_read, {}, {}});
  StreamChanged(*impl_, pos);
  return OpStatus::kOk;
}

OpStatus Db::XGroupSetId(std::string_view key, std::string_view group, bool dollar, StreamId id,
                         int64_t entries_read, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* g = FindGroup(key, group, now_ms, &pos, &st, false, &s);
  if (!g) return st;
  g->last_id = dollar ? s->last_id() : id;
  g->entries_read = entries_read;
  StreamChanged(*impl_, pos);
  return OpStatus::kOk;
}

OpResult<int64_t> Db::XGroupDestroy(std::string_view key, std::string_view group, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s = FindStream(key, now_ms, &pos, &st);
  if (!s) return st;
  if (s->groups().erase(std::string(group)) == 0) return int64_t{0};
  StreamChanged(*impl_, pos);
  return int64_t{1};
}

OpResult<int64_t> Db::XGroupCreateConsumer(std::string_view key, std::string_view group,
                                           std::string_view consumer, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* g = FindGroup(key, group, now_ms, &pos, &st, false, &s);
  if (!g) return st;
  auto [it, added] = g->consumers.try_emplace(std::string(consumer));
  if (!added) return int64_t{0};
  it->second.seen_ms = now_ms;
  StreamChanged(*impl_, pos);
  return int64_t{1};
}

OpResult<int64_t> Db::XGroupDelConsumer(std::string_view key, std::string_view group,
                                        std::string_view consumer, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* g = FindGroup(key, group, now_ms, &pos, &st, false, &s);
  if (!g) return st;
  auto c = g->consumers.find(std::string(consumer));
  if (c == g->consumers.end()) return int64_t{0};
  const auto pending = static_cast<int64_t>(c->second.pending.size());
  for (StreamId id : c->second.pending) g->pel.erase(id);
  g->consumers.erase(c);
  StreamChanged(*impl_, pos);
  return pending;
}

OpResult<std::optional<std::vector<StreamEntryOut>>> Db::XReadGroup(std::string_view key,
                                                                    std::string_view group,
                                                                    std::string_view consumer,
                                                                    StreamId id, size_t count,
                                                                    bool noack, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* found = FindGroup(key, group, now_ms, &pos, &st, true, &s);
  if (!found) return st;
  StreamGroup& g = *found;
  std::vector<StreamEntryOut> out;
  if (id == StreamId::Max()) {  // ">": new entries
    // Served only when an entry (not just an ID) lies past the group's last, as Redis.
    if (s->size() == 0 || !(s->entries().rbegin()->first > g.last_id)) {
      return std::optional<std::vector<StreamEntryOut>>();
    }
    StreamConsumer& c = ConsumerOf(g, consumer, now_ms);
    (void)c;
    const StreamValue::Entries& entries = s->entries();
    for (auto it = entries.upper_bound(g.last_id);
         it != entries.end() && (count == 0 || out.size() < count); ++it) {
      const StreamId eid = it->first;
      if (g.entries_read != -1 && !RangeHasTombstones(*s, eid, StreamId::Max())) {
        g.entries_read++;
      } else if (s->entries_added() > 0) {
        g.entries_read = EstimateEntriesRead(*s, eid);
      }
      g.last_id = eid;
      if (!noack) {
        auto [nit, added] = g.pel.try_emplace(eid);
        StreamNack& nack = nit->second;
        if (!added) GiveTo(g, eid, nack, consumer);
        nack.consumer = std::string(consumer);
        nack.delivery_ms = now_ms;
        nack.delivery_count = 1;
        g.consumers[nack.consumer].pending.insert(eid);
      }
      out.push_back({eid, it->second});
    }
    StreamChanged(*impl_, pos);
    return std::optional<std::vector<StreamEntryOut>>(std::move(out));
  }
  // The consumer's history: its pending entries after `id`, delivered again.
  StreamConsumer& c = ConsumerOf(g, consumer, now_ms);
  StreamId from = id;
  if (from.Incr()) {
    for (auto it = c.pending.lower_bound(from);
         it != c.pending.end() && (count == 0 || out.size() < count); ++it) {
      StreamNack& nack = g.pel.at(*it);
      if (s->Has(*it)) {
        out.push_back(EntryAt(*s, *it, false));
        nack.delivery_ms = now_ms;
        nack.delivery_count++;
      } else {
        StreamEntryOut gone{*it, {}};
        gone.deleted = true;
        out.push_back(std::move(gone));
      }
    }
  }
  StreamChanged(*impl_, pos);
  return std::optional<std::vector<StreamEntryOut>>(std::move(out));
}

OpResult<bool> Db::XHasGroup(std::string_view key, std::string_view group, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s = FindStream(key, now_ms, &pos, &st);
  if (st == OpStatus::kWrongType) return st;
  return s != nullptr && s->groups().count(std::string(group)) > 0;
}

OpResult<int64_t> Db::XAck(std::string_view key, std::string_view group,
                           std::span<const StreamId> ids, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* found = FindGroup(key, group, now_ms, &pos, &st, true, &s);
  if (st == OpStatus::kWrongType) return st;
  if (!found) return int64_t{0};  // no key or group: nothing to acknowledge
  StreamGroup& g = *found;
  int64_t acked = 0;
  for (StreamId id : ids) {
    auto it = g.pel.find(id);
    if (it == g.pel.end()) continue;
    if (auto c = g.consumers.find(it->second.consumer); c != g.consumers.end()) {
      c->second.pending.erase(id);
    }
    g.pel.erase(it);
    acked++;
  }
  if (acked > 0) StreamChanged(*impl_, pos);
  return acked;
}

OpResult<XPendingSummary> Db::XPending(std::string_view key, std::string_view group,
                                       int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* found = FindGroup(key, group, now_ms, &pos, &st, true, &s);
  if (!found) return st;
  const StreamGroup& g = *found;
  XPendingSummary out;
  out.count = g.pel.size();
  if (!g.pel.empty()) {
    out.first = g.pel.begin()->first;
    out.last = g.pel.rbegin()->first;
  }
  for (const auto& [name, c] : g.consumers) {
    if (!c.pending.empty()) out.consumers.emplace_back(name, c.pending.size());
  }
  return out;
}

OpResult<std::vector<XPendingEntry>> Db::XPendingRange(std::string_view key, std::string_view group,
                                                       StreamId start, StreamId end, size_t count,
                                                       int64_t min_idle_ms,
                                                       std::optional<std::string_view> consumer,
                                                       int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* found = FindGroup(key, group, now_ms, &pos, &st, true, &s);
  if (!found) return st;
  const StreamGroup& g = *found;
  std::vector<XPendingEntry> out;
  auto Take = [&](StreamId id) {
    const StreamNack& nack = g.pel.at(id);
    const int64_t idle = now_ms - nack.delivery_ms;
    if (min_idle_ms != 0 && idle < min_idle_ms) return;
    out.push_back({id, nack.consumer, idle < 0 ? 0 : idle, nack.delivery_count});
  };
  if (consumer) {
    auto c = g.consumers.find(std::string(*consumer));
    if (c == g.consumers.end()) return out;
    for (auto it = c->second.pending.lower_bound(start);
         out.size() < count && it != c->second.pending.end() && *it <= end; ++it) {
      Take(*it);
    }
  } else {
    for (auto it = g.pel.lower_bound(start);
         out.size() < count && it != g.pel.end() && it->first <= end; ++it) {
      Take(it->first);
    }
  }
  return out;
}

OpResult<std::vector<StreamEntryOut>> Db::XClaim(std::string_view key, std::string_view group,
                                                 std::string_view consumer,
                                                 std::span<const StreamId> ids,
                                                 const XClaimOptions& opts, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* found = FindGroup(key, group, now_ms, &pos, &st, true, &s);
  if (!found) return st;
  StreamGroup& g = *found;
  bool changed = false;
  if (opts.last_id > g.last_id) {
    g.last_id = opts.last_id;
    changed = true;
  }
  int64_t delivery = opts.delivery_ms;
  if (delivery < 0 || delivery > now_ms) delivery = now_ms;
  std::vector<StreamEntryOut> out;
  bool seen = false;  // the claiming consumer looked up (and made) once, at its first claim
  for (StreamId id : ids) {
    auto nit = g.pel.find(id);
    if (!s->Has(id)) {  // gone from the stream: its pending record goes too
      if (nit != g.pel.end()) {
        if (auto c = g.consumers.find(nit->second.consumer); c != g.consumers.end()) {
          c->second.pending.erase(id);
        }
        g.pel.erase(nit);
        changed = true;
      }
      continue;
    }
    bool forced = false;
    if (nit == g.pel.end()) {
      if (!opts.force) continue;
      // As Redis's streamCreateNACK: delivered once, now; its consumer is set below.
      nit = g.pel.emplace(id, StreamNack{{}, now_ms, 1}).first;
      forced = true;
    }
    StreamNack& nack = nit->second;
    if (!forced && opts.min_idle_ms != 0 && now_ms - nack.delivery_ms < opts.min_idle_ms) continue;
    if (!seen) {
      ConsumerOf(g, consumer, now_ms);
      seen = true;
    }
    if (forced) {
      nack.consumer = std::string(consumer);
      g.consumers[nack.consumer].pending.insert(id);
    } else {
      GiveTo(g, id, nack, consumer);
    }
    nack.delivery_ms = delivery;
    if (opts.retry_count >= 0) {
      nack.delivery_count = static_cast<uint64_t>(opts.retry_count);
    } else if (!opts.justid) {
      nack.delivery_count++;
    }
    out.push_back(EntryAt(*s, id, opts.justid));
    changed = true;
  }
  if (changed) StreamChanged(*impl_, pos);
  return out;
}

OpResult<XAutoClaimResult> Db::XAutoClaim(std::string_view key, std::string_view group,
                                          std::string_view consumer, int64_t min_idle_ms,
                                          StreamId start, size_t count, bool justid,
                                          int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  StreamGroup* found = FindGroup(key, group, now_ms, &pos, &st, true, &s);
  if (!found) return st;
  StreamGroup& g = *found;
  XAutoClaimResult out;
  uint64_t attempts = static_cast<uint64_t>(count) * 10;
  bool seen = false;
  auto it = g.pel.lower_bound(start);
  // As Redis's loop: each step looks at one pending entry, at most count * 10 of them, until
  // count entries were claimed or dropped.
  while (attempts > 0 && count > 0 && it != g.pel.end()) {
    attempts--;
    const StreamId id = it->first;
    if (!s->Has(id)) {
      if (auto c = g.consumers.find(it->second.consumer); c != g.consumers.end()) {
        c->second.pending.erase(id);
      }
      it = g.pel.erase(it);
      out.deleted.push_back(id);
      count--;
      continue;
    }
    StreamNack& nack = it->second;
    if (min_idle_ms != 0 && now_ms - nack.delivery_ms < min_idle_ms) {
      ++it;
      continue;
    }
    if (!seen) {
      ConsumerOf(g, consumer, now_ms);
      seen = true;
    }
    GiveTo(g, id, nack, consumer);
    nack.delivery_ms = now_ms;
    if (!justid) nack.delivery_count++;
    out.claimed.push_back(EntryAt(*s, id, justid));
    count--;
    ++it;
  }
  out.cursor = it == g.pel.end() ? StreamId{} : it->first;
  if (seen || !out.deleted.empty()) StreamChanged(*impl_, pos);
  return out;
}

OpResult<XStreamInfo> Db::XInfoStream(std::string_view key, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s = FindStream(key, now_ms, &pos, &st);
  if (!s) return st;
  XStreamInfo out;
  out.length = s->size();
  out.groups = s->groups().size();
  out.entries_added = s->entries_added();
  out.last_id = s->last_id();
  out.max_deleted = s->max_deleted_id();
  out.first_recorded = s->first_id();
  if (s->size() > 0) {
    out.first = EntryAt(*s, s->entries().begin()->first, false);
    out.last = EntryAt(*s, s->entries().rbegin()->first, false);
  }
  return out;
}

OpResult<std::vector<XGroupInfo>> Db::XInfoGroups(std::string_view key, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s = FindStream(key, now_ms, &pos, &st);
  if (!s) return st;
  std::vector<XGroupInfo> out;
  for (const auto& [name, g] : s->groups()) {
    out.push_back({name, g.consumers.size(), g.pel.size(), g.last_id, g.entries_read, Lag(*s, g)});
  }
  return out;
}

OpResult<XStreamFull> Db::XInfoFull(std::string_view key, size_t count, int64_t now_ms) {
  auto info = XInfoStream(key, now_ms);
  if (!info.ok()) return info.status();
  auto groups = XInfoGroups(key, now_ms);
  Dict::Pos pos;
  OpStatus st;
  const StreamValue* s = FindStream(key, now_ms, &pos, &st);
  XStreamFull out;
  out.info = std::move(*info);
  for (const auto& [id, fields] : s->entries()) {
    if (count != 0 && out.entries.size() >= count) break;
    out.entries.push_back({id, fields});
  }
  size_t gi = 0;
  for (const auto& [name, g] : s->groups()) {
    XStreamFull::Group& og = out.groups.emplace_back();
    og.info = (*groups)[gi++];
    for (const auto& [id, nack] : g.pel) {
      if (count != 0 && og.pending.size() >= count) break;
      og.pending.emplace_back(id, nack);
    }
    for (const auto& [cname, c] : g.consumers) {
      XStreamFull::Group::Consumer& oc = og.consumers.emplace_back();
      oc.name = cname;
      oc.seen_ms = c.seen_ms;
      oc.pel_count = c.pending.size();
      for (StreamId id : c.pending) {
        if (count != 0 && oc.pending.size() >= count) break;
        oc.pending.emplace_back(id, g.pel.at(id));
      }
    }
  }
  return out;
}

OpResult<std::vector<XConsumerInfo>> Db::XInfoConsumers(std::string_view key,
                                                        std::string_view group, int64_t now_ms) {
  Dict::Pos pos;
  OpStatus st;
  StreamValue* s;
  const StreamGroup* g = FindGroup(key, group, now_ms, &pos, &st, false, &s);
  if (!g) return st;
  std::vector<XConsumerInfo> out;
  for (const auto& [name, c] : g->consumers) {
    const int64_t idle = now_ms - c.seen_ms;
    out.push_back({name, c.pending.size(), idle < 0 ? 0 : idle});
  }
  return out;
}

}  // namespace deadbolt::shard
