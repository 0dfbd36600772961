#include "shard/base/numeric.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace deadbolt::shard {

namespace {
constexpr size_t kMaxLongDoubleChars = 5 * 1024;  // Redis's MAX_LONG_DOUBLE_CHARS
}  // namespace

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative) ++i;
  if (i == s.size() || s[i] < '1' || s[i] > '9') return false;
  // Accumulate as a negative number so that INT64_MIN is reachable.
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return false;
    const int d = c - '0';
    if (v < (INT64_MIN + d) / 10) return false;
    v = v * 10 - d;
  }
  if (!negative) {
    if (v == INT64_MIN) return false;
    v = -v;
  }
  *out = v;
  return true;
}

bool ParseLongDouble(std::string_view s, long double* out) {
  if (s.empty() || s.size() >= kMaxLongDoubleChars) return false;
  char buf[kMaxLongDoubleChars];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  if (std::isspace(static_cast<unsigned char>(buf[0]))) return false;
  errno = 0;
  char* end = nullptr;
  const long double v = std::strtold(buf, &end);
  // An embedded NUL stops strtold early, and is rejected like any trailing garbage.
  if (end != buf + s.size()) return false;
  if (errno == ERANGE && (std::isinf(v) || v == 0.0L)) return false;
  if (std::isnan(v)) return false;
  *out = v;
  return true;
}

std::string FormatInt64(int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string FormatLongDoubleHuman(long double v) {
  const int n = std::snprintf(nullptr, 0, "%.17Lf", v);
  if (n <= 0) return "0";
  std::string s(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(s.data(), s.size(), "%.17Lf", v);
  s.resize(static_cast<size_t>(n));
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

}  // namespace deadbolt::shard
