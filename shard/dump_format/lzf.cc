#include "shard/dump_format/lzf.h"

#include <cstring>

namespace deadbolt::shard::dump {

bool LzfDecompress(std::string_view in, char* out, size_t out_len) {
  const auto* ip = reinterpret_cast<const unsigned char*>(in.data());
  const unsigned char* const in_end = ip + in.size();
  size_t op = 0;
  while (ip < in_end) {
    const unsigned ctrl = *ip++;
    if (ctrl < 32) {  // literals
      const size_t n = ctrl + 1;
      if (static_cast<size_t>(in_end - ip) < n || out_len - op < n) return false;
      memcpy(out + op, ip, n);
      ip += n;
      op += n;
      continue;
    }
    size_t len = ctrl >> 5;
    if (ip >= in_end) return false;
    if (len == 7) {
      len += *ip++;
      if (ip >= in_end) return false;
    }
    const size_t back = ((ctrl & 31u) << 8) + *ip++ + 1;
    len += 2;
    if (back > op || out_len - op < len) return false;
    // Byte by byte: a reference may overlap what it produces (a run of one byte repeated).
    for (size_t i = 0; i < len; i++, op++) out[op] = out[op - back];
  }
  return op == out_len;
}

}  // namespace deadbolt::shard::dump
