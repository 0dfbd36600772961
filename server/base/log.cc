#include "server/base/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace deadbolt::server {
namespace {
void Log(char mark, const char* fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm t;
  localtime_r(&tv.tv_sec, &t);
  char when[64];
  size_t n = strftime(when, sizeof(when), "%d %b %Y %H:%M:%S", &t);
  snprintf(when + n, sizeof(when) - n, ".%03d", static_cast<int>(tv.tv_usec / 1000));
  fprintf(stderr, "%d:M %s %c %s\n", static_cast<int>(getpid()), when, mark, msg);
}
}  // namespace

void LogNotice(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Log('*', fmt, ap);
  va_end(ap);
}

void LogWarning(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Log('#', fmt, ap);
  va_end(ap);
}

bool LogRateLimiter::Allow(int64_t now_ms, uint64_t* suppressed) {
  if (window_start_ms_ == INT64_MIN || now_ms - window_start_ms_ >= window_ms_ ||
      now_ms < window_start_ms_) {
    window_start_ms_ = now_ms;
    used_ = 0;
  }
  if (used_ >= burst_) {
    suppressed_++;
    return false;
  }
  used_++;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

}  // namespace deadbolt::server
