#pragma once
// Cross-reactor messages: a task is a closure that runs on the reactor it is sent to, and the
// prefetches that ask for the lines its sender wrote before they are read.

#include <absl/functional/any_invocable.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <utility>

namespace deadbolt::server {

constexpr size_t kCacheLine = 64;
// The most of one span asked for at once: past it the hardware prefetcher has caught on, and
// asking for more only crowds the line-fill buffers.
constexpr size_t kPrefetchMaxBytes = 24 * kCacheLine;

// A line about to be written is asked for owned (PREFETCHW): one another core has read is then
// taken from it while other work goes on, not at the store. __builtin_prefetch(p, 1) asks only
// to read it unless the build targets PRFCHW, which a portable x86-64 build does not; the
// instruction itself is a no-op on the x86 CPUs without it.
inline void PrefetchForWrite(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

// Asks for the lines of [p, p + n), at most kPrefetchMaxBytes of them: to read, or (kWrite) to
// write. Lines written by another core, asked for together, come over in parallel instead of
// each waiting at its first touch.
template <bool kWrite = false>
inline void PrefetchLines(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  n = std::min(n, kPrefetchMaxBytes);
  for (size_t off = 0; off < n; off += kCacheLine) {
    if constexpr (kWrite) {
      PrefetchForWrite(c + off);
    } else {
      __builtin_prefetch(c + off, 0, 3);
    }
  }
}

// A message between reactors. Created by the sender, run and freed by the receiver. Anything it
// carries from the sender's shard is copied in; it never holds a pointer into another shard's
// table.
//
// `hints` name what the task reads first, written by the sender's core: the receiver asks for
// those lines while the task before it runs (Reactor::DrainInbox), so their misses overlap that
// work instead of each waiting at its first touch.
struct TaskHints {
  struct Span {
    const void* p = nullptr;
    size_t len = 0;
  };
  std::array<Span, 4> spans{};
};

struct alignas(64) Task {  // two whole lines: both are asked for ahead
  explicit Task(absl::AnyInvocable<void()> f) : fn(std::move(f)) {}
  std::atomic<Task*> next{nullptr};
  absl::AnyInvocable<void()> fn;
  TaskHints hints;
};

// Many producers, one consumer: the consumer is the owning reactor's thread; producers are the
// other reactors (and the main thread for shutdown). Unbounded, lock-free (Vyukov's intrusive
// MPSC list). A producer can push a whole chain built during one loop turn with one atomic
// exchange, which is how reactors batch messages.
class TaskQueue {
 public:
  TaskQueue() : head_(&stub_), tail_(&stub_) {}
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // Any thread. `first`..`last` must already be linked through `next`.
  void PushChain(Task* first, Task* last) {
    last->next.store(nullptr, std::memory_order_relaxed);
    Task* prev = head_.exchange(last, std::memory_order_acq_rel);
    prev->next.store(first, std::memory_order_release);
  }
  void Push(Task* t) { PushChain(t, t); }

  // Consumer thread only. Returns nullptr when empty, or when a producer is between its two
  // steps (the task then shows up on a later call).
  Task* Pop() {
    Task* tail = tail_;
    Task* next = tail->next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (!next) return nullptr;
      tail_ = next;
      tail = next;
      next = next->next.load(std::memory_order_acquire);
    }
    if (next) {
      tail_ = next;
      return tail;
    }
    Task* head = head_.load(std::memory_order_acquire);
    if (tail != head) return nullptr;
    Push(&stub_);
    next = tail->next.load(std::memory_order_acquire);
    if (next) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

  // Consumer thread only: the task the next Pop() starts from (perhaps the stub), to be asked
  // for ahead while the one just popped runs: a producer on another core wrote it.
  const Task* Peek() const { return tail_; }

  // Consumer thread only: whether a Pop() might find something.
  bool MaybeNonEmpty() const {
    return tail_->next.load(std::memory_order_acquire) != nullptr || tail_ != &stub_ ||
           head_.load(std::memory_order_acquire) != &stub_;
  }

 private:
  alignas(64) std::atomic<Task*> head_;  // producers
  alignas(64) Task* tail_;               // consumer
  Task stub_{nullptr};
};

}  // namespace deadbolt::server
