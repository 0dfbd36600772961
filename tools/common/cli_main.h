#pragma once
// The first step of the tools' main() (lockload, locktorture, lockcrash): parse the command line,
// answer --help, refuse a bad option.

#include <cstdio>
#include <optional>
#include <string>

namespace deadbolt::tools {

// Fills *opts with the tool's parse(argc, argv, opts, &help) (its ParseOptions). Returns the exit
// code when main() should stop here: 0 after printing usage() on stdout for --help, 2 after
// printing "<tool>: <error>" on stderr for a bad command line. nullopt: go on with *opts.
template <typename Options>
std::optional<int> ParseCommandLine(const char* tool, int argc, char** argv,
                                    std::string (*parse)(int, char**, Options*, bool*),
                                    const char* (*usage)(), Options* opts) {
  bool help = false;
  const std::string err = parse(argc, argv, opts, &help);
  if (help) {
    fputs(usage(), stdout);
    return 0;
  }
  if (!err.empty()) {
    fprintf(stderr, "%s: %s\n", tool, err.c_str());
    return 2;
  }
  return std::nullopt;
}

}  // namespace deadbolt::tools
