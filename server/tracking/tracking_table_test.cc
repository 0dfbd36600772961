// TrackingTable against a real shard: what each kind of change owes, and to whom.

#include "server/tracking/tracking_table.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "shard/db.h"
#include "shard/shard.h"

namespace deadbolt::server {
namespace {

constexpr int64_t kNow = 1'000'000;

class TrackingTableTest : public ::testing::Test {
 protected:
  void Set(std::string_view key, int db = 0, int64_t expire_at = 0) {
    shard::SetOptions o;
    if (expire_at) {
      o.expire = shard::SetOptions::Expire::kAt;
      o.expire_at_ms = expire_at;
    }
    ASSERT_TRUE(shard_.db(db).Set(key, "v", o, kNow).ok());
  }
  // Keys owed to `client`, in the order owed.
  std::vector<std::pair<std::string, uint64_t>> OwedTo(uint64_t client) {
    for (KeyInvalidation& k : table_.TakeKeyInvalidations()) {
      if (k.to.client == client) return k.keys;
    }
    return {};
  }

  shard::Shard shard_{0, 16};
  TrackingTable table_{&shard_};
};

TEST_F(TrackingTableTest, AChangeOfARememberedKeyIsOwedOnceToEachReader) {
  table_.Remember("k", {7, 1});
  table_.Remember("k", {8, 0});
  table_.Remember("k", {7, 1});  // twice: one entry
  EXPECT_EQ(table_.keys(), 1u);
  EXPECT_EQ(table_.items(), 2u);
  Set("other");
  EXPECT_FALSE(table_.owes());
  table_.set_writer(8);
  Set("k");
  table_.set_writer(0);
  ASSERT_TRUE(table_.owes());
  std::vector<KeyInvalidation> owed = table_.TakeKeyInvalidations();
  ASSERT_EQ(owed.size(), 2u);
  for (const KeyInvalidation& k : owed) {
    EXPECT_EQ(k.to.reactor, k.to.client == 7 ? 1 : 0);
    ASSERT_EQ(k.keys.size(), 1u);
    EXPECT_EQ(k.keys[0].first, "k");
    EXPECT_EQ(k.keys[0].second, 8u);  // the writer, for NOLOOP
  }
  // Dropped once owed: the next change owes nothing until the key is read again.
  EXPECT_EQ(table_.keys(), 0u);
  Set("k");
  EXPECT_FALSE(table_.owes());
}

TEST_F(TrackingTableTest, KeysAreTrackedByNameInEveryDatabase) {
  table_.Remember("k", {7, 0});
  Set("k", /*db=*/5);
  EXPECT_EQ(OwedTo(7).size(), 1u);
}

TEST_F(TrackingTableTest, DeletionAndExpiryAreChanges) {
  table_.Remember("a", {7, 0});
  table_.Remember("b", {7, 0});
  Set("a");
  EXPECT_EQ(OwedTo(7).size(), 1u);
  Set("b", 0, kNow + 10);
  EXPECT_EQ(OwedTo(7).size(), 1u);
  table_.Remember("b", {7, 0});  // read again after the set
  EXPECT_EQ(shard_.db(0).ActiveExpire(kNow + 20, 1000), 1u);
  std::vector<std::pair<std::string, uint64_t>> owed = OwedTo(7);
  ASSERT_EQ(owed.size(), 1u);
  EXPECT_EQ(owed[0].first, "b");
  EXPECT_EQ(owed[0].second, 0u);  // nobody's command
  table_.Remember("a", {7, 0});
  EXPECT_TRUE(shard_.db(0).Del("a", kNow));
  EXPECT_EQ(OwedTo(7).size(), 1u);
}

TEST_F(TrackingTableTest, AFlushForgetsEveryKeyWithoutOwingThem) {
  table_.Remember("a", {7, 0});
  table_.Remember("b", {8, 0});
  Set("a");
  table_.Remember("a", {7, 0});
  shard_.db(3).Flush();
  EXPECT_EQ(table_.keys(), 0u);
  EXPECT_EQ(table_.items(), 0u);
  std::vector<KeyInvalidation> owed = table_.TakeKeyInvalidations();  // only the Set's
  ASSERT_EQ(owed.size(), 1u);
  Set("b");
  EXPECT_FALSE(table_.owes());
}

TEST_F(TrackingTableTest, PrefixesCollectEveryChangeUnderThem) {
  table_.AddPrefix("user:", {7, 1});
  table_.AddPrefix("", {8, 0});
  table_.set_writer(7);
  Set("user:2");
  Set("user:1");
  Set("user:2");
  table_.set_writer(0);
  Set("acct:1");
  EXPECT_TRUE(table_.owes());
  std::vector<PrefixInvalidation> owed = table_.TakePrefixInvalidations();
  ASSERT_EQ(owed.size(), 2u);
  for (const PrefixInvalidation& p : owed) {
    ASSERT_EQ(p.to.size(), 1u);
    if (p.to[0].client == 7) {
      EXPECT_EQ(p.prefix, "user:");
      EXPECT_EQ(p.to[0].reactor, 1);
      using Keys = std::vector<std::pair<std::string, uint64_t>>;
      EXPECT_EQ(p.keys, (Keys{{"user:1", 7}, {"user:2", 7}}));  // sorted, each once
    } else {
      EXPECT_EQ(p.prefix, "");
      EXPECT_EQ(p.keys.size(), 3u);
    }
  }
  EXPECT_FALSE(table_.owes());
  EXPECT_EQ(table_.prefixes(), 2u);
  table_.RemovePrefix(7, "user:");
  table_.RemovePrefixes(8);
  EXPECT_EQ(table_.prefixes(), 0u);
  Set("user:3");
  EXPECT_FALSE(table_.owes());
}

TEST_F(TrackingTableTest, ManyClientsOfOnePrefixShareItsChanges) {
  for (uint64_t c = 1; c <= 100; c++) table_.AddPrefix("p:", {c, static_cast<int>(c % 2)});
  Set("p:1");
  std::vector<PrefixInvalidation> owed = table_.TakePrefixInvalidations();
  ASSERT_EQ(owed.size(), 1u);
  EXPECT_EQ(owed[0].to.size(), 100u);
  EXPECT_EQ(table_.prefixes(), 1u);
}

TEST_F(TrackingTableTest, OverTheLimitTheFirstRememberedAreOwedAsIfChanged) {
  for (int i = 0; i < 10; i++) table_.Remember("k" + std::to_string(i), {7, 0});
  table_.Limit(4);
  EXPECT_EQ(table_.keys(), 4u);
  std::vector<std::pair<std::string, uint64_t>> evicted = OwedTo(7);
  ASSERT_EQ(evicted.size(), 6u);
  EXPECT_EQ(evicted.front().first, "k0");
  EXPECT_EQ(evicted.back().first, "k5");
  table_.Limit(0);  // no limit
  EXPECT_EQ(table_.keys(), 4u);
  table_.Limit(1, /*effort=*/2);  // at most two this time
  EXPECT_EQ(table_.keys(), 2u);
  EXPECT_EQ(OwedTo(7).size(), 2u);
  // Keys forgotten by a change are skipped: the next evicted is the oldest still remembered.
  Set("k8");
  EXPECT_EQ(OwedTo(7).size(), 1u);
  table_.Remember("k10", {7, 0});
  table_.Remember("k11", {7, 0});
  table_.Limit(2);
  std::vector<std::pair<std::string, uint64_t>> last = OwedTo(7);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].first, "k9");
  EXPECT_EQ(table_.keys(), 2u);
}

}  // namespace
}  // namespace deadbolt::server
