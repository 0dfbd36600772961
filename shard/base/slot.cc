// KeySlot: Redis Cluster's key -> slot mapping.

#include "shard/base/slot.h"

#include <array>
#include <cstdint>
#include <string_view>

namespace deadbolt::shard {

namespace {

// CRC16-CCITT as XMODEM: polynomial 0x1021, initial value 0, no reflection, no final xor.
constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (int byte = 0; byte < 256; ++byte) {
    uint16_t crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

uint16_t Crc16(std::string_view s) {
  uint16_t crc = 0;
  for (unsigned char c : s) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16Table[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

static_assert(kCrc16Table[1] == 0x1021);

}  // namespace

uint16_t KeySlot(std::string_view key) {
  // Hash tag: the part between the first '{' and the first '}' after it, if non-empty.
  std::string_view hashed = key;
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      hashed = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<uint16_t>(Crc16(hashed) & (kNumSlots - 1));
}

}  // namespace deadbolt::shard
