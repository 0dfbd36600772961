#include "server/cmdtable/memory_limit.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "server/base/error_strings.h"

extern "C" void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs,
                                size_t* current_rss, size_t* peak_rss, size_t* current_commit,
                                size_t* peak_commit, size_t* page_faults) __attribute__((weak));

namespace deadbolt::server {

std::atomic<bool> MemoryLimit::over_{false};
std::atomic<size_t> MemoryLimit::used_{0};
std::atomic<size_t> MemoryLimit::slack_{0};
std::atomic<int> MemoryLimit::evictable_shards_{0};

size_t RssBytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, rss = 0;
  f >> pages >> rss;
  return rss * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

size_t UsedMemoryBytes() {
  if (mi_process_info) {
    size_t e, u, s, rss, prss, commit = 0, pcommit, pf;
    mi_process_info(&e, &u, &s, &rss, &prss, &commit, &pcommit, &pf);
    if (commit) return commit;
  }
  return RssBytes();
}

bool MemoryLimit::Update(int64_t maxmemory, size_t used) {
  const size_t before = used_.exchange(used, std::memory_order_relaxed);
  size_t slack = slack_.load(std::memory_order_relaxed);
  if (maxmemory <= 0 || used > before) {
    slack = 0;  // no limit, or the writes used up the room evictions made
  } else {
    slack -= std::min(slack, before - used);  // what the allocator gave back is counted there
  }
  slack_.store(slack, std::memory_order_relaxed);
  const bool over = StillOver(maxmemory);
  over_.store(over, std::memory_order_relaxed);
  return over;
}

bool MemoryLimit::StillOver(int64_t maxmemory) {
  const size_t used = used_.load(std::memory_order_relaxed);
  const size_t slack = slack_.load(std::memory_order_relaxed);
  return maxmemory > 0 && used > slack && used - slack > static_cast<size_t>(maxmemory);
}

void MemoryLimit::NoteEvicted(size_t bytes, int64_t maxmemory) {
  slack_.fetch_add(bytes, std::memory_order_relaxed);
  if (!StillOver(maxmemory)) over_.store(false, std::memory_order_relaxed);
}

std::optional<std::string_view> OomRefusal(const CommandSpec& spec, bool in_multi,
                                           bool exec_denyoom) {
  bool refuse = (spec.flags & kDenyOom) != 0;
  const std::string_view name = spec.name;
  if (name == "exec") {
    refuse = exec_denyoom;
  } else if (in_multi && name != "discard" && name != "quit" && name != "reset") {
    refuse = true;
  }
  if (!refuse) return std::nullopt;
  return errors::kOom;
}

}  // namespace deadbolt::server
