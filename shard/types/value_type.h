#pragma once
// The type of a key's value, as TYPE and SCAN's TYPE filter name it.

#include <cstdint>

namespace deadbolt::shard {

enum class ValueType : uint8_t { kNone, kString, kHash };

}  // namespace deadbolt::shard
