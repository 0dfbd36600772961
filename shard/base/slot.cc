// KeySlot: Redis Cluster's key -> slot mapping.

#include "shard/base/slot.h"

#include <array>
#include <cstdint>
#include <string_view>

namespace deadbolt::shard {

namespace {

// CRC16-CCITT as XMODEM: polynomial 0x1021, initial value 0, no reflection, no final xor.
// kTables[0][b] is the register after feeding byte b to a zero register; kTables[k][b] after
// feeding b and then k zero bytes. The CRC is linear, so eight bytes fold into one step of
// eight independent lookups (slicing-by-8) instead of a chain of eight dependent ones: a
// lock key such as "lock:12345" costs one step and two single bytes.
using Crc16Tables = std::array<std::array<uint16_t, 256>, 8>;

constexpr Crc16Tables MakeCrc16Tables() {
  Crc16Tables t{};
  for (int byte = 0; byte < 256; ++byte) {
    uint16_t crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
    t[0][byte] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (int byte = 0; byte < 256; ++byte) {
      const uint16_t prev = t[k - 1][byte];
      t[k][byte] = static_cast<uint16_t>((prev << 8) ^ t[0][prev >> 8]);
    }
  }
  return t;
}

constexpr Crc16Tables kCrc16 = MakeCrc16Tables();

static_assert(kCrc16[0][1] == 0x1021);

}  // namespace

uint16_t Crc16(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  uint16_t crc = 0;
  for (; n >= 8; p += 8, n -= 8) {
    // The register meets the first two bytes; the other six enter a zero register.
    const unsigned hi = ((crc >> 8) ^ p[0]) & 0xff;
    const unsigned lo = ((crc & 0xff) ^ p[1]) & 0xff;
    crc = static_cast<uint16_t>(kCrc16[7][hi] ^ kCrc16[6][lo] ^ kCrc16[5][p[2]] ^ kCrc16[4][p[3]] ^
                                kCrc16[3][p[4]] ^ kCrc16[2][p[5]] ^ kCrc16[1][p[6]] ^
                                kCrc16[0][p[7]]);
  }
  for (; n > 0; ++p, --n) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16[0][((crc >> 8) ^ *p) & 0xff]);
  }
  return crc;
}

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
