// Replaying journal records into a Shard (ApplyJournalRecord), and the kTx record.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shard/base/test_util.h"
#include "shard/db.h"
#include "shard/journal_format/journal_format.h"
#include "shard/journal_format/journal_test_util.h"
#include "shard/shard.h"

namespace deadbolt::shard {
namespace {

using namespace journal_test;  // NOLINT: test helpers

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

// A sorted set goes through the bytes whole, from a live key's View (what the journal writes
// at the end of a turn) and from a Snapshot: members, scores (inf, -inf, fractions), order and
// TTL; in both forms.
TEST_F(JournalApplyTest, PutOfASortedSet) {
  Db src;
  const std::pair<double, std::string_view> small[] = {
      {1.5, "a"}, {-INFINITY, "low"}, {INFINITY, "high"}, {0.1, std::string_view("\0b", 2)}};
  ASSERT_TRUE(src.ZAdd("z", ZAddOptions{}, small, now).ok());
  src.ExpireAt("z", now + 60'000, ExpireCond::kNone, now);
  std::vector<std::string> names;
  for (int i = 0; i < 300; i++) names.push_back(Cat("m", i));
  std::vector<std::pair<double, std::string_view>> many;
  for (int i = 0; i < 300; i++) many.emplace_back(i % 7 * 0.25, names[i]);
  ASSERT_TRUE(src.ZAdd("big", ZAddOptions{}, many, now).ok());
  for (std::string_view key : {"z", "big"}) {
    SCOPED_TRACE(std::string(key));
    KeyView view;
    ASSERT_TRUE(src.View(key, now, &view));
    EXPECT_EQ(view.type, ValueType::kZSet);
    std::optional<KeySnapshot> snap = src.Snapshot(key, now);
    ASSERT_TRUE(snap);
    for (int how = 0; how < 2; how++) {
      std::string buf;
      JournalWriter w(&buf);
      w.BeginFrame();
      if (how == 0) {
        w.Put(4, key, view);
      } else {
        w.Put(4, key, *snap);
      }
      ASSERT_TRUE(w.EndFrame());
      EXPECT_LE(buf.size() - kFrameHeaderSize, JournalPutSize(key, *snap));  // a bound
      db(4).Flush();
      JournalScan scan = ScanJournal(buf, [&](const JournalRecord& rec) {
        EXPECT_EQ(rec.value.type, ValueType::kZSet);
        EXPECT_TRUE(ApplyJournalRecord(rec, shard, now));
        return true;
      });
      ASSERT_EQ(scan.status, Status::kOk);
      EXPECT_EQ(db(4).Type(key, now), ValueType::kZSet);
      EXPECT_EQ(db(4).Pttl(key, now), src.Pttl(key, now));
      auto want = src.ZRange(key, ZRangeSpec{}, now);
      auto got = db(4).ZRange(key, ZRangeSpec{}, now);
      ASSERT_TRUE(want.ok() && got.ok());
      EXPECT_EQ(*got, *want);
    }
  }
}

// Lists and sets (issue 13) go through the bytes and come back whole, in order for a list.
TEST_F(JournalApplyTest, PutOfAListAndASet) {
  std::vector<std::string> items = {"a", "", Binary(), "a", std::string(300, 'x')};
  EXPECT_TRUE(Apply(PutMembers(1, "l", ValueType::kList, items, now + 60'000)));
  EXPECT_EQ(db(1).Type("l", now), ValueType::kList);
  EXPECT_EQ(db(1).Pttl("l", now), 60'000);
  auto got = db(1).ListRange("l", 0, -1, now);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::vector<std::string>(got->begin(), got->end()), items);
  EXPECT_TRUE(Apply(PutMembers(1, "s", ValueType::kSet, {"3", "1", "x", Binary()})));
  EXPECT_EQ(db(1).Type("s", now), ValueType::kSet);
  EXPECT_EQ(*db(1).SetCard("s", now), 4);
  EXPECT_TRUE(*db(1).SetIsMember("s", Binary(), now));
  // A put replaces the old value whole.
  EXPECT_TRUE(Apply(PutMembers(1, "l", ValueType::kList, {"only"})));
  EXPECT_EQ(*db(1).ListLen("l", now), 1);
  EXPECT_EQ(db(1).Pttl("l", now), -1);
}

// Lists, sets and sorted sets of UUIDs (kept packed as 16 bytes each, shard/types/
// packed_growth.h) written as the journal writes them, from a View and from a Snapshot, come
// back with the same text in both cases: the View's members outlive the scratch buffer the
// packed form rebuilds a UUID in, one View after another.
TEST_F(JournalApplyTest, UuidMembersRoundTripThroughViewsAndSnapshots) {
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    char buf[40];
    std::snprintf(buf, sizeof buf, i % 3 == 0 ? "%08X-ABCD-4EF0-9A1B-%012X" :
                  i % 3 == 1 ? "%08x-abcd-4ef0-9a1b-%012x" : "%08x-ABCD-4ef0-9a1b-%012x",
                  i * 2654435761u, i);
    ids.emplace_back(buf);
  }
  std::vector<std::string_view> views(ids.begin(), ids.end());
  std::vector<std::pair<double, std::string_view>> scored;
  for (size_t i = 0; i < ids.size(); ++i) scored.emplace_back(static_cast<double>(i % 4), ids[i]);
  Shard src{0, 1};
  Db& d = src.db(0);
  ASSERT_TRUE(d.ListPush("l", views, ListEnd::kRight, false, now).ok());
  ASSERT_TRUE(d.SetAdd("s", views, now).ok());
  ASSERT_TRUE(d.ZAdd("z", ZAddOptions{}, scored, now).ok());
  for (bool use_view : {true, false}) {
    std::string buf;
    JournalWriter w(&buf);
    w.BeginFrame();
    KeyView view;
    for (std::string_view key : {"l", "s", "z"}) {
      if (use_view) {
        ASSERT_TRUE(d.View(key, now, &view));
        w.Put(0, key, view);
      } else {
        w.Put(0, key, *d.Snapshot(key, now));
      }
    }
    ASSERT_TRUE(w.EndFrame());
    Shard dst{0, 1};
    JournalScan scan = ScanJournal(buf, [&](const JournalRecord& r) {
      EXPECT_TRUE(ApplyJournalRecord(r, dst, now));
      return true;
    });
    EXPECT_EQ(scan.status, Status::kOk);
    EXPECT_EQ(*dst.db(0).ListRange("l", 0, -1, now), ids) << use_view;
    auto members = *dst.db(0).SetMembers("s", now);
    std::sort(members.begin(), members.end());
    std::vector<std::string> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(members, sorted) << use_view;
    EXPECT_EQ(*dst.db(0).ZRange("z", ZRangeSpec{}, now), *d.ZRange("z", ZRangeSpec{}, now));
    EXPECT_EQ(dst.db(0).ZRange("z", ZRangeSpec{}, now)->size(), ids.size());
  }
}

// Integer sets, one small enough to live inline in its Entry and one in a block, with TTLs,
// written from a View and from a Snapshot, replay to the same members, TTL and form.
TEST_F(JournalApplyTest, IntsetsInlineAndNotRoundTrip) {
  Shard src{0, 1};
  Db& d = src.db(0);
  std::vector<std::string> small = {"-7", "0", "42", "100000", "9999999999"};
  std::vector<std::string> big;
  for (int i = 0; i < 300; ++i) big.push_back(std::to_string(i * 11));
  std::vector<std::string_view> sv(small.begin(), small.end()), bv(big.begin(), big.end());
  ASSERT_EQ(*d.SetAdd("small", sv, now), 5);
  ASSERT_EQ(*d.SetAdd("big", bv, now), 300);
  ASSERT_EQ(d.ExpireAt("small", now + 60'000, ExpireCond::kNone, now), 1);
  ASSERT_EQ(d.ExpireAt("big", now + 70'000, ExpireCond::kNone, now), 1);
  for (bool use_view : {true, false}) {
    std::string buf;
    JournalWriter w(&buf);
    w.BeginFrame();
    KeyView view;
    for (std::string_view key : {"small", "big"}) {
      if (use_view) {
        ASSERT_TRUE(d.View(key, now, &view));
        w.Put(0, key, view);
      } else {
        w.Put(0, key, *d.Snapshot(key, now));
      }
    }
    ASSERT_TRUE(w.EndFrame());
    Shard dst{0, 1};
    JournalScan scan = ScanJournal(buf, [&](const JournalRecord& r) {
      EXPECT_TRUE(ApplyJournalRecord(r, dst, now));
      return true;
    });
    EXPECT_EQ(scan.status, Status::kOk);
    for (std::string_view key : {"small", "big"}) {
      EXPECT_EQ(*dst.db(0).SetMembers(key, now), *d.SetMembers(key, now)) << key << use_view;
      EXPECT_EQ(dst.db(0).Pttl(key, now), d.Pttl(key, now)) << key;
      EXPECT_STREQ(dst.db(0).Object(key, now)->encoding, "intset");
      EXPECT_EQ(dst.db(0).Object(key, now)->bytes, d.Object(key, now)->bytes) << key;
    }
    EXPECT_EQ(*dst.db(0).SetMembers("small", now), small);
  }
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
