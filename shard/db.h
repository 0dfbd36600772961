#pragma once
// One logical database (SELECT n) of one shard: keys, values and expiry.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shard/op_status.h"

namespace deadbolt::shard {

enum class ValueType : uint8_t { kNone, kString, kHash };

// Options of SET (and of SETNX, SETEX, PSETEX, GETSET, MSET, which are SETs with fixed options).
struct SetOptions {
  enum class Cond : uint8_t { kNone, kNX, kXX };
  enum class Expire : uint8_t { kClear, kKeep, kAt };  // kClear: a plain SET drops the old TTL
  Cond cond = Cond::kNone;
  bool get = false;  // GET: hand back the old value
  Expire expire = Expire::kClear;
  int64_t expire_at_ms = 0;  // absolute unix ms, with Expire::kAt
};

struct SetResult {
  bool written = false;
  std::optional<std::string> old_value;  // with SetOptions::get, if the key held a string
};

// NX | XX | GT | LT of EXPIRE and friends.
enum class ExpireCond : uint8_t { kNone, kNX, kXX, kGT, kLT };

// GETEX's change to the TTL.
struct ExpireChange {
  enum class Kind : uint8_t { kNone, kPersist, kAt };
  Kind kind = Kind::kNone;
  int64_t at_ms = 0;
};

struct ScanResult {
  uint64_t cursor = 0;  // 0 when the scan is complete
  std::vector<std::string> keys;
};

// Owned by one shard's reactor thread; never touched by another thread. Every operation takes
// the current time `now_ms` (unix ms) as a parameter: an expired key is removed lazily when an
// operation meets it and is never visible. ActiveExpire() removes expired keys that nobody touches.
// String views handed out stay valid until the next mutating call on this Db.
class Db {
 public:
  Db();
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // --- strings ---
  OpResult<std::string_view> Get(std::string_view key, int64_t now_ms);
  // NX/XX not met: ok, written == false (old_value still filled with GET). With GET on a
  // non-string: kWrongType and nothing written. An expire time at or before now_ms: written,
  // and the key ends up deleted (never visible), as EXPIRE does with such a time.
  OpResult<SetResult> Set(std::string_view key, std::string_view value, const SetOptions& opts,
                          int64_t now_ms);
  OpResult<std::string> GetDel(std::string_view key, int64_t now_ms);
  // With Kind::kAt at or before now_ms the key is deleted and its value returned.
  OpResult<std::string_view> GetEx(std::string_view key, const ExpireChange& change,
                                   int64_t now_ms);
  // New length. kStringTooLong beyond max_string_len.
  OpResult<int64_t> Append(std::string_view key, std::string_view value, int64_t now_ms,
                           int64_t max_string_len);
  OpResult<int64_t> StrLen(std::string_view key, int64_t now_ms);  // 0 when missing
  // Redis GETRANGE semantics (negative indexes from the end); "" when missing.
  OpResult<std::string> GetRange(std::string_view key, int64_t start, int64_t end, int64_t now_ms);
  // New length. offset < 0 is rejected by the caller; kStringTooLong when offset+len is too big.
  OpResult<int64_t> SetRange(std::string_view key, int64_t offset, std::string_view value,
                             int64_t now_ms, int64_t max_string_len);
  OpResult<int64_t> IncrBy(std::string_view key, int64_t delta, int64_t now_ms);
  // The new value formatted as Redis does (%.17Lg style, no trailing zeros).
  OpResult<std::string> IncrByFloat(std::string_view key, long double delta, int64_t now_ms);

  // --- keys ---
  bool Del(std::string_view key, int64_t now_ms);
  bool Exists(std::string_view key, int64_t now_ms);
  ValueType Type(std::string_view key, int64_t now_ms);
  // EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT with an absolute time: 1 if set, 0 if not (missing key or
  // condition not met). A time at or before now deletes the key (and counts as set).
  int64_t ExpireAt(std::string_view key, int64_t at_ms, ExpireCond cond, int64_t now_ms);
  int64_t Pttl(std::string_view key, int64_t now_ms);        // -2 missing, -1 no TTL, else ms left
  int64_t ExpireTime(std::string_view key, int64_t now_ms);  // -2 missing, -1 no TTL, else abs ms
  bool Persist(std::string_view key, int64_t now_ms);        // true if a TTL was removed
  // Calls fn for every live key matching the glob pattern (Redis syntax; "*" matches all).
  void Keys(std::string_view pattern, int64_t now_ms,
            const std::function<void(std::string_view)>& fn);
  // One SCAN step. type_filter: kNone for no filter. count is a hint, as in Redis.
  ScanResult Scan(uint64_t cursor, std::string_view pattern, size_t count, ValueType type_filter,
                  int64_t now_ms);
  std::optional<std::string> RandomKey(int64_t now_ms);
  size_t Size() const;         // keys, including expired ones not yet removed
  size_t ExpiresSize() const;  // keys with a TTL
  void Flush();
  // Removes expired keys, visiting at most `max_visits` slots from where the last call stopped.
  // Returns the number of keys removed.
  size_t ActiveExpire(int64_t now_ms, size_t max_visits);
  // The same, adding the number of slots (hash buckets) visited to *visited. A call visits
  // nothing when the Db has no key with a TTL, and stops early once it has walked the whole
  // table. While the table is being resized one step looks at 1 + (large/small) buckets; a step
  // that would go past the budget is not started, except as the first step of a call.
  // While a resize is under way the call also moves up to max(1, max_visits/16) buckets of it.
  size_t ActiveExpire(int64_t now_ms, size_t max_visits, size_t* visited);

  // --- hashes (the minimum that HSET-based locks and type checks need; the hash commands
  // extend this) ---
  // HSET of one field: 1 if the field is new, 0 if it was updated. kWrongType on a string key.
  OpResult<int64_t> HSet(std::string_view key, std::string_view field, std::string_view value,
                         int64_t now_ms);
  // HGET: kKeyNotFound when the key or the field is missing.
  OpResult<std::string_view> HGet(std::string_view key, std::string_view field, int64_t now_ms);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace deadbolt::shard
