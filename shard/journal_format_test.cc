// The journal's bytes (journal_format.h): every record kind written and read back, frames cut at
// every byte (torn tail), zero padding, corruption of single bytes and bits (damaged vs torn),
// frames whose checksum holds around records that do not parse, stopping early, and replay of
// records into a Shard (ApplyJournalRecord).

#include "shard/journal_format.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shard/db.h"
#include "shard/shard.h"
#include "shard/test_util.h"

namespace deadbolt::shard {
namespace {

using Status = JournalScan::Status;

// A record with its key copied out of the scanned bytes.
struct Rec {
  RecordKind kind = RecordKind::kHeader;
  JournalHeader header;
  uint32_t db = 0;
  std::string key;
  KeySnapshot value;
  uint64_t token = 0;
};

Rec Own(const JournalRecord& r) {
  Rec o;
  o.kind = r.kind;
  o.header = r.header;
  o.db = r.db;
  o.key = std::string(r.key);
  o.value = r.value;
  o.token = r.token;
  return o;
}

struct Scanned {
  JournalScan scan;
  std::vector<Rec> recs;
};

Scanned Scan(std::string_view bytes) {
  Scanned s;
  s.scan = ScanJournal(bytes, [&](const JournalRecord& r) {
    s.recs.push_back(Own(r));
    return true;
  });
  return s;
}

// Compares what matters for each kind.
void ExpectSame(const Rec& want, const Rec& got, const std::string& where) {
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
  }
}

void ExpectSameList(const std::vector<Rec>& want, const std::vector<Rec>& got,
                    const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < want.size(); i++) ExpectSame(want[i], got[i], where + " #" + Cat("", i));
}

// Writes `r` with `w` (inside a frame).
void Write(JournalWriter& w, const Rec& r) {
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
  }
}

Rec HeaderRec(uint32_t shard, uint32_t num_shards, int64_t created) {
  Rec r;
  r.kind = RecordKind::kHeader;
  r.header.shard = shard;
  r.header.num_shards = num_shards;
  r.header.created_ns = created;
  return r;
}

