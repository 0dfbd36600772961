// Google Benchmark of the cross-reactor message layer alone: what one remote command costs in
// messages, with no sockets, no parsing and no io on the data path (issue 12).
//
// Two threads pinned to two cores play two reactors. The *client* sends synthetic commands to
// the *owner*; a command is a small closure that bumps a counter in a hash map of the owner's
// (its "shard") and sends a reply task back; the client runs the replies. Both sides use the
// server's own primitives: server::Task (one heap allocation per message, an AnyInvocable) and
// server::TaskQueue (Vyukov's MPSC list, PushChain for a batch), and the wake-up protocol of
// server/core/reactor.cc: a reactor about to sleep sets `sleeping`, checks its queue once more,
// and waits on an io_uring read of its eventfd; a sender writes the eventfd only when it swaps
// `sleeping` from true to false. Nothing here includes server/core, which is changing.
//
// Arguments: commands in flight per round trip (N), then
//   batch  0: one message per command (N pushes, N wakes at most, N reply pushes)
//          1: the N commands in one chain (one PushChain, one wake at most; the owner sends the
//             replies of one drain back as one chain)
//   sleep  0: both threads spin on their queues when idle (the message cost alone)
//          1: both sleep on their eventfd when idle (the message cost plus the wake-ups)
// Counters: time_per_cmd (wall time per command: a round trip of N commands / N), wakes_per_cmd
// (eventfd writes, both directions, per command), cmds_per_chain (mean commands per pushed chain).
// The CPU column is the benchmark thread's (the client's) only. BM_LocalCommand: the same work
// on the local shard, inline, for scale.

#include <absl/container/flat_hash_map.h>
#include <benchmark/benchmark.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "server/base/task_queue.h"

namespace {

using deadbolt::server::Task;
using deadbolt::server::TaskQueue;

constexpr uint64_t kKeys = 100000;

void PinTo(int cpu) {
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 2) return;  // one core: both threads share it, unpinned
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % ncpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// One side: an inbox, an eventfd read through its own io_uring, and the `sleeping` flag, as a
// reactor has. Owned by its thread (Drain, Idle, the ring); the other thread only pushes into
// `inbox` and calls Wake().
class Endpoint {
 public:
  explicit Endpoint(bool sleep) : sleep_(sleep) { efd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }
  ~Endpoint() {
    if (ring_ok_) io_uring_queue_exit(&ring_);
    if (efd_ >= 0) close(efd_);
  }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Owning thread, before its loop: the ring is created on the thread that uses it, with the
  // reactor's flags (falling back as the reactor does), and the eventfd read armed.
  bool SetUp() {
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(8, &ring_, &p) < 0) {
      p = io_uring_params{};
      p.flags = IORING_SETUP_COOP_TASKRUN;
      if (io_uring_queue_init_params(8, &ring_, &p) < 0 && io_uring_queue_init(8, &ring_, 0) < 0) {
        return false;
      }
    }
    ring_ok_ = true;
    Arm();
    return efd_ >= 0;
  }

  // Any thread: Reactor::Wake.
  void Wake() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleeping_.exchange(false, std::memory_order_acq_rel)) {
      uint64_t one = 1;
      ssize_t ignored = write(efd_, &one, sizeof(one));
      (void)ignored;
      wakes_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // Any thread: wakes the owner whatever it is doing (Reactor::RequestStop).
  void Kick() {
    uint64_t one = 1;
    ssize_t ignored = write(efd_, &one, sizeof(one));
    (void)ignored;
  }

  // Owning thread: runs what is queued; how many tasks ran.
  int Drain() {
    int n = 0;
    while (Task* t = inbox.Pop()) {
      t->fn();
      delete t;
      n++;
    }
    return n;
  }

  // Owning thread, when Drain found nothing: spin once, or sleep as Reactor::Turn does.
  void Idle(const std::atomic<bool>& stop) {
    if (!sleep_) {
      CpuRelax();
      return;
    }
    sleeping_.store(true, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (inbox.MaybeNonEmpty() || stop.load(std::memory_order_acquire)) {
      sleeping_.store(false, std::memory_order_relaxed);
      return;
    }
    io_uring_cqe* cqe = nullptr;
    io_uring_submit_and_wait(&ring_, 1);
    unsigned head, count = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) count++;
    io_uring_cq_advance(&ring_, count);
    if (count) Arm();
    sleeping_.store(false, std::memory_order_relaxed);
  }

  uint64_t wakes() const { return wakes_.load(std::memory_order_relaxed); }

  TaskQueue inbox;

 private:
  void Arm() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_read(sqe, efd_, &efd_value_, sizeof(efd_value_), 0);
  }

  const bool sleep_;
  int efd_ = -1;
  io_uring ring_{};
  bool ring_ok_ = false;
  uint64_t efd_value_ = 0;
  alignas(64) std::atomic<bool> sleeping_{false};
  std::atomic<uint64_t> wakes_{0};
};

