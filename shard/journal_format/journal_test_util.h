#pragma once
// Helpers shared by the journal format tests (journal_format_test.cc, journal_apply_test.cc):
// records with owned copies, writing them, scanning bytes back, building frames by hand.

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shard/base/test_util.h"
#include "shard/journal_format/journal_format.h"

namespace deadbolt::shard::journal_test {

using Status = JournalScan::Status;

// A record with its key copied out of the scanned bytes.
struct Rec {
  RecordKind kind = RecordKind::kHeader;
  JournalHeader header;
  uint32_t db = 0;
  std::string key;
  KeySnapshot value;
  uint64_t token = 0;
  uint64_t set_id = 0;
  // kEdit: the change, with its items copied.
  KeyEdit::Op op = KeyEdit::Op::kListPush;
  ListEnd end = ListEnd::kRight;
  uint64_t first = 0;
  uint64_t last = 0;
  std::vector<std::string> items;
  std::vector<double> scores;
};

inline Rec Own(const JournalRecord& r) {
  Rec o;
  o.kind = r.kind;
  o.header = r.header;
  o.db = r.db;
  o.set_id = r.set_id;
  o.key = std::string(r.key);
  o.value = r.value;
  o.token = r.token;
  if (r.kind == RecordKind::kEdit) {
    o.op = r.edit.op;
    o.end = r.edit.end;
    o.first = r.edit.first;
    o.last = r.edit.last;
    o.items.assign(r.edit.items.begin(), r.edit.items.end());
    o.scores = r.edit.scores;
  }
  return o;
}

struct Scanned {
  JournalScan scan;
  std::vector<Rec> recs;
};

inline Scanned Scan(std::string_view bytes) {
  Scanned s;
  s.scan = ScanJournal(bytes, [&](const JournalRecord& r) {
    s.recs.push_back(Own(r));
    return true;
  });
  return s;
}

// Compares what matters for each kind.
inline void ExpectSame(const Rec& want, const Rec& got, const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_EQ(static_cast<int>(got.kind), static_cast<int>(want.kind));
  switch (want.kind) {
    case RecordKind::kHeader:
      EXPECT_EQ(got.header.version, want.header.version);
      EXPECT_EQ(got.header.shard, want.header.shard);
      EXPECT_EQ(got.header.num_shards, want.header.num_shards);
      EXPECT_EQ(got.header.created_ns, want.header.created_ns);
      break;
    case RecordKind::kPut:
      EXPECT_EQ(got.db, want.db);
      EXPECT_EQ(got.key, want.key);
      EXPECT_EQ(got.value.type, want.value.type);
      EXPECT_EQ(got.value.expire_at_ms, want.value.expire_at_ms);
      EXPECT_EQ(got.value.lock_token, want.value.lock_token);
      EXPECT_EQ(got.value.lock_holds, want.value.lock_holds);
      EXPECT_EQ(got.value.members, want.value.members);
      if (want.value.type == ValueType::kHash) {
        EXPECT_EQ(got.value.fields, want.value.fields);
        EXPECT_TRUE(got.value.str.empty());
      } else {
        EXPECT_EQ(got.value.str, want.value.str);
        EXPECT_TRUE(got.value.fields.empty());
      }
      break;
    case RecordKind::kDel:
      EXPECT_EQ(got.db, want.db);
      EXPECT_EQ(got.key, want.key);
      break;
    case RecordKind::kToken:
      EXPECT_EQ(got.db, want.db);
      EXPECT_EQ(got.token, want.token);
      break;
    case RecordKind::kFlushDb:
      EXPECT_EQ(got.db, want.db);
      break;
    case RecordKind::kTx:  // JournalFormatTxTest
      break;
    case RecordKind::kDataSet:
      EXPECT_EQ(got.set_id, want.set_id);
      break;
    case RecordKind::kBaseEnd:
      break;
    case RecordKind::kEdit:
      EXPECT_EQ(got.db, want.db);
      EXPECT_EQ(got.key, want.key);
      EXPECT_EQ(got.op, want.op);
      EXPECT_EQ(got.end, want.end);
      EXPECT_EQ(got.first, want.first);
      EXPECT_EQ(got.last, want.last);
      EXPECT_EQ(got.items, want.items);
      EXPECT_EQ(got.scores, want.scores);
      break;
  }
}

inline void ExpectSameList(const std::vector<Rec>& want, const std::vector<Rec>& got,
                           const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < want.size(); i++) ExpectSame(want[i], got[i], where + " #" + Cat("", i));
}

// Writes `r` with `w` (inside a frame).
inline void Write(JournalWriter& w, const Rec& r) {
  switch (r.kind) {
    case RecordKind::kHeader:
      w.Header(r.header);
      break;
    case RecordKind::kPut:
      w.Put(r.db, r.key, r.value);
      break;
    case RecordKind::kDel:
      w.Del(r.db, r.key);
      break;
    case RecordKind::kToken:
      w.Token(r.db, r.token);
      break;
    case RecordKind::kFlushDb:
      w.FlushDb(r.db);
      break;
    case RecordKind::kTx:  // not generated here
      break;
    case RecordKind::kDataSet:
      w.DataSet(r.set_id);
      break;
    case RecordKind::kBaseEnd:
      w.BaseEnd();
      break;
    case RecordKind::kEdit: {
      std::vector<std::string_view> items(r.items.begin(), r.items.end());
      std::string bytes;
      EncodeEdit(&bytes, r.db, r.key,
                 KeyEdit{.op = r.op,
                         .end = r.end,
                         .first = r.first,
                         .last = r.last,
                         .items = items,
                         .scores = r.scores,
                         .size_after = 0});
      w.Append(bytes);
      break;
    }
  }
}

