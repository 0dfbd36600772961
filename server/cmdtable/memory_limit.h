#pragma once
// maxmemory with the noeviction policy, Redis's and the lock-safe one: while the process uses
// more than maxmemory, commands that may grow the data (flag kDenyOom: SET, SETNX, LOCK.ACQUIRE,
// HSET, ZADD, ... and lock-acquiring scripts) are refused with Redis's OOM error, while reads,
// deletes, expiries and releases (DEL, DELIFEQ, LOCK.RELEASE, LOCK.EXTEND, PEXPIRE, the release
// scripts) keep working. Nothing is evicted: a lock is never dropped to make room.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "server/cmdtable/command.h"

namespace deadbolt::server {

// The process's memory as the allocator sees it (mimalloc's committed bytes when mimalloc is
// the allocator, else the resident set): INFO's used_memory, what maxmemory is compared with.
size_t UsedMemoryBytes();
// The resident set (/proc/self/statm).
size_t RssBytes();

// Shared by every reactor. The first reactor measures on its timer (hz) and after CONFIG SET
// maxmemory; any thread reads the verdict, one relaxed load per command.
class MemoryLimit {
 public:
  // Measures UsedMemoryBytes() against maxmemory (0: no limit) and records the verdict.
  static bool Refresh(int64_t maxmemory);
  static bool Over() { return over_.load(std::memory_order_relaxed); }
  // Tests: the verdict without measuring.
  static void SetOver(bool over) { over_.store(over, std::memory_order_relaxed); }

 private:
  static std::atomic<bool> over_;
};

// Redis's refusal over maxmemory (processCommand's OOM check), for a call about to run or be
// queued: a kDenyOom command; inside MULTI, any command but EXEC, DISCARD, QUIT and RESET
// (queueing takes memory too); an EXEC whose queue holds a kDenyOom command
// (`exec_denyoom`). Returns the error text, or nullopt when the call may run.
std::optional<std::string_view> OomRefusal(const CommandSpec& spec, bool in_multi,
                                           bool exec_denyoom);

}  // namespace deadbolt::server
