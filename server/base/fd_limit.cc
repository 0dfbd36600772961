#include "server/base/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace deadbolt::server {

int64_t ReservedFds(int threads) { return 32 + 4 * int64_t{threads > 0 ? threads : 1}; }

FdLimitOps FdLimitOps::Real() {
  FdLimitOps ops;
  ops.get = [](uint64_t* soft, uint64_t* hard) {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
      *soft = *hard = 1024;
      return;
    }
    *soft = rl.rlim_cur;
    *hard = rl.rlim_max;
  };
  ops.set_soft = [](uint64_t soft) {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
    rl.rlim_cur = soft;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0;
  };
  return ops;
}

FdFit FitMaxClients(int64_t maxclients, int threads, const FdLimitOps& ops) {
  FdFit fit;
  const int64_t reserved = ReservedFds(threads);
  const uint64_t wanted = static_cast<uint64_t>(maxclients + reserved);
  uint64_t soft = 0, hard = 0;
  ops.get(&soft, &hard);
  if (soft < wanted) {
    const uint64_t was = soft;
    // As high as asked, or as the hard limit allows (RLIM_INFINITY is a large number).
    uint64_t target = hard < wanted ? hard : wanted;
    if (target > soft && ops.set_soft(target)) soft = target;
    if (soft < wanted) {
      fit.log.push_back("You requested maxclients of " + std::to_string(maxclients) +
                        " requiring at least " + std::to_string(wanted) + " max file descriptors.");
      fit.log.push_back("Server can't set maximum open files to " + std::to_string(wanted) +
                        " (hard limit " + std::to_string(hard) + ").");
      int64_t fits = static_cast<int64_t>(soft) - reserved;
      if (fits < 1) {
        fit.fatal = true;
        fit.log.push_back("Your current 'ulimit -n' of " + std::to_string(soft) +
                          " is not enough for the server to start: at least " +
                          std::to_string(reserved + 1) + " are needed.");
        fit.maxclients = 0;
        fit.limit = soft;
        return fit;
      }
      fit.log.push_back("Current maximum open files is " + std::to_string(soft) +
                        ". maxclients has been reduced to " + std::to_string(fits) +
                        " to compensate for low ulimit. If you need higher maxclients "
                        "increase 'ulimit -n'.");
      fit.maxclients = fits;
      fit.limit = soft;
      return fit;
    }
    fit.log.push_back("Increased maximum number of open files to " + std::to_string(soft) +
                      " (it was originally set to " + std::to_string(was) + ").");
  }
  fit.maxclients = maxclients;
  fit.limit = soft;
  return fit;
}

std::string AcceptBackoff::OnExhausted(int64_t now_ms, int err) {
  paused_ = true;
  resume_at_ms_ = now_ms + kPauseMs;
  if (last_log_ms_ != INT64_MIN && now_ms - last_log_ms_ < kLogEveryMs) {
    unlogged_++;
    return {};
  }
  std::string line = std::string("accept failed: ") + strerror(err) + "; not accepting for " +
                     std::to_string(kPauseMs) + " ms (raise 'ulimit -n' or lower maxclients)";
  if (unlogged_ > 0) {
    line += "; " + std::to_string(unlogged_) + " more such failures since the last message";
  }
  unlogged_ = 0;
  last_log_ms_ = now_ms;
  return line;
}

}  // namespace deadbolt::server
