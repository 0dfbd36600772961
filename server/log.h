#pragma once
// Server log lines on stderr, in Redis's style: "pid:role dd Mon yyyy hh:mm:ss.mmm # message".

namespace deadbolt::server {

// Any thread.
void LogNotice(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void LogWarning(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace deadbolt::server
