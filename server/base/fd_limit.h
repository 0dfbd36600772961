#pragma once
// Fitting --maxclients to the descriptor limit (RLIMIT_NOFILE), and pacing accept() once the
// process is out of descriptors.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace deadbolt::server {

// Descriptors kept back from clients: the ring, eventfd and journal of every reactor, the
// listening socket, log and the odd file opened on the way (as Redis keeps 32 back).
int64_t ReservedFds(int threads);

// The soft and hard RLIMIT_NOFILE, and a way to set the soft one (returns false if refused).
// Injected so that tests need not change the test process's own limit.
struct FdLimitOps {
  std::function<void(uint64_t* soft, uint64_t* hard)> get;
  std::function<bool(uint64_t soft)> set_soft;
  static FdLimitOps Real();
};

struct FdFit {
  int64_t maxclients = 0;        // what the server can serve (<= the requested)
  uint64_t limit = 0;            // the soft limit afterwards
  std::vector<std::string> log;  // lines for the log, in order (nothing when all was well)
  bool fatal = false;            // not even one client fits: the server must not start
};

// Main thread, at start: raises the soft limit to maxclients + ReservedFds(threads) (as far as
// the hard limit lets it, as Redis does), and lowers maxclients to what the limit then allows.
FdFit FitMaxClients(int64_t maxclients, int threads, const FdLimitOps& ops);

// Owned by the reactor that accepts. After EMFILE/ENFILE from accept, accepting pauses for a
// while (a connection closing resumes it earlier), and the warning is logged at most once per
// log interval, with how many were left unsaid. Time is a parameter (ms).
class AcceptBackoff {
 public:
  static constexpr int64_t kPauseMs = 100;
  static constexpr int64_t kLogEveryMs = 10'000;

  // An accept failed for want of descriptors at now_ms. Returns the log line to write (empty:
  // stay quiet) and sets the pause.
  std::string OnExhausted(int64_t now_ms, int err);
  bool paused() const { return paused_; }
  int64_t resume_at_ms() const { return resume_at_ms_; }
  // The pause is over (its timer fired, or a descriptor was freed).
  void Resume() { paused_ = false; }

 private:
  bool paused_ = false;
  int64_t resume_at_ms_ = 0;
  int64_t last_log_ms_ = INT64_MIN;
  uint64_t unlogged_ = 0;
};

}  // namespace deadbolt::server
