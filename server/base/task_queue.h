#pragma once
// Cross-reactor messages: a task is a closure that runs on the reactor it is sent to, and the
// prefetches that ask for the lines its sender wrote before they are read.

#include <absl/functional/any_invocable.h>
#include <mimalloc.h>  // for mi_heap_t: the functions are declared weak below

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <new>
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

// mimalloc's heaps, where the server runs on it (weak: null in builds without it, the sanitizer
// builds and the unit tests).
extern "C" mi_heap_t* mi_heap_new() __attribute__((weak));
extern "C" void* mi_heap_malloc_aligned(mi_heap_t* heap, size_t size, size_t alignment)
    __attribute__((weak));
extern "C" void mi_free(void* p) __attribute__((weak));

struct alignas(64) Task {  // two whole lines: both are asked for ahead
  explicit Task(absl::AnyInvocable<void()> f) : fn(std::move(f)) {}
  std::atomic<Task*> next{nullptr};
  absl::AnyInvocable<void()> fn;
  TaskHints hints;

  // Tasks come from a heap of their own on each thread. The reactors keep thousands for reuse
  // (Reactor::spare_tasks_); among the keys' blocks, each kept a page of freed keys resident:
  // after FLUSHALL of 300,000 small keys, 18 MB more (tests/e2e/test_limits.py).
  static void* operator new(size_t n, std::align_val_t al) {
    if (mi_heap_new != nullptr && mi_heap_malloc_aligned != nullptr) {
      thread_local mi_heap_t* heap = mi_heap_new();
      if (heap != nullptr) {
        if (void* p = mi_heap_malloc_aligned(heap, n, static_cast<size_t>(al))) return p;
      }
    }
    return ::operator new(n, al);
  }
  // (With mimalloc linked it is the process's allocator: mi_free frees either kind of block.)
  static void operator delete(void* p, std::align_val_t al) {
    if (mi_free != nullptr) {
      mi_free(p);
    } else {
      ::operator delete(p, al);
    }
  }
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
