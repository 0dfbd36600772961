#pragma once
// Helpers shared by the command families: argument parsing with Redis's exact rules, and the
// plumbing of commands whose keys span shards.

#include <absl/functional/any_invocable.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "protocol/reply_builder.h"
#include "server/cmdtable/command.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/base/op_status.h"
#include "shard/types/value_type.h"

namespace deadbolt::server {

class Server;

// --- argument parsing ---

// True if `s` equals `lower` ignoring ASCII case. `lower` must be a lower-case literal made of
// letters only (option names: "nx", "keepttl", ...), which makes a single OR per byte enough.
inline bool OptionIs(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); i++) {
    if ((s[i] | 0x20) != lower[i]) return false;
  }
  return true;
}

// A strict decimal int64, as Redis's string2ll (what getLongLongFromObject accepts): an optional
// '-', then digits with no leading zero ("0" alone is fine, "-0" is not), nothing else (no '+',
// no spaces), no overflow.
inline bool StringToInt64(std::string_view s, int64_t* out) {
  const size_t n = s.size();
  if (n == 0 || n >= 21) return false;
  if (n == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative && ++i == n) return false;
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = static_cast<uint64_t>(s[i++] - '0');
  if (n - i < 18) {  // at most 18 digits: below 10^18, no overflow to check for
    for (; i < n; i++) {
      const unsigned d = static_cast<unsigned char>(s[i]) - '0';
      if (d > 9) return false;
      v = v * 10 + d;
    }
    *out = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
  }
  for (; i < n; i++) {
    const unsigned d = static_cast<unsigned char>(s[i]) - '0';
    if (d > 9) return false;
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > uint64_t{1} << 63) return false;
    *out = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

// A SCAN cursor as Redis 7.0 reads it (strtoul over the whole argument): no leading space, no
// trailing garbage, no overflow. Like strtoul it accepts a leading '+' and wraps a leading '-'.
bool ParseScanCursor(std::string_view s, uint64_t* out);

// The count of SRANDMEMBER / ZRANDMEMBER / HRANDFIELD (args[2], present) and the option after
// it (args[3]: `with`, "withscores" or "withvalues"; none for SRANDMEMBER, whose caller refuses
// a fourth argument first), checked in Redis 7.0's order, with deadbolt's limit on repeated
// picks (errors::kMaxRandPicks). False after replying the error.
bool ParseRandCount(CmdArgs args, std::string_view with, int64_t* count, bool* with_given,
                    protocol::ReplyBuilder& rb);

// The arguments of HSCAN / ZSCAN / SSCAN: key cursor [MATCH pattern] [COUNT count].
struct ElementScanArgs {
  uint64_t cursor = 0;
  std::string_view pattern = "*";
  size_t count = 10;
};
// Parses them with Redis 7.0's checks in its order: a bad cursor is an error at once; a bad
// option is an error only for a key of `type` (a missing key answers an empty scan, a key of
// another type WRONGTYPE). False when it has written that reply.
bool ParseElementScan(CmdArgs args, ShardCtx& ctx, shard::ValueType type, ElementScanArgs* out);
// The reply's first element, the next cursor, as a bulk string.
void ReplyScanCursor(protocol::ReplyBuilder& rb, uint64_t cursor);

// --- secrets ---

// True if `given` (what a client sent) equals `secret` (the password). Its running time depends
// on the length of `given` only: every byte of `given` is compared with a byte of `secret` (read
// cyclically) and the differences are OR-ed together, with no early exit, so neither where the
// first mismatch is nor how long the secret is shows in the time AUTH takes.
bool ConstantTimeEquals(std::string_view given, std::string_view secret);

// --- container commands (CLIENT, CONFIG, SLOWLOG, ...) ---

// A subcommand with its own arity, as Redis 7 checks it: "ERR wrong number of arguments for
// 'client|setname' command".
struct Sub {
  const char* name;
  int arity;
  void (*fn)(CmdArgs, Connection&, protocol::ReplyBuilder&);
};
// Runs the subcommand args[1] of `container` from subs[0..n), or replies Redis's arity or
// unknown-subcommand error.
void RunSub(const char* container, const Sub* subs, size_t n, CmdArgs args, Connection& conn,
            protocol::ReplyBuilder& rb);

// A container and its subcommands, which have its categories (`admin`: those also @admin
// @dangerous, as Redis 7.0). ACL checks the subcommand called.
CommandSpec Subs(CommandSpec parent, std::initializer_list<std::pair<const char*, int>> subs,
                 std::initializer_list<const char*> admin = {});
// As Redis 7.0: CLIENT and CONFIG themselves are only @slow, their subcommands more.
CommandSpec OnlySlow(CommandSpec container);

// A HELP subcommand's reply: its lines as simple strings, as Redis's addReplyHelp.
void WriteHelp(protocol::ReplyBuilder& rb, std::initializer_list<const char*> lines);

// --- commands whose keys span shards ---

// The ShardCtx of the connection's own shard, for work on keys this reactor owns.
ShardCtx LocalShardCtx(Connection& conn, protocol::ReplyBuilder& rb);

// True if every key args[first], args[first + step], ... is owned by shard `shard`.
bool AllKeysOn(CmdArgs args, size_t first, size_t step, const Server& server, int shard);

// Replies of a shard operation: Redis's error for a failed status (errors::ForStatus), or the
// value: as an integer (a bool as 0/1), or as a bulk with a missing key as nil.
void ReplyStatus(protocol::ReplyBuilder& rb, shard::OpStatus s);

// SRANDMEMBER-like replies without a count (ZRANDMEMBER, HRANDFIELD): the one pair's first (a
// member or field) picked, or nil.
template <typename PairsResult>
void ReplyFirstPicked(protocol::ReplyBuilder& rb, const PairsResult& r) {
  if (!r.ok()) {
    ReplyStatus(rb, r.status());
  } else if (r->empty()) {
    rb.Null();
  } else {
    rb.Bulk(r->front().first);
  }
}
template <typename T>
void ReplyInteger(protocol::ReplyBuilder& rb, const shard::OpResult<T>& r) {
  if (r.ok()) {
    rb.Integer(static_cast<int64_t>(*r));
  } else {
    ReplyStatus(rb, r.status());
  }
}
template <typename T>
void ReplyBulkOrNil(protocol::ReplyBuilder& rb, const shard::OpResult<T>& r) {
  if (r.ok()) {
    rb.Bulk(*r);
  } else if (r.status() == shard::OpStatus::kKeyNotFound) {
    rb.Null();
  } else {
    ReplyStatus(rb, r.status());
  }
}

// 0, 1, ..., num_shards-1 (built once per thread).
const std::vector<int>& AllShards(const Server& server);

// Runs fn on every reactor, each on its own thread (for per-reactor state: clients, slow log,
// stats; not keys), then finish on the connection's reactor with the results indexed by
// reactor id.
template <typename T = std::string>
void OnAllReactors(
    Connection& conn, std::type_identity_t<std::function<T(Reactor&)>> fn,
    std::type_identity_t<absl::AnyInvocable<void(std::vector<T>&, protocol::ReplyBuilder&)>>
        finish) {
  const Server& server = conn.reactor().server();
  auto results = std::make_shared<std::vector<T>>(server.num_shards());
  conn.FanOut(
      AllShards(server),
      [results, fn](ShardCtx&) {
        Reactor* r = Reactor::Current();
        (*results)[r->id()] = fn(*r);
      },
      [results, finish = std::move(finish)](protocol::ReplyBuilder& rb) mutable {
        finish(*results, rb);
      });
}

// Immutable after construction; shared (through a shared_ptr) by the shards a command fans out
// to, which only read it. The arguments of a multi-key command copied into one block, so that
// work on other reactors can read them after the connection's input buffer has moved on, with
// the shard owning each key. Keys are args[first], args[first + step], ... (step 2 for MSET's
// key value pairs); group i is the key and the step-1 arguments after it.
class ShardedKeys {
 public:
  ShardedKeys(CmdArgs args, size_t first, size_t step, const Server& server);
  ShardedKeys(const ShardedKeys&) = delete;
  ShardedKeys& operator=(const ShardedKeys&) = delete;

  size_t size() const { return owner_.size(); }
  std::string_view key(size_t i) const { return args_[i * step_]; }
  // The k-th argument after key i (k < step).
  std::string_view arg(size_t i, size_t k) const { return args_[i * step_ + k]; }
  int owner(size_t i) const { return owner_[i]; }
  // The distinct shards owning the keys, ascending.
  const std::vector<int>& shards() const { return shards_; }

  // fn(i) for every key owned by `shard`, in argument order.
  template <typename F>
  void ForEachOn(int shard, F&& fn) const {
    if (static_cast<size_t>(shard) >= on_.size()) return;
    for (uint32_t i : on_[shard]) fn(i);
  }
  // Keys a fan-out phase handles in one go on one shard before it lets the shard's reactor
  // serve others (Connection::FanOutChunked).
  static constexpr size_t kChunkKeys = 8192;
  // fn(i) for the next at most kChunkKeys keys owned by `shard`, from *cursor (advanced past
  // them). Returns true while keys are left on that shard.
  template <typename F>
  bool ForEachChunkOn(int shard, size_t* cursor, F&& fn) const {
    if (static_cast<size_t>(shard) >= on_.size()) return false;
    const std::vector<uint32_t>& on = on_[shard];
    const size_t end = std::min(on.size(), *cursor + kChunkKeys);
    for (size_t k = *cursor; k < end; k++) fn(on[k]);
    *cursor = end;
    return end < on.size();
  }

 private:
  std::string bytes_;
  std::vector<std::string_view> args_;
  std::vector<int> owner_;
  std::vector<int> shards_;
  std::vector<std::vector<uint32_t>> on_;  // per shard: its keys' indexes, in argument order
  size_t step_;
};

// Per-shard results of a fan-out, one cache line each so that shards writing their own slot do
// not share lines.
template <typename T>
struct alignas(64) PerShard {
  T v{};
};

}  // namespace deadbolt::server
