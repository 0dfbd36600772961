#pragma once
// Server log lines on stderr, in Redis's style: "pid:role dd Mon yyyy hh:mm:ss.mmm # message".

#include <cstdint>

namespace deadbolt::server {

// Any thread.
void LogNotice(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void LogWarning(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Keeps a flood of one kind of log line (wrong passwords, clients closed before AUTH) from
// filling the disk: lets at most `burst` lines through in each window of `window_ms`, and
// counts the rest, so the next line let through can say how many were left out. Time is a
// parameter. Owned by one thread (each reactor keeps its own).
class LogRateLimiter {
 public:
  LogRateLimiter(int64_t window_ms, int burst) : window_ms_(window_ms), burst_(burst) {}
  // True if a line may be written at `now_ms`; then *suppressed is the number of lines refused
  // since the last one let through (and the count starts again).
  bool Allow(int64_t now_ms, uint64_t* suppressed);

 private:
  int64_t window_ms_;
  int burst_;
  int64_t window_start_ms_ = INT64_MIN;
  int used_ = 0;
  uint64_t suppressed_ = 0;
};

}  // namespace deadbolt::server
