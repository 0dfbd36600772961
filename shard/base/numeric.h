#pragma once
// Number parsing and formatting with Redis's exact rules (util.c string2ll, string2ld, ld2string).

#include <cstdint>
#include <string>
#include <string_view>

namespace deadbolt::shard {

// Strict decimal int64 as Redis's string2ll: optional '-', no '+', no spaces, no leading zeros
// ("0" alone is fine, "-0" is not), no overflow.
bool ParseInt64(std::string_view s, int64_t* out);

// A long double as Redis's string2ld: what strtold accepts ("1e3", "0x1p3", "inf", ...) over
// the whole string, no leading space, not NaN, no overflow, no underflow to zero; at most 5119
// characters.
bool ParseLongDouble(std::string_view s, long double* out);

// Decimal text of v.
std::string FormatInt64(int64_t v);

// Redis's "human friendly" long double text (ld2string with LD_STR_HUMAN): "%.17Lf", then
// trailing zeros and a trailing '.' removed, and "-0" written as "0". v must be finite.
std::string FormatLongDoubleHuman(long double v);

}  // namespace deadbolt::shard
