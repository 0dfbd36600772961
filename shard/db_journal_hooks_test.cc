// The Db hooks a journal relies on: KeyObserver::OnKeyExpired (expiry told apart from commands),
// OnFlush (a flush taken as a whole), the notice of a reentrant lock's release, and the lock
// record carried by KeySnapshot (Snapshot, Restore with_lock_record, LockRecordOf,
// SetLockRecord).

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "shard/base/test_util.h"
#include "shard/db.h"

namespace deadbolt::shard {
namespace {

// Records what it is told, in order: "c:key" for OnKeyChanged, "x:key" for OnKeyExpired.
class Recorder : public KeyObserver {
 public:
  explicit Recorder(bool take_flush_per_key = true) : per_key_(take_flush_per_key) {}
  void OnKeyChanged(std::string_view key) override { events.push_back("c:" + std::string(key)); }
  void OnKeyExpired(std::string_view key) override { events.push_back("x:" + std::string(key)); }
  bool OnFlush() override {
    flushes++;
    return per_key_;
  }
  size_t Count(std::string_view prefix) const {
    size_t n = 0;
    for (const auto& e : events) n += e.starts_with(prefix) ? 1 : 0;
    return n;
  }
  std::vector<std::string> events;
  int flushes = 0;

 private:
  bool per_key_;
};

// Overrides only OnKeyChanged: expiry and flush take the defaults.
class PlainObserver : public KeyObserver {
 public:
  void OnKeyChanged(std::string_view key) override { events.push_back(std::string(key)); }
  std::vector<std::string> events;
};

using Events = std::vector<std::string>;

class DbJournalHooksTest : public ::testing::Test {
 protected:
  void SetUp() override { db.AddObserver(&rec); }
  void TearDown() override { db.RemoveObserver(&rec); }

  void SetPx(std::string_view key, std::string_view value, int64_t ms) {
    SetOptions o;
    o.expire = SetOptions::Expire::kAt;
    o.expire_at_ms = now + ms;
    ASSERT_TRUE(db.Set(key, value, o, now).ok());
  }
  void SetPlain(std::string_view key, std::string_view value) {
    ASSERT_TRUE(db.Set(key, value, SetOptions{}, now).ok());
  }

