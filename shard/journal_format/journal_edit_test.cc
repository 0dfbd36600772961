// Element-level edits (KeyEdit, the journal's kEdit records): what the Db tells observers, and
// that replaying the records rebuilds the same collections. The mirror test below does what the
// server's journal does (server/core/journal.cc): an edit becomes a kEdit record, any other
// change a kPut of the key's state after the command (or a kDel), and it checks after every
// command that a second shard fed only those records holds the same keys.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
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

// Turns what a Db tells it into journal records, one frame per command (Flush).
class Recorder : public KeyObserver {
 public:
  explicit Recorder(Db* db) : db_(db) {}
  void OnKeyChanged(std::string_view key) override { whole_.emplace_back(key); }
  void OnKeyExpired(std::string_view) override {}
  void OnKeyEdited(std::string_view key, const KeyEdit& edit) override {
    edits++;
    last_edit = edit.op;
    last_size_after = edit.size_after;
    std::string rec;
    EncodeEdit(&rec, 0, key, edit);
    pending_.push_back(Pending{std::string(key), std::move(rec)});
  }

  // The command's records, as the journal writes them at the end of a turn: edits of keys that
  // also changed otherwise are dropped, those keys' states are written instead.
  std::string Flush(int64_t now_ms) {
    std::string out;
    JournalWriter w(&out);
    w.BeginFrame();
    for (const Pending& p : pending_) {
      bool whole = false;
      for (const std::string& k : whole_) whole = whole || k == p.key;
      if (!whole) w.Append(p.record);
    }
    for (const std::string& k : whole_) {
      KeyView v;
      if (db_->View(k, now_ms, &v)) {
        w.Put(0, k, v);
      } else {
        w.Del(0, k);
      }
    }
    w.EndFrame();
    pending_.clear();
    whole_.clear();
    return out;
  }

  int edits = 0;
  KeyEdit::Op last_edit = KeyEdit::Op::kListPush;
  size_t last_size_after = 0;

 private:
  struct Pending {
    std::string key;
    std::string record;
  };
  Db* db_;
  std::vector<Pending> pending_;
  std::vector<std::string> whole_;
};

class JournalEditTest : public ::testing::Test {
 protected:
  void SetUp() override { src.db(0).AddObserver(&rec); }
  void TearDown() override { src.db(0).RemoveObserver(&rec); }

  // Replays the last command's records into dst.
  void Replay() {
    std::string bytes = rec.Flush(now);
    JournalScan scan = ScanJournal(bytes, [&](const JournalRecord& r) {
      ApplyJournalRecord(r, dst, now);
      return true;
    });
    ASSERT_EQ(scan.status, JournalScan::Status::kOk) << scan.error;
  }
  // Every key of src, as a snapshot, equals dst's (lists in order; sets and hashes sorted).
  void ExpectMirror(const std::string& where) {
    SCOPED_TRACE(where);
    std::vector<std::string> keys, dst_keys;
    src.db(0).Keys("*", now, [&](std::string_view k) { keys.emplace_back(k); });
    dst.db(0).Keys("*", now, [&](std::string_view k) { dst_keys.emplace_back(k); });
    std::sort(keys.begin(), keys.end());
    std::sort(dst_keys.begin(), dst_keys.end());
    ASSERT_EQ(keys, dst_keys);
    for (const std::string& k : keys) {
      auto a = src.db(0).Snapshot(k, now);
      auto b = dst.db(0).Snapshot(k, now);
      ASSERT_TRUE(a && b) << k;
      EXPECT_EQ(a->type, b->type) << k;
      if (a->type == ValueType::kList) {
        EXPECT_EQ(a->members, b->members) << k;
      } else if (a->type == ValueType::kStream) {
        EXPECT_EQ(a->stream, b->stream) << k;  // Serialize's bytes: entries, counters, groups
      } else {
        std::sort(a->members.begin(), a->members.end());
        std::sort(b->members.begin(), b->members.end());
        std::sort(a->fields.begin(), a->fields.end());
        std::sort(b->fields.begin(), b->fields.end());
        EXPECT_EQ(a->members, b->members) << k;
        EXPECT_EQ(a->fields, b->fields) << k;
      }
      EXPECT_EQ(a->expire_at_ms, b->expire_at_ms) << k;
    }
  }

