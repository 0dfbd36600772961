#include "server/txn/relay_route.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace deadbolt::server::relay_route {
namespace {

int Id(int s) { return s; }

Messages Of(int origin, std::vector<int> shards) { return Count(origin, shards, Id); }

// Ascending, the order the commands run in (relay.cc): (*ran)[k] is the index of the k-th
// command run, grouped by shard in ascending order, in pipeline order within a shard.
void AscendingRunOrder(const std::vector<int>& shards, std::vector<uint32_t>* ran) {
  ran->clear();
  for (int s = 0; s <= *std::max_element(shards.begin(), shards.end()); s++) {
    for (size_t i = 0; i < shards.size(); i++) {
      if (shards[i] == s) ran->push_back(static_cast<uint32_t>(i));
    }
  }
}

TEST(RelayRouteTest, AlternatingOverTwoShardsGoesAscending) {
  // From shard 0: 0 -> 1 -> 0 -> 1 -> 0 in order; ascending runs shard 0 here (its second
  // command ahead of the first, locked here), goes to 1 and comes home.
  Messages m = Of(0, {1, 0, 1, 0});
  EXPECT_EQ(m.in_order, 4);
  EXPECT_EQ(m.ascending, 2);
  // From shard 1: to 0, back to 1 (home), and a release for the locks on 0; in order, every
  // change of shard and the trip home.
  m = Of(1, {0, 1, 0});
  EXPECT_EQ(m.in_order, 4);
  EXPECT_EQ(m.ascending, 3);
  m = Of(1, {0, 1, 0, 1, 0});
  EXPECT_EQ(m.in_order, 6);
  EXPECT_EQ(m.ascending, 3);
}

TEST(RelayRouteTest, NoCommandRunsAheadWhenShardsAlreadyAscend) {
  // 0, 0, 1, 1 from 0: no release needed either way.
  Messages m = Of(0, {0, 0, 1, 1});
  EXPECT_EQ(m.in_order, 2);
  EXPECT_EQ(m.ascending, 2);
  m = Of(2, {2});
  EXPECT_EQ(m.in_order, 0);
  EXPECT_EQ(m.ascending, 0);
}

TEST(RelayRouteTest, ManyShardsEachVisitedOnceGoInOrder) {
  // Sixteen commands on sixteen shards in a shuffled order: in order costs a message per
  // command and home; ascending the same visits plus a release per shard passed early.
  std::vector<int> shards;
  for (int i = 0; i < 16; i++) shards.push_back(1 + (i * 7) % 16);
  Messages m = Of(0, shards);
  EXPECT_EQ(m.in_order, 17);
  EXPECT_GT(m.ascending, m.in_order);
}

TEST(RelayRouteTest, AscendingRunOrderGroupsByShardKeepingPipelineOrder) {
  std::vector<int> shards = {2, 0, 1, 0, 2, 1};
  std::vector<uint32_t> ran;
  AscendingRunOrder(shards, &ran);
  EXPECT_EQ(ran, (std::vector<uint32_t>{1, 3, 2, 5, 0, 4}));
}

TEST(RelayRouteTest, ATallyStartedOverForgetsTheLastRelay) {
  Tally t(0);
  for (int s : {70, 3, 1, 70, 3}) t.Add(s);  // shards beyond one word of the bitmaps
  Messages wide = t.Done();
  EXPECT_EQ(wide.in_order, 6);
  EXPECT_EQ(wide.ascending, 4 + 2);  // 0 -> 1 -> 3 -> 70 -> 0, releases on 3 and 1
  EXPECT_EQ(t.low(), 1);
  t.Reset(1);
  for (int s : {1, 0, 1}) t.Add(s);
  Messages m = t.Done();
  EXPECT_EQ(m.in_order, 2);
  EXPECT_EQ(m.ascending, 3);  // 1 -> 0 -> 1, and a release on 0 (it ran ahead of the first)
  EXPECT_EQ(t.low(), 0);
}

TEST(RelayRouteTest, CountsMatchASimulatedRelay) {
  // Walk both routes as relay.cc does and count hops, for random pipelines.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; trial++) {
    const int n_shards = trial % 10 == 9 ? 200 : 2 + trial % 5;  // some beyond 64 shards
    const int origin = static_cast<int>(rng() % n_shards);
    std::vector<int> shards(1 + rng() % 20);
    for (int& s : shards) s = static_cast<int>(rng() % n_shards);
    int hops = 0, at = origin;
    for (int s : shards) {
      hops += s != at;
      at = s;
    }
    hops += at != origin;
    std::vector<uint32_t> ran;
    AscendingRunOrder(shards, &ran);
    int asc = 0;
    at = origin;
    std::vector<bool> released(n_shards, false);
    for (size_t k = 0; k < ran.size(); k++) {
      int s = shards[ran[k]];
      asc += s != at;
      at = s;
      // Ran ahead: an earlier command is on a higher shard.
      for (uint32_t j = 0; j < ran[k]; j++) {
        if (shards[j] > s && s != origin && !released[s]) {
          released[s] = true;
          asc++;
        }
      }
    }
    asc += at != origin;
    Messages m = Of(origin, shards);
    ASSERT_EQ(m.in_order, hops) << "trial " << trial;
    ASSERT_EQ(m.ascending, asc) << "trial " << trial;
  }
}

}  // namespace
}  // namespace deadbolt::server::relay_route
