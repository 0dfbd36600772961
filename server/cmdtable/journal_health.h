#pragma once
// Whether the journal can be written: while any shard's journal cannot (its last write or fsync
// failed: disk full, EPERM, EIO), write commands are refused with Redis's MISCONF error, on every
// reactor, until a write succeeds again (the journal retries every second). See
// docs/DURABILITY.md, "When the journal cannot be written".

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/cmdtable/command.h"

namespace deadbolt::server {

// Shared by every reactor: each sets its own shard's state (its journal's completions run on its
// thread); any thread reads. Costs one relaxed load per call while every journal is healthy.
class JournalHealth {
 public:
  explicit JournalHealth(int num_shards);

  // Shard `shard`'s journal failed with `err` (an errno, > 0), or works again.
  void SetFailed(int shard, int err);
  void SetHealthy(int shard);
  // The errno of a failing journal (the lowest-numbered shard's), or 0 when all are healthy.
  // Inline: checked before every command; one relaxed load while every journal is healthy.
  int Error() const { return failing_.load(std::memory_order_relaxed) == 0 ? 0 : FailingError(); }

 private:
  int FailingError() const;
  int num_shards_;
  std::atomic<int> failing_{0};  // shards whose journal is failing
  std::unique_ptr<std::atomic<int>[]> errs_;
};

// Redis's refusal while the journal cannot be written (processCommand's disk-error check): a
// command that may write, PING (so that health checks notice), and an EXEC whose queued commands
// include a write (`exec_writes`). Returns the error text, or nullopt when the call may run.
std::optional<std::string> JournalRefusal(const JournalHealth& health, const CommandSpec& spec,
                                          bool exec_writes);

// The length of the RESP value (RESP2 or RESP3) at the start of `buf`, or 0 if `buf` does not
// start with a whole one.
size_t RespValueLength(std::string_view buf);

// Output held for a journal batch whose write failed (reactor.cc): each reply in `held`, a run of
// whole RESP values, becomes the error `error` (without '-' and CRLF); RESP3 push messages
// ('>', pub/sub) are kept. A reply that may tell of a write not on disk must never be sent as is.
std::string FailHeldReplies(std::string_view held, std::string_view error);

}  // namespace deadbolt::server
