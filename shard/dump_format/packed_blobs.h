#pragma once
// The packed encodings Redis writes inside DUMP payloads as one string each, read into their
// elements (integers as their decimal text):
//
//   listpack (Redis 7+):  total bytes (u32) | count (u16, 65535: unknown) | entries | 0xFF;
//                         an entry is its encoding and data, then its own length written
//                         backwards in 1-5 bytes.
//   ziplist (Redis < 7):  total bytes (u32) | offset of the last entry (u32) | count (u16) |
//                         entries | 0xFF; an entry is the previous entry's length (1 or 5
//                         bytes), its encoding, its data.
//   intset:               integer width (u32: 2, 4 or 8) | count (u32) | integers, ascending.
//
// Every field is little endian. The readers trust nothing: a blob is refused (false) unless its
// header matches its size, every entry ends inside it and says its length right, the terminator
// ends it exactly, and an intset is strictly ascending.
//
// Pure functions: any thread.

#include <string>
#include <string_view>
#include <vector>

namespace deadbolt::shard::dump {

bool ReadListpack(std::string_view blob, std::vector<std::string>* out);
bool ReadZiplist(std::string_view blob, std::vector<std::string>* out);
bool ReadIntset(std::string_view blob, std::vector<std::string>* out);

}  // namespace deadbolt::shard::dump
