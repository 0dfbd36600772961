#pragma once
// Redis's glob patterns (util.c stringmatchlen): KEYS, SCAN MATCH, HSCAN MATCH, PSUBSCRIBE,
// CONFIG GET.

#include <string_view>

namespace deadbolt::shard {

// Redis's glob matching (stringmatchlen): * ? [a-z] [^x] and \ escapes. A pure function, safe on
// any thread.
bool GlobMatch(std::string_view pattern, std::string_view str, bool nocase = false);

}  // namespace deadbolt::shard
