// The journal's bytes (journal_format.h): every record kind written and read back, frames cut at
// every byte (torn tail), zero padding, corruption of single bytes and bits (damage, also in the
// last whole frame: only a frame cut short by the end of the file is a torn tail),
// frames whose checksum holds around records that do not parse, stopping early. Replay into a
// Shard is in journal_apply_test.cc.

#include "shard/journal_format/journal_format.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shard/base/test_util.h"
#include "shard/db.h"
#include "shard/journal_format/journal_test_util.h"
#include "shard/shard.h"

namespace deadbolt::shard {
namespace {

using namespace journal_test;  // NOLINT: test helpers

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
      PutStr(0, "plain", "value"),                                // no TTL, no lock
      PutStr(1, "ttl", "value", 1'700'000'005'000),               // TTL, no lock
      PutStr(2, "lock:1", "uuid-1", 1'700'000'030'000, 42, 1),    // TTL and lock
      PutStr(15, "lock:2", "uuid-2", -1, UINT64_MAX, INT64_MAX),  // extreme lock record
      PutStr(300, "", ""),                                        // empty key and value
      PutStr(UINT32_MAX, Binary(), Binary()),                     // binary key and value
      PutStr(0, long_key, big, INT64_MAX),
      PutHash(0, "h", {{"f1", "v1"}, {"f2", ""}, {"", "v3"}, {"", ""}, {Binary(), Binary()}}),
      PutHash(5, "h2", {{"only", "one"}}, 1'700'000'000'001),
      PutHash(6, "h3", {{long_key, big}}),
      PutMembers(2, "l", ValueType::kList, {"b", "a", "", Binary(), "a"}, 1'700'000'000'002),
      PutMembers(2, "s", ValueType::kSet, {"1", "x", Binary()}),
      DelRec(0, "plain"),
      DelRec(128, Binary()),
      DelRec(1, ""),
      TokenRec(0, 1),
      TokenRec(127, 0),
      TokenRec(UINT32_MAX, UINT64_MAX),
      FlushRec(0),
      FlushRec(16383),
      FlushRec(UINT32_MAX),
      EditRec(0, "l", KeyEdit::Op::kListPush, {"a", "", Binary()}, ListEnd::kLeft),
      EditRec(3, "l", KeyEdit::Op::kListPop, {}, ListEnd::kRight, 7),
      EditRec(3, long_key, KeyEdit::Op::kListTrim, {}, ListEnd::kRight, 2, UINT64_MAX),
      EditRec(UINT32_MAX, "h", KeyEdit::Op::kHashSet, {"f", big, "", ""}),
      EditRec(1, Binary(), KeyEdit::Op::kHashDel, {"f"}),
      EditRec(1, "s", KeyEdit::Op::kSetAdd, {"1", "x"}),
      EditRec(1, "s", KeyEdit::Op::kSetRem, {}),
      EditRec(2, "z", KeyEdit::Op::kZSetSet, {"a", "", Binary()}, ListEnd::kRight, 0, 0,
              {1.5, -INFINITY, 1e300}),
      EditRec(2, "z", KeyEdit::Op::kZSetRem, {"a", Binary()}),
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

// A Typical() file whose last frame is long enough to cross several sector boundaries
// (kZeroFillAlign).
Built WithLongLastFrame() {
  return Build({
      {HeaderRec(2, 4, 1'700'000'000'000)},
      {PutStr(0, "lock:1", "owner-a", 1'700'000'030'000, 5, 1), TokenRec(0, 5)},
      {PutStr(0, "long", std::string(3 * kZeroFillAlign, 'v'), -1, 6, 1), TokenRec(0, 6)},
  });
}

// A crash can leave the end of the last frame as zeros while the file size already covers it
// (the size reached the disk before the data): whole sectors that read as zeros, from a sector
// boundary to the end of the file, possibly past the frame (a pre-extended file). A torn tail.
TEST(JournalScanTest, ALastFrameZeroFilledFromASectorBoundaryIsATornTail) {
  Built b = WithLongLastFrame();
  const size_t last = b.starts.back();
  const size_t end = b.bytes.size();
  ASSERT_GT(end - last, 2 * kZeroFillAlign);
  int cases = 0;
  for (size_t z = last + 1; z < end; z++) {
    if (z % kZeroFillAlign != 0) continue;
    for (size_t extra : {size_t{0}, size_t{4096}}) {
      SCOPED_TRACE(Cat("zeros from ", static_cast<int64_t>(z)) +
                   Cat(" extra zeros ", static_cast<int64_t>(extra)));
      std::string bytes = b.bytes.substr(0, z) + std::string(end - z + extra, '\0');
      Scanned s = Scan(bytes);
      EXPECT_EQ(s.scan.status, Status::kTornTail) << s.scan.error;
      EXPECT_EQ(s.scan.good_bytes, last);
      EXPECT_EQ(s.scan.bad_offset, last);
      ExpectSameList(b.Before(b.frames.size() - 1), s.recs, "zero-filled");
      cases++;
    }
  }
  EXPECT_GE(cases, 4);
}

// Zeros at the end of the last frame that start after its last sector boundary are the frame's
// own bytes (a token's high bytes are zeros): with a failing checksum, that frame was changed.
TEST(JournalScanTest, ALastFrameWithZerosNotFromASectorBoundaryIsDamage) {
  Built b = WithLongLastFrame();
  const size_t last = b.starts.back();
  const size_t end = b.bytes.size();
  const size_t boundary = (end - 1) / kZeroFillAlign * kZeroFillAlign;  // the last one inside
  ASSERT_GT(boundary, last);
  for (size_t z = boundary + 1; z < end; z++) {
    SCOPED_TRACE(Cat("zeros from ", static_cast<int64_t>(z)));
    std::string bytes = b.bytes.substr(0, z) + std::string(end - z, '\0');
    size_t zeros_from = bytes.size();
    while (zeros_from > 0 && bytes[zeros_from - 1] == 0) zeros_from--;
    if (bytes == b.bytes || zeros_from <= boundary) continue;  // zeros were there already
    Scanned s = Scan(bytes);
    EXPECT_EQ(s.scan.status, Status::kDamaged) << s.scan.error;
    EXPECT_EQ(s.scan.bad_offset, last);
    ExpectSameList(b.Before(b.frames.size() - 1), s.recs, "zeros inside the last sector");
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

// The last frame is whole (its length fits in the file) but its checksum fails: its bytes
// changed after they were written (a bit flip in an fsynced, acknowledged write). Damage, not a
// cut: only a frame cut short by the end of the file is a torn tail.
TEST(JournalScanTest, AFlippedByteInTheLastWholeFrameIsDamage) {
  for (bool lock_frame : {false, true}) {
    SCOPED_TRACE(lock_frame ? "last frame: a lock and its token" : "last frame: a DEL");
    // A lock frame ends in a token's high bytes, zeros.
    Built b = lock_frame ? Build({
                               {HeaderRec(0, 1, 1'700'000'000'000)},
                               {PutStr(0, "k", "v")},
                               {PutStr(0, "lock:1", "owner-a", -1, 1, 1), TokenRec(0, 1)},
                           })
                         : Typical();
    const size_t n = b.frames.size();
    const size_t last = b.starts[n - 1];
    const std::vector<Rec> earlier = b.Before(n - 1);
    // The checksum field (bytes 8..11 of the header) and every payload byte.
    for (size_t i = last + 8; i < b.bytes.size(); i++) {
      for (int bit = 0; bit < 8; bit++) {
        SCOPED_TRACE(Cat("byte ", static_cast<int64_t>(i)) + Cat(" bit ", bit));
        std::string bytes = b.bytes;
        bytes[i] = static_cast<char>(bytes[i] ^ (1 << bit));
        Scanned s = Scan(bytes);
        ASSERT_EQ(s.scan.status, Status::kDamaged) << s.scan.error;
        ASSERT_EQ(s.scan.bad_offset, last);
        ASSERT_EQ(s.scan.good_bytes, last);
        ASSERT_EQ(s.scan.frames, n - 1);
        ExpectSameList(earlier, s.recs, "last frame");
      }
    }
  }
  Built b = Typical();
  const size_t n = b.frames.size();
  const size_t last = b.starts[n - 1];
  const std::vector<Rec> earlier = b.Before(n - 1);
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
      {"put of type 9",
       std::string("\x02\x00\x01k\x09", 5) + std::string(17, '\0') + std::string("\x00", 1)},
      {"put zset score not 8 bytes", std::string("\x02\x00\x01k\x03", 5) + std::string(17, '\0') +
                                         std::string("\x01\x01"
                                                     "a\x01"
                                                     "b",
                                                     5)},
      {"put of type 0",
       std::string("\x02\x00\x01k\x00", 5) + std::string(17, '\0') + std::string("\x00", 1)},
      {"put string cut",
       std::string("\x02\x00\x01k\x01", 5) + std::string(17, '\0') + std::string("\x05xy", 3)},
      {"put hash count past the end", std::string("\x02\x00\x01k\x02", 5) + std::string(17, '\0') +
                                          std::string("\x02\x01"
                                                      "a\x01"
                                                      "b",
                                                      5)},
      {"del key past the end", std::string("\x03\x00\x09k", 4)},
      {"del without key", std::string("\x03\x00", 2)},
      {"db above u32", std::string("\x05\xff\xff\xff\xff\x7f", 6)},
      {"varint of eleven bytes",
       std::string("\x05", 1) + std::string(10, '\x80') + std::string("\x00", 1)},
      {"token cut", std::string("\x04\x00\x01\x02\x03", 5)},
      {"flushdb without db", std::string("\x05", 1)},
      {"a good record then garbage", del_ok + std::string("\x09", 1)},
      {"a good record then a cut one", del_ok + std::string("\x03\x00\x05"
                                                            "ab",
                                                            5)},
      {"edit of op 0", std::string("\x09\x00\x01k\x00\x01\x00\x00\x00", 9)},
      {"edit of end 2", std::string("\x09\x00\x01k\x01\x02\x00\x00\x00", 9)},
      {"edit hash set of an odd count", std::string("\x09\x00\x01k\x04\x01\x00\x00\x01\x01"
                                                    "f",
                                                    11)},
      {"edit count past the end", std::string("\x09\x00\x01k\x06\x01\x00\x00\x05\x01"
                                              "m",
                                              11)},
      {"edit item cut", std::string("\x09\x00\x01k\x06\x01\x00\x00\x01\x05"
                                    "m",
                                    11)},
      {"edit without its fields", std::string("\x09\x00\x01k\x06", 5)},
      {"edit of op 10", std::string("\x09\x00\x01k\x0a\x01\x00\x00\x00", 9)},
      {"zset edit without its scores", std::string("\x09\x00\x01k\x08\x01\x00\x00\x01\x01"
                                                   "m",
                                                   11)},
      {"zset edit of a NaN score", std::string("\x09\x00\x01k\x08\x01\x00\x00\x01\x01"
                                               "m",
                                               11) +
                                       std::string("\x00\x00\x00\x00\x00\x00\xf8\x7f", 8)},
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

// --- data set, base end, manifest ---

TEST(JournalFormatTest, DataSetAndBaseEndRoundTrip) {
  std::string buf;
  JournalWriter w(&buf);
  w.BeginFrame();
  w.Header(JournalHeader{});
  w.DataSet(0x9f0c3a5e61d2b7a4ull);
  ASSERT_TRUE(w.EndFrame());
  w.BeginFrame();
  w.BaseEnd();
  ASSERT_TRUE(w.EndFrame());
  std::vector<JournalRecord> got;
  JournalScan scan = ScanJournal(buf, [&](const JournalRecord& r) {
    got.push_back(r);
    return true;
  });
  EXPECT_EQ(scan.status, Status::kOk);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].kind, RecordKind::kDataSet);
  EXPECT_EQ(got[1].set_id, 0x9f0c3a5e61d2b7a4ull);
  EXPECT_EQ(got[2].kind, RecordKind::kBaseEnd);
  EXPECT_TRUE(got[2].first_in_frame);
  Shard shard(0, 1);
  EXPECT_TRUE(ApplyJournalRecord(got[1], shard, 0));  // no change to the keyspace
  EXPECT_TRUE(ApplyJournalRecord(got[2], shard, 0));
}

TEST(JournalManifestTest, RoundTripAndEveryChangeIsRefused) {
  JournalManifest m;
  m.set_id = 0x0123456789abcdefull;
  m.num_shards = 2;
  m.files = {"deadbolt-journal-0-of-2.aof", "deadbolt-journal-1-of-2.aof"};
  const std::string text = FormatJournalManifest(m);
  std::string why;
  auto back = ParseJournalManifest(text, &why);
  ASSERT_TRUE(back.has_value()) << why;
  EXPECT_EQ(back->set_id, m.set_id);
  EXPECT_EQ(back->num_shards, 2u);
  EXPECT_EQ(back->files, m.files);
  // Cut anywhere, or any byte changed: refused, with a reason.
  for (size_t cut = 0; cut < text.size(); cut++) {
    SCOPED_TRACE(Cat("cut at ", static_cast<int64_t>(cut)));
    why.clear();
    EXPECT_FALSE(ParseJournalManifest(text.substr(0, cut), &why).has_value());
    EXPECT_FALSE(why.empty());
  }
  for (size_t i = 0; i < text.size(); i++) {
    SCOPED_TRACE(Cat("byte ", static_cast<int64_t>(i)));
    std::string bad = text;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    EXPECT_FALSE(ParseJournalManifest(bad, &why).has_value());
  }
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

}  // namespace
}  // namespace deadbolt::shard
