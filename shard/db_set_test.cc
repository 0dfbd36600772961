// Sets through Db, where the value changes form: a small intset lives inline in the key's Entry
// (shard/types/set_value.h) and moves to a block past SetValue::kMaxInlineBytes, or when a
// non-integer arrives; back inline when it shrinks to fit again. Every command sees the same
// members whatever the form, the TTL follows the key, and the change hook hears each change
// once. Time is a plain int64.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "shard/db.h"

namespace deadbolt::shard {
namespace {

class CountingObserver : public KeyObserver {
 public:
  void OnKeyChanged(std::string_view key) override { changed.emplace_back(key); }
  std::vector<std::string> changed;
};

class DbSetTest : public ::testing::Test {
 protected:
  OpResult<int64_t> Add(std::string_view key, const std::vector<std::string>& ms) {
    std::vector<std::string_view> in(ms.begin(), ms.end());
    return db.SetAdd(key, in, now);
  }
  OpResult<int64_t> Rem(std::string_view key, const std::vector<std::string>& ms) {
    std::vector<std::string_view> in(ms.begin(), ms.end());
    return db.SetRem(key, in, now);
  }
  std::set<std::string> Members(std::string_view key) {
    auto r = db.SetMembers(key, now);
    EXPECT_TRUE(r.ok());
    return r.ok() ? std::set<std::string>(r->begin(), r->end()) : std::set<std::string>{};
  }
  // MEMORY USAGE counts 16 bytes of header, the key and what is inline; a set kept in a block
  // adds the block's 8-byte header and more. So this is the inline form's exact figure.
  size_t InlineBytes(std::string_view key, size_t n, size_t width) {
    return 16 + key.size() + 1 + n * width;
  }

