// Google Benchmark programs for shard/: the lock hot path (SET NX PX, GET, SET+DEL) on one Db,
// and a memory report for 1M lock keys.
//
// Memory is measured three ways, printed as counters of BM_MemoryOneMillionLockKeys:
//   rss_B/key    growth of the resident set (/proc/self/statm) over the 1M inserts, divided by
//                1M: what the machine pays, allocator slack and page granularity included.
//   alloc_B/key  growth of the allocator's own figure: mimalloc's committed bytes
//                (mi_process_info) when mimalloc is the allocator, else glibc's mallinfo2()
//                in-use bytes (uordblks + hblkhd).
//   table_B/key  the bucket array alone (8 bytes per bucket).
// The memory benchmark is registered first so that it runs in a fresh heap; its numbers mean
// something only in a process that has not run other benchmarks before it.

#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "shard/base/slot.h"
#include "shard/db.h"

// Present only when mimalloc is linked in (weak: the bench also builds without it).
extern "C" void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs,
                                size_t* current_rss, size_t* peak_rss, size_t* current_commit,
                                size_t* peak_commit, size_t* page_faults) __attribute__((weak));

namespace deadbolt::shard {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kTtlMs = 30'000;
constexpr size_t kKeys = 1 << 20;

std::string LockKey(size_t i) { return "lock:" + std::to_string(i); }

// A 36-character uuid-shaped token, different per i.
std::string Token(size_t i) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08zx-%04zx-4%03zx-a%03zx-%012zx", i, i & 0xffff, i & 0xfff,
                (i >> 4) & 0xfff, i * 2654435761u);
  return std::string(buf, 36);
}

const std::vector<std::string>& Keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k(kKeys);
    for (size_t i = 0; i < kKeys; ++i) k[i] = LockKey(i);
    return k;
  }();
  return keys;
}

SetOptions NxPx(int64_t now) {
  SetOptions o;
  o.cond = SetOptions::Cond::kNX;
  o.expire = SetOptions::Expire::kAt;
  o.expire_at_ms = now + kTtlMs;
  return o;
}

size_t RssBytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, rss = 0;
  f >> pages >> rss;
  return rss * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

bool UsingMimalloc() { return mi_process_info != nullptr; }

size_t AllocatorBytes() {
  if (UsingMimalloc()) {
    size_t e, u, s, rss, prss, commit = 0, pcommit, pf;
    mi_process_info(&e, &u, &s, &rss, &prss, &commit, &pcommit, &pf);
    return commit;
  }
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

void BM_MemoryOneMillionLockKeys(benchmark::State& state) {
  constexpr size_t kN = 1'000'000;
  for (auto _ : state) {
    // Key and value text is made one at a time so that only the Db's memory grows.
    const size_t rss0 = RssBytes();
    const size_t alloc0 = AllocatorBytes();
    auto db = std::make_unique<Db>();
    for (size_t i = 0; i < kN; ++i) {
      auto r = db->Set(LockKey(i), Token(i), NxPx(kNow), kNow);
      benchmark::DoNotOptimize(r);
    }
    const size_t rss1 = RssBytes();
    const size_t alloc1 = AllocatorBytes();
    if (db->Size() != kN || db->ExpiresSize() != kN) state.SkipWithError("wrong key count");
    // Signed: in a heap that already holds freed memory the growth can be small or negative.
    state.counters["rss_B/key"] = (static_cast<double>(rss1) - static_cast<double>(rss0)) / kN;
    state.counters["alloc_B/key"] =
        (static_cast<double>(alloc1) - static_cast<double>(alloc0)) / kN;
    // 1M keys fit the 2^20-bucket table exactly (the table grows when keys == buckets).
    state.counters["table_B/key"] = static_cast<double>(kKeys * sizeof(void*)) / kN;
    state.counters["mimalloc"] = UsingMimalloc() ? 1 : 0;
    state.PauseTiming();
    db.reset();
    state.ResumeTiming();
  }
}
// One run only, whatever --benchmark_repetitions says: a second run would reuse freed memory.
BENCHMARK(BM_MemoryOneMillionLockKeys)
    ->Iterations(1)
    ->Repetitions(1)
    ->Unit(benchmark::kMillisecond);

// SET lock:<n> <token> NX PX 30000 on keys that do not exist yet (lock acquisition without
// contention). The table grows as it fills, rehash included; every 1M keys the Db is emptied
// (outside the timing).
void BM_SetNxPxFreshKeys(benchmark::State& state) {
  const auto& keys = Keys();
  const std::string token = Token(7);
  auto db = std::make_unique<Db>();
  size_t i = 0;
  for (auto _ : state) {
    if (i == kKeys) {
      state.PauseTiming();
      db = std::make_unique<Db>();
      i = 0;
      state.ResumeTiming();
    }
    auto r = db->Set(keys[i++], token, NxPx(kNow), kNow);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SetNxPxFreshKeys);

// GET of existing keys, 1M keys, visited in a shuffled order (cache misses as in real traffic).
void BM_GetHit(benchmark::State& state) {
  const auto& keys = Keys();
  Db db;
  const std::string token = Token(9);
  for (const auto& k : keys) db.Set(k, token, NxPx(kNow), kNow);
  std::vector<uint32_t> order(kKeys);
  for (size_t i = 0; i < kKeys; ++i) order[i] = static_cast<uint32_t>(i);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  size_t i = 0;
  for (auto _ : state) {
    auto r = db.Get(keys[order[i++ & (kKeys - 1)]], kNow);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetHit);

// Acquire and release: SET NX PX then DEL of the same key, over state.range(0) distinct keys in
// a Db that also holds 100k other locks. Counts one item per SET+DEL pair.
void BM_SetDelCycle(benchmark::State& state) {
  const auto& keys = Keys();
  const size_t n = static_cast<size_t>(state.range(0));
  Db db;
  const std::string token = Token(11);
  for (size_t i = kKeys - 100'000; i < kKeys; ++i) db.Set(keys[i], token, NxPx(kNow), kNow);
  size_t i = 0;
  for (auto _ : state) {
    const std::string& k = keys[i++ % n];
    auto r = db.Set(k, token, NxPx(kNow), kNow);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(db.Del(k, kNow));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SetDelCycle)->Arg(1)->Arg(1024)->Arg(100'000);

// The slot of a key, which routes every command to its shard: an untagged lock key
// ("lock:<n>", range 0), a 36-byte UUID key (1), a tagged key (2).
void BM_KeySlot(benchmark::State& state) {
  const auto& keys = Keys();
  std::vector<std::string> ks;
  for (size_t i = 0; i < 1024; ++i) {
    if (state.range(0) == 0) ks.push_back(keys[i]);
    if (state.range(0) == 1) ks.push_back("lock:" + Token(36));
    if (state.range(0) == 2) ks.push_back("{app1}" + keys[i]);
  }
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(KeySlot(ks[i++ & 1023]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KeySlot)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace deadbolt::shard

BENCHMARK_MAIN();