inline Rec HeaderRec(uint32_t shard, uint32_t num_shards, int64_t created) {
  Rec r;
  r.kind = RecordKind::kHeader;
  r.header.shard = shard;
  r.header.num_shards = num_shards;
  r.header.created_ns = created;
  return r;
}

inline Rec PutStr(uint32_t db, std::string key, std::string value, int64_t expire_at = -1,
                  uint64_t token = 0, int64_t holds = 0) {
  Rec r;
  r.kind = RecordKind::kPut;
  r.db = db;
  r.key = std::move(key);
  r.value.type = ValueType::kString;
  r.value.str = std::move(value);
  r.value.expire_at_ms = expire_at;
  r.value.lock_token = token;
  r.value.lock_holds = holds;
  return r;
}

inline Rec PutHash(uint32_t db, std::string key,
                   std::vector<std::pair<std::string, std::string>> fields,
                   int64_t expire_at = -1) {
  Rec r;
  r.kind = RecordKind::kPut;
  r.db = db;
  r.key = std::move(key);
  r.value.type = ValueType::kHash;
  r.value.fields = std::move(fields);
  r.value.expire_at_ms = expire_at;
  return r;
}

// A put of a list (members head to tail) or a set.
inline Rec PutMembers(uint32_t db, std::string key, ValueType type,
                      std::vector<std::string> members, int64_t expire_at = -1) {
  Rec r;
  r.kind = RecordKind::kPut;
  r.db = db;
  r.key = std::move(key);
  r.value.type = type;
  r.value.members = std::move(members);
  r.value.expire_at_ms = expire_at;
  return r;
}

inline Rec DelRec(uint32_t db, std::string key) {
  Rec r;
  r.kind = RecordKind::kDel;
  r.db = db;
  r.key = std::move(key);
  return r;
}

inline Rec TokenRec(uint32_t db, uint64_t token) {
  Rec r;
  r.kind = RecordKind::kToken;
  r.db = db;
  r.token = token;
  return r;
}

inline Rec EditRec(uint32_t db, std::string key, KeyEdit::Op op, std::vector<std::string> items,
                   ListEnd end = ListEnd::kRight, uint64_t first = 0, uint64_t last = 0,
                   std::vector<double> scores = {}) {
  Rec r;
  r.kind = RecordKind::kEdit;
  r.db = db;
  r.key = std::move(key);
  r.op = op;
  r.items = std::move(items);
  r.end = end;
  r.first = first;
  r.last = last;
  r.scores = std::move(scores);
  return r;
}

inline Rec FlushRec(uint32_t db) {
  Rec r;
  r.kind = RecordKind::kFlushDb;
  r.db = db;
  return r;
}

inline std::string Binary() { return std::string("\0\x01\x7f\x80\xff\r\n\0", 8); }

// The frames of a small journal, with where each one starts; ends.back() == bytes.size().
struct Built {
  std::string bytes;
  std::vector<size_t> starts;
  std::vector<size_t> ends;
  std::vector<std::vector<Rec>> frames;
  // The records of frames [0, n).
  std::vector<Rec> Before(size_t n) const {
    std::vector<Rec> out;
    for (size_t i = 0; i < n; i++) out.insert(out.end(), frames[i].begin(), frames[i].end());
    return out;
  }
};

inline Built Build(const std::vector<std::vector<Rec>>& frames) {
  Built b;
  b.frames = frames;
  JournalWriter w(&b.bytes);
  for (const auto& f : frames) {
    b.starts.push_back(b.bytes.size());
    w.BeginFrame();
    for (const Rec& r : f) Write(w, r);
    EXPECT_EQ(w.records_in_frame(), f.size());
    EXPECT_TRUE(w.EndFrame());
    b.ends.push_back(b.bytes.size());
  }
  return b;
}

// A typical file: the header frame, then turns of changes.
inline Built Typical() {
  return Build({
      {HeaderRec(2, 4, 1'700'000'000'000)},
      {PutStr(0, "lock:1", "owner-a", 1'700'000'030'000, 5, 1), TokenRec(0, 5)},
      {PutHash(1, "h", {{"f1", "v1"}, {"", ""}, {Binary(), "x"}}), DelRec(0, "gone")},
      {FlushRec(3), PutStr(3, "k", "v")},
      {DelRec(0, "lock:1")},
  });
}

// One frame around `payload`, with a correct header and checksum.
inline std::string Frame(std::string_view payload) {
  std::string out;
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; i++) out.push_back(static_cast<char>(v >> (8 * i)));
  };
  const uint32_t len = static_cast<uint32_t>(payload.size());
  u32(len);
  u32(len ^ kFrameLengthCheck);
  u32(static_cast<uint32_t>(XXH3_64bits(payload.data(), payload.size())));
  out.append(payload);
  return out;
}

}  // namespace deadbolt::shard::journal_test
