#pragma once
// Test helper (any thread): checks that bytes hold whole RESP2/RESP3 values, as a client's
// reader would take them. Used by the fuzz harnesses to prove a reply is exactly one value.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace deadbolt::fuzz {

// Reads one RESP value from the front of `s`; *used is its size. False if `s` does not start
// with a whole, well-formed value.
inline bool ParseRespValue(std::string_view s, size_t* used, int depth = 0) {
  if (depth > 64 || s.empty()) return false;
  const size_t eol = s.find("\r\n");
  if (eol == std::string_view::npos) return false;
  const char type = s[0];
  const std::string_view line = s.substr(1, eol - 1);
  size_t pos = eol + 2;
  auto number = [&](int64_t* n) {
    if (line.empty() || line.size() > 20) return false;
    size_t i = line[0] == '-' ? 1 : 0;
    if (i == line.size()) return false;
    int64_t v = 0;
    for (; i < line.size(); i++) {
      if (line[i] < '0' || line[i] > '9') return false;
      v = v * 10 + (line[i] - '0');
    }
    *n = line[0] == '-' ? -v : v;
    return true;
  };
  int64_t n = 0;
  switch (type) {
    case '+':
    case '-':
    case ',':
    case '(':
      for (char c : line) {
        if (c == '\r' || c == '\n') return false;
      }
      break;
    case ':':
      if (!number(&n)) return false;
      break;
    case '_':
      if (!line.empty()) return false;
      break;
    case '#':
      if (line != "t" && line != "f") return false;
      break;
    case '$':
    case '=':
    case '!':
      if (!number(&n) || n < -1) return false;
      if (n == -1) {
        if (type != '$') return false;
        break;
      }
      if (s.size() < pos + static_cast<size_t>(n) + 2) return false;
      if (s.substr(pos + n, 2) != "\r\n") return false;
      pos += static_cast<size_t>(n) + 2;
      break;
    case '*':
    case '~':
    case '%':
    case '>':
    case '|': {
      if (!number(&n) || n < -1) return false;
      if (n == -1) {
        if (type != '*') return false;
        break;
      }
      const int64_t items = (type == '%' || type == '|') ? 2 * n : n;
      for (int64_t i = 0; i < items; i++) {
        size_t u = 0;
        if (!ParseRespValue(s.substr(pos), &u, depth + 1)) return false;
        pos += u;
      }
      break;
    }
    default:
      return false;
  }
  *used = pos;
  return true;
}

}  // namespace deadbolt::fuzz
