#pragma once
// locktorture: the safety checker. Every holder of a lock checks in when it enters its critical
// section and checks out when it leaves; the checker reports two holders inside at once, a
// fencing token that did not grow, a lock lost while held, and (after the run) a wait queue
// served out of order. Pure logic with no I/O, so that tests can feed it synthetic events.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace deadbolt::locktorture {

enum class ViolationKind : uint8_t {
  kOverlap,     // a holder checked in while another was inside the same lock
  kTokenOrder,  // a fencing token not greater than the last one checked in on that lock
  kOutOfOrder,  // a waiter granted before one that had asked earlier (native WAIT only)
  kLostLock,    // an extend or release by the holder found the lock no longer its own
  kCount,
};
const char* ViolationKindName(ViolationKind k);

// What went wrong and where. `detail` is one line for the user.
struct Violation {
  ViolationKind kind = ViolationKind::kOverlap;
  int lock = -1;
  int64_t at_ns = 0;  // CLOCK_MONOTONIC when it was seen (0 for the after-the-run order check)
  std::string detail;
};

// Collects violations and warnings from every client thread: counts all of them and keeps the
// first `keep` of each for printing. Shared by the client threads of one run; every member is
// safe to call from any thread.
class ViolationLog {
 public:
  explicit ViolationLog(size_t keep = 5) : keep_(keep) {}

  void Add(Violation v);
  // A warning: something that looked like a violation but has another explanation than a server
  // bug (a holder that stalled past its lease; a request the server could not read in time on a
  // machine that starved it of CPU). Counted and shown, not a failure.
  void Warn(std::string detail);

  uint64_t count(ViolationKind k) const;
  uint64_t total() const;
  uint64_t warnings() const;
  // The first `keep` violations of each kind in the order they were added, and the first `keep`
  // warnings.
  std::vector<Violation> first() const;
  std::vector<std::string> first_warnings() const;

 private:
  const size_t keep_;
  mutable std::mutex mu_;
  uint64_t counts_[static_cast<size_t>(ViolationKind::kCount)] = {};
  uint64_t warnings_ = 0;
  std::vector<Violation> first_;
  std::vector<std::string> first_warnings_;
};

// One acquisition, as its holder describes it at check-in.
struct Holder {
  int client = -1;
  uint64_t seq = 0;           // the client's acquisition number (for messages)
  int64_t lease_from_ns = 0;  // when the request that started (or last renewed) the lease was
                              // sent: the server's lease cannot have started earlier
  bool has_token = false;
  uint64_t token = 0;  // the fencing token, when the method has one
};

// A granted wait-queue acquisition (native LOCK.ACQUIRE ... WAIT), for the order check.
struct Grant {
  int client = -1;
  uint64_t token = 0;
  int64_t send_begin_ns = 0;  // read just before the request was handed to send()
  int64_t send_end_ns = 0;    // read just after send() returned: the server has the request
                              // no earlier than send_begin_ns and the kernel has it by here
  int64_t granted_ns = 0;     // read just after the grant arrived: the server had the request
                              // long before
};

// The shared record of one lock: who is inside, the last fencing token seen, and the grants of
// the run. Shared by all client threads (internally locked: a short mutex guards only the
// bookkeeping, never the critical section itself, so overlapping critical sections of two
// threads are always seen).
class LockRecord {
 public:
  // `lease_ns`: the lease every acquisition asks for. `stall_margin_ns`: how close to the end of
  // its lease a holder may be before an anomaly involving it is blamed on the client's stall
  // rather than on the server.
  LockRecord(int lock, int64_t lease_ns, int64_t stall_margin_ns = 10'000'000)
      : lock_(lock), lease_ns_(lease_ns), stall_margin_ns_(stall_margin_ns) {}
  LockRecord(const LockRecord&) = delete;
  LockRecord& operator=(const LockRecord&) = delete;

  // `h` enters the critical section at `now_ns`. Reports an overlap for every holder already
  // inside whose lease is certainly still running (one whose lease could have expired is a
  // warning: that client stalled, a correct server may hand the lock on), and a token that is not
  // greater than the last one checked in (a warning instead if `h` itself could have outlived its
  // lease before checking in). Returns true when no violation was added.
  bool CheckIn(const Holder& h, int64_t now_ns, ViolationLog* log);
  // The holder of `client` renewed its lease with a request sent at `sent_ns`.
  void Renewed(int client, int64_t sent_ns);
  // `client` leaves the critical section.
  void CheckOut(int client);
  // Holder `h` (with its latest lease_from_ns) was told by the server, at `now_ns`, that the lock
  // is not its own (`what`: "extend", "release"). A violation while its lease is certainly
  // running, otherwise a warning. Returns true when it was a violation.
  bool LostLock(const Holder& h, const char* what, int64_t now_ns, ViolationLog* log);

  // Records a granted wait-queue acquisition for CheckGrantOrder. Grants beyond `max_grants`
  // (default 4M per lock) are dropped and counted.
  void AddGrant(const Grant& g);
  std::vector<Grant> grants() const;
  uint64_t dropped_grants() const;

  int inside() const;  // holders inside now (0 or 1 unless something is wrong)
  int lock() const { return lock_; }

 private:
  bool CertainlyLeased(const Holder& h, int64_t now_ns) const {
    return now_ns - h.lease_from_ns < lease_ns_ - stall_margin_ns_;
  }

  const int lock_;
  const int64_t lease_ns_;
  const int64_t stall_margin_ns_;
  mutable std::mutex mu_;
  std::vector<Holder> inside_;  // normally 0 or 1 entries
  bool have_token_ = false;
  uint64_t last_token_ = 0;
  int last_token_client_ = -1;
  std::vector<Grant> grants_;
  uint64_t dropped_grants_ = 0;
  size_t max_grants_ = size_t{4} << 20;
};

