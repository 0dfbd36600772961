// What moving one cache line between two CPUs costs right now: two threads, pinned to the CPUs
// given, hand a counter back and forth, and the mean round trip is printed.
//
// A relay (server/core/relay.cc) pays such transfers for every line of its commands and
// replies, and a wake-up an IPI between the same CPUs. On a VM the hypervisor moves vCPUs between
// physical cores as it likes, and this cost then changes by 3-4x from one second to the next.
// `compare.py --suite cross-shard` runs this just before each run, so that a round's ratios can
// be read beside what a transfer cost at the time.
//
//   core_pingpong [cpu_a cpu_b [round_trips]]     prints: round_trip_ns <mean>
//
// Exits 2 without a number when the two CPUs cannot both be had (one CPU, or not allowed), or
// when the hand-offs take over a second in all (the other thread was not running: a busy
// machine, and then the number would say nothing about the line).

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

alignas(64) std::atomic<long> counter{0};
alignas(64) std::atomic<bool> give_up{false};

bool Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// Waits until the counter is `want` (true) or the other side gave up (false).
bool WaitFor(long want) {
  for (unsigned spins = 0;; spins++) {
    if (counter.load(std::memory_order_acquire) == want) return true;
    if ((spins & 1023) == 0 && give_up.load(std::memory_order_relaxed)) return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int cpu_a = argc > 2 ? std::atoi(argv[1]) : 0;
  const int cpu_b = argc > 2 ? std::atoi(argv[2]) : 1;
  const long trips = argc > 3 ? std::atol(argv[3]) : 100000;
  if (cpu_a == cpu_b || trips <= 0) return 2;
  bool b_pinned = false;
  std::atomic<bool> b_ready{false};
  std::thread b([&] {
    b_pinned = Pin(cpu_b);
    b_ready.store(true, std::memory_order_release);
    if (!b_pinned) return;
    for (long i = 0; i < trips; i++) {
      if (!WaitFor(2 * i + 1)) return;
      counter.store(2 * i + 2, std::memory_order_release);
    }
  });
  while (!b_ready.load(std::memory_order_acquire)) {
  }
  if (!b_pinned || !Pin(cpu_a)) {
    give_up.store(true);
    b.join();
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto limit = start + std::chrono::seconds(1);
  bool done = true;
  for (long i = 0; i < trips; i++) {
    counter.store(2 * i + 1, std::memory_order_release);
    for (unsigned spins = 0; counter.load(std::memory_order_acquire) != 2 * i + 2; spins++) {
      if ((spins & 1023) == 1023 && Clock::now() > limit) {
        done = false;
        break;
      }
    }
    if (!done) break;
  }
  const auto end = Clock::now();
  give_up.store(true);
  b.join();
  if (!done) return 2;
  std::printf("round_trip_ns %.0f\n",
              std::chrono::duration<double, std::nano>(end - start).count() / trips);
  return 0;
}
