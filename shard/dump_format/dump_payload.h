#pragma once
// DUMP and RESTORE payloads: one key's value in Redis's RDB object format, so that a value dumped
// by redis-server restores here and one dumped here restores into redis-server:
//
//   object type (1 byte) | the value, RDB-encoded | RDB version (2 bytes, little endian) |
//   CRC-64 of everything before it (8 bytes, little endian; crc64.h)
//
// Written: strings as raw bytes or small integers (as Redis writes them), lists, sets, hashes and
// sorted sets (binary scores) in their plain RDB types, under Redis 7.0's RDB version (10).
// Read: those, and the encodings Redis 2.6 to 7.4 write (integer and LZF-compressed strings,
// ziplists, listpacks, intsets, quicklists, text scores), up to RDB version 12. Streams, module
// values and zipmaps are refused. Like Redis, a payload holding an empty collection, a duplicate
// member or field, or a NaN score is bad data; unlike Redis (which checks duplicates only with
// sanitize-dump-payload), every payload is checked whole before anything is built from it.
//
// Pure functions: any thread.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shard/base/op_status.h"
#include "shard/db.h"

namespace deadbolt::shard::dump {

inline constexpr uint16_t kRdbVersion = 10;     // what DUMP writes (Redis 7.0's)
inline constexpr uint16_t kRdbVersionMax = 12;  // the newest RESTORE reads (Redis 7.4's)

// The payload of snap's value (its type and contents; the TTL and lock fields are not part of
// it). snap.type must not be kNone.
std::string EncodePayload(const KeySnapshot& snap);

// Checks the footer: kBadDumpFooter for a short payload, a newer version or a wrong checksum
// (Redis's verifyDumpPayload).
OpStatus CheckFooter(std::string_view payload);

// The value of a payload whose footer passed, as a snapshot with no TTL. `max_bytes` bounds the
// bytes of the strings it decodes to (LZF can expand a payload 88 times). kBadDumpData for
// anything malformed, unknown or over the bound.
OpResult<KeySnapshot> DecodePayload(std::string_view payload, size_t max_bytes);

}  // namespace deadbolt::shard::dump
