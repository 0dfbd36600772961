#include "server/cmdtable/memory_limit.h"

#include <unistd.h>

#include <fstream>

#include "server/base/error_strings.h"

extern "C" void mi_process_info(size_t* elapsed_msecs, size_t* user_msecs, size_t* system_msecs,
                                size_t* current_rss, size_t* peak_rss, size_t* current_commit,
                                size_t* peak_commit, size_t* page_faults) __attribute__((weak));

namespace deadbolt::server {

std::atomic<bool> MemoryLimit::over_{false};

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

bool MemoryLimit::Refresh(int64_t maxmemory) {
  const bool over = maxmemory > 0 && UsedMemoryBytes() > static_cast<size_t>(maxmemory);
  over_.store(over, std::memory_order_relaxed);
  return over;
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
