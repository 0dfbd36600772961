#pragma once
// CRC-64 as Redis checks DUMP payloads and RDB files: the Jones polynomial (0xad93d23594c935a9),
// reflected, initial value 0, no final xor; "123456789" gives 0xe9c6d914c4b8d9ca.
//
// A pure function: any thread.

#include <cstdint>
#include <string_view>

namespace deadbolt::shard::dump {

// Continues `crc` over `bytes` (start with 0).
uint64_t Crc64(uint64_t crc, std::string_view bytes);

}  // namespace deadbolt::shard::dump
