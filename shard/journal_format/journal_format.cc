// The journal's frames and records (see journal_format.h for the layout).
//
// Record layouts (after the one-byte kind; "varint" is LEB128, "str" a varint length and the
// bytes, fixed-width numbers little endian):
//   kHeader:  u32 version, u32 shard, u32 num_shards, i64 created_ns
//   kPut:     varint db, str key, u8 type (1 string, 2 hash, 3 zset), i64 expire_at_ms
//             (-1: none), u64 lock_token, varint lock_holds, then a string's str value, or a
//             hash's varint count and that many (str field, str value), or a zset's varint count
//             and that many (str member, str score: the double's 8 bytes, little endian)
//   kDel:     varint db, str key
//   kToken:   varint db, u64 token
//   kFlushDb: varint db
//   kDataSet: u64 set_id
//   kBaseEnd: (nothing)
//   kEdit:    varint db, str key, u8 op (KeyEdit::Op), u8 end (0 left, 1 right), varint first,
//             varint last, varint count and that many str items, then for kZSetSet as many
//             scores (the double's 8 bytes, little endian)

#include "shard/journal_format/journal_format.h"

#include <xxhash.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "shard/types/stream_value.h"

namespace deadbolt::shard {
namespace {

constexpr uint8_t kTypeString = 1;
constexpr uint8_t kTypeHash = 2;
constexpr uint8_t kTypeZSet = 3;

// Types whose body is a count and that many pairs of strings.
bool HasPairs(ValueType t) { return t == ValueType::kHash || t == ValueType::kZSet; }
constexpr uint8_t kTypeList = 4;
constexpr uint8_t kTypeSet = 5;
constexpr uint8_t kTypeStream = 6;  // the body: StreamValue::Serialize's bytes, as one string

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; i++) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 4);
}

