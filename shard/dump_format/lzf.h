#pragma once
// LZF decompression, for the strings Redis compresses in DUMP payloads (rdbcompression: strings
// longer than 20 bytes that shrink). The format: a control byte below 32 starts a run of
// (control + 1) literal bytes; any other starts a back reference of (control >> 5) + 2 bytes (the
// 7 meaning "plus the next byte"), at a distance of ((control & 31) << 8) + the next byte + 1.
//
// A pure function: any thread.

#include <cstddef>
#include <string_view>

namespace deadbolt::shard::dump {

// The most bytes one compressed byte can stand for (a three-byte reference to 264 bytes), so
// that a claimed length can be refused before anything is allocated for it.
inline constexpr size_t kLzfMaxRatio = 88;

// Decompresses `in` into out[0, out_len). True only when the input is well formed, every
// reference lands inside what was produced, and exactly out_len bytes come out.
bool LzfDecompress(std::string_view in, char* out, size_t out_len);

}  // namespace deadbolt::shard::dump
