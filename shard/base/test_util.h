#pragma once
// Helpers shared by the shard/ tests.

#include <cstdint>
#include <string>
#include <string_view>

namespace deadbolt::shard {

// prefix followed by the decimal i ("k" + 42 -> "k42"). (Also avoids GCC 12's false -Wrestrict
// on `"literal" + std::to_string(i)`.)
inline std::string Cat(std::string_view prefix, int64_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

}  // namespace deadbolt::shard
