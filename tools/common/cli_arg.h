#pragma once
// Command-line arguments of the tools' option parsers (lockload, locktorture, lockcrash).

#include <string_view>

namespace deadbolt::tools {

// One argument as given: "--name value", "--name=value", and with short_inline "-c50".
// Owned by the parsing call; views point into argv.
struct CliArg {
  std::string_view name;   // the option, without an inline value
  std::string_view value;  // the inline value, if has_value
  bool has_value = false;
};

inline CliArg SplitCliArg(std::string_view arg, bool short_inline) {
  CliArg a{arg, {}, false};
  if (arg.starts_with("--")) {
    size_t eq = arg.find('=');
    if (eq != std::string_view::npos) a = {arg.substr(0, eq), arg.substr(eq + 1), true};
  } else if (short_inline && arg.size() > 2 && arg[0] == '-') {
    a = {arg.substr(0, 2), arg.substr(2), true};
  }
  return a;
}

// The option's value: its inline value, or the next argument (advancing *i). False if none.
inline bool CliValue(const CliArg& a, int argc, char** argv, int* i, std::string_view* v) {
  if (a.has_value) {
    *v = a.value;
    return true;
  }
  if (*i + 1 >= argc) return false;
  *v = argv[++*i];
  return true;
}

}  // namespace deadbolt::tools