  Db db;
  int64_t now = 1'700'000'000'000;
};

TEST_F(DbSetTest, IntsetMovesBetweenEntryAndBlockAtTheLimit) {
  std::set<std::string> model;
  ASSERT_TRUE(db.ExpireAt("s", now + 50'000, ExpireCond::kNone, now) == 0);
  for (int i = 0; i < 127; ++i) {
    ASSERT_EQ(*Add("s", {std::to_string(i * 3)}), 1);
    model.insert(std::to_string(i * 3));
    if (i == 0) {
      ASSERT_EQ(db.ExpireAt("s", now + 50'000, ExpireCond::kNone, now), 1);
    }
    auto info = db.Object("s", now);
    ASSERT_TRUE(info.has_value());
    EXPECT_STREQ(info->encoding, "intset");
    ASSERT_EQ(info->bytes, InlineBytes("s", model.size(), 2)) << i;
  }
  // 1 + 128 * 2 > 255: a block.
  ASSERT_EQ(*Add("s", {"1000", "0"}), 1);
  model.insert("1000");
  EXPECT_STREQ(db.Object("s", now)->encoding, "intset");
  EXPECT_GT(db.Object("s", now)->bytes, InlineBytes("s", 128, 2));
  EXPECT_EQ(Members("s"), model);
  EXPECT_EQ(*db.SetCard("s", now), 128);
  EXPECT_EQ(db.Pttl("s", now), 50'000);
  // Back to 127: inline again, TTL kept.
  ASSERT_EQ(*Rem("s", {"1000", "missing", "1"}), 1);
  model.erase("1000");
  EXPECT_EQ(db.Object("s", now)->bytes, InlineBytes("s", 127, 2));
  EXPECT_EQ(Members("s"), model);
  EXPECT_EQ(db.Pttl("s", now), 50'000);
  EXPECT_TRUE(*db.SetIsMember("s", "3", now));
  EXPECT_FALSE(*db.SetIsMember("s", "03", now));
  EXPECT_EQ(*db.SetMIsMember("s", std::vector<std::string_view>{"0", "1", "378"}, now),
            (std::vector<bool>{true, false, true}));
}

TEST_F(DbSetTest, InlineIntsetWidensAndLeavesForText) {
  ASSERT_EQ(*Add("s", {"1", "2", "-3"}), 3);
  EXPECT_EQ(db.Object("s", now)->bytes, InlineBytes("s", 3, 2));
  ASSERT_EQ(*Add("s", {"100000"}), 1);  // every slot 4 bytes now
  EXPECT_EQ(db.Object("s", now)->bytes, InlineBytes("s", 4, 4));
  ASSERT_EQ(*Add("s", {"5000000000"}), 1);
  EXPECT_EQ(db.Object("s", now)->bytes, InlineBytes("s", 5, 8));
  auto ordered = *db.SetMembers("s", now);
  EXPECT_EQ(ordered, (std::vector<std::string>{"-3", "1", "2", "100000", "5000000000"}));
  // A non-integer: out of the intset for good (Redis 7.0 calls the result a hashtable).
  ASSERT_EQ(*Add("s", {"x"}), 1);
  EXPECT_STREQ(db.Object("s", now)->encoding, "hashtable");
  ASSERT_EQ(*Rem("s", {"x"}), 1);
  EXPECT_STREQ(db.Object("s", now)->encoding, "hashtable");
  EXPECT_EQ(*db.SetCard("s", now), 5);
}

TEST_F(DbSetTest, PopRandScanAndStoreOnAnInlineIntset) {
  std::vector<std::string> ten;
  for (int i = 0; i < 10; ++i) ten.push_back(std::to_string(i * 7));
  ASSERT_EQ(*Add("s", ten), 10);
  const std::set<std::string> all(ten.begin(), ten.end());
  auto rand = db.SetRandMember("s", 4, now);
  ASSERT_EQ(rand->size(), 4u);
  for (const auto& m : *rand) EXPECT_TRUE(all.count(m));
  EXPECT_EQ(db.SetRandMember("s", -30, now)->size(), 30u);
  auto scan = db.SetScan("s", 99, "*", 1, now);
  EXPECT_EQ(scan->cursor, 0u);
  EXPECT_EQ(std::set<std::string>(scan->members.begin(), scan->members.end()), all);
  auto popped = db.SetPop("s", 3, now);
  ASSERT_EQ(popped->size(), 3u);
  std::set<std::string> left = Members("s");
  EXPECT_EQ(left.size(), 7u);
  for (const auto& m : *popped) {
    EXPECT_TRUE(all.count(m));
    EXPECT_FALSE(left.count(m));
  }
  EXPECT_EQ(db.Object("s", now)->bytes, InlineBytes("s", 7, 2));
  EXPECT_EQ(db.SetPop("s", 10, now)->size(), 7u);
  EXPECT_EQ(db.Type("s", now), ValueType::kNone);
  // SINTERSTORE and friends store through SetStore: inline when small.
  std::vector<std::string> members = {"5", "6"};
  EXPECT_EQ(db.SetStore("d", members, now), 2);
  EXPECT_EQ(db.Object("d", now)->bytes, InlineBytes("d", 2, 2));
  EXPECT_EQ(Members("d"), (std::set<std::string>{"5", "6"}));
}

TEST_F(DbSetTest, WrongTypeBothWaysAndTtlThroughRebuilds) {
  ASSERT_EQ(*Add("s", {"1", "2"}), 2);
  EXPECT_EQ(db.Get("s", now).status(), OpStatus::kWrongType);
  EXPECT_EQ(db.Type("s", now), ValueType::kSet);
  ASSERT_TRUE(db.Set("str", "v", SetOptions{}, now).ok());
  EXPECT_EQ(Add("str", {"1"}).status(), OpStatus::kWrongType);
  // A TTL past 2^48 ms takes a wider field: the Entry is rebuilt, its inline set goes along.
  ASSERT_EQ(db.ExpireAt("s", int64_t{1} << 50, ExpireCond::kNone, now), 1);
  EXPECT_EQ(Members("s"), (std::set<std::string>{"1", "2"}));
  ASSERT_EQ(*Add("s", {"3"}), 1);
  EXPECT_EQ(db.ExpireTime("s", now), int64_t{1} << 50);
  ASSERT_TRUE(db.Persist("s", now));
  EXPECT_EQ(Members("s"), (std::set<std::string>{"1", "2", "3"}));
  // Expiry removes an inline set like any other key.
  ASSERT_EQ(db.ExpireAt("s", now + 10, ExpireCond::kNone, now), 1);
  now += 11;
  EXPECT_EQ(*db.SetCard("s", now), 0);
  EXPECT_EQ(db.Type("s", now), ValueType::kNone);
}

// Copying a key out and back (RENAME, COPY, MOVE; the journal's Snapshot) keeps it inline.
TEST_F(DbSetTest, SnapshotAndRestoreOfAnInlineIntset) {
  ASSERT_EQ(*Add("s", {"10", "20", "30"}), 3);
  ASSERT_EQ(db.ExpireAt("s", now + 5'000, ExpireCond::kNone, now), 1);
  auto snap = db.Snapshot("s", now);
  ASSERT_TRUE(snap.has_value());
  EXPECT_EQ(snap->members, (std::vector<std::string>{"10", "20", "30"}));
  Db other;
  ASSERT_TRUE(other.Restore("t", *snap, false, now, false));
  EXPECT_EQ(other.Object("t", now)->bytes, InlineBytes("t", 3, 2));
  EXPECT_EQ(other.Pttl("t", now), 5'000);
  KeyView view;
  ASSERT_TRUE(db.View("s", now, &view));
  EXPECT_EQ(view.type, ValueType::kSet);
  EXPECT_EQ(std::vector<std::string>(view.members.begin(), view.members.end()),
            (std::vector<std::string>{"10", "20", "30"}));
}

// One change report per command that changed the set, whichever form it left.
TEST_F(DbSetTest, OneChangePerMutation) {
  CountingObserver obs;
  db.AddObserver(&obs);
  ASSERT_EQ(*Add("s", {"1", "2"}), 2);  // added
  EXPECT_EQ(obs.changed.size(), 1u);
  ASSERT_EQ(*Add("s", {"1"}), 0);  // nothing changed
  EXPECT_EQ(obs.changed.size(), 1u);
  ASSERT_EQ(*Add("s", {"3", "4"}), 2);
  EXPECT_EQ(obs.changed.size(), 2u);
  std::vector<std::string> many;
  for (int i = 0; i < 200; ++i) many.push_back(std::to_string(i));
  ASSERT_EQ(*Add("s", many), 196);  // inline -> block
  EXPECT_EQ(obs.changed.size(), 3u);
  std::vector<std::string> drop(many.begin() + 10, many.end());
  ASSERT_EQ(*Rem("s", drop), 190);  // block -> inline
  EXPECT_EQ(obs.changed.size(), 4u);
  ASSERT_EQ(db.SetPop("s", 2, now)->size(), 2u);
  EXPECT_EQ(obs.changed.size(), 5u);
  ASSERT_EQ(*Rem("s", many), 8);  // the last members: deleted
  EXPECT_EQ(obs.changed.size(), 6u);
  for (const auto& k : obs.changed) EXPECT_EQ(k, "s");
  db.RemoveObserver(&obs);
}

}  // namespace
}  // namespace deadbolt::shard
