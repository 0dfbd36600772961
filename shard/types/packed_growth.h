#pragma once
// Room in a packed buffer (a small list's or set's std::string) without std::string's doubling.

#include <cstddef>
#include <string>

namespace deadbolt::shard {

// Makes room for `extra` more bytes in `buf`, growing it to the size needed rounded up to 16
// bytes, not to twice its capacity: the values lock clients keep are small and mostly built one
// element at a time, and doubling left up to half of each buffer unused (a 10-UUID list took a
// 640-byte block for 370 bytes; bench/RESULTS.md, "Memory per small collection"). A packed
// buffer is at most a few KB, so copying it on a growth costs about what the insert does.
// Called by the thread that owns the value (the shard's reactor).
inline void ReserveExact(std::string* buf, size_t extra) {
  const size_t need = buf->size() + extra;
  if (need <= buf->capacity()) return;
  std::string grown;
  grown.reserve((need + 15) & ~size_t{15});
  grown.append(*buf);
  buf->swap(grown);
}

}  // namespace deadbolt::shard
