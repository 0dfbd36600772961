// GlobMatch: Redis's glob patterns (util.c stringmatchlen semantics).

#include "shard/base/glob.h"

#include <string_view>
#include <utility>

namespace deadbolt::shard {

namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool SameChar(char a, char b, bool nocase) { return nocase ? Lower(a) == Lower(b) : a == b; }

// Matches the single-character element of `pat` at `p` (anything but '*') against `c`.
// Sets *next to the index after the element.
bool MatchOne(std::string_view pat, size_t p, char c, bool nocase, size_t* next) {
  const size_t n = pat.size();
  switch (pat[p]) {
    case '?':
      *next = p + 1;
      return true;
    case '\\':
      if (p + 1 < n) {
        *next = p + 2;
        return SameChar(pat[p + 1], c, nocase);
      }
      *next = p + 1;  // a trailing backslash is literal
      return SameChar('\\', c, nocase);
    case '[': {
      size_t q = p + 1;
      const bool negate = q < n && pat[q] == '^';
      if (negate) ++q;
      bool match = false;
      // The class ends at the first unescaped ']' ("[]" is an empty class) or, unterminated,
      // at the end of the pattern.
      while (q < n) {
        if (pat[q] == '\\' && q + 1 < n) {
          if (pat[q + 1] == c) match = true;  // escaped: compared exactly, as Redis does
          q += 2;
        } else if (pat[q] == ']') {
          ++q;
          break;
        } else if (q + 2 < n && pat[q + 1] == '-') {
          char lo = pat[q];
          char hi = pat[q + 2];
          char x = c;
          if (lo > hi) std::swap(lo, hi);
          if (nocase) {
            lo = Lower(lo);
            hi = Lower(hi);
            x = Lower(x);
          }
          if (x >= lo && x <= hi) match = true;
          q += 3;
        } else {
          if (SameChar(pat[q], c, nocase)) match = true;
          ++q;
        }
      }
      *next = q;
      return negate ? !match : match;
    }
    default:
      *next = p + 1;
      return SameChar(pat[p], c, nocase);
  }
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view str, bool nocase) {
  // Greedy matching with backtracking to the last '*': every other element matches exactly one
  // character, so trying the last star's next position is enough, and the work is
  // O(|pattern| * |str|) at worst (no exponential blow-up on "*a*a*a*...").
  const size_t n = pattern.size();
  size_t p = 0;
  size_t s = 0;
  size_t star_p = std::string_view::npos;  // pattern index just after the last '*'
  size_t star_s = 0;                       // where that star's match currently ends
  while (s < str.size()) {
    if (p < n && pattern[p] == '*') {
      while (p < n && pattern[p] == '*') ++p;
      if (p == n) return true;
      star_p = p;
      star_s = s;
      continue;
    }
    size_t next;
    if (p < n && MatchOne(pattern, p, str[s], nocase, &next)) {
      p = next;
      ++s;
      continue;
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    s = ++star_s;
  }
  while (p < n && pattern[p] == '*') ++p;
  return p == n;
}

}  // namespace deadbolt::shard
