#include "shard/types/stream_value.h"

#include <utility>

namespace deadbolt::shard {
namespace {

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; i++) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void PutId(std::string* out, StreamId id) {
  PutU64(out, id.ms);
  PutU64(out, id.seq);
}

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool U64(uint64_t* v) {
    if (in_.size() - pos_ < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; i++) {
      *v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    }
    pos_ += 8;
    return true;
  }
  bool Id(StreamId* id) { return U64(&id->ms) && U64(&id->seq); }
  bool Bytes(uint64_t n, std::string* out) {
    if (in_.size() - pos_ < n) return false;
    out->assign(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool Byte(uint8_t* b) {
    if (pos_ >= in_.size()) return false;
    *b = static_cast<uint8_t>(in_[pos_++]);
    return true;
  }
  size_t left() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

constexpr uint8_t kFormatVersion = 1;

}  // namespace

bool StreamId::Incr() {
  if (seq == UINT64_MAX) {
    if (ms == UINT64_MAX) return false;
    ms++;
    seq = 0;
  } else {
    seq++;
  }
  return true;
}

bool StreamId::Decr() {
  if (seq == 0) {
    if (ms == 0) return false;
    ms--;
    seq = UINT64_MAX;
  } else {
    seq--;
  }
  return true;
}

std::string StreamId::ToString() const { return std::to_string(ms) + "-" + std::to_string(seq); }

size_t StreamValue::AllocatedBytes() const {
  size_t bytes = sizeof(*this);
  for (const auto& [id, fields] : entries_) {
    bytes += 48 + sizeof(StreamId) + sizeof(Fields) + fields.capacity() * sizeof(std::string);
    for (const std::string& f : fields) {
      if (f.size() > 15) bytes += f.capacity() + 1;
    }
  }
  return bytes;
}

void StreamValue::Append(StreamId id, Fields fields) {
  entries_.emplace_hint(entries_.end(), id, std::move(fields));
  last_id_ = id;
  entries_added_++;
  changes_.appended.push_back(id);
}

bool StreamValue::Delete(StreamId id) {
  if (entries_.erase(id) == 0) return false;
  if (id > max_deleted_id_) max_deleted_id_ = id;
  changes_.deleted.push_back(id);
  return true;
}

size_t StreamValue::TrimMaxLen(uint64_t maxlen, size_t limit) {
  size_t n = 0;
  while (entries_.size() > maxlen && (limit == 0 || n < limit)) {
    changes_.deleted.push_back(entries_.begin()->first);
    entries_.erase(entries_.begin());
    n++;
  }
  return n;
}

size_t StreamValue::TrimMinId(StreamId minid, size_t limit) {
  size_t n = 0;
  while (!entries_.empty() && entries_.begin()->first < minid && (limit == 0 || n < limit)) {
    changes_.deleted.push_back(entries_.begin()->first);
    entries_.erase(entries_.begin());
    n++;
  }
  return n;
}

namespace {

void PutEntry(std::string* out, StreamId id, const StreamValue::Fields& fields) {
  PutId(out, id);
  PutU64(out, fields.size());
  for (const std::string& f : fields) {
    PutU64(out, f.size());
    *out += f;
  }
}

// An entry as PutEntry wrote it.
bool ReadEntry(ByteReader& r, StreamId* id, StreamValue::Fields* fields) {
  uint64_t nfields;
  // Each entry takes 24 bytes at least, each field 8: counts past the bytes left are damage.
  if (!r.Id(id) || !r.U64(&nfields) || nfields > r.left() / 8 || nfields % 2 != 0) return false;
  fields->resize(nfields);
  for (std::string& f : *fields) {
    uint64_t len;
    if (!r.U64(&len) || !r.Bytes(len, &f)) return false;
  }
  return true;
}

void PutGroups(std::string* out, const std::map<std::string, StreamGroup>& groups) {
  PutU64(out, groups.size());
  for (const auto& [name, g] : groups) {
    PutU64(out, name.size());
    *out += name;
    PutId(out, g.last_id);
    PutU64(out, static_cast<uint64_t>(g.entries_read));
    PutU64(out, g.consumers.size());
    for (const auto& [cname, c] : g.consumers) {
      PutU64(out, cname.size());
      *out += cname;
      PutU64(out, static_cast<uint64_t>(c.seen_ms));
    }
    PutU64(out, g.pel.size());
    for (const auto& [id, nack] : g.pel) {
      PutId(out, id);
      PutU64(out, static_cast<uint64_t>(nack.delivery_ms));
      PutU64(out, nack.delivery_count);
      PutU64(out, nack.consumer.size());
      *out += nack.consumer;
    }
  }
}

// Groups as PutGroups wrote them, into *out (emptied first).
bool ReadGroups(ByteReader& r, std::map<std::string, StreamGroup>* out) {
  uint64_t groups;
  if (!r.U64(&groups) || groups > r.left() / 8) return false;
  out->clear();
  for (uint64_t i = 0; i < groups; i++) {
    uint64_t len, entries_read, nconsumers, npel;
    std::string name;
    StreamGroup g;
    if (!r.U64(&len) || !r.Bytes(len, &name) || !r.Id(&g.last_id) || !r.U64(&entries_read) ||
        !r.U64(&nconsumers) || nconsumers > r.left() / 8) {
      return false;
    }
    g.entries_read = static_cast<int64_t>(entries_read);
    for (uint64_t j = 0; j < nconsumers; j++) {
      std::string cname;
      uint64_t seen;
      if (!r.U64(&len) || !r.Bytes(len, &cname) || !r.U64(&seen)) return false;
      if (!g.consumers.emplace(std::move(cname), StreamConsumer{static_cast<int64_t>(seen), {}})
               .second) {
        return false;
      }
    }
    if (!r.U64(&npel) || npel > r.left() / 8) return false;
    for (uint64_t j = 0; j < npel; j++) {
      StreamId id;
      StreamNack nack;
      uint64_t ms;
      if (!r.Id(&id) || !r.U64(&ms) || !r.U64(&nack.delivery_count) || !r.U64(&len) ||
          !r.Bytes(len, &nack.consumer)) {
        return false;
      }
      nack.delivery_ms = static_cast<int64_t>(ms);
      auto c = g.consumers.find(nack.consumer);
      if (c == g.consumers.end() || !c->second.pending.insert(id).second) return false;
      if (!g.pel.emplace(id, std::move(nack)).second) return false;
    }
    if (!out->emplace(std::move(name), std::move(g)).second) return false;
  }
  return true;
}

constexpr uint8_t kChangesVersion = 1;

}  // namespace

std::string StreamValue::Serialize() const {
  std::string out;
  out.push_back(static_cast<char>(kFormatVersion));
  PutId(&out, last_id_);
  PutId(&out, max_deleted_id_);
  PutU64(&out, entries_added_);
  PutU64(&out, entries_.size());
  for (const auto& [id, fields] : entries_) PutEntry(&out, id, fields);
  PutGroups(&out, groups_);
  return out;
}

void StreamValue::ForgetChanges() {
  changes_.appended.clear();
  changes_.deleted.clear();
  changes_.groups = false;
}

std::string StreamValue::TakeChanges() {
  std::string out;
  out.push_back(static_cast<char>(kChangesVersion));
  out.push_back(static_cast<char>(changes_.groups ? 1 : 0));
  PutId(&out, last_id_);
  PutId(&out, max_deleted_id_);
  PutU64(&out, entries_added_);
  PutU64(&out, changes_.deleted.size());
  for (StreamId id : changes_.deleted) PutId(&out, id);
  // An entry appended and deleted since is in neither the stream nor this list.
  std::vector<Entries::const_iterator> appended;
  for (StreamId id : changes_.appended) {
    auto it = entries_.find(id);
    if (it != entries_.end()) appended.push_back(it);
  }
  PutU64(&out, appended.size());
  for (const auto& it : appended) PutEntry(&out, it->first, it->second);
  if (changes_.groups) PutGroups(&out, groups_);
  ForgetChanges();
  return out;
}

bool StreamValue::ApplyChanges(std::string_view bytes) {
  ByteReader r(bytes);
  uint8_t version, flags;
  StreamId last_id, max_deleted_id;
  uint64_t entries_added, ndeleted, nappended;
  if (!r.Byte(&version) || version != kChangesVersion || !r.Byte(&flags) || flags > 1 ||
      !r.Id(&last_id) || !r.Id(&max_deleted_id) || !r.U64(&entries_added) || !r.U64(&ndeleted) ||
      ndeleted > r.left() / 16) {
    return false;
  }
  std::vector<StreamId> deleted(ndeleted);
  for (StreamId& id : deleted) {
    if (!r.Id(&id)) return false;
  }
  if (!r.U64(&nappended) || nappended > r.left() / 24) return false;
  std::vector<std::pair<StreamId, Fields>> appended(nappended);
  for (auto& [id, fields] : appended) {
    if (!ReadEntry(r, &id, &fields) || id > last_id) return false;
  }
  std::map<std::string, StreamGroup> groups;
  if (flags & 1) {
    if (!ReadGroups(r, &groups)) return false;
  }
  if (r.left() != 0) return false;
  // Read whole: now change the stream.
  for (StreamId id : deleted) entries_.erase(id);
  for (auto& [id, fields] : appended) entries_.insert_or_assign(id, std::move(fields));
  last_id_ = last_id;
  max_deleted_id_ = max_deleted_id;
  entries_added_ = entries_added;
  if (flags & 1) groups_ = std::move(groups);
  ForgetChanges();
  return true;
}

bool StreamValue::Parse(std::string_view bytes, StreamValue* out) {
  ByteReader r(bytes);
  uint8_t version;
  uint64_t n;
  if (!r.Byte(&version) || version != kFormatVersion) return false;
  if (!r.Id(&out->last_id_) || !r.Id(&out->max_deleted_id_) || !r.U64(&out->entries_added_) ||
      !r.U64(&n)) {
    return false;
  }
  out->entries_.clear();
  StreamId prev;
  for (uint64_t i = 0; i < n; i++) {
    StreamId id;
    Fields fields;
    if (!ReadEntry(r, &id, &fields)) return false;
    if ((i > 0 && id <= prev) || id > out->last_id_) return false;
    out->entries_.emplace_hint(out->entries_.end(), id, std::move(fields));
    prev = id;
  }
  if (!ReadGroups(r, &out->groups_)) return false;
  out->ForgetChanges();
  return r.left() == 0;
}

}  // namespace deadbolt::shard