// A chain of tasks being built for one target during one turn (Reactor's outbox). Owned by the
// sending thread.
struct Chain {
  Task* first = nullptr;
  Task* last = nullptr;
  uint64_t chains = 0, tasks = 0;

  void Add(Task* t) {
    if (!first) {
      first = last = t;
    } else {
      last->next.store(t, std::memory_order_relaxed);
      last = t;
    }
    tasks++;
  }
  // Pushes what was added, if anything, and wakes the target.
  void Flush(Endpoint* to) {
    if (!first) return;
    to->inbox.PushChain(first, last);
    to->Wake();
    first = last = nullptr;
    chains++;
  }
};

// The owner's side: its shard (a hash map) and its outbox of replies, used only by its thread.
struct Owner {
  absl::flat_hash_map<uint64_t, uint64_t> shard;
  Chain replies;
  uint64_t single_pushes = 0;
};

void BM_RemoteCommand(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool batch = state.range(1) != 0;
  const bool sleep = state.range(2) != 0;

  Endpoint client(sleep), owner_end(sleep);
  Owner owner;
  owner.shard.reserve(kKeys);
  for (uint64_t k = 0; k < kKeys; k++) owner.shard[k] = 0;
  std::atomic<bool> stop{false};
  std::atomic<bool> owner_ready{false};
  uint64_t replies = 0;  // client thread only

  std::thread owner_thread([&] {
    PinTo(1);
    bool ok = owner_end.SetUp();
    owner_ready.store(true, std::memory_order_release);
    if (!ok) return;
    while (!stop.load(std::memory_order_acquire)) {
      const int ran = owner_end.Drain();
      owner.replies.Flush(&client);  // batched: one chain of replies per drain
      if (ran == 0) owner_end.Idle(stop);
    }
  });
  cpu_set_t saved;
  pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
  PinTo(0);
  const bool client_ok = client.SetUp();
  while (!owner_ready.load(std::memory_order_acquire)) std::this_thread::yield();

  Chain commands;
  uint64_t single_pushes = 0;
  uint64_t key = 12345;
  for (auto _ : state) {
    if (!client_ok) {
      state.SkipWithError("io_uring/eventfd set-up failed");
      break;
    }
    const uint64_t want = replies + static_cast<uint64_t>(n);
    for (int i = 0; i < n; i++) {
      key = (key * 6364136223846793005ULL + 1442695040888963407ULL);
      const uint64_t k = (key >> 33) % kKeys;
      // The command: runs on the owner, touches its shard, sends its reply back.
      Task* t = new Task([k, batch, &owner, &client, &replies] {
        owner.shard[k]++;
        Task* reply = new Task([&replies] { replies++; });
        if (batch) {
          owner.replies.Add(reply);
        } else {
          client.inbox.Push(reply);
          client.Wake();
          owner.single_pushes++;
        }
      });
      if (batch) {
        commands.Add(t);
      } else {
        owner_end.inbox.Push(t);
        owner_end.Wake();
        single_pushes++;
      }
    }
    commands.Flush(&owner_end);
    while (replies < want) {
      if (client.Drain() == 0 && replies < want) client.Idle(stop);
    }
  }
  stop.store(true, std::memory_order_release);
  owner_end.Kick();
  owner_thread.join();
  pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);

  const double cmds = static_cast<double>(state.iterations()) * n;
  state.counters["time_per_cmd"] =
      benchmark::Counter(cmds, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["wakes_per_cmd"] =
      static_cast<double>(client.wakes() + owner_end.wakes()) / (cmds > 0 ? cmds : 1);
  const double pushes = static_cast<double>(commands.chains + owner.replies.chains + single_pushes +
                                            owner.single_pushes);
  state.counters["cmds_per_chain"] = pushes > 0 ? 2 * cmds / pushes : 0;
  state.SetItemsProcessed(static_cast<int64_t>(cmds));
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "batch", "sleep"});
  for (int sleep : {0, 1}) {
    for (int batch : {0, 1}) {
      for (int n : {1, 16, 64}) {
        if (n == 1 && batch == 1) continue;  // one command: one message either way
        b->Args({n, batch, sleep});
      }
    }
  }
}
BENCHMARK(BM_RemoteCommand)->Apply(Args)->UseRealTime();

// The same command on the connection's own shard, for scale: no message, no allocation (a local
// command runs inline in the server).
void BM_LocalCommand(benchmark::State& state) {
  absl::flat_hash_map<uint64_t, uint64_t> shard;
  shard.reserve(kKeys);
  for (uint64_t k = 0; k < kKeys; k++) shard[k] = 0;
  uint64_t key = 12345, replies = 0;
  for (auto _ : state) {
    key = (key * 6364136223846793005ULL + 1442695040888963407ULL);
    shard[(key >> 33) % kKeys]++;
    replies++;
    benchmark::DoNotOptimize(replies);
  }
  state.counters["time_per_cmd"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LocalCommand);

}  // namespace

BENCHMARK_MAIN();
