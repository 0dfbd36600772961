// The cross-shard locking protocol driven step by step: several shards (each a LockTable), many
// transactions taking their locks shard by shard in ascending order (as Transaction does), and
// every message delivered in an order chosen by a seeded random scheduler — any interleaving the
// real reactors could produce, given that messages between two reactors keep their order. Each
// run must finish every transaction (no deadlock) and never let two transactions hold one key.

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "server/txn/lock_table.h"

namespace deadbolt::server {
namespace {

struct SimTx {
  uint64_t id;
  int origin;
  std::vector<std::pair<int, std::vector<std::string>>> parts;  // ascending shard
  bool locked = false;
  bool done = false;
};

class Sim {
 public:
  Sim(int shards, uint64_t seed) : tables_(shards), rng_(seed) {}

  // A message from `from` to `to`, run when the scheduler delivers it.
  void Send(int from, int to, std::function<void()> fn) { queues_[{from, to}].push_back(fn); }

  void Start(SimTx* tx) {
    Send(tx->origin, tx->parts[0].first, [this, tx] { LockStep(tx, 0); });
  }

  void LockStep(SimTx* tx, size_t i) {
    auto& [shard, names] = tx->parts[i];
    LockTable& t = tables_[shard];
    if (!t.TryLock(tx->id, names, false)) {
      t.ParkTx(tx->id, names, false, [this, tx, i] { LockStep(tx, i); });
      return;
    }
    if (i + 1 < tx->parts.size()) {
      Send(shard, tx->parts[i + 1].first, [this, tx, i] { LockStep(tx, i + 1); });
    } else {
      Send(shard, tx->origin, [this, tx] { Run(tx); });
    }
  }

  // Every lock held: check that no other transaction holds any of these keys, then release.
  void Run(SimTx* tx) {
    for (auto& [shard, names] : tx->parts) {
      for (auto& n : names) {
        auto key = std::make_pair(shard, n);
        ASSERT_FALSE(holders_.count(key)) << "two holders of one key";
        holders_.insert(key);
      }
    }
    tx->locked = true;
    for (auto& [shard, names] : tx->parts) {
      for (auto& n : names) holders_.erase({shard, n});
      int s = shard;
      auto ns = names;
      Send(tx->origin, s, [this, tx, s, ns] { tables_[s].Unlock(tx->id, ns, false); });
    }
    tx->done = true;
  }

  // Delivers one message from a random non-empty queue; false when nothing is left.
  bool Step() {
    std::vector<std::pair<int, int>> ready;
    for (auto& [k, q] : queues_) {
      if (!q.empty()) ready.push_back(k);
    }
    if (ready.empty()) return false;
    auto k = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng_)];
    auto fn = queues_[k].front();
    queues_[k].pop_front();
    fn();
    return true;
  }

  std::mt19937_64& rng() { return rng_; }
  LockTable& table(int i) { return tables_[i]; }

 private:
  std::vector<LockTable> tables_;
  std::map<std::pair<int, int>, std::deque<std::function<void()>>> queues_;
  std::set<std::pair<int, std::string>> holders_;
  std::mt19937_64 rng_;
};

// Many seeds, 3 shards, 12 transactions over 4 keys per shard, each wanting 1-3 keys on 1-3
// shards, started in random order from random coordinators.
TEST(TransactionSimTest, EveryInterleavingFinishesWithoutOverlap) {
  constexpr int kShards = 3, kKeys = 4, kTxs = 12;
  for (uint64_t seed = 1; seed <= 300; seed++) {
    SCOPED_TRACE(seed);
    Sim sim(kShards, seed);
    std::vector<SimTx> txs(kTxs);
    for (int i = 0; i < kTxs; i++) {
      SimTx& tx = txs[i];
      tx.id = i + 1;
      tx.origin = static_cast<int>(sim.rng()() % kShards);
      for (int s = 0; s < kShards; s++) {
        if (sim.rng()() % 2) continue;
        std::vector<std::string> names;
        for (int k = 0; k < kKeys; k++) {
          if (sim.rng()() % 3 == 0) names.push_back(LockTable::Name(0, "k" + std::to_string(k)));
        }
        if (!names.empty()) tx.parts.emplace_back(s, names);
      }
      if (tx.parts.empty())
        tx.parts.emplace_back(0, std::vector<std::string>{LockTable::Name(0, "k0")});
    }
    for (SimTx& tx : txs) sim.Start(&tx);
    int steps = 0;
    while (sim.Step()) {
      ASSERT_LT(++steps, 100000) << "livelock";
    }
    for (const SimTx& tx : txs) EXPECT_TRUE(tx.done) << "transaction " << tx.id << " never ran";
    for (int s = 0; s < kShards; s++) {
      EXPECT_TRUE(sim.table(s).idle()) << "shard " << s << " kept locks or waiters";
    }
  }
}