  Shard src{0, 1};
  Shard dst{0, 1};
  Recorder rec{&src.db(0)};
  int64_t now = 1'700'000'000'000;
};

TEST_F(JournalEditTest, ChangesInPlaceAreEditsAndNewOrEmptiedKeysAreNot) {
  Db& db = src.db(0);
  const std::string_view abc[] = {"a", "b", "c"};
  ASSERT_EQ(*db.ListPush("l", abc, ListEnd::kRight, false, now), 3);
  EXPECT_EQ(rec.edits, 0);  // a new key: written whole
  ASSERT_EQ(*db.ListPush("l", abc, ListEnd::kLeft, false, now), 6);
  EXPECT_EQ(rec.edits, 1);
  EXPECT_EQ(rec.last_edit, KeyEdit::Op::kListPush);
  EXPECT_EQ(rec.last_size_after, 6u);
  ASSERT_EQ(db.ListPop("l", ListEnd::kRight, 2, now)->size(), 2u);
  EXPECT_EQ(rec.last_edit, KeyEdit::Op::kListPop);
  EXPECT_EQ(rec.last_size_after, 4u);
  ASSERT_EQ(db.ListTrim("l", 1, -1, now), OpStatus::kOk);
  EXPECT_EQ(rec.last_edit, KeyEdit::Op::kListTrim);
  ASSERT_EQ(db.ListSet("l", 0, "z", now), OpStatus::kOk);  // LSET: a change, not an edit
  EXPECT_EQ(rec.edits, 3);
  ASSERT_EQ(db.ListPop("l", ListEnd::kLeft, 10, now)->size(), 3u);  // emptied: the key goes
  EXPECT_EQ(rec.edits, 3);

  ASSERT_TRUE(db.HSet("h", "f", "1", now).ok());
  EXPECT_EQ(rec.edits, 3);
  ASSERT_TRUE(db.HIncrBy("h", "f", 5, now).ok());
  EXPECT_EQ(rec.last_edit, KeyEdit::Op::kHashSet);
  const std::string_view g[] = {"g", "x"};
  ASSERT_TRUE(db.HSet("h", g, now).ok());
  const std::string_view f[] = {"f"};
  ASSERT_EQ(*db.HDel("h", f, now), 1);
  EXPECT_EQ(rec.last_edit, KeyEdit::Op::kHashDel);
  EXPECT_EQ(rec.edits, 6);

  ASSERT_EQ(*db.SetAdd("s", abc, now), 3);
  EXPECT_EQ(rec.edits, 6);
  const std::string_view d[] = {"d"};
  ASSERT_EQ(*db.SetAdd("s", d, now), 1);
  EXPECT_EQ(rec.last_edit, KeyEdit::Op::kSetAdd);
  ASSERT_EQ(*db.SetAdd("s", d, now), 0);  // nothing changed: nothing told
  EXPECT_EQ(rec.edits, 7);
  ASSERT_EQ(db.SetPop("s", 1, now)->size(), 1u);
  EXPECT_EQ(rec.last_edit, KeyEdit::Op::kSetRem);
  EXPECT_EQ(rec.last_size_after, 3u);
}