// Moments when a thread of this process was ready to run but did not get a CPU: stall monitors
// (one per CPU, pinned to it, as the server's reactors are) sleep in short steps and record every
// wake-up that came late. On a machine with more runnable threads than cores (a 2-core box
// running a build) the server's reactors suffer the same stalls, and a request stuck in a
// stalled reactor reaches its lock's shard late.
//
// Each monitor thread fills its own StallLog; after they are joined the main thread merges them
// (Merge) and queries the result. Not thread-safe.
class StallLog {
 public:
  // A wake-up due at `due_ns` came at `woke_ns` (ignored unless late). Any order. Stalls beyond
  // 1M are dropped.
  void Add(int64_t due_ns, int64_t woke_ns);
  void Merge(const StallLog& other);
  // The longest stall that overlaps [from_ns, to_ns]; 0 if none.
  int64_t MaxStallIn(int64_t from_ns, int64_t to_ns) const;
  int64_t max_stall() const { return max_; }
  size_t size() const { return stalls_.size(); }

 private:
  struct Stall {
    int64_t due_ns;
    int64_t woke_ns;
  };
  void Sort() const;

  mutable std::vector<Stall> stalls_;  // sorted by due_ns when sorted_
  mutable bool sorted_ = true;
  int64_t max_ = 0;
  size_t max_stalls_ = size_t{1} << 20;
};

// The server's own account of its stalls, when it runs on this machine: every thread's total
// time spent runnable but waiting for a CPU (the second field of /proc/<pid>/task/<tid>/schedstat),
// sampled while the clients run. Filled by the one sampler thread; read after it is joined.
class RunDelayLog {
 public:
  // Server thread `thread` (0, 1, ...) had waited `wait_ns` in all as of `at_ns`. In time order
  // for each thread.
  void Add(int thread, int64_t at_ns, int64_t wait_ns);
  // Call once, after the last Add: finds each thread's possible continuous waits.
  void Finish();
  // The longest continuous waits for a CPU the samples allow, overlapping [from_ns, to_ns],
  // summed over the threads (a request may wait on its connection's reactor, then on its lock's
  // shard's). A continuous wait covers a run of consecutive sample intervals whose inner ones the
  // thread spent (at least 80%) waiting; it is at most the run's total wait. So a thread that
  // waited a little in every interval (a reactor on a busy core) allows only short delays, while
  // a reactor kept off the CPU for milliseconds allows that long.
  int64_t LongestStallIn(int64_t from_ns, int64_t to_ns) const;
  // Over the whole log.
  int64_t total() const;
  bool empty() const { return threads_.empty(); }

 private:
  struct Sample {
    int64_t at_ns;
    int64_t wait_ns;
  };
  // Sample intervals [from_ns, to_ns] of one thread during which it may have waited `wait_ns`
  // without a break.
  struct Stretch {
    int64_t from_ns;
    int64_t to_ns;
    int64_t wait_ns;
  };
  struct Stretches {
    std::vector<Stretch> by_from;  // sorted by from_ns
    int64_t max_span_ns = 0;
  };
  std::vector<std::vector<Sample>> threads_;
  std::vector<Stretches> stretches_;  // per thread, by Finish()
};

// What can explain a request that reached the server late, for the order check.
struct DelayEvidence {
  const StallLog* stalls = nullptr;           // this process's threads woke late (may be null)
  const RunDelayLog* server_waits = nullptr;  // the server's threads (null if not readable)

  // The longest delay the evidence allows for a request that was sent by from_ns and had reached
  // the server by to_ns; `*what` says what shows it (for the message). The larger of: the
  // server's own account, RunDelayLog::LongestStallIn over [from_ns, to_ns]; and this process's
  // longest stall from 100 ms before to 100 ms after (the monitors are only a sample of how the
  // machine treats threads, and it delays more than the server's threads: the kernel's own work
  // is deferred to threads of its own on a busy machine; load comes and goes over tens of
  // milliseconds).
  int64_t Between(int64_t from_ns, int64_t to_ns, std::string* what) const;
};

// The FIFO check, run after the clients have stopped, over the grants of one lock. Grant order
// is token order (the server hands out tokens in the order it grants). Request order is only
// known from the clients' clocks, and a request sent first may reach the lock's shard second
// (the other connection's reactor was slower to read and forward it), so a pair counts as
// ordered only when A's send had returned more than `slack_ns` before B's began:
//
//   A.send_end_ns + slack_ns < B.send_begin_ns  and  A.token > B.token   =>  out of order
//
// i.e. B asked clearly after A yet was granted first, while A was still waiting (A was granted
// after B). Every such B is counted once, against the earliest-sending A granted after it.
// Grants of waits that timed out are not in the list, so a waiter that gave up is never blamed.
//
// A CPU-starved server reads and forwards a request late by about as long as it starved. A's
// request may have been held up anywhere between its send and its grant (its arrival can come
// after B's send, after B's grant even). When `evidence` allows a delay in that time at least as
// long as the gap less the slack (slack plus delay cover the gap), the pair is a warning, not a
// violation. (Only the pair with the earliest A is judged; a later A' whose own window shows no
// such delay is not looked at.)
//
// Returns the number of out-of-order grants that are violations; adds the first few to `log`
// (kOutOfOrder) and the excused ones as warnings.
uint64_t CheckGrantOrder(int lock, std::vector<Grant> grants, int64_t slack_ns,
                         const DelayEvidence& evidence, ViolationLog* log);

}  // namespace deadbolt::locktorture
