#pragma once
// ACL LOG: the newest refusals (a denied command, key or channel; a failed AUTH), shared by every
// reactor.

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace deadbolt::server::acl {

struct LogEntry {
  uint64_t count = 1;
  std::string reason;   // "command", "key", "channel", "auth"
  std::string context;  // "toplevel", "multi", "lua"
  std::string object;
  std::string username;
  int64_t created_ms = 0;  // first seen
  int64_t updated_ms = 0;  // last seen (age-seconds counts from it)
  std::string client_info;
};

// Any thread: a refusal is rare and takes a mutex; the hot path never comes here.
class AclLog {
 public:
  static AclLog& Get();
  // As Redis: an entry like a recent one (same reason, context, object and user, within 60 s)
  // counts on that one instead of taking a new place. At most `max_len` entries are kept.
  void Add(LogEntry e, size_t max_len = 128);
  // The newest `count` entries, newest first.
  std::vector<LogEntry> Newest(size_t count) const;
  void Reset();

 private:
  mutable std::mutex mu_;
  std::deque<LogEntry> entries_;  // newest first
};

}  // namespace deadbolt::server::acl
