#include "shard/types/zset_value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace deadbolt::shard {
namespace {

// Owns the latest block of a series of mutations.
class ZSet {
 public:
  ZSet() : z_(ZSetValue::Create()) {}
  ZSetValue* operator->() const { return z_.get(); }
  const ZSetValue& operator*() const { return *z_; }
  bool Set(std::string_view m, double s) {
    bool added;
    Take(ZSetValue::Set(z_.get(), m, s, &added));
    return added;
  }
  bool Del(std::string_view m) {
    bool removed;
    Take(ZSetValue::Del(z_.get(), m, &removed));
    return removed;
  }

 private:
  void Take(ZSetValue* next) {
    if (next != z_.get()) z_.reset(next);
  }
  std::unique_ptr<ZSetValue> z_;
};

using Items = std::vector<std::pair<std::string, double>>;

Items All(const ZSetValue& z, bool reverse = false) {
  Items out;
  if (z.size() == 0) return out;
  z.Range(0, z.size() - 1, reverse, [&](std::string_view m, double s) {
    out.emplace_back(std::string(m), s);
    return true;
  });
  return out;
}

TEST(ZSetValueTest, OrdersByScoreThenMemberBytes) {
  ZSet z;
  EXPECT_TRUE(z.Set("b", 1));
  EXPECT_TRUE(z.Set("a", 1));
  EXPECT_TRUE(z.Set("\xff", 1));  // unsigned bytes: after every ASCII member
  EXPECT_TRUE(z.Set("ab", 1));    // a prefix sorts first
  EXPECT_TRUE(z.Set("z", -1));
  EXPECT_TRUE(z.Set("", 1));
  EXPECT_FALSE(z.Set("b", 1));
  EXPECT_TRUE(z->packed());
  Items want = {{"z", -1}, {"", 1}, {"a", 1}, {"ab", 1}, {"b", 1}, {"\xff", 1}};
  EXPECT_EQ(All(*z), want);
  EXPECT_EQ(z->Rank("ab"), 3u);
  EXPECT_EQ(z->Rank("nope"), std::nullopt);
  EXPECT_EQ(z->Score("z"), -1);
  EXPECT_FALSE(z.Set("z", 5));  // moves to the end
  EXPECT_EQ(All(*z).back(), (std::pair<std::string, double>("z", 5)));
  EXPECT_EQ(z->CountWhile([](std::string_view, double s) { return s < 5; }), 5u);
}

TEST(ZSetValueTest, BecomesASkiplistPastTheLimitsAndPackedAgainWhenSmall) {
  ZSet z;
  for (size_t i = 0; i < ZSetValue::kMaxPackedEntries; ++i) z.Set("m" + std::to_string(i), 7);
  EXPECT_TRUE(z->packed());
  Items before = All(*z);
  z.Set("extra", 7);
  EXPECT_FALSE(z->packed());
  Items after = All(*z);
  before.insert(
      std::lower_bound(before.begin(), before.end(), std::pair<std::string, double>("extra", 7)),
      {"extra", 7});
  EXPECT_EQ(after, before);
  for (size_t i = 0; i < ZSetValue::kMaxPackedEntries + 1 - 64; ++i) {
    EXPECT_TRUE(z.Del(after[i].first));
  }
  EXPECT_EQ(z->size(), 64u);
  EXPECT_TRUE(z->packed());  // a power of two at most half the limit
  EXPECT_EQ(All(*z), Items(after.end() - 64, after.end()));

  ZSet big;
  big.Set("short", 1);
  big.Set(std::string(ZSetValue::kMaxPackedLen, 'x'), 2);
  EXPECT_TRUE(big->packed());
  big.Set(std::string(ZSetValue::kMaxPackedLen + 1, 'y'), 0);
  EXPECT_FALSE(big->packed());
  EXPECT_EQ(big->Rank(std::string(ZSetValue::kMaxPackedLen + 1, 'y')), 0u);
  EXPECT_TRUE(big.Del("short"));
  EXPECT_FALSE(big->packed());  // 2 is a power of two, but the long member does not fit
}

// Random operations against a std::set model, in both forms: order, ranks, scores, ranges in
// both directions, CountWhile, Random, Scan.
TEST(ZSetValueTest, MatchesAModel) {
  for (size_t universe : {40, 3000}) {
    std::mt19937 rng(universe);
    ZSet z;
    std::map<std::string, double> scores;
    std::set<std::pair<double, std::string>> order;
    for (int step = 0; step < 20000; ++step) {
      std::string m = "k" + std::to_string(rng() % universe);
      if (rng() % 3 == 0) {
        bool had = scores.count(m) != 0;
        EXPECT_EQ(z.Del(m), had);
        if (had) {
          order.erase({scores[m], m});
          scores.erase(m);
        }
      } else {
        double s = static_cast<double>(rng() % 50) - 25;
        bool had = scores.count(m) != 0;
        EXPECT_EQ(z.Set(m, s), !had);
        if (had) order.erase({scores[m], m});
        scores[m] = s;
        order.insert({s, m});
      }
      ASSERT_EQ(z->size(), scores.size());
    }
    EXPECT_EQ(z->packed(), universe < ZSetValue::kMaxPackedEntries);
    Items want;
    for (const auto& [s, m] : order) want.emplace_back(m, s);
    ASSERT_EQ(All(*z), want);
    Items rev(want.rbegin(), want.rend());
    EXPECT_EQ(All(*z, true), rev);
    for (size_t r = 0; r < want.size(); r += 7) {
      EXPECT_EQ(z->Rank(want[r].first), r);
      EXPECT_EQ(z->Score(want[r].first), want[r].second);
      Items part;
      z->Range(r, std::min(r + 5, want.size() - 1), true, [&](std::string_view m, double s) {
        part.emplace_back(std::string(m), s);
        return true;
      });
      ASSERT_FALSE(part.empty());
      EXPECT_EQ(part.front(), want[std::min(r + 5, want.size() - 1)]);
      EXPECT_EQ(part.back(), want[r]);
    }
    for (double bound = -26; bound <= 26; bound += 0.5) {
      size_t n = 0;
      while (n < want.size() && want[n].second < bound) ++n;
      EXPECT_EQ(z->CountWhile([&](std::string_view, double s) { return s < bound; }), n);
    }
    uint64_t state = 1;
    for (int i = 0; i < 50; ++i) {
      auto [m, s] = z->Random(&state);
      EXPECT_EQ(scores.at(std::string(m)), s);
    }
    std::map<std::string, double> scanned;
    uint64_t cursor = 0;
    int calls = 0;
    do {
      cursor =
          z->Scan(cursor, 10, [&](std::string_view m, double s) { scanned[std::string(m)] = s; });
      ASSERT_LT(++calls, 100000);
    } while (cursor != 0);
    EXPECT_EQ(scanned, scores);
  }
}

}  // namespace
}  // namespace deadbolt::shard