TEST_F(JournalEditTest, AnEditOfAMissingKeyOrAnotherTypeChangesNothing) {
  auto apply = [&](const Rec& r) {
    std::string buf;
    JournalWriter w(&buf);
    w.BeginFrame();
    Write(w, r);
    w.EndFrame();
    bool ok = true;
    ScanJournal(buf, [&](const JournalRecord& rr) {
      ok = ApplyJournalRecord(rr, dst, now);
      return true;
    });
    return ok;
  };
  EXPECT_FALSE(apply(EditRec(0, "l", KeyEdit::Op::kListPush, {"a"})));
  EXPECT_FALSE(apply(EditRec(0, "h", KeyEdit::Op::kHashSet, {"f", "v"})));
  EXPECT_FALSE(apply(EditRec(0, "s", KeyEdit::Op::kSetAdd, {"m"})));
  EXPECT_EQ(dst.db(0).Size(), 0u);
  ASSERT_TRUE(dst.db(0).HSet("h", "f", "v", now).ok());
  EXPECT_FALSE(apply(EditRec(0, "h", KeyEdit::Op::kListPop, {}, ListEnd::kLeft, 1)));
  EXPECT_FALSE(apply(EditRec(0, "h", KeyEdit::Op::kSetRem, {"f"})));
  EXPECT_EQ(*dst.db(0).HGet("h", "f", now), "v");
  EXPECT_TRUE(apply(EditRec(0, "h", KeyEdit::Op::kHashSet, {"g", "w"})));
  EXPECT_EQ(*dst.db(0).HGet("h", "g", now), "w");
  // An expired key is a missing one.
  ASSERT_EQ(dst.db(0).ExpireAt("h", now + 10, ExpireCond::kNone, now), 1);
  now += 11;
  EXPECT_FALSE(apply(EditRec(0, "h", KeyEdit::Op::kHashSet, {"x", "y"})));
  EXPECT_EQ(dst.db(0).Size(), 0u);
}

