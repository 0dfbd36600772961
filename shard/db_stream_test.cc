// Streams on a Db (db_stream.cc): IDs from an injected clock (also one that goes back), explicit
// and half-given IDs, NOMKSTREAM, trimming after an add, ranges both ways with COUNT, XDEL's and
// XSETID's counters and refusals, types, and a stream's copy through Snapshot/Restore (RENAME,
// COPY, the journal).

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shard/db.h"

namespace deadbolt::shard {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;

std::vector<std::string_view> Fv(std::initializer_list<std::string_view> v) { return v; }

XAddSpec Auto() { return XAddSpec{}; }
XAddSpec At(uint64_t ms, uint64_t seq) {
  XAddSpec s;
  s.id_mode = XAddSpec::IdMode::kExplicit;
  s.id = {ms, seq};
  return s;
}
XAddSpec AtMs(uint64_t ms) {
  XAddSpec s;
  s.id_mode = XAddSpec::IdMode::kAutoSeq;
  s.id = {ms, 0};
  return s;
}

std::vector<std::string> Ids(const OpResult<std::optional<std::vector<StreamEntryOut>>>& r) {
  std::vector<std::string> out;
  for (const StreamEntryOut& e : **r) out.push_back(e.id.ToString());
  return out;
}

TEST(DbStream, IdsFollowTheClockAndNeverGoBack) {
  Db db;
  const auto f = Fv({"f", "v"});
  EXPECT_EQ(*db.XAdd("s", Auto(), f, kNow), (StreamId{kNow, 0}));
  EXPECT_EQ(*db.XAdd("s", Auto(), f, kNow), (StreamId{kNow, 1}));
  EXPECT_EQ(*db.XAdd("s", Auto(), f, kNow - 5000), (StreamId{kNow, 2}));  // the clock went back
  EXPECT_EQ(*db.XAdd("s", Auto(), f, kNow + 1), (StreamId{kNow + 1, 0}));
  EXPECT_EQ(db.XAdd("s", At(kNow, 9), f, kNow).status(), OpStatus::kStreamIdTooSmall);
  EXPECT_EQ(db.XAdd("s", At(kNow + 1, 0), f, kNow).status(), OpStatus::kStreamIdTooSmall);
  EXPECT_EQ(*db.XAdd("s", AtMs(kNow + 1), f, kNow), (StreamId{kNow + 1, 1}));
  EXPECT_EQ(*db.XAdd("s", AtMs(kNow + 7), f, kNow), (StreamId{kNow + 7, 0}));
  EXPECT_EQ(db.XAdd("s", AtMs(kNow + 6), f, kNow).status(), OpStatus::kStreamIdTooSmall);
  EXPECT_EQ(*db.XLen("s", kNow), 6);
  // The largest ID: nothing after it.
  EXPECT_EQ(*db.XAdd("m", At(UINT64_MAX, UINT64_MAX), f, kNow), StreamId::Max());
  EXPECT_EQ(db.XAdd("m", Auto(), f, kNow).status(), OpStatus::kStreamExhausted);
  EXPECT_TRUE(db.XAdd("m2", At(UINT64_MAX, UINT64_MAX - 1), f, kNow).ok());
  EXPECT_EQ(db.XAdd("m2", AtMs(UINT64_MAX), f, kNow)->seq, UINT64_MAX);
}

TEST(DbStream, NoMkStreamTrimAndTypes) {
  Db db;
  const auto f = Fv({"f", "v"});
  XAddSpec no = Auto();
  no.nomkstream = true;
  EXPECT_EQ(db.XAdd("s", no, f, kNow).status(), OpStatus::kKeyNotFound);
  EXPECT_FALSE(db.Exists("s", kNow));
  XAddSpec keep3 = Auto();
  keep3.trim.by = StreamTrim::By::kMaxLen;
  keep3.trim.maxlen = 3;
  for (int i = 0; i < 10; i++) db.XAdd("s", keep3, f, kNow + i);
  EXPECT_EQ(*db.XLen("s", kNow), 3);
  XAddSpec none = Auto();
  none.trim.by = StreamTrim::By::kMaxLen;  // MAXLEN 0: even the new entry goes, the key stays
  db.XAdd("s", none, f, kNow + 100);
  EXPECT_EQ(*db.XLen("s", kNow), 0);
  EXPECT_TRUE(db.Exists("s", kNow));
  EXPECT_EQ(*db.XLastId("s", kNow), (StreamId{kNow + 100, 0}));
  StreamTrim minid;
  minid.by = StreamTrim::By::kMinId;
  minid.minid = {5, 0};
  for (uint64_t i = 1; i <= 9; i++) db.XAdd("t", At(i, 0), f, kNow);
  EXPECT_EQ(*db.XTrim("t", minid, kNow), 4);
  EXPECT_EQ(*db.XTrim("missing", minid, kNow), 0);
  db.Set("str", "x", SetOptions{}, kNow);
  EXPECT_EQ(db.XAdd("str", Auto(), f, kNow).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.XLen("str", kNow).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.XTrim("str", minid, kNow).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.XLastId("str", kNow).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.Type("t", kNow), ValueType::kStream);
  EXPECT_EQ(std::string(db.Object("t", kNow)->encoding), "stream");
}

TEST(DbStream, RangesDeletesAndSetId) {
  Db db;
  for (uint64_t i = 1; i <= 5; i++) db.XAdd("s", At(i, 0), Fv({"n", "x"}), kNow);
  const StreamId lo{2, 0}, hi{4, 0};
  EXPECT_EQ(Ids(db.XRange("s", lo, hi, 0, false, kNow)),
            (std::vector<std::string>{"2-0", "3-0", "4-0"}));
  EXPECT_EQ(Ids(db.XRange("s", lo, hi, 2, true, kNow)), (std::vector<std::string>{"4-0", "3-0"}));
  EXPECT_EQ(Ids(db.XRange("s", hi, lo, 0, false, kNow)), std::vector<std::string>{});
  EXPECT_FALSE(db.XRange("missing", lo, hi, 0, false, kNow)->has_value());
  const StreamId del[] = {{2, 0}, {4, 0}, {9, 0}};
  EXPECT_EQ(*db.XDel("s", del, kNow), 2);
  EXPECT_EQ(*db.XDel("missing", del, kNow), 0);
  EXPECT_EQ(db.XSetId("missing", {1, 0}, -1, {}, kNow), OpStatus::kNoSuchKey);
  EXPECT_EQ(db.XSetId("s", {4, 5}, -1, {}, kNow), OpStatus::kStreamSetIdBelowTop);
  EXPECT_EQ(db.XSetId("s", {9, 0}, 2, {}, kNow), OpStatus::kStreamEntriesAddedTooSmall);
  EXPECT_EQ(db.XSetId("s", {9, 0}, 50, {8, 0}, kNow), OpStatus::kOk);
  EXPECT_EQ(*db.XLastId("s", kNow), (StreamId{9, 0}));
  EXPECT_EQ(db.XAdd("s", At(9, 0), Fv({"f", "v"}), kNow).status(), OpStatus::kStreamIdTooSmall);
}

TEST(DbStream, SnapshotAndRestoreCarryEverything) {
  Db db, other;
  for (uint64_t i = 1; i <= 3; i++) db.XAdd("s", At(i, i), Fv({"f", "v", "g", ""}), kNow);
  const StreamId del[] = {{2, 2}};
  db.XDel("s", del, kNow);
  db.ExpireAt("s", kNow + 60000, ExpireCond::kNone, kNow);
  auto snap = db.Snapshot("s", kNow);
  ASSERT_TRUE(snap.has_value());
  EXPECT_EQ(snap->type, ValueType::kStream);
  ASSERT_TRUE(other.Restore("copy", *snap, false, kNow));
  EXPECT_EQ(Ids(other.XRange("copy", {}, StreamId::Max(), 0, false, kNow)),
            (std::vector<std::string>{"1-1", "3-3"}));
  EXPECT_EQ(other.ExpireTime("copy", kNow), kNow + 60000);
  auto back = other.Snapshot("copy", kNow);
  EXPECT_EQ(back->stream, snap->stream);  // the counters too (max deleted, entries added)
  KeyView view;
  ASSERT_TRUE(db.View("s", kNow, &view));
  EXPECT_EQ(view.type, ValueType::kStream);
  EXPECT_EQ(view.stream, snap->stream);
}

// Consumer groups: delivery into the PEL, history reads counting deliveries, acks, claims that
// move entries between consumers, a claim of a deleted entry dropping it, XAUTOCLAIM's cursor,
// and the lag Redis reports.
TEST(DbStream, GroupsDeliverAckAndClaim) {
  Db db;
  for (uint64_t i = 1; i <= 4; i++) db.XAdd("s", At(i, 0), Fv({"n", "x"}), kNow);
  EXPECT_EQ(db.XGroupCreate("s", "g", false, {}, false, -1, kNow), OpStatus::kOk);
  EXPECT_EQ(db.XGroupCreate("s", "g", false, {}, false, -1, kNow), OpStatus::kBusyGroup);
  EXPECT_EQ(db.XGroupCreate("none", "g", false, {}, false, -1, kNow), OpStatus::kNoSuchKey);
  auto r = db.XReadGroup("s", "g", "alice", StreamId::Max(), 3, false, kNow);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->size(), 3u);
  EXPECT_EQ(db.XReadGroup("s", "nope", "alice", StreamId::Max(), 0, false, kNow).status(),
            OpStatus::kNoGroup);
  // History: alice's pending entries after 1-0, delivered a second time.
  auto h = db.XReadGroup("s", "g", "alice", {1, 0}, 0, false, kNow + 10);
  ASSERT_EQ((*h)->size(), 2u);
  auto p = db.XPendingRange("s", "g", {}, StreamId::Max(), 10, 0, std::nullopt, kNow + 20);
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].deliveries, 1u);
  EXPECT_EQ((*p)[1].deliveries, 2u);
  EXPECT_EQ((*p)[1].idle_ms, 10);
  const StreamId ack[] = {{1, 0}, {9, 0}};
  EXPECT_EQ(*db.XAck("s", "g", ack, kNow), 1);
  // bob claims 2-0 once it has been idle 5 ms; 3-0 is deleted, so claiming it drops it.
  const StreamId del[] = {{3, 0}};
  db.XDel("s", del, kNow);
  XClaimOptions opts;
  opts.min_idle_ms = 5;
  const StreamId claim[] = {{2, 0}, {3, 0}};
  EXPECT_TRUE(db.XClaim("s", "g", "bob", claim, opts, kNow + 11)->empty());  // idle 1 ms
  auto c = db.XClaim("s", "g", "bob", claim, opts, kNow + 20);
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].id, (StreamId{2, 0}));
  auto sum = db.XPending("s", "g", kNow);
  EXPECT_EQ(sum->count, 1u);
  EXPECT_EQ(sum->consumers, (std::vector<std::pair<std::string, uint64_t>>{{"bob", 1}}));
  // XAUTOCLAIM: one at a time, the cursor naming the next pending entry.
  auto more = db.XReadGroup("s", "g", "alice", StreamId::Max(), 0, false, kNow);
  auto a = db.XAutoClaim("s", "g", "carol", 0, {}, 1, true, kNow + 50);
  EXPECT_EQ(a->claimed.size(), 1u);
  EXPECT_EQ(a->cursor, (StreamId{4, 0}));
  a = db.XAutoClaim("s", "g", "carol", 0, a->cursor, 1, true, kNow + 50);
  EXPECT_EQ(a->cursor, StreamId{});
  EXPECT_EQ(*db.XGroupDelConsumer("s", "g", "carol", kNow), 2);
  auto groups = db.XInfoGroups("s", kNow);
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].pending, 0u);
  EXPECT_EQ((*groups)[0].last_id, (StreamId{4, 0}));
  EXPECT_EQ((*groups)[0].entries_read, 4);
  EXPECT_EQ((*groups)[0].lag, 0);  // the deletion lies before the group's position
}

}  // namespace
}  // namespace deadbolt::shard
