#pragma once
// Errors as values for shard operations. Only server/ turns these into RESP error text
// (server/base/error_strings.h).

#include <cstdint>
#include <utility>
#include <variant>

namespace deadbolt::shard {

enum class OpStatus : uint8_t {
  kOk,
  kKeyNotFound,                 // the key does not exist (or has expired)
  kWrongType,                   // the key holds a value of another type
  kSkipped,                     // a condition (NX, XX, IFEQ, ...) was not met; nothing changed
  kNotAnInteger,                // the value or argument is not an integer or out of range
  kIncrOverflow,                // increment or decrement would overflow
  kNotAFloat,                   // the value or argument is not a valid float
  kNanOrInf,                    // increment would produce NaN or Infinity
  kOutOfRange,                  // an offset or index is out of range
  kStringTooLong,               // string exceeds maximum allowed size (proto-max-bulk-len)
  kInvalidExpire,               // expire time out of range
  kSyntax,                      // syntax error
  kNoSuchKey,                   // a command needs the key to exist (RENAME ...)
  kHashValueNotInteger,         // hash value is not an integer
  kHashValueNotFloat,           // hash value is not a float
  kScoreNaN,                    // a sorted set score would become NaN (ZINCRBY inf then -inf)
  kNotHll,                      // a string that is not a HyperLogLog
  kCorruptHll,                  // a HyperLogLog whose sparse runs are damaged
  kBadDumpFooter,               // a DUMP payload too short, from a newer RDB version or mis-summed
  kBadDumpData,                 // a DUMP payload whose value cannot be read
  kStreamIdTooSmall,            // XADD: an ID not above the stream's last
  kStreamExhausted,             // XADD: the stream's last ID is the largest possible
  kStreamSetIdBelowTop,         // XSETID: below the last entry's ID
  kStreamEntriesAddedTooSmall,  // XSETID: ENTRIESADDED below the stream's length
  kBusyGroup,                   // XGROUP CREATE: the group exists
  kNoGroup,                     // no such consumer group (or, for some commands, no such key)
};

// A value or a non-kOk status.
template <typename T>
class OpResult {
 public:
  OpResult(T v) : v_(std::move(v)) {}  // NOLINT: implicit on purpose, `return value;`
  OpResult(OpStatus s) : v_(s) {}      // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  OpStatus status() const { return ok() ? OpStatus::kOk : std::get<OpStatus>(v_); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, OpStatus> v_;
};

}  // namespace deadbolt::shard