// Random commands on lists, hashes and sets (small and large, with TTLs, emptied and made
// again), mirrored through the records after each one.
TEST_F(JournalEditTest, RandomCommandsMirrorThroughTheRecords) {
  Db& db = src.db(0);
  std::mt19937_64 rng(12345);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const char* keys[] = {"l1", "l2", "h1", "h2", "s1", "s2", "z1", "z2", "x1", "x2"};
  std::vector<std::string> vals;
  auto items = [&](int n, int range) {
    vals.clear();
    for (int i = 0; i < n; i++) vals.push_back("v" + std::to_string(pick(range)));
    return std::vector<std::string_view>(vals.begin(), vals.end());
  };
  for (int step = 0; step < 20'000; step++) {
    const std::string key = keys[pick(10)];
    const int range = pick(2) ? 20 : 500;
    const int n = 1 + pick(pick(10) == 0 ? 60 : 4);
    std::string what = key;
    if (key[0] == 'l') {
      switch (pick(8)) {
        case 0:
        case 1:
          (void)db.ListPush(key, items(n, range), pick(2) ? ListEnd::kLeft : ListEnd::kRight,
                            pick(4) == 0, now);
          what += " push";
          break;
        case 2:
        case 3:
          (void)db.ListPop(key, pick(2) ? ListEnd::kLeft : ListEnd::kRight,
                           static_cast<size_t>(1 + pick(5)), now);
          what += " pop";
          break;
        case 4:
          (void)db.ListTrim(key, pick(6) - 2, pick(200) - 100, now);
          what += " trim";
          break;
        case 5:
          (void)db.ListMove(key, key, pick(2) ? ListEnd::kLeft : ListEnd::kRight,
                            pick(2) ? ListEnd::kLeft : ListEnd::kRight, now);
          what += " rotate";
          break;
        case 6:
          (void)db.ListMove(key, key == "l1" ? "l2" : "l1", ListEnd::kLeft, ListEnd::kRight, now);
          what += " move";
          break;
        case 7:
          (void)db.ListRem(key, 1, "v" + std::to_string(pick(range)), now);
          what += " lrem";
          break;
      }
    } else if (key[0] == 'h') {
      switch (pick(5)) {
        case 0:
        case 1: {
          auto fv = items(2 * n, range);
          (void)db.HSet(key, fv, now);
          what += " hset";
          break;
        }
        case 2:
          (void)db.HDel(key, items(n, range), now);
          what += " hdel";
          break;
        case 3:
          (void)db.HIncrBy(key, "counter", 1 + pick(9), now);
          what += " hincrby";
          break;
        case 4:
          (void)db.HSetNx(key, "v" + std::to_string(pick(range)), "nx", now);
          what += " hsetnx";
          break;
      }
    } else if (key[0] == 'x') {
      const StreamId some{static_cast<uint64_t>(now - pick(40)), static_cast<uint64_t>(pick(3))};
      const char* groups[] = {"g1", "g2"};
      const std::string group = groups[pick(2)];
      const std::string consumer = pick(2) ? "alice" : "bob";
      switch (pick(9)) {
        case 0:
        case 1:
        case 2: {
          XAddSpec spec;
          if (pick(5) == 0) {
            spec.trim.by = StreamTrim::By::kMaxLen;
            spec.trim.maxlen = static_cast<uint64_t>(20 + pick(60));
          }
          (void)db.XAdd(key, spec, items(2 * (1 + pick(2)), range), now);
          what += " xadd";
          break;
        }
        case 3: {
          const StreamId ids[] = {some};
          (void)db.XDel(key, ids, now);
          what += " xdel";
          break;
        }
        case 4: {
          StreamTrim t;
          t.by = StreamTrim::By::kMinId;
          t.minid = StreamId{static_cast<uint64_t>(now - 30), 0};
          (void)db.XTrim(key, t, now);
          what += " xtrim";
          break;
        }
        case 5:
          (void)db.XGroupCreate(key, group, pick(2) == 0, StreamId{}, pick(4) == 0, -1, now);
          what += " xgroup create";
          break;
        case 6:
          (void)db.XReadGroup(key, group, consumer, StreamId::Max(), 1 + pick(3), pick(8) == 0,
                              now);
          what += " xreadgroup";
          break;
        case 7: {
          auto pending =
              db.XPendingRange(key, group, StreamId{}, StreamId::Max(), 2, 0, std::nullopt, now);
          if (pending.ok() && !pending->empty()) {
            std::vector<StreamId> ids;
            for (const auto& p : *pending) ids.push_back(p.id);
            (void)db.XAck(key, group, ids, now);
          }
          what += " xack";
          break;
        }
        case 8:
          (void)db.XAutoClaim(key, group, consumer, 0, StreamId{}, 2, false, now);
          what += " xautoclaim";
          break;
      }
    } else if (key[0] == 'z') {
      switch (pick(4)) {
        case 0:
        case 1: {
          std::vector<std::pair<double, std::string_view>> pairs;
          for (std::string_view m : items(n, range)) pairs.emplace_back(pick(100) / 4.0, m);
          ZAddOptions o;
          o.nx = pick(6) == 0;
          o.gt = !o.nx && pick(6) == 0;
          o.xx = pick(6) == 0;
          o.incr = pairs.size() == 1 && pick(3) == 0;
          (void)db.ZAdd(key, o, pairs, now);
          what += " zadd";
          break;
        }
        case 2:
          (void)db.ZRem(key, items(n, range), now);
          what += " zrem";
          break;
        case 3:
          (void)db.ZPop(key, pick(2) == 0, 1 + pick(3), now);
          what += " zpop";
          break;
      }
    } else {
      switch (pick(4)) {
        case 0:
        case 1:
          (void)db.SetAdd(key, items(n, range), now);
          what += " sadd";
          break;
        case 2:
          (void)db.SetRem(key, items(n, range), now);
          what += " srem";
          break;
        case 3:
          (void)db.SetPop(key, static_cast<size_t>(1 + pick(3)), now);
          what += " spop";
          break;
      }
    }
    if (pick(50) == 0) {
      (void)db.ExpireAt(key, now + 1 + pick(3), ExpireCond::kNone, now);
      what += " expire";
    }
    Replay();
    ExpectMirror("step " + std::to_string(step) + ": " + what);
    if (HasFatalFailure() || HasFailure()) return;
    // Some TTLs pass. Each jumps past every TTL set since the last one: a replay deletes a put
    // whose time is now (Restore's rule, as Redis's RESTORE), where a key lives until after it.
    if (pick(20) == 0) now += 5;
  }
  EXPECT_GT(rec.edits, 5'000);
}

}  // namespace
}  // namespace deadbolt::shard
