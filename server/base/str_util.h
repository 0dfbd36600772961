#pragma once
// Small string helpers for std::string_view. (Debian's abseil has its own absl::string_view, so
// absl's string functions do not take std::string_view; AV() converts where one is needed.)

#include <absl/strings/string_view.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace deadbolt::server {

inline absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

inline char AsciiLowerChar(char c) { return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c; }

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (AsciiLowerChar(a[i]) != AsciiLowerChar(b[i])) return false;
  }
  return true;
}

inline std::string AsciiLower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = AsciiLowerChar(c);
  return r;
}

inline std::string AsciiUpper(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = (c >= 'a' && c <= 'z') ? c - ('a' - 'A') : c;
  return r;
}

// Whole-string integer parse (no spaces, no '+').
template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace deadbolt::server
