#pragma once
// Redis Cluster's key -> slot mapping, which decides the shard that owns a key.

#include <cstdint>
#include <string_view>

namespace deadbolt::shard {

constexpr int kNumSlots = 16384;

// The Redis Cluster slot of a key: CRC16 (XMODEM) of the key, or of the part between the first
// '{' and the next '}' when that part is non-empty, modulo 16384. A pure function, safe on any
// thread.
uint16_t KeySlot(std::string_view key);

// CRC16-CCITT (XMODEM) of `s`, as Redis Cluster computes it.
uint16_t Crc16(std::string_view s);

}  // namespace deadbolt::shard
