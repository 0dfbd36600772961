#pragma once
// SHA1, the name Redis gives a script (EVALSHA, SCRIPT LOAD, SCRIPT EXISTS).
//
// Stateless functions, callable from any thread.

#include <array>
#include <cstdint>
#include <string_view>

namespace deadbolt::server {

using Sha1Digest = std::array<uint8_t, 20>;

// SHA1 (FIPS 180-4) of `data`.
Sha1Digest Sha1(std::string_view data);

// The 40 lower-case hex digits of a digest, as SCRIPT LOAD replies them.
std::array<char, 40> Sha1Hex(const Sha1Digest& d);

// Parses exactly 40 hex digits, in either case (Redis compares script names ignoring case).
// Returns false for anything else.
bool ParseSha1Hex(std::string_view hex, Sha1Digest* out);

}  // namespace deadbolt::server
