#include "shard/dump_format/packed_blobs.h"

#include <cstdint>

#include "shard/base/numeric.h"

namespace deadbolt::shard::dump {
namespace {

using Bytes = const unsigned char*;

uint64_t LoadLe(Bytes p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// The n-byte little-endian two's complement integer at p.
int64_t LoadSigned(Bytes p, int n) {
  const uint64_t u = LoadLe(p, n);
  if (n == 8) return static_cast<int64_t>(u);
  const uint64_t sign = uint64_t{1} << (8 * n - 1);
  return static_cast<int64_t>((u ^ sign) - sign);
}

// --- listpack ---

// How many bytes a listpack writes an entry's length in (lpEncodeBacklen's thresholds).
size_t BacklenSize(uint64_t len) {
  if (len <= 127) return 1;
  if (len < 16383) return 2;
  if (len < 2097151) return 3;
  if (len < 268435455) return 4;
  return 5;
}

// The entry length written backwards in p[0, n): seven bits a byte, the last byte lowest, each
// byte but the first flagged with 128.
bool BacklenSays(Bytes p, size_t n, uint64_t len) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    const unsigned char b = p[n - 1 - i];
    const bool more = (b & 128) != 0;
    if (more != (i + 1 < n)) return false;
    v |= static_cast<uint64_t>(b & 127) << (7 * i);
  }
  return v == len;
}

}  // namespace

bool ReadListpack(std::string_view blob, std::vector<std::string>* out) {
  constexpr size_t kHeader = 6;
  if (blob.size() < kHeader + 1 || blob.size() > UINT32_MAX) return false;
  const auto* p = reinterpret_cast<Bytes>(blob.data());
  if (LoadLe(p, 4) != blob.size() || p[blob.size() - 1] != 0xFF) return false;
  const uint64_t said = LoadLe(p + 4, 2);
  const size_t end = blob.size() - 1;
  size_t pos = kHeader;
  uint64_t count = 0;
  while (pos < end) {
    Bytes e = p + pos;
    const size_t room = end - pos;
    const unsigned b = e[0];
    size_t head;       // encoding bytes
    uint64_t len = 0;  // string bytes after them
    bool is_int = true;
    int64_t v = 0;
    if ((b & 0x80) == 0) {
      head = 1, v = b;
    } else if ((b & 0xC0) == 0x80) {
      head = 1, len = b & 0x3F, is_int = false;
    } else if ((b & 0xE0) == 0xC0) {
      if (room < 2) return false;
      head = 2;
      const uint64_t u = ((b & 0x1Fu) << 8) | e[1];
      v = u >= 4096 ? static_cast<int64_t>(u) - 8192 : static_cast<int64_t>(u);
    } else if ((b & 0xF0) == 0xE0) {
      if (room < 2) return false;
      head = 2, len = ((b & 0x0Fu) << 8) | e[1], is_int = false;
    } else if (b == 0xF0) {
      if (room < 5) return false;
      head = 5, len = LoadLe(e + 1, 4), is_int = false;
    } else if (b >= 0xF1 && b <= 0xF4) {
      static constexpr int kWidth[] = {2, 3, 4, 8};
      const int w = kWidth[b - 0xF1];
      if (room < static_cast<size_t>(1 + w)) return false;
      head = 1 + w, v = LoadSigned(e + 1, w);
    } else {
      return false;  // 0xF5..0xFE are unused; 0xFF only ends the listpack
    }
    if (len > room - head) return false;
    const uint64_t entry_len = head + len;
    const size_t back = BacklenSize(entry_len);
    if (back > room - entry_len) return false;
    if (!BacklenSays(e + entry_len, back, entry_len)) return false;
    if (is_int) {
      out->push_back(FormatInt64(v));
    } else {
      out->emplace_back(reinterpret_cast<const char*>(e + head), len);
    }
    pos += entry_len + back;
    count++;
  }
  return said == 65535 || said == count;
}

bool ReadZiplist(std::string_view blob, std::vector<std::string>* out) {
  constexpr size_t kHeader = 10;
  if (blob.size() < kHeader + 1 || blob.size() > UINT32_MAX) return false;
  const auto* p = reinterpret_cast<Bytes>(blob.data());
  if (LoadLe(p, 4) != blob.size() || p[blob.size() - 1] != 0xFF) return false;
  const uint64_t tail = LoadLe(p + 4, 4);
  const uint64_t said = LoadLe(p + 8, 2);
  const size_t end = blob.size() - 1;
  size_t pos = kHeader;
  size_t last = kHeader;  // where the last entry starts
  uint64_t prev_len = 0;
  uint64_t count = 0;
  while (pos < end) {
    Bytes e = p + pos;
    size_t room = end - pos;
    size_t prev_bytes = 1;
    uint64_t prev = e[0];
    if (e[0] == 254) {
      if (room < 5) return false;
      prev_bytes = 5, prev = LoadLe(e + 1, 4);
    }
    if (prev != prev_len || room <= prev_bytes) return false;
    Bytes enc = e + prev_bytes;
    room -= prev_bytes;
    const unsigned b = enc[0];
    size_t head = 1;
    uint64_t len = 0;
    bool is_int = true;
    int64_t v = 0;
    switch (b >> 6) {
      case 0:
        len = b & 0x3F, is_int = false;
        break;
      case 1:
        if (room < 2) return false;
        head = 2, len = ((b & 0x3Fu) << 8) | enc[1], is_int = false;
        break;
      case 2:
        if (room < 5) return false;
        head = 5, is_int = false;
        len =
            (uint64_t{enc[1]} << 24) | (uint64_t{enc[2]} << 16) | (uint64_t{enc[3]} << 8) | enc[4];
        break;
      default: {
        int w = 0;
        if (b == 0xC0) {
          w = 2;
        } else if (b == 0xD0) {
          w = 4;
        } else if (b == 0xE0) {
          w = 8;
        } else if (b == 0xF0) {
          w = 3;
        } else if (b == 0xFE) {
          w = 1;
        } else if (b >= 0xF1 && b <= 0xFD) {
          v = static_cast<int64_t>(b & 0x0F) - 1;
        } else {
          return false;
        }
        if (room < static_cast<size_t>(1 + w)) return false;
        if (w > 0) v = LoadSigned(enc + 1, w);
        head = 1 + w;
      }
    }
    if (len > room - head) return false;
    if (is_int) {
      out->push_back(FormatInt64(v));
    } else {
      out->emplace_back(reinterpret_cast<const char*>(enc + head), len);
    }
    last = pos;
    prev_len = prev_bytes + head + len;
    pos += prev_len;
    count++;
  }
  if (tail != last) return false;
  return said == 65535 || said == count;
}

bool ReadIntset(std::string_view blob, std::vector<std::string>* out) {
  if (blob.size() < 8) return false;
  const auto* p = reinterpret_cast<Bytes>(blob.data());
  const uint64_t width = LoadLe(p, 4);
  const uint64_t n = LoadLe(p + 4, 4);
  if (width != 2 && width != 4 && width != 8) return false;
  if ((blob.size() - 8) / width != n || (blob.size() - 8) % width != 0) return false;
  int64_t prev = 0;
  for (uint64_t i = 0; i < n; i++) {
    const int64_t v = LoadSigned(p + 8 + i * width, static_cast<int>(width));
    if (i > 0 && v <= prev) return false;
    out->push_back(FormatInt64(v));
    prev = v;
  }
  return true;
}

}  // namespace deadbolt::shard::dump
