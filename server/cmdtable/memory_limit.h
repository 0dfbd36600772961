#pragma once
// maxmemory. With the noeviction policy, Redis's and the lock-safe one: while the process uses
// more than maxmemory, commands that may grow the data (flag kDenyOom: SET, SETNX, LOCK.ACQUIRE,
// HSET, ZADD, ... and lock-acquiring scripts) are refused with Redis's OOM error, while reads,
// deletes, expiries and releases (DEL, DELIFEQ, LOCK.RELEASE, LOCK.EXTEND, PEXPIRE, the release
// scripts) keep working. Nothing is evicted: a lock is never dropped to make room.
//
// With another policy (volatile-ttl, volatile-lru, allkeys-lru, volatile-random,
// allkeys-random), a command that arrives while the process is over first has its reactor evict
// keys the policy picks from its own shard (Reactor::EvictForMemory, shard::Shard::Evict), until
// the process is under. When that shard has none left, the command still runs if another shard
// has some (every reactor also evicts from its own shard on its tick while the process is over);
// when none has, it is refused as above.
//
// What "under" means: used memory is the allocator's committed bytes, which freeing a key does
// not lower at once (the allocator keeps the block for the next write). So the bytes evicted
// are counted off the last measurement (the "slack") until the allocator grows again, which
// means the writes have used the room up; then the slack is forgotten and a new measurement
// decides.

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
// maxmemory; any thread reads the verdict, one relaxed load per command. Evicting reactors add
// what they freed.
class MemoryLimit {
 public:
  // Measures UsedMemoryBytes() against maxmemory (0: no limit) and records the verdict: over
  // when the measurement less the slack exceeds maxmemory. The slack is dropped when the
  // measurement grew since the last one, and shrinks by what the allocator gave back.
  static bool Refresh(int64_t maxmemory) { return Update(maxmemory, UsedMemoryBytes()); }
  static bool Over() { return over_.load(std::memory_order_relaxed); }
  // Whether the last measurement less the slack is above maxmemory (what eviction works off).
  static bool StillOver(int64_t maxmemory);
  // An evicting reactor freed `bytes`: counted as slack, and the verdict cleared once under.
  static void NoteEvicted(size_t bytes, int64_t maxmemory);
  // Reactors whose shard has keys the policy may evict (with a TTL, or any for allkeys-*): a
  // reactor with none left lets a command run while this is not 0, as those reactors evict on
  // their tick.
  static int evictable_shards() { return evictable_shards_.load(std::memory_order_relaxed); }
  static void CountEvictableShard(int delta) {
    evictable_shards_.fetch_add(delta, std::memory_order_relaxed);
  }
  // Tests: the verdict without measuring; and Refresh with a given measurement.
  static void SetOver(bool over) { over_.store(over, std::memory_order_relaxed); }
  static bool Update(int64_t maxmemory, size_t used);
  static size_t slack() { return slack_.load(std::memory_order_relaxed); }

 private:
  static std::atomic<bool> over_;
  static std::atomic<size_t> used_;   // the last measurement
  static std::atomic<size_t> slack_;  // bytes evicted since the allocator last grew
  static std::atomic<int> evictable_shards_;
};

// Redis's refusal over maxmemory (processCommand's OOM check), for a call about to run or be
// queued: a kDenyOom command; inside MULTI, any command but EXEC, DISCARD, QUIT and RESET
// (queueing takes memory too); an EXEC whose queue holds a kDenyOom command
// (`exec_denyoom`). Returns the error text, or nullopt when the call may run.
std::optional<std::string_view> OomRefusal(const CommandSpec& spec, bool in_multi,
                                           bool exec_denyoom);

}  // namespace deadbolt::server
