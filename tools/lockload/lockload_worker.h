#pragma once
// lockload: one load thread - its own io_uring and its share of the connections.

#include <liburing.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>
#include <string>
#include <vector>

#include "tools/lockload/lockload_histogram.h"
#include "tools/lockload/lockload_options.h"
#include "tools/lockload/lockload_request.h"
#include "tools/lockload/lockload_resp.h"

namespace deadbolt::lockload {

// CLOCK_MONOTONIC in nanoseconds.
int64_t NowNs();

// When the load starts, when measurement starts (after the warmup) and when it ends (duration
// mode; INT64_MAX with -n). Written by the main thread before it opens the `go` latch, read-only
// after.
struct RunPlan {
  int64_t start_ns = 0;
  int64_t measure_ns = 0;
  int64_t end_ns = INT64_MAX;
  bool abort = false;  // setup failed somewhere: workers return without sending
};

// Owned by the main thread, which constructs it, starts Run() on a thread of its own and joins
// it. Between those only the worker thread touches its ring, connections and plain counters; the
// main thread reads just the atomics (ops(), errors(), done(), histogram()). Everything else is
// read after the join.
class Worker {
 public:
  // `budget`: requests this worker measures in count mode (0 in duration mode). `rate`: this
  // worker's share of --rate (0 for closed loop).
  Worker(int id, const Options& opts, const RequestSet& reqs, int num_conns, uint64_t budget,
         double rate, uint64_t seed);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Worker thread: connects and greets its connections, counts `ready` down, waits for `go`,
  // then runs until the plan (or `stop`) ends the load and in-flight replies are drained.
  void Run(std::latch* ready, std::latch* go, const RunPlan* plan, const std::atomic<bool>* stop);

  // Any thread, any time.
  uint64_t ops() const { return ops_.load(std::memory_order_relaxed); }
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  bool done() const { return done_.load(std::memory_order_acquire); }
  const LatencyHistogram& histogram() const { return *hist_; }

  // Once `ready` has opened (set before the count-down).
  const std::string& setup_error() const { return setup_error_; }
  // After the join.
  const std::string& first_error() const { return first_error_; }
  int64_t first_error_ns() const { return first_error_ns_; }
  uint64_t replies_of(ReplyType t) const { return by_type_[static_cast<size_t>(t)]; }
  uint64_t sent() const { return sent_; }
  int64_t last_measured_ns() const { return last_measured_ns_; }
  const char* ring_mode() const { return ring_mode_; }

 private:
  struct Pending {
    int64_t intended_ns;  // open loop: the scheduled time; closed loop: when the batch was built
    uint32_t key;
    ReqKind kind;
    bool measured;  // count mode: this request is one of the budget
  };
  struct Conn;

  std::string SetUp();
  std::string OpenConnection(Conn* c);
  void Loop();
  // Worker thread, after Loop(): completes every operation in flight and closes the ring.
  void Teardown();
  void HandleCqe(io_uring_cqe* cqe, int64_t now);
  void OnRecv(Conn* c, int res, int64_t now);
  void OnSend(Conn* c, int res, int64_t now);
  // Closed loop: the next batch on `c` (releases first, then the workload's requests).
  void StartBatch(Conn* c, int64_t now);
  // Open loop: the requests whose scheduled time has come.
  void IssueTicks(int64_t now);
  // When request number `tick` of this worker's open-loop schedule is due.
  int64_t TickTime(uint64_t tick) const;
  void Append(Conn* c, ReqKind kind, uint32_t key, int64_t intended, bool measured);
  // Whether the next request started now is in the count-mode budget (and takes it).
  bool TakeBudget(int64_t now);
  bool Issuing(int64_t now) const;
  void Kick(Conn* c);
  // Open loop: `c` has requests to send at the end of this loop turn.
  void MarkDirty(Conn* c);
  void ArmRecv(Conn* c);
  io_uring_sqe* GetSqe();
  void KillConn(Conn* c, const std::string& why, int64_t now);
  // Counts an error; `describe()` (which returns its text) runs only for the first one, so that
  // a flood of error replies allocates nothing.
  template <typename Describe>
  void NoteError(int64_t now, Describe describe) {
    errors_.store(errors_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (first_error_.empty()) {
      first_error_ = describe();
      first_error_ns_ = now;
    }
  }
  bool AllIdle() const;

  const int id_;
  const Options& opts_;
  const RequestSet& reqs_;
  const int num_conns_;
  const double rate_;
  const uint64_t seed_;
  const bool open_loop_;
  const bool count_mode_;
  const RunPlan* plan_ = nullptr;
  const std::atomic<bool>* stop_ = nullptr;

  io_uring ring_{};
  bool ring_ok_ = false;
  const char* ring_mode_ = "none";
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Conn*> dirty_;  // open loop: connections with requests appended this turn
  size_t max_request_ = 0;
  uint64_t budget_;         // count mode: measured requests not yet started
  bool stopped_ = false;    // no new requests (the plan's end, the budget, or a stop)
  int64_t stopped_ns_ = 0;  // when stopped_ was set; in-flight replies get kDrainNs from then
  int live_conns_ = 0;

  // Open loop schedule: request number tick_ goes out at start + tick_ / rate on connection
  // tick_ % num_conns.
  uint64_t tick_ = 0;
  int64_t next_tick_ns_ = 0;
  size_t tick_conn_ = 0;

  std::unique_ptr<LatencyHistogram> hist_;
  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<bool> done_{false};
  std::array<uint64_t, static_cast<size_t>(ReplyType::kCount)> by_type_{};
  uint64_t sent_ = 0;
  int64_t last_measured_ns_ = 0;
  std::string setup_error_;
  std::string first_error_;
  int64_t first_error_ns_ = INT64_MAX;
};

}  // namespace deadbolt::lockload
