#include "server/acl/acl_log.h"

namespace deadbolt::server::acl {

AclLog& AclLog::Get() {
  static AclLog* const log = new AclLog();
  return *log;
}

void AclLog::Add(LogEntry e, size_t max_len) {
  constexpr int64_t kGroupMs = 60 * 1000;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->reason == e.reason && it->context == e.context && it->object == e.object &&
        it->username == e.username && e.updated_ms - it->updated_ms < kGroupMs) {
      LogEntry merged = std::move(*it);
      merged.count++;
      merged.updated_ms = e.updated_ms;
      merged.client_info = std::move(e.client_info);
      entries_.erase(it);
      entries_.push_front(std::move(merged));
      return;
    }
  }
  e.created_ms = e.updated_ms;
  entries_.push_front(std::move(e));
  while (entries_.size() > max_len) entries_.pop_back();
}

std::vector<LogEntry> AclLog::Newest(size_t count) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LogEntry> out;
  for (size_t i = 0; i < entries_.size() && i < count; i++) out.push_back(entries_[i]);
  return out;
}

void AclLog::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

}  // namespace deadbolt::server::acl