Rec PutStr(uint32_t db, std::string key, std::string value, int64_t expire_at = -1,
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

Rec PutHash(uint32_t db, std::string key, std::vector<std::pair<std::string, std::string>> fields,
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

Rec DelRec(uint32_t db, std::string key) {
  Rec r;
  r.kind = RecordKind::kDel;
  r.db = db;
  r.key = std::move(key);
  return r;
}

Rec TokenRec(uint32_t db, uint64_t token) {
  Rec r;
  r.kind = RecordKind::kToken;
  r.db = db;
  r.token = token;
  return r;
}

Rec FlushRec(uint32_t db) {
  Rec r;
  r.kind = RecordKind::kFlushDb;
  r.db = db;
  return r;
}

std::string Binary() { return std::string("\0\x01\x7f\x80\xff\r\n\0", 8); }

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

Built Build(const std::vector<std::vector<Rec>>& frames) {
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
Built Typical() {
  return Build({
      {HeaderRec(2, 4, 1'700'000'000'000)},
      {PutStr(0, "lock:1", "owner-a", 1'700'000'030'000, 5, 1), TokenRec(0, 5)},
      {PutHash(1, "h", {{"f1", "v1"}, {"", ""}, {Binary(), "x"}}), DelRec(0, "gone")},
      {FlushRec(3), PutStr(3, "k", "v")},
      {DelRec(0, "lock:1")},
  });
}

// One frame around `payload`, with a correct header and checksum.
std::string Frame(std::string_view payload) {
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

// --- round trips ---

TEST(JournalFormatTest, PutRoundTrip) {
  std::string buf;
  JournalWriter w(&buf);
  w.BeginFrame();
  KeySnapshot s;
  s.type = ValueType::kString;
  s.str = "owner-1";
  s.expire_at_ms = 5000;
  s.lock_token = 7;
  s.lock_holds = 2;
  w.Put(3, "lock:1", s);
  ASSERT_TRUE(w.EndFrame());
  std::vector<JournalRecord> got;
  JournalScan scan = ScanJournal(buf, [&](const JournalRecord& r) {
    got.push_back(r);
    return true;
  });
  EXPECT_EQ(scan.status, JournalScan::Status::kOk);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].db, 3u);
  EXPECT_EQ(got[0].value.str, "owner-1");
  EXPECT_EQ(got[0].value.lock_token, 7u);
}

TEST(JournalFormatTest, EveryRecordKindRoundTrips) {
  const std::string big(100'000, 'v');  // a 3-byte length varint
  const std::string long_key(300, 'k');  // a 2-byte length varint
  std::vector<Rec> recs = {
      HeaderRec(0, 1, 0),
      HeaderRec(7, 16, 1'700'000'000'123),
      HeaderRec(UINT32_MAX, UINT32_MAX, -5),
      PutStr(0, "plain", "value"),                                     // no TTL, no lock
      PutStr(1, "ttl", "value", 1'700'000'005'000),                    // TTL, no lock
      PutStr(2, "lock:1", "uuid-1", 1'700'000'030'000, 42, 1),         // TTL and lock
      PutStr(15, "lock:2", "uuid-2", -1, UINT64_MAX, INT64_MAX),       // extreme lock record
      PutStr(300, "", ""),                                              // empty key and value
      PutStr(UINT32_MAX, Binary(), Binary()),                          // binary key and value
      PutStr(0, long_key, big, INT64_MAX),
      PutHash(0, "h", {{"f1", "v1"}, {"f2", ""}, {"", "v3"}, {"", ""}, {Binary(), Binary()}}),
      PutHash(5, "h2", {{"only", "one"}}, 1'700'000'000'001),
      PutHash(6, "h3", {{long_key, big}}),
      DelRec(0, "plain"),
      DelRec(128, Binary()),
      DelRec(1, ""),
      TokenRec(0, 1),
      TokenRec(127, 0),
      TokenRec(UINT32_MAX, UINT64_MAX),
      FlushRec(0),
      FlushRec(16383),
      FlushRec(UINT32_MAX),
  };
  // One record per frame, and all in one frame.
  for (bool one_frame : {false, true}) {
    SCOPED_TRACE(one_frame ? "one frame" : "a frame each");
    std::vector<std::vector<Rec>> frames;
    if (one_frame) {
      frames.push_back(recs);
    } else {
      for (const Rec& r : recs) frames.push_back({r});
    }
    Built b = Build(frames);
    Scanned s = Scan(b.bytes);
    EXPECT_EQ(s.scan.status, Status::kOk) << s.scan.error;
    EXPECT_EQ(s.scan.good_bytes, b.bytes.size());
    EXPECT_EQ(s.scan.frames, frames.size());
    EXPECT_EQ(s.scan.records, recs.size());
    EXPECT_TRUE(s.scan.error.empty());
    ExpectSameList(recs, s.recs, "round trip");
  }
}

TEST(JournalFormatTest, NegativeHoldsAreWrittenAsZero) {
  Built b = Build({{PutStr(0, "k", "v", -1, 9, -3)}});
  Scanned s = Scan(b.bytes);
  ASSERT_EQ(s.recs.size(), 1u);
  EXPECT_EQ(s.recs[0].value.lock_token, 9u);
  EXPECT_EQ(s.recs[0].value.lock_holds, 0);
}

TEST(JournalFormatTest, SeveralRecordsPerFrameAndSeveralFrames) {
  Built b = Typical();
  Scanned s = Scan(b.bytes);
  EXPECT_EQ(s.scan.status, Status::kOk) << s.scan.error;
  EXPECT_EQ(s.scan.frames, 5u);
  EXPECT_EQ(s.scan.records, 8u);
  EXPECT_EQ(s.scan.good_bytes, b.bytes.size());
  ExpectSameList(b.Before(5), s.recs, "typical");

  // Frames written by one writer, across separate appends to the same buffer, concatenate.
  std::string twice = b.bytes + b.bytes;
  Scanned s2 = Scan(twice);
  EXPECT_EQ(s2.scan.status, Status::kOk);
  EXPECT_EQ(s2.scan.frames, 10u);
  EXPECT_EQ(s2.scan.records, 16u);
}

TEST(JournalFormatTest, FrameLayoutIsAsDocumented) {
  std::string buf = "prefix";  // the writer appends; it never touches what was there
  JournalWriter w(&buf);
  w.BeginFrame();
  EXPECT_TRUE(w.in_frame());
  w.FlushDb(5);
  w.Del(1, "ab");
  EXPECT_EQ(w.records_in_frame(), 2u);
  ASSERT_TRUE(w.EndFrame());
  EXPECT_FALSE(w.in_frame());
  ASSERT_EQ(buf.substr(0, 6), "prefix");
  const std::string payload = std::string("\x05\x05", 2) + std::string("\x03\x01\x02" "ab", 5);
  EXPECT_EQ(buf.substr(6), Frame(payload));
}

TEST(JournalFormatTest, EndFrameWithNoRecordsWritesNothing) {
  std::string buf;
  JournalWriter w(&buf);
  w.BeginFrame();
  EXPECT_TRUE(w.in_frame());
  EXPECT_EQ(w.records_in_frame(), 0u);
  EXPECT_FALSE(w.EndFrame());
  EXPECT_FALSE(w.in_frame());
  EXPECT_TRUE(buf.empty());

  // After real frames too, and the writer goes on working.
  w.BeginFrame();
  w.Token(0, 3);
  ASSERT_TRUE(w.EndFrame());
  const std::string after_one = buf;
  w.BeginFrame();
  EXPECT_FALSE(w.EndFrame());
  EXPECT_EQ(buf, after_one);
  w.BeginFrame();
  w.Token(0, 4);
  EXPECT_EQ(w.records_in_frame(), 1u);
  ASSERT_TRUE(w.EndFrame());
  Scanned s = Scan(buf);
  EXPECT_EQ(s.scan.status, Status::kOk);
  EXPECT_EQ(s.scan.frames, 2u);
  ASSERT_EQ(s.recs.size(), 2u);
  EXPECT_EQ(s.recs[1].token, 4u);
  // records_in_frame starts again at each frame.
  w.BeginFrame();
  EXPECT_EQ(w.records_in_frame(), 0u);
  EXPECT_FALSE(w.EndFrame());
  EXPECT_EQ(buf.size(), after_one.size() * 2);
}

TEST(JournalFormatTest, PutSizeIsAtLeastWhatPutWrites) {
  const std::string big(70'000, 'x');
  std::vector<Rec> puts = {
      PutStr(0, "", ""),
      PutStr(0, "k", "v"),
      PutStr(UINT32_MAX, std::string(200, 'k'), big, INT64_MAX, UINT64_MAX, INT64_MAX),
      PutStr(127, "lock", "uuid", 1'700'000'000'000, 1, 1),
      PutStr(128, "lock", "uuid", -1, 1ull << 40, (int64_t{1} << 35)),
      PutHash(0, "h", {}),
      PutHash(UINT32_MAX, std::string(129, 'h'),
              {{"", ""}, {Binary(), big}, {std::string(128, 'f'), "v"}}, INT64_MAX),
  };
  // Many fields: the count takes two varint bytes.
  std::vector<std::pair<std::string, std::string>> many;
  for (int i = 0; i < 200; i++) many.emplace_back(Cat("f", i), Cat("v", i));
  puts.push_back(PutHash(9, "many", many));
  for (const Rec& r : puts) {
    std::string buf;
    JournalWriter w(&buf);
    w.BeginFrame();
    w.Put(r.db, r.key, r.value);
    ASSERT_TRUE(w.EndFrame());
    const size_t written = buf.size() - kFrameHeaderSize;
    EXPECT_GE(JournalPutSize(r.key, r.value), written) << "key " << r.key.size() << " bytes";
    // And not wildly more (a sizing estimate, not a bound of the whole value twice).
    EXPECT_LE(JournalPutSize(r.key, r.value), written + 32);
  }
}

// --- torn tails ---

TEST(JournalScanTest, EmptyInputIsOk) {
  Scanned s = Scan("");
  EXPECT_EQ(s.scan.status, Status::kOk);
  EXPECT_EQ(s.scan.good_bytes, 0u);
  EXPECT_EQ(s.scan.frames, 0u);
  EXPECT_EQ(s.scan.records, 0u);
  EXPECT_TRUE(s.recs.empty());
}

TEST(JournalScanTest, CutAtEveryByteOfTheLastFrameIsATornTail) {
  Built b = Typical();
  const size_t n = b.frames.size();
  const size_t last = b.starts[n - 1];
  const std::vector<Rec> earlier = b.Before(n - 1);
  // At the boundary: a whole, valid file.
  {
    Scanned s = Scan(std::string_view(b.bytes).substr(0, last));
    EXPECT_EQ(s.scan.status, Status::kOk);
    EXPECT_EQ(s.scan.good_bytes, last);
    EXPECT_EQ(s.scan.frames, n - 1);
    ExpectSameList(earlier, s.recs, "boundary");
  }
  for (size_t cut = last + 1; cut < b.bytes.size(); cut++) {
    SCOPED_TRACE(Cat("cut at ", static_cast<int64_t>(cut)));
    Scanned s = Scan(std::string_view(b.bytes).substr(0, cut));
    EXPECT_EQ(s.scan.status, Status::kTornTail) << s.scan.error;
    EXPECT_EQ(s.scan.good_bytes, last);
    EXPECT_EQ(s.scan.bad_offset, last);
    EXPECT_EQ(s.scan.frames, n - 1);
    EXPECT_EQ(s.scan.records, earlier.size());
    EXPECT_FALSE(s.scan.error.empty());
    ExpectSameList(earlier, s.recs, "torn");
  }
}

TEST(JournalScanTest, CutAtEveryByteOfTheWholeFile) {
  // Every prefix: ok exactly at frame boundaries, else a torn tail after the last whole frame.
  Built b = Build({
      {HeaderRec(0, 1, 1)},
      {PutHash(0, "h", {{"a", "1"}, {"", Binary()}}), PutStr(0, "s", "x", 99, 3, 2)},
      {TokenRec(0, 10), FlushRec(0), DelRec(1, "k")},
  });
  for (size_t cut = 0; cut <= b.bytes.size(); cut++) {
    SCOPED_TRACE(Cat("cut at ", static_cast<int64_t>(cut)));
    size_t whole = 0;  // frames entirely before the cut
    while (whole < b.ends.size() && b.ends[whole] <= cut) whole++;
    const size_t good = whole == 0 ? 0 : b.ends[whole - 1];
    Scanned s = Scan(std::string_view(b.bytes).substr(0, cut));
    EXPECT_EQ(s.scan.status, cut == good ? Status::kOk : Status::kTornTail) << s.scan.error;
    EXPECT_EQ(s.scan.good_bytes, good);
    if (cut != good) {
      EXPECT_EQ(s.scan.bad_offset, good);
    }
    EXPECT_EQ(s.scan.frames, whole);
    ExpectSameList(b.Before(whole), s.recs, "prefix");
  }
}

TEST(JournalScanTest, ZeroBytesAfterValidFramesAreATornTail) {
  Built b = Typical();
  for (size_t zeros : {1u, 5u, 11u, 12u, 13u, 100u, 4096u}) {
    SCOPED_TRACE(Cat("zeros ", static_cast<int64_t>(zeros)));
    std::string bytes = b.bytes + std::string(zeros, '\0');
    Scanned s = Scan(bytes);
    EXPECT_EQ(s.scan.status, Status::kTornTail) << s.scan.error;
    EXPECT_EQ(s.scan.good_bytes, b.bytes.size());
    EXPECT_EQ(s.scan.bad_offset, b.bytes.size());
    EXPECT_EQ(s.scan.frames, b.frames.size());
    ExpectSameList(b.Before(b.frames.size()), s.recs, "zeros");
  }
  // A file that was extended and never written at all.
  Scanned s = Scan(std::string(4096, '\0'));
  EXPECT_EQ(s.scan.status, Status::kTornTail);
  EXPECT_EQ(s.scan.good_bytes, 0u);
  EXPECT_EQ(s.scan.bad_offset, 0u);
  EXPECT_TRUE(s.recs.empty());
}

TEST(JournalScanTest, ATornFrameFollowedByZerosIsNotOk) {
  // A crash that left the start of a frame and then the zeros of a pre-extended file. Whatever
  // it is called, nothing of the cut frame may be delivered and the good prefix must hold.
  Built b = Typical();
  const size_t last = b.starts.back();
  for (size_t cut = last + 1; cut < b.bytes.size(); cut++) {
    SCOPED_TRACE(Cat("cut at ", static_cast<int64_t>(cut)));
    std::string bytes = b.bytes.substr(0, cut) + std::string(4096, '\0');
    Scanned s = Scan(bytes);
    EXPECT_NE(s.scan.status, Status::kOk);
    EXPECT_EQ(s.scan.good_bytes, last);
    EXPECT_EQ(s.scan.bad_offset, last);
    ExpectSameList(b.Before(b.frames.size() - 1), s.recs, "torn + zeros");
  }
}

// DISABLED: what the current classification does NOT do (reported to the lead, not fixed here).
// A crash can leave the last frame's bytes as zeros while the file size already covers them
// (size updated before the data reached the disk), or leave a cut frame followed by the zeros of
// a pre-extended file. Today a cut inside the frame header followed by zeros reads as kDamaged
// ("bad frame header"), and any cut followed by extra zeros as kDamaged ("frame checksum
// mismatch", since more bytes follow the frame). Enable if a bad frame followed only by zero
// bytes should be a torn tail.
TEST(JournalScanTest, ACutFrameFollowedOnlyByZerosIsATornTail) {
  Built b = Typical();
  const size_t last = b.starts.back();
  for (size_t cut = last + 1; cut < b.bytes.size(); cut++) {
    for (size_t extra : {size_t{0}, size_t{4096}}) {
      SCOPED_TRACE(Cat("cut at ", static_cast<int64_t>(cut)) +
                   Cat(" extra zeros ", static_cast<int64_t>(extra)));
      std::string bytes = b.bytes.substr(0, cut) + std::string(b.bytes.size() - cut + extra, '\0');
      Scanned s = Scan(bytes);
      EXPECT_EQ(s.scan.status, Status::kTornTail) << s.scan.error;
      EXPECT_EQ(s.scan.good_bytes, last);
    }
  }
}

// --- corruption ---

TEST(JournalScanTest, EveryByteFlippedInAMiddleFrameIsDamage) {
  Built b = Typical();
  for (size_t f = 1; f + 1 < b.frames.size(); f++) {  // every frame with a frame after it
    const size_t start = b.starts[f];
    const std::vector<Rec> before = b.Before(f);
    for (size_t i = start; i < b.ends[f]; i++) {
      SCOPED_TRACE(Cat("frame ", static_cast<int64_t>(f)) + Cat(" byte ", static_cast<int64_t>(i)));
      std::string bytes = b.bytes;
      bytes[i] = static_cast<char>(bytes[i] ^ 0xff);
      Scanned s = Scan(bytes);
      EXPECT_EQ(s.scan.status, Status::kDamaged) << s.scan.error;
      EXPECT_EQ(s.scan.bad_offset, start);
      EXPECT_EQ(s.scan.good_bytes, start);
      EXPECT_EQ(s.scan.frames, f);
      EXPECT_EQ(s.scan.records, before.size());
      EXPECT_FALSE(s.scan.error.empty());
      ExpectSameList(before, s.recs, "damaged");
    }
  }
  // The first frame too (the header frame), with frames after it.
  std::string bytes = b.bytes;
  bytes[kFrameHeaderSize] ^= 0x01;
  Scanned s = Scan(bytes);
  EXPECT_EQ(s.scan.status, Status::kDamaged);
  EXPECT_EQ(s.scan.bad_offset, 0u);
  EXPECT_EQ(s.scan.good_bytes, 0u);
  EXPECT_TRUE(s.recs.empty());
}

TEST(JournalScanTest, EveryBitFlippedInAMiddleFrameIsDamage) {
  Built b = Typical();
  const size_t f = 2;
  const size_t start = b.starts[f];
  const std::vector<Rec> before = b.Before(f);
  for (size_t i = start; i < b.ends[f]; i++) {
    for (int bit = 0; bit < 8; bit++) {
      SCOPED_TRACE(Cat("byte ", static_cast<int64_t>(i)) + Cat(" bit ", bit));
      std::string bytes = b.bytes;
      bytes[i] = static_cast<char>(bytes[i] ^ (1 << bit));
      Scanned s = Scan(bytes);
      ASSERT_EQ(s.scan.status, Status::kDamaged) << s.scan.error;
      ASSERT_EQ(s.scan.bad_offset, start);
      ASSERT_EQ(s.scan.good_bytes, start);
      ASSERT_EQ(s.recs.size(), before.size());
    }
  }
}

TEST(JournalScanTest, AFlippedByteInTheLastFramesPayloadOrChecksumIsATornTail) {
  Built b = Typical();
  const size_t n = b.frames.size();
  const size_t last = b.starts[n - 1];
  const std::vector<Rec> earlier = b.Before(n - 1);
  // The checksum field (bytes 8..11 of the header) and every payload byte.
  for (size_t i = last + 8; i < b.bytes.size(); i++) {
    SCOPED_TRACE(Cat("byte ", static_cast<int64_t>(i)));
    std::string bytes = b.bytes;
    bytes[i] = static_cast<char>(bytes[i] ^ 0x20);
    Scanned s = Scan(bytes);
    EXPECT_EQ(s.scan.status, Status::kTornTail) << s.scan.error;
    EXPECT_EQ(s.scan.bad_offset, last);
    EXPECT_EQ(s.scan.good_bytes, last);
    EXPECT_EQ(s.scan.frames, n - 1);
    ExpectSameList(earlier, s.recs, "last frame");
  }
  // The length fields of the last frame: never ok, nothing of that frame delivered.
  for (size_t i = last; i < last + 8; i++) {
    SCOPED_TRACE(Cat("length byte ", static_cast<int64_t>(i)));
    std::string bytes = b.bytes;
    bytes[i] = static_cast<char>(bytes[i] ^ 0x01);
    Scanned s = Scan(bytes);
    EXPECT_NE(s.scan.status, Status::kOk);
    EXPECT_NE(s.scan.status, Status::kStopped);
    EXPECT_EQ(s.scan.bad_offset, last);
    EXPECT_EQ(s.scan.good_bytes, last);
    ExpectSameList(earlier, s.recs, "last frame length");
  }
}

TEST(JournalScanTest, ABadFrameHeaderWithDataAfterIsDamage) {
  Built b = Typical();
  const size_t f = 1;
  // Length 0 with a matching check: no frame is empty.
  {
    std::string bytes = b.bytes.substr(0, b.starts[f]) + Frame("") + b.bytes.substr(b.starts[f]);
    Scanned s = Scan(bytes);
    EXPECT_EQ(s.scan.status, Status::kDamaged) << s.scan.error;
    EXPECT_EQ(s.scan.bad_offset, b.starts[f]);
    ExpectSameList(b.Before(f), s.recs, "empty frame");
  }
  // A length above kMaxFrameLength with a matching check.
  {
    std::string head;
    const uint32_t len = kMaxFrameLength + 1;
    for (uint32_t v : {len, len ^ kFrameLengthCheck, 0u}) {
      for (int i = 0; i < 4; i++) head.push_back(static_cast<char>(v >> (8 * i)));
    }
    std::string bytes = b.bytes.substr(0, b.starts[f]) + head + b.bytes.substr(b.starts[f]);
    Scanned s = Scan(bytes);
    EXPECT_EQ(s.scan.status, Status::kDamaged) << s.scan.error;
    EXPECT_EQ(s.scan.bad_offset, b.starts[f]);
    ExpectSameList(b.Before(f), s.recs, "huge frame");
  }
  // Garbage instead of a frame.
  {
    std::string bytes = b.bytes.substr(0, b.starts[f]) + "this is not a frame header" +
                        b.bytes.substr(b.starts[f]);
    Scanned s = Scan(bytes);
    EXPECT_EQ(s.scan.status, Status::kDamaged);
    EXPECT_EQ(s.scan.bad_offset, b.starts[f]);
    ExpectSameList(b.Before(f), s.recs, "garbage");
  }
}

TEST(JournalScanTest, AValidChecksumAroundRecordsThatDoNotParseIsDamage) {
  // Payloads with a correct frame header and checksum, whose records are not records.
  std::string del_ok;  // a well-formed kDel record: kind, db 0, key "k"
  del_ok += static_cast<char>(RecordKind::kDel);
  del_ok += std::string("\x00\x01k", 3);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"kind 0", std::string("\x00\x00", 2)},
      {"kind 6", std::string("\x06\x00", 2)},
      {"kind 0xff", std::string("\xff", 1)},
      {"header too short", std::string("\x01\x01\x00\x00\x00", 5)},
      {"put without its fields", std::string("\x02\x00\x01k", 4)},
      {"put of type 3", std::string("\x02\x00\x01k\x03", 5) + std::string(17, '\0') +
                            std::string("\x00", 1)},
      {"put of type 0", std::string("\x02\x00\x01k\x00", 5) + std::string(17, '\0') +
                            std::string("\x00", 1)},
      {"put string cut", std::string("\x02\x00\x01k\x01", 5) + std::string(17, '\0') +
                             std::string("\x05xy", 3)},
      {"put hash count past the end",
       std::string("\x02\x00\x01k\x02", 5) + std::string(17, '\0') + std::string("\x02\x01" "a\x01" "b", 5)},
      {"del key past the end", std::string("\x03\x00\x09k", 4)},
      {"del without key", std::string("\x03\x00", 2)},
      {"db above u32", std::string("\x05\xff\xff\xff\xff\x7f", 6)},
      {"varint of eleven bytes", std::string("\x05", 1) + std::string(10, '\x80') + std::string("\x00", 1)},
      {"token cut", std::string("\x04\x00\x01\x02\x03", 5)},
      {"flushdb without db", std::string("\x05", 1)},
      {"a good record then garbage", del_ok + std::string("\x09", 1)},
      {"a good record then a cut one", del_ok + std::string("\x03\x00\x05" "ab", 5)},
  };
  Built b = Typical();
  for (const auto& [what, payload] : bad) {
    SCOPED_TRACE(what);
    const std::string frame = Frame(payload);
    // As a middle frame and as the last frame: the checksum holds, so this is not a torn write.
    for (size_t at : {size_t{1}, b.frames.size()}) {
      SCOPED_TRACE(Cat("frame ", static_cast<int64_t>(at)));
      const size_t start = at == b.frames.size() ? b.bytes.size() : b.starts[at];
      std::string bytes = b.bytes.substr(0, start) + frame + b.bytes.substr(start);
      Scanned s = Scan(bytes);
      EXPECT_EQ(s.scan.status, Status::kDamaged) << s.scan.error;
      EXPECT_EQ(s.scan.bad_offset, start);
      EXPECT_EQ(s.scan.good_bytes, start);
      EXPECT_FALSE(s.scan.error.empty());
      ExpectSameList(b.Before(at), s.recs, "records before the bad frame");
    }
  }
  // The hand-built frame is right: the same helper around a good record scans fine.
  Scanned s = Scan(Frame(del_ok));
  EXPECT_EQ(s.scan.status, Status::kOk) << s.scan.error;
  ASSERT_EQ(s.recs.size(), 1u);
  EXPECT_EQ(s.recs[0].kind, RecordKind::kDel);
  EXPECT_EQ(s.recs[0].key, "k");
}

// --- stopping ---

TEST(JournalScanTest, ACallbackReturningFalseStops) {
  Built b = Typical();  // records: 1 | 2 | 2 | 2 | 1
  for (size_t stop_at = 0; stop_at < 8; stop_at++) {
    SCOPED_TRACE(Cat("stop at record ", static_cast<int64_t>(stop_at)));
    size_t seen = 0;
    JournalScan scan = ScanJournal(b.bytes, [&](const JournalRecord&) { return seen++ != stop_at; });
    EXPECT_EQ(scan.status, Status::kStopped);
    EXPECT_EQ(seen, stop_at + 1);  // nothing after the refused record
    EXPECT_EQ(scan.records, stop_at + 1);
  }
  // Stopping at the first record of the third frame.
  size_t seen = 0;
  JournalScan scan = ScanJournal(b.bytes, [&](const JournalRecord&) { return ++seen != 4; });
  EXPECT_EQ(scan.status, Status::kStopped);
  EXPECT_EQ(seen, 4u);
  EXPECT_GE(scan.good_bytes, b.starts[2]);
  EXPECT_LE(scan.good_bytes, b.ends[2]);
}

// --- a random model check ---

TEST(JournalScanTest, RandomJournalsRoundTrip) {
  std::mt19937_64 rng(12345);
  auto str = [&](size_t max) {
    std::string s(rng() % (max + 1), '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  for (int iter = 0; iter < 200; iter++) {
    std::vector<std::vector<Rec>> frames;
    const int nframes = 1 + static_cast<int>(rng() % 6);
    for (int f = 0; f < nframes; f++) {
      std::vector<Rec> recs;
      const int n = 1 + static_cast<int>(rng() % 5);
      for (int i = 0; i < n; i++) {
        const uint32_t db = static_cast<uint32_t>(rng() % 3 == 0 ? rng() : rng() % 16);
        switch (rng() % 5) {
          case 0:
            recs.push_back(HeaderRec(static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()),
                                     static_cast<int64_t>(rng())));
            break;
          case 1: {
            Rec r = PutStr(db, str(20), str(200), rng() % 2 ? -1 : static_cast<int64_t>(rng() >> 1),
                           rng() % 2 ? 0 : rng(), static_cast<int64_t>(rng() % 1000));
            recs.push_back(r);
            break;
          }
          case 2: {
            std::vector<std::pair<std::string, std::string>> fields;
            const int nf = 1 + static_cast<int>(rng() % 10);
            for (int k = 0; k < nf; k++) fields.emplace_back(str(10), str(70));
            recs.push_back(PutHash(db, str(20), fields,
                                   rng() % 2 ? -1 : static_cast<int64_t>(rng() >> 1)));
            break;
          }
          case 3:
            recs.push_back(DelRec(db, str(20)));
            break;
          default:
            recs.push_back(rng() % 2 ? TokenRec(db, rng()) : FlushRec(db));
            break;
        }
      }
      frames.push_back(std::move(recs));
    }
    Built b = Build(frames);
    Scanned s = Scan(b.bytes);
    ASSERT_EQ(s.scan.status, Status::kOk) << "iteration " << iter << ": " << s.scan.error;
    ASSERT_EQ(s.scan.frames, frames.size());
    ExpectSameList(b.Before(frames.size()), s.recs, Cat("iteration ", iter));
    // A random cut: only whole frames come back.
    const size_t cut = rng() % (b.bytes.size() + 1);
    size_t whole = 0;
    while (whole < b.ends.size() && b.ends[whole] <= cut) whole++;
    Scanned c = Scan(std::string_view(b.bytes).substr(0, cut));
    ASSERT_EQ(c.recs.size(), b.Before(whole).size()) << "iteration " << iter << " cut " << cut;
  }
}

// --- replay into a shard ---

class JournalApplyTest : public ::testing::Test {
 protected:
  bool Apply(const Rec& r) {
    // Through the bytes, as a replay does.
    std::string buf;
    JournalWriter w(&buf);
    w.BeginFrame();
    Write(w, r);
    EXPECT_TRUE(w.EndFrame());
    bool result = false;
    size_t n = 0;
    JournalScan scan = ScanJournal(buf, [&](const JournalRecord& rec) {
      n++;
      result = ApplyJournalRecord(rec, shard, now);
      return true;
    });
    EXPECT_EQ(scan.status, Status::kOk);
    EXPECT_EQ(n, 1u);
    return result;
  }
  Db& db(int i) { return shard.db(i); }

  Shard shard{0, 16};
  int64_t now = 1'700'000'000'000;
};

TEST_F(JournalApplyTest, HeaderIsIgnored) {
  EXPECT_TRUE(Apply(HeaderRec(3, 8, now)));
  for (int i = 0; i < shard.num_dbs(); i++) EXPECT_EQ(db(i).Size(), 0u);
}

TEST_F(JournalApplyTest, PutThenDel) {
  EXPECT_TRUE(Apply(PutStr(2, "k", "v1")));
  EXPECT_EQ(*db(2).Get("k", now), "v1");
  EXPECT_EQ(db(2).Pttl("k", now), -1);
  EXPECT_FALSE(db(0).Exists("k", now));
  // A put replaces the key whole: value and TTL.
  EXPECT_TRUE(Apply(PutStr(2, "k", "v2", now + 5'000)));
  EXPECT_EQ(*db(2).Get("k", now), "v2");
  EXPECT_EQ(db(2).Pttl("k", now), 5'000);
  EXPECT_TRUE(Apply(PutStr(2, "k", "v3")));
  EXPECT_EQ(*db(2).Get("k", now), "v3");
  EXPECT_EQ(db(2).Pttl("k", now), -1);  // a put without TTL drops the old one
  // Replaying the same put twice is harmless.
  EXPECT_TRUE(Apply(PutStr(2, "k", "v3")));
  EXPECT_EQ(*db(2).Get("k", now), "v3");
  EXPECT_EQ(db(2).Size(), 1u);
  EXPECT_TRUE(Apply(DelRec(2, "k")));
  EXPECT_FALSE(db(2).Exists("k", now));
  EXPECT_TRUE(Apply(DelRec(2, "k")));  // a del of a missing key: nothing to do
  EXPECT_EQ(db(2).Size(), 0u);
}

TEST_F(JournalApplyTest, PutWithAPastExpiryDeletesTheKey) {
  ASSERT_TRUE(db(0).Set("k", "old", SetOptions{}, now).ok());
  EXPECT_TRUE(Apply(PutStr(0, "k", "new", now - 1)));
  EXPECT_FALSE(db(0).Exists("k", now));
  EXPECT_EQ(db(0).Size(), 0u);
  // At now exactly: expired as well (the put's time is at or before now).
  ASSERT_TRUE(db(0).Set("k", "old", SetOptions{}, now).ok());
  EXPECT_TRUE(Apply(PutStr(0, "k", "new", now)));
  EXPECT_FALSE(db(0).Exists("k", now));
  // A hash too, over a string.
  ASSERT_TRUE(db(0).Set("h", "old", SetOptions{}, now).ok());
  EXPECT_TRUE(Apply(PutHash(0, "h", {{"f", "v"}}, 1)));
  EXPECT_FALSE(db(0).Exists("h", now));
  // On a missing key: nothing is created.
  EXPECT_TRUE(Apply(PutStr(0, "never", "v", now - 100)));
  EXPECT_FALSE(db(0).Exists("never", now));
  // One ms in the future: there.
  EXPECT_TRUE(Apply(PutStr(0, "k", "new", now + 1)));
  EXPECT_EQ(db(0).Pttl("k", now), 1);
}

TEST_F(JournalApplyTest, PutOfAHash) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"f1", "v1"}, {"", "empty field"}, {"empty value", ""}, {Binary(), Binary()}};
  EXPECT_TRUE(Apply(PutHash(3, "h", fields, now + 60'000)));
  EXPECT_EQ(db(3).Type("h", now), ValueType::kHash);
  EXPECT_EQ(db(3).Pttl("h", now), 60'000);
  auto all = db(3).HGetAll("h", now);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), fields.size());
  for (size_t i = 0; i < fields.size(); i++) {
    EXPECT_EQ((*all)[i].first, fields[i].first);
    EXPECT_EQ((*all)[i].second, fields[i].second);
  }
  // A put of a hash replaces the old one whole (fields not in it are gone), and a string too.
  EXPECT_TRUE(Apply(PutHash(3, "h", {{"only", "this"}})));
  EXPECT_EQ(*db(3).HLen("h", now), 1);
  EXPECT_EQ(*db(3).HGet("h", "only", now), "this");
  EXPECT_EQ(db(3).Pttl("h", now), -1);
  EXPECT_TRUE(Apply(PutStr(3, "h", "now a string")));
  EXPECT_EQ(*db(3).Get("h", now), "now a string");
  EXPECT_TRUE(Apply(PutHash(3, "h", {{"back", "to a hash"}})));
  EXPECT_EQ(*db(3).HGet("h", "back", now), "to a hash");
  // A large hash (the table form).
  std::vector<std::pair<std::string, std::string>> many;
  for (int i = 0; i < 300; i++) many.emplace_back(Cat("f", i), Cat("v", i));
  EXPECT_TRUE(Apply(PutHash(3, "big", many)));
  EXPECT_EQ(*db(3).HLen("big", now), 300);
  EXPECT_EQ(*db(3).HGet("big", "f299", now), "v299");
}

TEST_F(JournalApplyTest, PutWithALockRecordRestoresTheHolding) {
  EXPECT_TRUE(Apply(PutStr(1, "lock:1", "alice", now + 30'000, 77, 3)));
  auto info = db(1).LockInfo("lock:1", now);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->held);
  EXPECT_EQ(info->owner, "alice");
  EXPECT_EQ(info->token, 77u);
  EXPECT_EQ(info->holds, 3);
  EXPECT_EQ(info->pttl_ms, 30'000);
  EXPECT_GE(db(1).last_fencing_token(), 77u);
  // Releasing with the restored token works, one hold at a time; a wrong token does not.
  EXPECT_EQ(*db(1).LockRelease("lock:1", "alice", now, 76), -1);
  EXPECT_EQ(*db(1).LockRelease("lock:1", "bob", now, 77), -1);
  EXPECT_EQ(*db(1).LockRelease("lock:1", "alice", now, 77), 2);
  EXPECT_EQ(*db(1).LockRelease("lock:1", "alice", now, 77), 1);
  // The owner re-entering keeps the restored token.
  auto again = db(1).LockAcquire("lock:1", "alice", 10'000, true, now);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->reentered);
  EXPECT_EQ(again->token, 77u);
  EXPECT_EQ(again->holds, 2);
  EXPECT_EQ(*db(1).LockRelease("lock:1", "alice", now, 77), 1);
  EXPECT_EQ(*db(1).LockRelease("lock:1", "alice", now, 77), 0);
  EXPECT_FALSE(db(1).Exists("lock:1", now));
  // New tokens come after the restored one, on any key.
  auto g = db(1).LockAcquire("lock:2", "carol", 10'000, false, now);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->acquired);
  EXPECT_GT(g->token, 77u);
  // Another db's counter is its own.
  EXPECT_EQ(db(0).last_fencing_token(), 0u);
}

TEST_F(JournalApplyTest, ALockRecordReplacesTheOneTheKeyHad) {
  auto g = db(0).LockAcquire("lock", "old-owner", 10'000, false, now);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(Apply(PutStr(0, "lock", "new-owner", now + 10'000, 50, 1)));
  auto info = db(0).LockInfo("lock", now);
  EXPECT_EQ(info->owner, "new-owner");
  EXPECT_EQ(info->token, 50u);
  EXPECT_EQ(info->holds, 1);
  // A put without a record leaves the key with none (a plain SET over the lock).
  EXPECT_TRUE(Apply(PutStr(0, "lock", "plain")));
  info = db(0).LockInfo("lock", now);
  EXPECT_EQ(info->token, 0u);
  EXPECT_EQ(info->holds, 1);
  EXPECT_EQ(db(0).LockRecords(), 0u);
  EXPECT_EQ(db(0).last_fencing_token(), 50u);  // never back
}

TEST_F(JournalApplyTest, AnExpiredLockPutStillAdvancesTheCounter) {
  EXPECT_TRUE(Apply(PutStr(0, "lock", "alice", now - 1, 90, 1)));
  EXPECT_FALSE(db(0).Exists("lock", now));
  EXPECT_EQ(db(0).LockRecords(), 0u);
  EXPECT_GE(db(0).last_fencing_token(), 90u);
  auto g = db(0).LockAcquire("lock", "bob", 1'000, false, now);
  ASSERT_TRUE(g.ok());
  EXPECT_GT(g->token, 90u);
}

TEST_F(JournalApplyTest, TokenAdvancesTheCounterAndNeverMovesItBack) {
  EXPECT_TRUE(Apply(TokenRec(4, 100)));
  EXPECT_EQ(db(4).last_fencing_token(), 100u);
  EXPECT_TRUE(Apply(TokenRec(4, 50)));
  EXPECT_EQ(db(4).last_fencing_token(), 100u);
  EXPECT_TRUE(Apply(TokenRec(4, 0)));
  EXPECT_EQ(db(4).last_fencing_token(), 100u);
  EXPECT_TRUE(Apply(TokenRec(4, 101)));
  EXPECT_EQ(db(4).last_fencing_token(), 101u);
  EXPECT_EQ(db(3).last_fencing_token(), 0u);
  EXPECT_EQ(db(5).last_fencing_token(), 0u);
  auto g = db(4).LockAcquire("k", "o", 1'000, false, now);
  EXPECT_EQ(g->token, 102u);
}

TEST_F(JournalApplyTest, FlushDbEmptiesOnlyThatDb) {
  for (int i : {0, 1, 2}) {
    ASSERT_TRUE(db(i).Set("a", "1", SetOptions{}, now).ok());
    ASSERT_TRUE(db(i).Set("b", "2", SetOptions{}, now).ok());
  }
  auto g = db(1).LockAcquire("lock", "o", 1'000, false, now);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(Apply(FlushRec(1)));
  EXPECT_EQ(db(1).Size(), 0u);
  EXPECT_EQ(db(1).LockRecords(), 0u);
  EXPECT_EQ(db(1).last_fencing_token(), g->token);  // a flush keeps the counter
  EXPECT_EQ(db(0).Size(), 2u);
  EXPECT_EQ(db(2).Size(), 2u);
  EXPECT_EQ(*db(0).Get("a", now), "1");
  EXPECT_EQ(*db(2).Get("b", now), "2");
}

TEST_F(JournalApplyTest, ADbOutOfRangeReturnsFalseAndChangesNothing) {
  Shard small{0, 2};
  ASSERT_TRUE(small.db(0).Set("k", "v", SetOptions{}, now).ok());
  ASSERT_TRUE(small.db(1).Set("k", "v", SetOptions{}, now).ok());
  auto g = small.db(1).LockAcquire("lock", "o", 1'000, false, now);
  ASSERT_TRUE(g.ok());
  for (uint32_t bad_db : {2u, 3u, 16u, 1'000u, UINT32_MAX}) {
    for (const Rec& r : {PutStr(bad_db, "k", "x", -1, 500, 1), PutHash(bad_db, "k", {{"f", "v"}}),
                         DelRec(bad_db, "k"), TokenRec(bad_db, 1'000), FlushRec(bad_db)}) {
      SCOPED_TRACE(Cat("db ", bad_db) + Cat(" kind ", static_cast<int>(r.kind)));
      JournalRecord rec;
      rec.kind = r.kind;
      rec.db = r.db;
      rec.key = r.key;
      rec.value = r.value;
      rec.token = r.token;
      EXPECT_FALSE(ApplyJournalRecord(rec, small, now));
      for (int i : {0, 1}) {
        EXPECT_EQ(*small.db(i).Get("k", now), "v");
      }
      EXPECT_EQ(small.db(0).Size(), 1u);
      EXPECT_EQ(small.db(1).Size(), 2u);
      EXPECT_EQ(small.db(0).last_fencing_token(), 0u);
      EXPECT_EQ(small.db(1).last_fencing_token(), g->token);
    }
  }
  // The last db is in range.
  JournalRecord ok;
  ok.kind = RecordKind::kToken;
  ok.db = 1;
  ok.token = 9;
  EXPECT_TRUE(ApplyJournalRecord(ok, small, now));
  EXPECT_EQ(small.db(1).last_fencing_token(), 9u);
}

TEST_F(JournalApplyTest, SnapshotsWrittenAndReplayedRebuildTheShard) {
  // A shard's keys written as puts (as a journal rewrite would) and replayed into a fresh shard.
  Shard src{0, 4};
  ASSERT_TRUE(src.db(0).Set("s", "value", SetOptions{}, now).ok());
  SetOptions px;
  px.expire = SetOptions::Expire::kAt;
  px.expire_at_ms = now + 9'000;
  ASSERT_TRUE(src.db(0).Set("ttl", Binary(), px, now).ok());
  ASSERT_TRUE(src.db(2).HSet("h", "f", "v", now).ok());
  ASSERT_TRUE(src.db(2).HSet("h", "", Binary(), now).ok());
  ASSERT_EQ(src.db(2).ExpireAt("h", now + 4'000, ExpireCond::kNone, now), 1);
  auto g1 = src.db(3).LockAcquire("lock", "alice", 20'000, true, now);
  auto g2 = src.db(3).LockAcquire("lock", "alice", 20'000, true, now);
  ASSERT_TRUE(g1.ok() && g2.ok());
  ASSERT_EQ(g2->holds, 2);

  std::string buf;
  JournalWriter w(&buf);
  w.BeginFrame();
  w.Header(JournalHeader{kJournalVersion, 0, 1, now});
  ASSERT_TRUE(w.EndFrame());
  for (int i = 0; i < src.num_dbs(); i++) {
    std::vector<std::string> keys;
    src.db(i).Keys("*", now, [&](std::string_view key) { keys.emplace_back(key); });
    w.BeginFrame();
    for (const std::string& key : keys) {
      auto snap = src.db(i).Snapshot(key, now);
      ASSERT_TRUE(snap.has_value());
      w.Put(static_cast<uint32_t>(i), key, *snap);
    }
    w.Token(static_cast<uint32_t>(i), src.db(i).last_fencing_token());
    ASSERT_TRUE(w.EndFrame());
  }

  Shard dst{0, 4};
  JournalScan scan = ScanJournal(buf, [&](const JournalRecord& r) {
    EXPECT_TRUE(ApplyJournalRecord(r, dst, now + 1'000));
    return true;
  });
  EXPECT_EQ(scan.status, Status::kOk);
  const int64_t later = now + 1'000;
  EXPECT_EQ(*dst.db(0).Get("s", later), "value");
  EXPECT_EQ(*dst.db(0).Get("ttl", later), Binary());
  EXPECT_EQ(dst.db(0).Pttl("ttl", later), 8'000);
  EXPECT_EQ(*dst.db(2).HGet("h", "", later), Binary());
  EXPECT_EQ(dst.db(2).Pttl("h", later), 3'000);
  auto info = dst.db(3).LockInfo("lock", later);
  EXPECT_EQ(info->owner, "alice");
  EXPECT_EQ(info->token, g1->token);
  EXPECT_EQ(info->holds, 2);
  EXPECT_EQ(dst.db(3).last_fencing_token(), src.db(3).last_fencing_token());
  for (int i = 0; i < 4; i++) EXPECT_EQ(dst.db(i).Size(), src.db(i).Size()) << "db " << i;
}

}  // namespace
}  // namespace deadbolt::shard

namespace deadbolt::shard {
namespace {

TEST(JournalFormatTxTest, TxRecordOpensItsFrame) {
  std::string buf;
  JournalWriter w(&buf);
  w.BeginFrame();
  w.Del(0, "before");
  ASSERT_TRUE(w.EndFrame());
  w.BeginFrame();
  w.Tx(TxTag{0x1234567890abcdefULL, 42, 1700000000123, {0, 2, 5}});
  w.Del(0, "a");
  w.Del(0, "b");
  ASSERT_TRUE(w.EndFrame());
  std::vector<JournalRecord> got;
  JournalScan scan = ScanJournal(buf, [&](const JournalRecord& r) {
    got.push_back(r);
    return true;
  });
  ASSERT_EQ(scan.status, JournalScan::Status::kOk);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_FALSE(got[1].tx.carried);
  EXPECT_TRUE(got[0].first_in_frame);
  EXPECT_EQ(got[1].kind, RecordKind::kTx);
  EXPECT_TRUE(got[1].first_in_frame);
  EXPECT_EQ(got[1].tx.nonce, 0x1234567890abcdefULL);
  EXPECT_EQ(got[1].tx.id, 42u);
  EXPECT_EQ(got[1].tx.commit_ns, 1700000000123);
  EXPECT_EQ(got[1].tx.participants, (std::vector<uint32_t>{0, 2, 5}));
  EXPECT_FALSE(got[2].first_in_frame);
  EXPECT_FALSE(got[3].first_in_frame);
  // Replaying a kTx record changes nothing.
  Shard shard(0, 1);
  EXPECT_TRUE(ApplyJournalRecord(got[1], shard, 0));
  EXPECT_EQ(shard.db(0).Size(), 0u);
}

}  // namespace
}  // namespace deadbolt::shard
