#pragma once
// The type of a key's value, as TYPE and SCAN's TYPE filter name it.

#include <cstdint>
#include <string_view>

namespace deadbolt::shard {

enum class ValueType : uint8_t { kNone, kString, kHash, kZSet, kList, kSet, kStream };

// What TYPE replies, and what SCAN's TYPE filter matches.
constexpr std::string_view TypeName(ValueType t) {
  switch (t) {
    case ValueType::kString:
      return "string";
    case ValueType::kHash:
      return "hash";
    case ValueType::kZSet:
      return "zset";
    case ValueType::kList:
      return "list";
    case ValueType::kSet:
      return "set";
    case ValueType::kStream:
      return "stream";
    case ValueType::kNone:
      break;
  }
  return "none";
}

}  // namespace deadbolt::shard