  Db db;
  Recorder rec;
  int64_t now = 1'700'000'000'000;
};

// --- expiry vs change ---

TEST_F(DbJournalHooksTest, LazyExpiryIsReportedAsExpired) {
  SetPx("k", "v", 100);
  EXPECT_EQ(rec.events, (Events{"c:k"}));  // the SET itself is a change
  rec.events.clear();
  now += 101;
  EXPECT_FALSE(db.Get("k", now).ok());
  EXPECT_EQ(rec.events, (Events{"x:k"}));
  // Through other operations that meet the expired key, too.
  struct Op {
    const char* name;
    std::function<void()> fn;
  };
  const std::vector<Op> ops = {
      {"exists", [&] { db.Exists("k", now); }},
      {"type", [&] { db.Type("k", now); }},
      {"pttl", [&] { db.Pttl("k", now); }},
      {"del", [&] { EXPECT_FALSE(db.Del("k", now)); }},
      {"expireat", [&] { EXPECT_EQ(db.ExpireAt("k", now + 1'000, ExpireCond::kNone, now), 0); }},
      {"lockinfo", [&] { EXPECT_FALSE(db.LockInfo("k", now)->held); }},
      {"snapshot", [&] { EXPECT_FALSE(db.Snapshot("k", now).has_value()); }},
  };
  for (const Op& op : ops) {
    SCOPED_TRACE(op.name);
    SetPx("k", "v", 100);
    rec.events.clear();
    now += 101;
    op.fn();
    EXPECT_EQ(rec.events, (Events{"x:k"}));
  }
  // A write over an expired key: the expiry, then the write (a new key).
  SetPx("k", "v", 100);
  rec.events.clear();
  now += 101;
  SetPlain("k", "w");
  EXPECT_EQ(rec.events, (Events{"x:k", "c:k"}));
}

TEST_F(DbJournalHooksTest, ActiveExpiryIsReportedAsExpired) {
  for (int i = 0; i < 200; i++) SetPx(Cat("k", i), "v", 100 + (i % 2) * 1'000'000);
  SetPlain("forever", "v");
  rec.events.clear();
  now += 101;
  size_t removed = 0;
  for (int call = 0; call < 1'000 && removed < 100; call++) removed += db.ActiveExpire(now, 16);
  EXPECT_EQ(removed, 100u);
  EXPECT_EQ(rec.events.size(), 100u);
  EXPECT_EQ(rec.Count("x:"), 100u);
  EXPECT_EQ(rec.Count("c:"), 0u);
  for (const auto& e : rec.events) {
    // Only the even keys had the short TTL.
    const int n = std::stoi(e.substr(3));
    EXPECT_EQ(n % 2, 0) << e;
  }
  EXPECT_EQ(db.Size(), 101u);
}

TEST_F(DbJournalHooksTest, ScanRemovingExpiredKeysReportsExpired) {
  for (int i = 0; i < 20; i++) SetPx(Cat("k", i), "v", 10);
  rec.events.clear();
  now += 11;
  uint64_t cursor = 0;
  do {
    cursor = db.Scan(cursor, "*", 100, ValueType::kNone, now).cursor;
  } while (cursor != 0);
  EXPECT_EQ(rec.Count("x:"), 20u);
  EXPECT_EQ(rec.Count("c:"), 0u);
}

TEST_F(DbJournalHooksTest, CommandsThatDeleteAreChangesNotExpiries) {
  // DEL
  SetPx("k", "v", 10'000);
  rec.events.clear();
  EXPECT_TRUE(db.Del("k", now));
  EXPECT_EQ(rec.events, (Events{"c:k"}));
  // EXPIRE with a time in the past (or now) deletes the key: a command's change, which the
  // journal must record (it ignores expiries).
  for (int64_t at : {now - 1'000, now - 1, now, int64_t{0}}) {
    SCOPED_TRACE(Cat("at ", at));
    SetPx("k", "v", 10'000);
    rec.events.clear();
    EXPECT_EQ(db.ExpireAt("k", at, ExpireCond::kNone, now), 1);
    EXPECT_FALSE(db.Exists("k", now));
    EXPECT_EQ(rec.events, (Events{"c:k"}));
  }
  // The same on a key without TTL, and on a hash.
  SetPlain("k", "v");
  ASSERT_TRUE(db.HSet("h", "f", "v", now).ok());
  rec.events.clear();
  EXPECT_EQ(db.ExpireAt("k", now - 1, ExpireCond::kNone, now), 1);
  EXPECT_EQ(db.ExpireAt("h", now - 1, ExpireCond::kNone, now), 1);
  EXPECT_EQ(rec.events, (Events{"c:k", "c:h"}));
  // SET with a past PXAT over an existing key, GETEX with a past time, GETDEL.
  SetPlain("k", "v");
  rec.events.clear();
  SetOptions past;
  past.expire = SetOptions::Expire::kAt;
  past.expire_at_ms = now - 1;
  EXPECT_TRUE(db.Set("k", "w", past, now)->written);
  EXPECT_FALSE(db.Exists("k", now));
  EXPECT_EQ(rec.events, (Events{"c:k"}));
  SetPlain("k", "v");
  rec.events.clear();
  EXPECT_EQ(*db.GetEx("k", ExpireChange{ExpireChange::Kind::kAt, now - 1}, now), "v");
  EXPECT_EQ(rec.events, (Events{"c:k"}));
  SetPlain("k", "v");
  rec.events.clear();
  EXPECT_EQ(*db.GetDel("k", now), "v");
  EXPECT_EQ(rec.events, (Events{"c:k"}));
  // EXPIRE with a future time is a change too (the key's TTL is part of its state).
  SetPlain("k", "v");
  rec.events.clear();
  EXPECT_EQ(db.ExpireAt("k", now + 5'000, ExpireCond::kNone, now), 1);
  EXPECT_EQ(rec.events, (Events{"c:k"}));
}

TEST_F(DbJournalHooksTest, AnObserverWithoutOnKeyExpiredHearsExpiryAsAChange) {
  PlainObserver plain;
  db.AddObserver(&plain);
  SetPx("a", "v", 10);
  SetPx("b", "v", 10);
  now += 11;
  EXPECT_FALSE(db.Exists("a", now));
  EXPECT_EQ(db.ActiveExpire(now, 100), 1u);
  EXPECT_EQ(plain.events, (Events{"a", "b", "a", "b"}));
  // And a flush key by key.
  SetPlain("c", "v");
  plain.events.clear();
  db.Flush();
  EXPECT_EQ(plain.events, (Events{"c"}));
  db.RemoveObserver(&plain);
}

// --- FLUSHDB ---

TEST_F(DbJournalHooksTest, FlushTellsEachObserverTheWayItAsked) {
  Recorder whole(/*take_flush_per_key=*/false);
  Recorder per_key;  // the default: true
  PlainObserver plain;
  db.AddObserver(&whole);
  db.AddObserver(&per_key);
  db.AddObserver(&plain);
  SetPlain("a", "1");
  SetPx("b", "2", 10'000);
  ASSERT_TRUE(db.HSet("h", "f", "v", now).ok());
  ASSERT_TRUE(db.LockAcquire("lock", "o", 10'000, false, now).ok());
  whole.events.clear();
  per_key.events.clear();
  plain.events.clear();
  rec.events.clear();

  db.Flush();
  EXPECT_EQ(whole.flushes, 1);
  EXPECT_TRUE(whole.events.empty());
  EXPECT_EQ(per_key.flushes, 1);
  EXPECT_EQ(per_key.events.size(), 4u);
  EXPECT_EQ(per_key.Count("c:"), 4u);  // deletions, not expiries
  EXPECT_EQ(plain.events.size(), 4u);
  EXPECT_EQ(rec.flushes, 1);
  EXPECT_EQ(rec.events.size(), 4u);
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.ExpiresSize(), 0u);
  EXPECT_EQ(db.LockRecords(), 0u);

  // Every observer is still registered afterwards, in its place.
  SetPlain("after", "v");
  EXPECT_EQ(whole.events, (Events{"c:after"}));
  EXPECT_EQ(per_key.events.back(), "c:after");
  EXPECT_EQ(plain.events.back(), "after");
  EXPECT_EQ(rec.events.back(), "c:after");
  db.RemoveObserver(&whole);
  db.RemoveObserver(&per_key);
  db.RemoveObserver(&plain);
}

TEST_F(DbJournalHooksTest, AFlushEveryObserverTakesWholeStillDropsLockRecords) {
  Recorder whole(false);
  db.RemoveObserver(&rec);
  db.AddObserver(&whole);
  auto g = db.LockAcquire("lock", "o", 10'000, false, now);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(db.LockRecords(), 1u);
  whole.events.clear();
  db.Flush();
  EXPECT_TRUE(whole.events.empty());
  EXPECT_EQ(whole.flushes, 1);
  EXPECT_EQ(db.LockRecords(), 0u);
  // The key comes back as a plain SET: no stale record is attached to it.
  SetPlain("lock", "o");
  auto info = db.LockInfo("lock", now);
  EXPECT_EQ(info->token, 0u);
  EXPECT_EQ(info->holds, 1);
  // A flush of an empty db still asks.
  db.Flush();
  db.Flush();
  EXPECT_EQ(whole.flushes, 3);
  db.RemoveObserver(&whole);
  db.AddObserver(&rec);
}

// --- reentrant release ---

TEST_F(DbJournalHooksTest, ReleasingOneOfSeveralHoldsIsAChangeAndKeepsTheRecord) {
  auto g1 = db.LockAcquire("lock", "alice", 10'000, true, now);
  auto g2 = db.LockAcquire("lock", "alice", 10'000, true, now);
  ASSERT_TRUE(g1.ok() && g2.ok());
  ASSERT_EQ(g2->holds, 2);
  rec.events.clear();

  EXPECT_EQ(*db.LockRelease("lock", "alice", now), 1);
  EXPECT_EQ(rec.events, (Events{"c:lock"}));
  auto info = db.LockInfo("lock", now);
  EXPECT_TRUE(info->held);
  EXPECT_EQ(info->token, g1->token);
  EXPECT_EQ(info->holds, 1);
  uint64_t token = 0;
  int64_t holds = 0;
  ASSERT_TRUE(db.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(token, g1->token);
  EXPECT_EQ(holds, 1);
  auto snap = db.Snapshot("lock", now);
  ASSERT_TRUE(snap.has_value());
  EXPECT_EQ(snap->lock_token, g1->token);
  EXPECT_EQ(snap->lock_holds, 1);

  // Failed releases tell nobody.
  rec.events.clear();
  EXPECT_EQ(*db.LockRelease("lock", "bob", now), -1);
  EXPECT_EQ(*db.LockRelease("lock", "alice", now, g1->token + 1), -1);
  EXPECT_EQ(*db.LockRelease("missing", "alice", now), -1);
  EXPECT_TRUE(rec.events.empty());

  // The last hold deletes the key: a change, and the record goes.
  EXPECT_EQ(*db.LockRelease("lock", "alice", now, g1->token), 0);
  EXPECT_EQ(rec.events, (Events{"c:lock"}));
  EXPECT_FALSE(db.Exists("lock", now));
  EXPECT_FALSE(db.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(db.LockRecords(), 0u);
}

TEST_F(DbJournalHooksTest, ReentrantAcquireIsAChange) {
  ASSERT_TRUE(db.LockAcquire("lock", "alice", 10'000, true, now).ok());
  rec.events.clear();
  now += 1'000;
  auto g = db.LockAcquire("lock", "alice", 10'000, true, now);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->holds, 2);
  EXPECT_GE(rec.Count("c:lock"), 1u);
  EXPECT_EQ(rec.Count("x:"), 0u);
}

// --- the lock record in snapshots ---

TEST_F(DbJournalHooksTest, SnapshotCarriesTheLockRecord) {
  auto g = db.LockAcquire("lock", "alice", 10'000, true, now);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(db.LockAcquire("lock", "alice", 10'000, true, now).ok());
  auto snap = db.Snapshot("lock", now);
  ASSERT_TRUE(snap.has_value());
  EXPECT_EQ(snap->type, ValueType::kString);
  EXPECT_EQ(snap->str, "alice");
  EXPECT_EQ(snap->expire_at_ms, now + 10'000);
  EXPECT_EQ(snap->lock_token, g->token);
  EXPECT_EQ(snap->lock_holds, 2);
  // A key taken by a plain SET has no record; nor a hash.
  SetPx("setnx", "bob", 10'000);
  snap = db.Snapshot("setnx", now);
  ASSERT_TRUE(snap.has_value());
  EXPECT_EQ(snap->lock_token, 0u);
  EXPECT_EQ(snap->lock_holds, 0);
  ASSERT_TRUE(db.HSet("h", "f", "v", now).ok());
  snap = db.Snapshot("h", now);
  ASSERT_TRUE(snap.has_value());
  EXPECT_EQ(snap->lock_token, 0u);
  EXPECT_EQ(snap->lock_holds, 0);
  // Once the key holds another value, the record is gone from its snapshot.
  SetPlain("lock", "mallory");
  snap = db.Snapshot("lock", now);
  EXPECT_EQ(snap->lock_token, 0u);
  EXPECT_EQ(snap->lock_holds, 0);
  // A same-value write keeps it.
  auto g2 = db.LockAcquire("lock2", "carol", 10'000, false, now);
  SetOptions keep;
  keep.expire = SetOptions::Expire::kKeep;
  ASSERT_TRUE(db.Set("lock2", "carol", keep, now).ok());
  snap = db.Snapshot("lock2", now);
  EXPECT_EQ(snap->lock_token, g2->token);
  EXPECT_EQ(snap->lock_holds, 1);
}

TEST_F(DbJournalHooksTest, RestoreKeepsTheLockRecordOnlyWhenAsked) {
  auto g = db.LockAcquire("lock", "alice", 10'000, true, now);
  ASSERT_TRUE(db.LockAcquire("lock", "alice", 10'000, true, now).ok());
  auto snap = db.Snapshot("lock", now);
  ASSERT_TRUE(snap.has_value());
  ASSERT_EQ(snap->lock_holds, 2);

  // Into another Db (RENAME / COPY / MOVE across shards): no record.
  Db plain;
  EXPECT_TRUE(plain.Restore("lock", *snap, false, now));
  EXPECT_EQ(*plain.Get("lock", now), "alice");
  EXPECT_EQ(plain.Pttl("lock", now), 10'000);
  uint64_t token = 0;
  int64_t holds = 0;
  EXPECT_FALSE(plain.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(plain.LockRecords(), 0u);
  auto info = plain.LockInfo("lock", now);
  EXPECT_EQ(info->token, 0u);
  EXPECT_EQ(info->holds, 1);
  EXPECT_EQ(plain.last_fencing_token(), 0u);
  // The same explicitly, and into the same Db under another name.
  EXPECT_TRUE(db.Restore("copy", *snap, false, now, /*with_lock_record=*/false));
  EXPECT_FALSE(db.LockRecordOf("copy", &token, &holds));
  EXPECT_EQ(db.LockRecords(), 1u);

  // With the record (a journal replay).
  Db replay;
  EXPECT_TRUE(replay.Restore("lock", *snap, false, now, /*with_lock_record=*/true));
  ASSERT_TRUE(replay.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(token, g->token);
  EXPECT_EQ(holds, 2);
  info = replay.LockInfo("lock", now);
  EXPECT_EQ(info->owner, "alice");
  EXPECT_EQ(info->token, g->token);
  EXPECT_EQ(info->holds, 2);
  EXPECT_GE(replay.last_fencing_token(), g->token);
  // The restored record behaves as the original: release with its token, one hold at a time.
  EXPECT_EQ(*replay.LockRelease("lock", "alice", now, g->token), 1);
  EXPECT_EQ(*replay.LockRelease("lock", "alice", now, g->token), 0);
  EXPECT_FALSE(replay.Exists("lock", now));
  auto next = replay.LockAcquire("other", "bob", 1'000, false, now);
  EXPECT_GT(next->token, g->token);

  // With replace, over a key that had another record: the snapshot's record wins.
  Db over;
  auto mine = over.LockAcquire("lock", "zed", 10'000, false, now);
  ASSERT_TRUE(mine.ok());
  EXPECT_TRUE(over.Restore("lock", *snap, true, now, true));
  ASSERT_TRUE(over.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(token, g->token);
  EXPECT_EQ(holds, 2);
  EXPECT_EQ(*over.Get("lock", now), "alice");
  // Without replace over an existing key: nothing happens.
  Db busy;
  ASSERT_TRUE(busy.Set("lock", "zed", SetOptions{}, now).ok());
  EXPECT_FALSE(busy.Restore("lock", *snap, false, now, true));
  EXPECT_EQ(*busy.Get("lock", now), "zed");
  EXPECT_EQ(busy.LockRecords(), 0u);
}

TEST_F(DbJournalHooksTest, RestoreWithARecordOfAnExpiredSnapshotRestoresNothing) {
  KeySnapshot snap;
  snap.type = ValueType::kString;
  snap.str = "alice";
  snap.expire_at_ms = now - 1;
  snap.lock_token = 40;
  snap.lock_holds = 1;
  Db d;
  EXPECT_TRUE(d.Restore("lock", snap, true, now, true));
  EXPECT_FALSE(d.Exists("lock", now));
  EXPECT_EQ(d.LockRecords(), 0u);
}

TEST_F(DbJournalHooksTest, RestoreIgnoresARecordWithoutHolds) {
  KeySnapshot snap;
  snap.type = ValueType::kString;
  snap.str = "alice";
  snap.lock_token = 40;
  snap.lock_holds = 0;
  Db d;
  EXPECT_TRUE(d.Restore("lock", snap, true, now, true));
  EXPECT_EQ(*d.Get("lock", now), "alice");
  EXPECT_EQ(d.LockRecords(), 0u);
  // A hash snapshot carries no record to restore.
  KeySnapshot h;
  h.type = ValueType::kHash;
  h.fields = {{"f", "v"}};
  h.lock_token = 41;
  h.lock_holds = 1;
  EXPECT_TRUE(d.Restore("h", h, true, now, true));
  EXPECT_EQ(*d.HGet("h", "f", now), "v");
  EXPECT_EQ(d.LockRecords(), 0u);
}

TEST_F(DbJournalHooksTest, SetLockRecordAndLockRecordOf) {
  uint64_t token = 123;
  int64_t holds = 456;
  EXPECT_FALSE(db.LockRecordOf("missing", &token, &holds));
  EXPECT_EQ(token, 123u);  // untouched
  EXPECT_EQ(holds, 456);

  // Ignored: a missing key, a hash, token 0, holds <= 0.
  db.SetLockRecord("missing", 5, 1);
  ASSERT_TRUE(db.HSet("h", "f", "v", now).ok());
  db.SetLockRecord("h", 5, 1);
  SetPx("lock", "alice", 10'000);
  db.SetLockRecord("lock", 0, 1);
  db.SetLockRecord("lock", 5, 0);
  db.SetLockRecord("lock", 5, -1);
  EXPECT_EQ(db.LockRecords(), 0u);
  EXPECT_FALSE(db.Exists("missing", now));
  EXPECT_EQ(db.last_fencing_token(), 0u);

  db.SetLockRecord("lock", 30, 2);
  ASSERT_TRUE(db.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(token, 30u);
  EXPECT_EQ(holds, 2);
  EXPECT_EQ(db.last_fencing_token(), 30u);
  db.SetLockRecord("lock", 10, 1);  // replaces the record; the counter stays
  ASSERT_TRUE(db.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(token, 10u);
  EXPECT_EQ(holds, 1);
  EXPECT_EQ(db.last_fencing_token(), 30u);
  db.SetLockRecord("lock", 30, 2);

  // The record follows the key as one taken by LockAcquire does: a TTL change or a same-value
  // write keeps it, another value drops it.
  EXPECT_EQ(*db.LockExtend("lock", "alice", 20'000, now), true);
  EXPECT_TRUE(db.LockRecordOf("lock", &token, &holds));
  SetPlain("lock", "alice");
  EXPECT_TRUE(db.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(token, 30u);
  SetPlain("lock", "bob");
  EXPECT_FALSE(db.LockRecordOf("lock", &token, &holds));
  EXPECT_EQ(db.LockRecords(), 0u);
}

}  // namespace
}  // namespace deadbolt::shard
