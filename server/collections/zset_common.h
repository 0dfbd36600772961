#pragma once
// What the sorted-set command files share (cmd_zset.cc, cmd_zset_algebra.cc): reading a score
// or weight as Redis does, and replying members with their scores.
//
// Threads: any (pure functions of their arguments).

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "protocol/reply_builder.h"
#include "server/collections/blocking.h"

namespace deadbolt::server {

// A score or weight, as getDoubleFromObject: strtod over the whole argument, no leading space,
// no NaN, no overflow (nor an underflow to zero).
inline bool ParseScore(std::string_view arg, double* out) {
  if (arg.empty() || std::isspace(static_cast<unsigned char>(arg[0]))) return false;
  const std::string s(arg);
  char* end;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (static_cast<size_t>(end - s.c_str()) != s.size() || std::isnan(v)) return false;
  if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0)) return false;
  *out = v;
  return true;
}

// A list of members, with their scores if asked: RESP2 flat, RESP3 [member, score] pairs.
template <typename Members>
void ReplyMembers(protocol::ReplyBuilder& rb, const Members& members, bool withscores) {
  if (!withscores) {
    rb.ArrayHeader(members.size());
    for (const auto& [m, s] : members) rb.Bulk(m);
    return;
  }
  const bool pairs = rb.resp() >= 3;
  rb.ArrayHeader(pairs ? members.size() : members.size() * 2);
  for (const auto& [m, s] : members) {
    if (pairs) rb.ArrayHeader(2);
    rb.Bulk(m);
    ReplyScore(rb, s);
  }
}

}  // namespace deadbolt::server