void PutU64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; i++) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 8);
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutStr(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

uint32_t LoadU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

uint32_t Checksum(std::string_view payload) {
  return static_cast<uint32_t>(XXH3_64bits(payload.data(), payload.size()));
}

// Reads a record payload; every Get* fails (returns false) at the end of the input.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool done() const { return pos_ == in_.size(); }
  size_t pos() const { return pos_; }
  size_t left() const { return in_.size() - pos_; }

  bool U8(uint8_t* v) {
    if (in_.size() - pos_ < 1) return false;
    *v = static_cast<uint8_t>(in_[pos_++]);
    return true;
  }
  bool U32(uint32_t* v) {
    if (in_.size() - pos_ < 4) return false;
    *v = LoadU32(in_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (in_.size() - pos_ < 8) return false;
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) x |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    pos_ += 8;
    *v = x;
    return true;
  }
  bool I64(int64_t* v) {
    uint64_t x;
    if (!U64(&x)) return false;
    *v = static_cast<int64_t>(x);
    return true;
  }
  bool Varint(uint64_t* v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!U8(&b)) return false;
      x |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) {
        *v = x;
        return true;
      }
    }
    return false;  // more than ten bytes
  }
  bool Str(std::string_view* s) {
    uint64_t n;
    if (!Varint(&n) || n > in_.size() - pos_) return false;
    *s = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Db(uint32_t* db) {
    uint64_t v;
    if (!Varint(&v) || v > UINT32_MAX) return false;
    *db = static_cast<uint32_t>(v);
    return true;
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// Parses one record into *r. False when the bytes do not form a record.
bool ReadRecord(Reader& in, JournalRecord* r) {
  uint8_t kind;
  if (!in.U8(&kind)) return false;
  r->kind = static_cast<RecordKind>(kind);
  switch (r->kind) {
    case RecordKind::kHeader: {
      uint64_t created;
      if (!in.U32(&r->header.version) || !in.U32(&r->header.shard) ||
          !in.U32(&r->header.num_shards) || !in.U64(&created)) {
        return false;
      }
      r->header.created_ns = static_cast<int64_t>(created);
      return true;
    }
    case RecordKind::kPut: {
      uint8_t type;
      uint64_t holds;
      if (!in.Db(&r->db) || !in.Str(&r->key) || !in.U8(&type) || !in.I64(&r->value.expire_at_ms) ||
          !in.U64(&r->value.lock_token) || !in.Varint(&holds)) {
        return false;
      }
      r->value.lock_holds = static_cast<int64_t>(holds);
      r->value.fields.clear();
      r->value.members.clear();
      r->value.str.clear();
      r->value.stream.clear();
      if (type == kTypeString) {
        std::string_view v;
        if (!in.Str(&v)) return false;
        r->value.type = ValueType::kString;
        r->value.str.assign(v);
        return true;
      }
      if (type == kTypeStream) {
        std::string_view v;
        StreamValue check;
        if (!in.Str(&v) || !StreamValue::Parse(v, &check)) return false;
        r->value.type = ValueType::kStream;
        r->value.stream.assign(v);
        return true;
      }
      if (type == kTypeHash || type == kTypeZSet) {
        uint64_t n;
        if (!in.Varint(&n)) return false;
        r->value.type = type == kTypeHash ? ValueType::kHash : ValueType::kZSet;
        for (uint64_t i = 0; i < n; i++) {
          std::string_view f, v;
          if (!in.Str(&f) || !in.Str(&v)) return false;
          if (type == kTypeZSet && v.size() != 8) return false;
          r->value.fields.emplace_back(std::string(f), std::string(v));
        }
        return true;
      }
      if (type == kTypeList || type == kTypeSet) {
        uint64_t n;
        if (!in.Varint(&n)) return false;
        r->value.type = type == kTypeList ? ValueType::kList : ValueType::kSet;
        for (uint64_t i = 0; i < n; i++) {
          std::string_view m;
          if (!in.Str(&m)) return false;
          r->value.members.emplace_back(m);
        }
        return true;
      }
      return false;
    }
    case RecordKind::kDel:
      return in.Db(&r->db) && in.Str(&r->key);
    case RecordKind::kToken:
      return in.Db(&r->db) && in.U64(&r->token);
    case RecordKind::kFlushDb:
      return in.Db(&r->db);
    case RecordKind::kDataSet:
      return in.U64(&r->set_id);
    case RecordKind::kBaseEnd:
      return true;
    case RecordKind::kEdit: {
      uint8_t op, end;
      uint64_t n;
      if (!in.Db(&r->db) || !in.Str(&r->key) || !in.U8(&op) || !in.U8(&end) ||
          !in.Varint(&r->edit.first) || !in.Varint(&r->edit.last) || !in.Varint(&n)) {
        return false;
      }
      if (op == 0 || op > KeyEdit::kLastOp || end > 1 || n > in.left()) return false;
      r->edit.op = static_cast<KeyEdit::Op>(op);
      r->edit.end = end == 0 ? ListEnd::kLeft : ListEnd::kRight;
      if (r->edit.op == KeyEdit::Op::kHashSet && n % 2 != 0) return false;
      if (r->edit.op == KeyEdit::Op::kStream && n != 1) return false;
      r->edit.items.resize(n);
      for (std::string_view& item : r->edit.items) {
        if (!in.Str(&item)) return false;
      }
      r->edit.scores.clear();
      if (r->edit.op == KeyEdit::Op::kZSetSet) {
        if (n > in.left() / 8) return false;
        r->edit.scores.resize(n);
        for (double& score : r->edit.scores) {
          uint64_t bits;
          if (!in.U64(&bits)) return false;
          memcpy(&score, &bits, 8);
          if (std::isnan(score)) return false;
        }
      }
      return true;
    }
    case RecordKind::kTx:
    {
      uint64_t t = 0;
      uint32_t n = 0;
      uint8_t flags = 0;
      if (!in.U64(&r->tx.nonce) || !in.U64(&r->tx.id) || !in.U64(&t) || !in.U8(&flags) ||
          !in.U32(&n)) {
        return false;
      }
      r->tx.carried = (flags & 1) != 0;
      if (n > 65536) return false;
      r->tx.commit_ns = static_cast<int64_t>(t);
      r->tx.participants.resize(n);
      for (uint32_t& p : r->tx.participants) {
        if (!in.U32(&p)) return false;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

void JournalWriter::BeginFrame() {
  frame_start_ = out_->size();
  records_ = 0;
  out_->append(kFrameHeaderSize, '\0');
}

bool JournalWriter::EndFrame() {
  size_t start = frame_start_;
  frame_start_ = kNoFrame;
  if (records_ == 0) {
    out_->resize(start);
    return false;
  }
  size_t len = out_->size() - start - kFrameHeaderSize;
  std::string_view payload(out_->data() + start + kFrameHeaderSize, len);
  std::string head;
  PutU32(&head, static_cast<uint32_t>(len));
  PutU32(&head, static_cast<uint32_t>(len) ^ kFrameLengthCheck);
  PutU32(&head, Checksum(payload));
  memcpy(out_->data() + start, head.data(), kFrameHeaderSize);
  return true;
}

void JournalWriter::Header(const JournalHeader& h) {
  out_->push_back(static_cast<char>(RecordKind::kHeader));
  PutU32(out_, h.version);
  PutU32(out_, h.shard);
  PutU32(out_, h.num_shards);
  PutU64(out_, static_cast<uint64_t>(h.created_ns));
  records_++;
}

namespace {

// Put's bytes, for both a snapshot (owned strings) and a view.
template <typename Fields, typename Members>
void WritePut(std::string* out, uint32_t db, std::string_view key, ValueType type,
              std::string_view str, const Fields& fields, const Members& members,
              int64_t expire_at_ms, uint64_t lock_token, int64_t lock_holds) {
  out->push_back(static_cast<char>(RecordKind::kPut));
  PutVarint(out, db);
  PutStr(out, key);
  uint8_t type_byte = kTypeString;
  if (type == ValueType::kHash) type_byte = kTypeHash;
  if (type == ValueType::kZSet) type_byte = kTypeZSet;
  if (type == ValueType::kList) type_byte = kTypeList;
  if (type == ValueType::kSet) type_byte = kTypeSet;
  if (type == ValueType::kStream) type_byte = kTypeStream;  // (`str` holds its bytes)
  out->push_back(static_cast<char>(type_byte));
  PutU64(out, static_cast<uint64_t>(expire_at_ms));
  PutU64(out, lock_token);
  PutVarint(out, static_cast<uint64_t>(lock_holds < 0 ? 0 : lock_holds));
  if (HasPairs(type)) {
    PutVarint(out, fields.size());
    for (const auto& [f, v] : fields) {
      PutStr(out, f);
      PutStr(out, v);
    }
  } else if (type == ValueType::kList || type == ValueType::kSet) {
    PutVarint(out, members.size());
    for (const auto& m : members) PutStr(out, m);
  } else {
    PutStr(out, str);
  }
}

}  // namespace

void JournalWriter::Put(uint32_t db, std::string_view key, const KeySnapshot& value) {
  WritePut(out_, db, key, value.type,
           value.type == ValueType::kStream ? std::string_view(value.stream) : value.str,
           value.fields, value.members, value.expire_at_ms, value.lock_token, value.lock_holds);
  records_++;
}

void JournalWriter::Put(uint32_t db, std::string_view key, const KeyView& value) {
  WritePut(out_, db, key, value.type, value.type == ValueType::kStream ? value.stream : value.str,
           value.fields, value.members, value.expire_at_ms, value.lock_token, value.lock_holds);
  records_++;
}

void JournalWriter::Del(uint32_t db, std::string_view key) {
  out_->push_back(static_cast<char>(RecordKind::kDel));
  PutVarint(out_, db);
  PutStr(out_, key);
  records_++;
}

void JournalWriter::Append(std::string_view record) {
  out_->append(record);
  records_++;
}

void EncodeEdit(std::string* out, uint32_t db, std::string_view key, const KeyEdit& edit) {
  out->push_back(static_cast<char>(RecordKind::kEdit));
  PutVarint(out, db);
  PutStr(out, key);
  out->push_back(static_cast<char>(edit.op));
  out->push_back(static_cast<char>(edit.end == ListEnd::kLeft ? 0 : 1));
  PutVarint(out, edit.first);
  PutVarint(out, edit.last);
  PutVarint(out, edit.items.size());
  for (std::string_view item : edit.items) PutStr(out, item);
  if (edit.op == KeyEdit::Op::kZSetSet) {
    for (size_t i = 0; i < edit.items.size(); i++) {
      uint64_t bits = 0;
      if (i < edit.scores.size()) memcpy(&bits, &edit.scores[i], 8);
      PutU64(out, bits);
    }
  }
}

void JournalWriter::Token(uint32_t db, uint64_t token) {
  out_->push_back(static_cast<char>(RecordKind::kToken));
  PutVarint(out_, db);
  PutU64(out_, token);
  records_++;
}

void JournalWriter::Tx(const TxTag& tag) {
  out_->push_back(static_cast<char>(RecordKind::kTx));
  PutU64(out_, tag.nonce);
  PutU64(out_, tag.id);
  PutU64(out_, static_cast<uint64_t>(tag.commit_ns));
  out_->push_back(static_cast<char>(tag.carried ? 1 : 0));
  PutU32(out_, static_cast<uint32_t>(tag.participants.size()));
  for (uint32_t p : tag.participants) PutU32(out_, p);
  records_++;
}

void JournalWriter::DataSet(uint64_t set_id) {
  out_->push_back(static_cast<char>(RecordKind::kDataSet));
  PutU64(out_, set_id);
  records_++;
}

void JournalWriter::BaseEnd() {
  out_->push_back(static_cast<char>(RecordKind::kBaseEnd));
  records_++;
}

void JournalWriter::FlushDb(uint32_t db) {
  out_->push_back(static_cast<char>(RecordKind::kFlushDb));
  PutVarint(out_, db);
  records_++;
}

size_t JournalPutSize(std::string_view key, const KeySnapshot& value) {
  size_t n = 1 + 5 + VarintSize(key.size()) + key.size() + 1 + 8 + 8 + 10;
  if (HasPairs(value.type)) {
    n += VarintSize(value.fields.size());
    for (const auto& [f, v] : value.fields) {
      n += VarintSize(f.size()) + f.size() + VarintSize(v.size()) + v.size();
    }
  } else if (value.type == ValueType::kList || value.type == ValueType::kSet) {
    n += VarintSize(value.members.size());
    for (const auto& m : value.members) n += VarintSize(m.size()) + m.size();
  } else if (value.type == ValueType::kStream) {
    n += VarintSize(value.stream.size()) + value.stream.size();
  } else {
    n += VarintSize(value.str.size()) + value.str.size();
  }
  return n;
}

JournalScan ScanJournal(std::string_view bytes,
                        const std::function<bool(const JournalRecord&)>& on_record) {
  JournalScan scan;
  // Where the file's last non-zero byte ends: a crash can leave the end of a file zero-filled
  // (its size reached the disk before its data), and zeros after a bad frame are no evidence
  // that anything valid followed it.
  size_t end = bytes.size();
  while (end > 0 && bytes[end - 1] == 0) end--;
  size_t off = 0;
  std::vector<JournalRecord> frame_records;
  while (off < bytes.size()) {
    std::string_view rest = bytes.substr(off);
    auto bad = [&](JournalScan::Status st, std::string why) {
      scan.status = st;
      scan.bad_offset = off;
      scan.error = std::move(why);
      return scan;
    };
    if (off >= end) {
      return bad(JournalScan::Status::kTornTail,
                 std::to_string(rest.size()) + " zero bytes at the end");
    }
    if (rest.size() < kFrameHeaderSize) {
      return bad(JournalScan::Status::kTornTail,
                 "incomplete frame header (" + std::to_string(rest.size()) + " bytes)");
    }
    uint32_t len = LoadU32(rest.data());
    uint32_t check = LoadU32(rest.data() + 4);
    uint32_t sum = LoadU32(rest.data() + 8);
    if ((len ^ kFrameLengthCheck) != check || len > kMaxFrameLength || len == 0) {
      // A header only partly written (nothing but zeros after its first bytes) is a torn tail.
      bool torn = end - off < kFrameHeaderSize;
      return bad(torn ? JournalScan::Status::kTornTail : JournalScan::Status::kDamaged,
                 "bad frame header");
    }
    if (rest.size() - kFrameHeaderSize < len) {
      return bad(JournalScan::Status::kTornTail,
                 "frame of " + std::to_string(len) + " bytes cut at " +
                     std::to_string(rest.size() - kFrameHeaderSize));
    }
    std::string_view payload = rest.substr(kFrameHeaderSize, len);
    if (Checksum(payload) != sum) {
      // The frame's length is whole, so it was not cut by the end of the file: its bytes
      // changed. Unless its end reads as zeros from a sector boundary on to the end of the
      // file: a write whose size reached the disk before its data.
      const size_t frame_end = off + kFrameHeaderSize + len;
      const size_t zeros_from = (end + kZeroFillAlign - 1) / kZeroFillAlign * kZeroFillAlign;
      const bool zero_filled = zeros_from < frame_end;
      return bad(zero_filled ? JournalScan::Status::kTornTail : JournalScan::Status::kDamaged,
                 zero_filled ? "frame ends in zeros that never reached the disk"
                             : "frame checksum mismatch");
    }
    frame_records.clear();
    Reader in(payload);
    while (!in.done()) {
      JournalRecord r;
      if (!ReadRecord(in, &r)) {
        return bad(JournalScan::Status::kDamaged,
                   "malformed record at payload offset " + std::to_string(in.pos()));
      }
      frame_records.push_back(std::move(r));
    }
    if (!frame_records.empty()) frame_records.front().first_in_frame = true;
    for (const JournalRecord& r : frame_records) {
      scan.records++;
      if (!on_record(r)) {
        scan.status = JournalScan::Status::kStopped;
        scan.good_bytes = off + kFrameHeaderSize + len;
        scan.frames++;
        return scan;
      }
    }
    scan.frames++;
    off += kFrameHeaderSize + len;
    scan.good_bytes = off;
  }
  return scan;
}

namespace {

// kEdit's replay: the same Db call that made the change, on a key that holds the collection
// the edit names. False (nothing changed) for a missing key or one of another type.
bool ApplyEdit(Db& db, std::string_view key, const JournalEdit& e, int64_t now_ms) {
  using Op = KeyEdit::Op;
  ValueType want = ValueType::kList;
  if (e.op == Op::kHashSet || e.op == Op::kHashDel) want = ValueType::kHash;
  if (e.op == Op::kSetAdd || e.op == Op::kSetRem) want = ValueType::kSet;
  if (e.op == Op::kZSetSet || e.op == Op::kZSetRem) want = ValueType::kZSet;
  if (e.op == Op::kStream) want = ValueType::kStream;
  if (db.Type(key, now_ms) != want) return false;
  switch (e.op) {
    case Op::kListPush:
      return db.ListPush(key, e.items, e.end, /*only_if_exists=*/true, now_ms).ok();
    case Op::kListPop:
      return db.ListPop(key, e.end, e.first, now_ms).ok();
    case Op::kListTrim:
      if (e.first > e.last || e.last > INT64_MAX) return false;
      return db.ListTrim(key, static_cast<int64_t>(e.first), static_cast<int64_t>(e.last),
                         now_ms) == OpStatus::kOk;
    case Op::kHashSet:
      return db.HSet(key, e.items, now_ms).ok();
    case Op::kHashDel:
      return db.HDel(key, e.items, now_ms).ok();
    case Op::kSetAdd:
      return db.SetAdd(key, e.items, now_ms).ok();
    case Op::kSetRem:
      return db.SetRem(key, e.items, now_ms).ok();
    case Op::kZSetSet: {
      std::vector<std::pair<double, std::string_view>> pairs;
      pairs.reserve(e.items.size());
      for (size_t i = 0; i < e.items.size(); i++) pairs.emplace_back(e.scores[i], e.items[i]);
      return db.ZAdd(key, ZAddOptions{}, pairs, now_ms).ok();
    }
    case Op::kZSetRem:
      return db.ZRem(key, e.items, now_ms).ok();
    case Op::kStream:
      return db.XApplyChanges(key, e.items[0], now_ms);
  }
  return false;
}

}  // namespace

bool ApplyJournalRecord(const JournalRecord& r, Shard& shard, int64_t now_ms) {
  if (r.kind == RecordKind::kHeader || r.kind == RecordKind::kTx ||
      r.kind == RecordKind::kDataSet || r.kind == RecordKind::kBaseEnd) {
    return true;
  }
  if (r.db >= static_cast<uint32_t>(shard.num_dbs())) return false;
  Db& db = shard.db(static_cast<int>(r.db));
  switch (r.kind) {
    case RecordKind::kHeader:
    case RecordKind::kTx:
    case RecordKind::kDataSet:
    case RecordKind::kBaseEnd:
      return true;
    case RecordKind::kPut:
      // Restore replaces the key; a snapshot whose time has passed leaves it deleted.
      db.Restore(r.key, r.value, /*replace=*/true, now_ms, /*with_lock_record=*/true);
      if (r.value.lock_token != 0) db.AdvanceFencingToken(r.value.lock_token);
      return true;
    case RecordKind::kDel:
      db.Del(r.key, now_ms);
      return true;
    case RecordKind::kToken:
      db.AdvanceFencingToken(r.token);
      return true;
    case RecordKind::kFlushDb:
      db.Flush();
      return true;
    case RecordKind::kEdit:
      return ApplyEdit(db, r.key, r.edit, now_ms);
  }
  return false;
}

namespace {

constexpr std::string_view kManifestMagic = "deadbolt-journal-manifest 1\n";

std::string Hex64(uint64_t v) {
  char b[17];
  snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

bool ParseHex64(std::string_view s, uint64_t* v) {
  if (s.size() != 16) return false;
  uint64_t x = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    x = x << 4 | static_cast<uint64_t>(d);
  }
  *v = x;
  return true;
}

bool ParseU32(std::string_view s, uint32_t* v) {
  if (s.empty() || s.size() > 9) return false;
  uint32_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint32_t>(c - '0');
  }
  *v = x;
  return true;
}

}  // namespace

std::string FormatJournalManifest(const JournalManifest& m) {
  std::string out(kManifestMagic);
  out += "set " + Hex64(m.set_id) + "\n";
  out += "layout " + std::to_string(m.num_shards) + "\n";
  for (size_t i = 0; i < m.files.size(); i++) {
    out += "file " + std::to_string(i) + " " + m.files[i] + "\n";
  }
  out += "check " + Hex64(XXH3_64bits(out.data(), out.size())) + "\n";
  return out;
}

std::optional<JournalManifest> ParseJournalManifest(std::string_view text, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<JournalManifest> {
    *error = std::move(why);
    return std::nullopt;
  };
  if (!text.starts_with(kManifestMagic)) return fail("not a journal manifest (first line)");
  // The checksum line closes the text; anything else is a cut or a change.
  const size_t check_at = text.rfind("check ");
  if (check_at == std::string_view::npos || check_at == 0 || text[check_at - 1] != '\n') {
    return fail("no check line (cut short?)");
  }
  uint64_t want = 0;
  std::string_view check_line = text.substr(check_at + 6);
  if (!check_line.ends_with("\n") ||
      !ParseHex64(check_line.substr(0, check_line.size() - 1), &want)) {
    return fail("bad check line");
  }
  if (XXH3_64bits(text.data(), check_at) != want) return fail("checksum mismatch");
  JournalManifest m;
  bool have_set = false, have_layout = false;
  std::string_view body = text.substr(kManifestMagic.size(), check_at - kManifestMagic.size());
  while (!body.empty()) {
    size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body.remove_prefix(nl == std::string_view::npos ? body.size() : nl + 1);
    size_t sp = line.find(' ');
    std::string_view word = line.substr(0, sp);
    std::string_view rest = sp == std::string_view::npos ? "" : line.substr(sp + 1);
    if (word == "set") {
      if (!ParseHex64(rest, &m.set_id)) return fail("bad set line");
      have_set = true;
    } else if (word == "layout") {
      if (!ParseU32(rest, &m.num_shards) || m.num_shards == 0) return fail("bad layout line");
      have_layout = true;
    } else if (word == "file") {
      size_t sp2 = rest.find(' ');
      uint32_t i = 0;
      if (sp2 == std::string_view::npos || !ParseU32(rest.substr(0, sp2), &i) ||
          i != m.files.size() || sp2 + 1 >= rest.size()) {
        return fail("bad file line");
      }
      m.files.emplace_back(rest.substr(sp2 + 1));
    } else {
      return fail("unknown line");
    }
  }
  if (!have_set || !have_layout) return fail("no set or layout line");
  if (m.files.size() != m.num_shards) return fail("the layout and the files listed differ");
  return m;
}

}  // namespace deadbolt::shard
