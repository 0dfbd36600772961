// libFuzzer harness: the RESP request parser (protocol/resp_parser.*).
//
// The first input byte picks the limits (small bulk and argument limits, the unauthenticated
// limits) and how the rest arrives: whole, or cut into pieces whose sizes the next bytes pick,
// as a socket delivers it. The property checked, besides "no crash, no sanitizer report": the
// parser hands out the same commands (and the same error) however the bytes are cut, except
// where Redis's own limits depend on the cut, and never claims to consume more than it was given.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp_parser.h"

namespace {

using deadbolt::protocol::ParseError;
using deadbolt::protocol::ParserLimits;
using deadbolt::protocol::ParseStatus;
using deadbolt::protocol::RespParser;

struct Outcome {
  std::vector<std::vector<std::string>> commands;
  ParseError error = ParseError::kNone;
};

void Check(bool ok) {
  if (!ok) std::abort();
}

// Feeds `data` to a parser `step` bytes at a time (0: all at once), as a connection does: the
// unconsumed bytes are kept and presented again with the next piece.
Outcome Run(std::string_view data, const ParserLimits& limits, const uint8_t* steps,
            size_t num_steps) {
  Outcome out;
  RespParser parser(limits);
  std::string buf;
  size_t fed = 0, step_i = 0;
  std::vector<std::string_view> args;
  while (true) {
    size_t consumed = 0;
    const ParseStatus s = parser.Parse(buf, &consumed, &args);
    if (s == ParseStatus::kOk) {
      Check(consumed > 0 && consumed <= buf.size());
      if (!args.empty()) out.commands.emplace_back(args.begin(), args.end());
      buf.erase(0, consumed);
      continue;
    }
    if (s == ParseStatus::kError) {
      Check(parser.error() != ParseError::kNone);
      Check(!parser.ErrorText().empty());
      out.error = parser.error();
      return out;
    }
    Check(consumed == 0);
    if (fed == data.size()) return out;  // incomplete at the end: fine
    size_t n = data.size() - fed;
    if (num_steps) n = std::min<size_t>(n, 1 + steps[step_i++ % num_steps] % 64);
    buf.append(data.substr(fed, n));
    fed += n;
  }
}

bool LineTooLong(ParseError e) {
  return e == ParseError::kTooBigInlineRequest || e == ParseError::kTooBigMbulkCount ||
         e == ParseError::kTooBigBulkCount;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  const size_t num_steps = data[1] % 8;  // 0: the whole input in one read
  if (size < 2 + num_steps) return 0;
  const uint8_t* steps = data + 2;
  std::string_view input(reinterpret_cast<const char*>(data + 2 + num_steps), size - 2 - num_steps);
  ParserLimits limits;
  if (mode & 1) limits.unauthenticated = true;
  if (mode & 2) {
    limits.max_bulk_len = 64;
    limits.max_multibulk_len = 8;
    limits.max_inline_len = 32;
  }
  const Outcome whole = Run(input, limits, nullptr, 0);
  const Outcome pieces = Run(input, limits, steps, num_steps);
  if (num_steps == 0) return 0;
  // The same commands and the same error, however the bytes were cut. One exception, Redis's
  // own: a line too long is refused only while its end has not arrived (a whole long line in
  // one read is read, and accepted or refused for what it says), so then the run refused for
  // the length handed out a prefix of what the other did.
  if (whole.error == pieces.error && whole.commands == pieces.commands) return 0;
  auto refused_early = [](const Outcome& failed, const Outcome& other) {
    return LineTooLong(failed.error) && failed.commands.size() <= other.commands.size() &&
           std::equal(failed.commands.begin(), failed.commands.end(), other.commands.begin());
  };
  Check(refused_early(whole, pieces) || refused_early(pieces, whole));
  return 0;
}
