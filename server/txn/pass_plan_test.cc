// PlanPass: where each phase of a one-pass cross-shard operation runs (pass_plan.h).

#include "server/txn/pass_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace deadbolt::server {
namespace {

using Steps = std::vector<std::vector<uint8_t>>;

TEST(PlanPass, OnePhaseOnEveryShardRunsAtTheTopThenGoingDown) {
  EXPECT_EQ(PlanPass({3}, {-1}), (Steps{{0}}));
  EXPECT_EQ(PlanPass({0, 1}, {-1}), (Steps{{}, {0}, {0}}));
  EXPECT_EQ(PlanPass({0, 2, 5}, {-1}), (Steps{{}, {}, {0}, {0}, {0}}));
}

TEST(PlanPass, LowerHigherLowerFitsAndHigherLowerHigherDoesNot) {
  // LMOVE / SMOVE / RENAME: three phases on the two keys' shards.
  EXPECT_EQ(PlanPass({0, 1}, {0, 1, 0}), (Steps{{0}, {1}, {2}}));
  EXPECT_EQ(PlanPass({0, 1}, {1, 0, 1}), std::nullopt);
  // COPY: the source reads, the destination writes, in either order.
  EXPECT_EQ(PlanPass({0, 1}, {1, 0}), (Steps{{}, {0}, {1}}));
  EXPECT_EQ(PlanPass({0, 1}, {0, 1}), (Steps{{0}, {1}, {}}));
  // Phases on one shard share its visit.
  EXPECT_EQ(PlanPass({0, 1}, {1, 1, 0}), (Steps{{}, {0, 1}, {2}}));
}

TEST(PlanPass, PhasesOnEveryShardAroundOneOnOne) {
  // Read everywhere, then write on the lower shard: up to the top, down to the lower.
  EXPECT_EQ(PlanPass({0, 1}, {-1, 0}), (Steps{{}, {0}, {0, 1}}));
  // Read everywhere, then write on the higher shard: the read on the lower one goes up.
  EXPECT_EQ(PlanPass({0, 1}, {-1, 1}), (Steps{{0}, {0, 1}, {}}));
  EXPECT_EQ(PlanPass({0, 1}, {0, -1}), (Steps{{0}, {1}, {1}}));
  // Everywhere twice: once going up, once at the top and going down.
  EXPECT_EQ(PlanPass({0, 1}, {-1, -1}), (Steps{{0}, {0, 1}, {1}}));
  // Three times does not fit.
  EXPECT_EQ(PlanPass({0, 1}, {-1, -1, -1}), std::nullopt);
}

TEST(PlanPass, EarliestRunsEachPhaseAsSoonAsItCan) {
  EXPECT_EQ(PlanPass({0, 1}, {-1}, true), (Steps{{0}, {0}, {}}));
  EXPECT_EQ(PlanPass({0, 2, 5}, {-1}, true), (Steps{{0}, {0}, {0}, {}, {}}));
  EXPECT_EQ(PlanPass({0, 1}, {0, 1, 0}, true), (Steps{{0}, {1}, {2}}));
  EXPECT_EQ(PlanPass({0, 1}, {1, 0}, true), (Steps{{}, {0}, {1}}));
  EXPECT_EQ(PlanPass({0, 1}, {0, 1}, true), (Steps{{0}, {1}, {}}));
  EXPECT_EQ(PlanPass({0, 1}, {-1, 1}, true), (Steps{{0}, {0, 1}, {}}));
  EXPECT_EQ(PlanPass({0, 1}, {1, 0, 1}, true), std::nullopt);
}

TEST(PlanPass, RefusesWhatItCannotDo) {
  EXPECT_EQ(PlanPass({0, 1}, {2}), std::nullopt);  // a shard it holds no lock on
  EXPECT_EQ(PlanPass({}, {-1}), std::nullopt);
  EXPECT_EQ(PlanPass({0}, {}), std::nullopt);
  EXPECT_EQ(PlanPass({0}, std::vector<int>(256, 0)), std::nullopt);
  EXPECT_EQ(PlanPass({0}, std::vector<int>(255, 0)).value()[0].size(), 255u);
}

// Whether some placement of every (phase, shard) at one of that shard's visits keeps the phases
// in order: brute force over every choice.
bool AnyPlacement(size_t n, const std::vector<int>& on_part) {
  struct Need {
    size_t k, part;
  };
  std::vector<Need> needs;
  for (size_t k = 0; k < on_part.size(); k++) {
    for (size_t i = 0; i < n; i++) {
      if (on_part[k] < 0 || static_cast<size_t>(on_part[k]) == i) needs.push_back({k, i});
    }
  }
  for (uint32_t mask = 0; mask < (1u << needs.size()); mask++) {
    std::vector<size_t> lo(on_part.size(), SIZE_MAX), hi(on_part.size(), 0);
    bool ok = true;
    for (size_t j = 0; j < needs.size(); j++) {
      size_t i = needs[j].part;
      bool down = (mask >> j) & 1;
      if (down && i == n - 1) ok = false;  // the top has one visit
      size_t v = down ? 2 * n - 2 - i : i;
      lo[needs[j].k] = std::min(lo[needs[j].k], v);
      hi[needs[j].k] = std::max(hi[needs[j].k], v);
    }
    for (size_t k = 0; ok && k + 1 < on_part.size(); k++) ok = hi[k] <= lo[k + 1];
    if (ok) return true;
  }
  return false;
}

TEST(PlanPass, FindsAPlacementWheneverOneExistsAndEveryPlacementKeepsOrder) {
  std::mt19937 rng(12);
  int fits = 0, not_fits = 0;
  for (int trial = 0; trial < 3000; trial++) {
    const size_t n = 1 + rng() % 3;
    std::vector<int> shards;
    for (size_t i = 0; i < n; i++) shards.push_back(static_cast<int>(i * 3 + 1));
    const size_t phases = 1 + rng() % 4;
    std::vector<int> on, on_part;
    for (size_t k = 0; k < phases; k++) {
      int part = rng() % 4 == 0 ? -1 : static_cast<int>(rng() % n);
      on_part.push_back(part);
      on.push_back(part < 0 ? -1 : shards[part]);
    }
    const bool earliest = trial % 2 == 1;
    auto steps = PlanPass(shards, on, earliest);
    ASSERT_EQ(steps.has_value(), AnyPlacement(n, on_part)) << "trial " << trial;
    if (steps) {
      // Latest puts the last phase's steps as late as they go, earliest the first phase's as
      // early: each is at the end it favours.
      const auto& edge = earliest ? steps->front() : steps->back();
      const size_t k = earliest ? 0 : phases - 1;
      bool at_edge = std::find(edge.begin(), edge.end(), k) != edge.end();
      bool can =
          earliest ? (on_part[0] < 0 || on_part[0] == 0) : (on_part[k] < 0 || on_part[k] == 0);
      ASSERT_EQ(at_edge, can) << "trial " << trial;
    }
    if (!steps) {
      not_fits++;
      continue;
    }
    fits++;
    ASSERT_EQ(steps->size(), 2 * n - 1);
    // Each phase exactly once on each of its shards, and phase k's visits all at or before
    // phase k+1's, in order within a visit.
    std::vector<std::vector<int>> runs(phases, std::vector<int>(n, 0));
    int last_k = -1;
    for (size_t v = 0; v < steps->size(); v++) {
      size_t part = v < n ? v : 2 * n - 2 - v;
      for (uint8_t k : (*steps)[v]) {
        ASSERT_GE(static_cast<int>(k), last_k) << "trial " << trial;
        last_k = k;
        runs[k][part]++;
      }
    }
    for (size_t k = 0; k < phases; k++) {
      for (size_t i = 0; i < n; i++) {
        int want = on_part[k] < 0 || static_cast<size_t>(on_part[k]) == i ? 1 : 0;
        ASSERT_EQ(runs[k][i], want) << "trial " << trial << " phase " << k << " part " << i;
      }
    }
  }
  EXPECT_GT(fits, 500);
  EXPECT_GT(not_fits, 100);
}

}  // namespace
}  // namespace deadbolt::server
