#pragma once
// BUSY: which shards are running a Lua script that has passed busy-reply-threshold, and SCRIPT
// KILL's request to stop it.
//
// A Lua script runs on its shard's reactor thread, which serves nothing else meanwhile. Once the
// script has run longer than busy-reply-threshold (lua-time-limit), its Lua hook marks the shard
// busy here; every other reactor then answers BUSY to a command that needs that shard instead of
// sending it there (server/core/connection.cc), its own reactor serves its clients from the hook
// (Reactor::ServeWhileBusy), and SCRIPT KILL, from any reactor, asks the script to stop. The
// hook sees the request and raises the kill error.

#include <atomic>
#include <cstdint>
#include <string_view>

#include "server/base/error_strings.h"

namespace deadbolt::server {

// Process-wide; every member is an atomic read or written by any reactor thread. Each shard's
// slot is written by the thread running its script (MarkBusy/MarkWrote/Clear) and by SCRIPT
// KILL (RequestKill).
class ScriptBusy {
 public:
  static constexpr int kMaxShards = 1024;
  // kWrongKind: SCRIPT KILL for a function, or FUNCTION KILL for an EVAL script (refused with
  // the other's BUSY text, as Redis).
  enum class Kill : uint8_t { kNotBusy, kUnkillable, kKilled, kWrongKind };

  static ScriptBusy& Get() { return instance_; }
  // One relaxed load: whether any shard is busy (checked before every command).
  bool any() const { return busy_shards_.load(std::memory_order_relaxed) > 0; }
  bool busy(int shard) const {
    return shard >= 0 && shard < kMaxShards &&
           slots_[shard].state.load(std::memory_order_acquire) != kIdle;
  }

  // --- the thread running a script on `shard` ---
  // The script (a function, FCALL, or not) has run past the threshold: other reactors answer
  // BUSY for this shard.
  void MarkBusy(int shard, bool function) {
    uint8_t idle = kIdle;
    if (slots_[shard].state.compare_exchange_strong(idle, function ? kBusyFunction : kBusy)) {
      busy_shards_.fetch_add(1);
    }
  }
  // The script changed the dataset: SCRIPT KILL can no longer stop it (UNKILLABLE, as Redis).
  void MarkWrote(int shard) { slots_[shard].wrote.store(true, std::memory_order_release); }
  bool kill_requested(int shard) const {
    return slots_[shard].kill.load(std::memory_order_acquire);
  }
  // A script starts or ends on `shard`: not busy, no kill pending, nothing written.
  void Clear(int shard) {
    Slot& s = slots_[shard];
    if (s.state.exchange(kIdle) != kIdle) busy_shards_.fetch_sub(1);
    s.kill.store(false, std::memory_order_release);
    s.wrote.store(false, std::memory_order_release);
  }

  // --- SCRIPT KILL (function: FUNCTION KILL), any reactor ---
  // Asks the first busy script of that kind that has written nothing to stop.
  Kill RequestKill(bool function = false) {
    if (!any()) return Kill::kNotBusy;
    Kill result = Kill::kNotBusy;
    for (Slot& s : slots_) {
      const uint8_t state = s.state.load(std::memory_order_acquire);
      if (state == kIdle) continue;
      if (s.wrote.load(std::memory_order_acquire)) {
        result = Kill::kUnkillable;
        continue;
      }
      if ((state == kBusyFunction) != function) {
        if (result == Kill::kNotBusy) result = Kill::kWrongKind;
        continue;
      }
      s.kill.store(true, std::memory_order_release);
      return Kill::kKilled;
    }
    return result;
  }
  // The BUSY error the others get: it names FUNCTION KILL when the first busy script is a
  // function.
  std::string_view busy_error() const {
    for (const Slot& s : slots_) {
      const uint8_t state = s.state.load(std::memory_order_acquire);
      if (state != kIdle)
        return state == kBusyFunction ? errors::kBusyFunction : errors::kBusyScript;
    }
    return errors::kBusyScript;
  }

 private:
  static constexpr uint8_t kIdle = 0;
  static constexpr uint8_t kBusy = 1;
  static constexpr uint8_t kBusyFunction = 2;
  struct Slot {
    std::atomic<uint8_t> state{kIdle};
    std::atomic<bool> kill{false};
    std::atomic<bool> wrote{false};
  };
  constexpr ScriptBusy() = default;
  // Constant-initialized (no guard to test on each Get, no start-up order to get wrong).
  static constinit ScriptBusy instance_;
  std::atomic<int> busy_shards_{0};
  Slot slots_[kMaxShards];
};

inline constinit ScriptBusy ScriptBusy::instance_;

}  // namespace deadbolt::server