// The classic deadlock shape: A wants {x on shard 0, y on shard 1}, B wants the same keys. With
// ascending order both ask shard 0 first, so one simply waits for the other.
TEST(TransactionSimTest, OppositeKeyOrdersCannotDeadlock) {
  for (uint64_t seed = 1; seed <= 200; seed++) {
    Sim sim(2, seed);
    SimTx a{1, 1, {{0, {LockTable::Name(0, "x")}}, {1, {LockTable::Name(0, "y")}}}};
    SimTx b{2, 0, {{0, {LockTable::Name(0, "x")}}, {1, {LockTable::Name(0, "y")}}}};
    sim.Start(&a);
    sim.Start(&b);
    while (sim.Step()) {
    }
    EXPECT_TRUE(a.done && b.done) << "seed " << seed;
  }
}

// The crowd of issue 16: every client pipelines MSET a b / MGET a b c, whose keys sit on both
// shards, so every transaction queues on shard 0 for b (and c) and then on shard 1 for a, with
// single-key reads of b arriving meanwhile. Every seed must finish everything, and the waiting
// work looked at must grow linearly with the crowd: the old table went over every waiter at
// each release, n^2/2 looks for n waiters, which froze the shard for minutes at a few thousand.
TEST(TransactionSimTest, AHotKeyCrowdDrainsInLinearWork) {
  constexpr int kTxs = 1500;
  for (uint64_t seed = 1; seed <= 5; seed++) {
    SCOPED_TRACE(seed);
    Sim sim(2, seed);
    const std::string a = LockTable::Name(0, "a"), b = LockTable::Name(0, "b"),
                      c = LockTable::Name(0, "c");
    std::vector<SimTx> txs(kTxs);
    int reads = 0, reads_done = 0;
    for (int i = 0; i < kTxs; i++) {
      SimTx& tx = txs[i];
      tx.id = i + 1;
      tx.origin = static_cast<int>(sim.rng()() % 2);
      if (sim.rng()() % 2) {
        tx.parts = {{0, {b}}, {1, {a}}};  // MSET a 1 b 2
      } else {
        tx.parts = {{0, {b, c}}, {1, {a}}};  // MGET a b c
      }
      sim.Start(&tx);
      if (i % 10 == 0) {  // EXISTS b from another client, forwarded to shard 0
        reads++;
        sim.Send(1, 0, [&sim, &reads_done, b, i] {
          LockTable& t = sim.table(0);
          auto read = [&reads_done] { reads_done++; };
          if (!t.idle() && t.Blocked(0, "b")) {
            t.Park({b}, 1000 + i, read);
          } else {
            read();
          }
        });
      }
    }
    int steps = 0;
    while (sim.Step()) {
      ASSERT_LT(++steps, 50 * kTxs) << "livelock";
    }
    for (const SimTx& tx : txs) ASSERT_TRUE(tx.done) << "transaction " << tx.id << " never ran";
    EXPECT_EQ(reads_done, reads);
    uint64_t looks = sim.table(0).examined() + sim.table(1).examined();
    EXPECT_LT(looks, 20u * kTxs) << "waiting work looked at " << looks << " times";
    EXPECT_TRUE(sim.table(0).idle());
    EXPECT_TRUE(sim.table(1).idle());
  }
}

}  // namespace
}  // namespace deadbolt::server
