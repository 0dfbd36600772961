#include "shard/dump_format/crc64.h"

#include <array>

namespace deadbolt::shard::dump {
namespace {

// The polynomial's bits reversed: the CRC is computed least significant bit first.
constexpr uint64_t kReflectedPoly = 0x95ac9329ac4bc9b5ULL;

// table[k][b]: the CRC of byte b followed by k zero bytes, so that eight bytes fold at once.
constexpr std::array<std::array<uint64_t, 256>, 8> MakeTables() {
  std::array<std::array<uint64_t, 256>, 8> t{};
  for (uint64_t b = 0; b < 256; b++) {
    uint64_t c = b;
    for (int i = 0; i < 8; i++) c = (c & 1) ? (c >> 1) ^ kReflectedPoly : c >> 1;
    t[0][b] = c;
  }
  for (int k = 1; k < 8; k++) {
    for (int b = 0; b < 256; b++) t[k][b] = t[0][t[k - 1][b] & 0xff] ^ (t[k - 1][b] >> 8);
  }
  return t;
}

constexpr auto kTables = MakeTables();

}  // namespace

uint64_t Crc64(uint64_t crc, std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  while (n >= 8) {
    uint64_t x = crc;
    for (int i = 0; i < 8; i++) x ^= static_cast<uint64_t>(p[i]) << (8 * i);
    crc = kTables[7][x & 0xff] ^ kTables[6][(x >> 8) & 0xff] ^ kTables[5][(x >> 16) & 0xff] ^
          kTables[4][(x >> 24) & 0xff] ^ kTables[3][(x >> 32) & 0xff] ^
          kTables[2][(x >> 40) & 0xff] ^ kTables[1][(x >> 48) & 0xff] ^ kTables[0][x >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = kTables[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

}  // namespace deadbolt::shard::dump
