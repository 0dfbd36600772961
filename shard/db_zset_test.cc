// Sorted sets through Db: the operations of db_zset.cc against Redis 7.0's t_zset.c behaviour,
// the key's lifetime (created by a write, removed with its last member, expiry) and the change
// hook. Time is a plain int64 that the tests advance.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shard/db.h"

namespace deadbolt::shard {
namespace {

using Items = std::vector<std::pair<std::string, double>>;

class DbZSetTest : public ::testing::Test {
 protected:
  OpResult<ZAddResult> Add(std::string_view key, const Items& items, ZAddOptions opts = {}) {
    std::vector<std::pair<double, std::string_view>> in;
    for (const auto& [m, s] : items) in.emplace_back(s, m);
    return db.ZAdd(key, opts, in, now);
  }
  Items All(std::string_view key, ZRangeSpec range = {}) {
    Items out;
    auto r = db.ZRange(key, range, now);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return out;
    for (const auto& [m, s] : *r) out.emplace_back(std::string(m), s);
    return out;
  }
  static ZRangeSpec ByScore(double min, double max, bool rev = false) {
    ZRangeSpec r;
    r.by = ZRangeSpec::By::kScore;
    r.min = min;
    r.max = max;
    r.rev = rev;
    return r;
  }

  Db db;
  int64_t now = 1'700'000'000'000;
};

TEST_F(DbZSetTest, AddCountsNewAndChangedMembers) {
  auto r = Add("z", {{"a", 1}, {"b", 2}, {"a", 3}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->added, 2);  // a given twice: the last score wins
  EXPECT_EQ(All("z"), (Items{{"b", 2}, {"a", 3}}));
  r = Add("z", {{"a", 3}, {"b", 5}, {"c", 0}});
  EXPECT_EQ(r->added, 1);
  EXPECT_EQ(r->updated, 1);  // a kept its score
  EXPECT_EQ(db.Type("z", now), ValueType::kZSet);
  EXPECT_EQ(*db.ZCard("z", now), 3);
}

TEST_F(DbZSetTest, ConditionsAndIncr) {
  ZAddOptions xx;
  xx.xx = true;
  EXPECT_EQ(Add("z", {{"a", 1}}, xx)->added, 0);
  EXPECT_FALSE(db.Exists("z", now));  // XX never creates the key
  ASSERT_TRUE(Add("z", {{"a", 5}}).ok());
  ZAddOptions gt;
  gt.gt = true;
  EXPECT_EQ(Add("z", {{"a", 4}, {"b", 1}}, gt)->updated, 0);  // GT still adds new members
  EXPECT_EQ(*db.ZScore("z", "a", now), 5);
  EXPECT_EQ(*db.ZScore("z", "b", now), 1);
  ZAddOptions incr;
  incr.incr = true;
  EXPECT_EQ(Add("z", {{"a", 0.5}}, incr)->score, 5.5);
  incr.lt = true;
  EXPECT_EQ(Add("z", {{"a", 1}}, incr)->score, std::nullopt);  // would grow: not LT
  incr.lt = false;
  ASSERT_TRUE(Add("z", {{"a", INFINITY}}, incr).ok());
  EXPECT_EQ(Add("z", {{"a", -INFINITY}}, incr).status(), OpStatus::kScoreNaN);
  EXPECT_EQ(*db.ZScore("z", "a", now), INFINITY);  // unchanged
}

TEST_F(DbZSetTest, RangesByRankScoreAndLexWithLimits) {
  ASSERT_TRUE(Add("z", {{"a", 1}, {"b", 2}, {"c", 2}, {"d", 3}, {"e", 4}}).ok());
  ZRangeSpec rank;
  rank.start = -2;
  rank.stop = 100;
  EXPECT_EQ(All("z", rank), (Items{{"d", 3}, {"e", 4}}));
  rank.rev = true;
  EXPECT_EQ(All("z", rank), (Items{{"b", 2}, {"a", 1}}));
  ZRangeSpec s = ByScore(2, 3);
  s.min_exclusive = true;
  EXPECT_EQ(All("z", s), (Items{{"d", 3}}));
  s = ByScore(-INFINITY, INFINITY, true);
  s.offset = 1;
  s.limit = 2;
  EXPECT_EQ(All("z", s), (Items{{"d", 3}, {"c", 2}}));
  s.offset = -1;
  EXPECT_TRUE(All("z", s).empty());
  EXPECT_EQ(*db.ZCount("z", ByScore(2, 2), now), 2);
  EXPECT_EQ(*db.ZCount("z", ByScore(3, 1), now), 0);
  ZRangeSpec lex;
  lex.by = ZRangeSpec::By::kLex;
  lex.lex_min = {ZRangeSpec::LexBound::Kind::kExclusive, "a"};
  lex.lex_max = {ZRangeSpec::LexBound::Kind::kInclusive, "c"};
  EXPECT_EQ(*db.ZCount("z", lex, now), 2);
  auto rank_of = db.ZRank("z", "c", true, now);
  ASSERT_TRUE(rank_of.ok() && rank_of->has_value());
  EXPECT_EQ((*rank_of)->first, 2);
  EXPECT_EQ((*rank_of)->second, 2);
}

TEST_F(DbZSetTest, RemovingTheLastMemberRemovesTheKey) {
  ASSERT_TRUE(Add("z", {{"a", 1}, {"b", 2}, {"c", 3}}).ok());
  std::vector<std::string_view> gone = {"a", "nope"};
  EXPECT_EQ(*db.ZRem("z", gone, now), 1);
  auto popped = db.ZPop("z", true, 1, now);
  EXPECT_EQ(*popped, (ZOwnedMembers{{"c", 3}}));
  EXPECT_EQ(*db.ZRemRange("z", ByScore(0, 10), now), 1);
  EXPECT_FALSE(db.Exists("z", now));
  EXPECT_EQ(db.Size(), 0u);
  EXPECT_EQ(db.ZStore("z", {}, now), 0);
  EXPECT_FALSE(db.Exists("z", now));
}

TEST_F(DbZSetTest, WrongTypeBothWays) {
  ASSERT_TRUE(db.Set("s", "v", SetOptions{}, now)->written);
  ASSERT_TRUE(Add("z", {{"a", 1}}).ok());
  std::vector<std::string_view> m = {"a"};
  EXPECT_EQ(Add("s", {{"a", 1}}).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.ZRem("s", m, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.ZScore("s", "a", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.ZRange("s", ZRangeSpec{}, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.ZPop("s", false, 1, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.ZScan("s", 0, "*", 10, now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.Get("z", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.HGet("z", "a", now).status(), OpStatus::kWrongType);
  // A store replaces whatever the destination held.
  EXPECT_EQ(db.ZStore("s", {{"x", 1}}, now), 1);
  EXPECT_EQ(db.Type("s", now), ValueType::kZSet);
}

TEST_F(DbZSetTest, TtlCoversTheSetThroughChangesOfForm) {
  ASSERT_TRUE(Add("z", {{"a", 1}}).ok());
  ASSERT_EQ(db.ExpireAt("z", now + 1000, ExpireCond::kNone, now), 1);
  Items many;
  for (int i = 0; i < 300; i++) many.emplace_back("m" + std::to_string(i), i);
  ASSERT_TRUE(Add("z", many).ok());  // a skiplist now: a new block, same TTL
  EXPECT_EQ(db.Pttl("z", now), 1000);
  ZRangeSpec most;
  most.start = 0;
  most.stop = 250;
  EXPECT_EQ(*db.ZRemRange("z", most, now), 251);  // 50 left, packed again below 64
  EXPECT_EQ(db.Pttl("z", now), 1000);
  now += 1001;
  EXPECT_EQ(*db.ZCard("z", now), 0);
  EXPECT_FALSE(db.Exists("z", now));
}

TEST_F(DbZSetTest, SnapshotAndRestoreKeepScoresExactly) {
  ASSERT_TRUE(Add("z", {{"a", 0.1}, {"b", -INFINITY}, {"c", 1e300}}).ok());
  db.ExpireAt("z", now + 5000, ExpireCond::kNone, now);
  std::optional<KeySnapshot> snap = db.Snapshot("z", now);
  ASSERT_TRUE(snap);
  EXPECT_EQ(snap->type, ValueType::kZSet);
  Db other;
  ASSERT_TRUE(other.Restore("copy", *snap, false, now));
  auto want = db.ZRange("z", ZRangeSpec{}, now);
  auto got = other.ZRange("copy", ZRangeSpec{}, now);
  EXPECT_EQ(*got, *want);
  EXPECT_EQ(other.Pttl("copy", now), 5000);
}

class CountingObserver : public KeyObserver {
 public:
  void OnKeyChanged(std::string_view key) override { changed.emplace_back(key); }
  std::vector<std::string> changed;
};

// WATCH and the journal hear of every change, and of nothing else.
TEST_F(DbZSetTest, EveryMutationReportsOneChange) {
  CountingObserver obs;
  db.AddObserver(&obs);
  size_t expected = 0;
  auto changed = [&](const char* what) {
    ++expected;
    EXPECT_EQ(obs.changed.size(), expected) << what;
  };
  auto unchanged = [&](const char* what) { EXPECT_EQ(obs.changed.size(), expected) << what; };
  ASSERT_TRUE(Add("z", {{"a", 1}, {"b", 2}}).ok());
  changed("ZADD new key");
  ASSERT_TRUE(Add("z", {{"a", 1}}).ok());
  unchanged("ZADD of the same score");
  ZAddOptions nx;
  nx.nx = true;
  ASSERT_TRUE(Add("z", {{"a", 7}}, nx).ok());
  unchanged("ZADD NX of an existing member");
  ASSERT_TRUE(Add("z", {{"a", 3}}).ok());
  changed("ZADD new score");
  std::vector<std::string_view> nope = {"nope"};
  EXPECT_EQ(*db.ZRem("z", nope, now), 0);
  unchanged("ZREM of a missing member");
  EXPECT_EQ(*db.ZRemRange("z", ByScore(10, 20), now), 0);
  unchanged("ZREMRANGEBYSCORE of nothing");
  ASSERT_TRUE(db.ZRange("z", ZRangeSpec{}, now).ok());
  ASSERT_TRUE(db.ZRandMember("z", -5, now).ok());
  ASSERT_TRUE(db.ZScan("z", 0, "*", 10, now).ok());
  unchanged("reads");
  EXPECT_EQ(db.ZPop("z", false, 5, now)->size(), 2u);
  changed("ZPOPMIN of everything (the key goes)");
  EXPECT_FALSE(db.Exists("z", now));
  db.RemoveObserver(&obs);
}

}  // namespace
}  // namespace deadbolt::shard
