#pragma once
// RESP request parser: bytes in, argument vectors out. Knows nothing of shards or sockets.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace deadbolt::protocol {

// Limits on what one client may send. Defaults are Redis's.
struct ParserLimits {
  int64_t max_bulk_len = 512LL * 1024 * 1024;  // proto-max-bulk-len
  int64_t max_multibulk_len = 1024 * 1024;     // arguments per command
  size_t max_inline_len = 64 * 1024;           // PROTO_INLINE_MAX_SIZE: inline lines, count lines
  // Before a client has authenticated (when a password is required), Redis 7 accepts at most
  // 10 arguments and bulks of at most 16 KB, so strangers cannot make the server buffer much.
  bool unauthenticated = false;
  static constexpr int64_t kUnauthMaxArgs = 10;
  static constexpr int64_t kUnauthMaxBulk = 16384;
};

// Why a request was refused. The exact text lives in server/base/error_strings.h; ParseErrorText()
// returns it so that protocol tests can check it without depending on server/.
enum class ParseError : uint8_t {
  kNone,
  kInvalidMultibulkLength,  // "Protocol error: invalid multibulk length"
  kInvalidBulkLength,       // "Protocol error: invalid bulk length"
  kExpectedDollar,          // "Protocol error: expected '$', got 'X'"
  kTooBigInlineRequest,     // "Protocol error: too big inline request"
  kTooBigMbulkCount,        // "Protocol error: too big mbulk count string"
  kTooBigBulkCount,         // "Protocol error: too big bulk count string"
  kUnbalancedQuotes,        // "Protocol error: unbalanced quotes in request"
  kUnauthMultibulkLength,   // "Protocol error: unauthenticated multibulk length"
  kUnauthBulkLength,        // "Protocol error: unauthenticated bulk length"
};

enum class ParseStatus : uint8_t { kOk, kIncomplete, kError };

// Owned by one connection (its reactor thread). Parses one command at a time from the front of
// the unconsumed input. Keeps its progress across kIncomplete results, so a 512 MB bulk that
// arrives in many reads is scanned once, not once per read. The caller must present the same
// bytes again (plus more) after kIncomplete; it may move the buffer, since progress is kept as
// offsets from the start of the command.
class RespParser {
 public:
  explicit RespParser(ParserLimits limits = {}) : limits_(limits) {}

  // Parses one command from the front of `buf`.
  // kOk: *consumed is the command's size in bytes and *args its arguments. The views point into
  //      `buf` or into the parser's own scratch storage (inline arguments with escapes) and stay
  //      valid until the next call to Parse() or until `buf` changes. An empty line (inline) gives
  //      kOk with no arguments: the caller skips it.
  // kIncomplete: more bytes are needed; *consumed is 0.
  // kError: error() says why. The connection replies "-ERR <text>" and closes. Later calls
  //         return kError again until Reset().
  ParseStatus Parse(std::string_view buf, size_t* consumed, std::vector<std::string_view>* args);

  // After kIncomplete: how many bytes of buffer (from the command's start) the parser needs before
  // it can make progress, or 0 if unknown. Lets the connection reserve room for a big bulk once.
  size_t BytesWanted() const { return bytes_wanted_; }

  ParseError error() const { return error_; }
  char error_char() const { return error_char_; }  // the byte found instead of '$'
  // The Redis text for error(), e.g. "Protocol error: invalid bulk length" (no "ERR " prefix).
  std::string ErrorText() const;

  const ParserLimits& limits() const { return limits_; }
  void set_limits(const ParserLimits& l) { limits_ = l; }
  // Forgets a partial command and any error (limits stay), for a fresh stream of bytes.
  void Reset();

 private:
  // The common case in one pass, straight into *args: a whole multibulk command of at most
  // 1024 arguments is in `buf`, within the limits, every header line in the simple form
  // (ParseSimpleHeader). False when anything is missing or unusual; nothing is kept then (*args
  // is left unspecified), and ParseMultibulk (the general, resumable path) parses the command
  // from its start.
  bool ParseWholeMultibulk(std::string_view buf, size_t* consumed,
                           std::vector<std::string_view>* args);
  ParseStatus ParseMultibulk(std::string_view buf, size_t* consumed,
                             std::vector<std::string_view>* args);
  ParseStatus ParseInline(std::string_view buf, size_t* consumed,
                          std::vector<std::string_view>* args);
  ParseStatus Fail(ParseError e, char c = 0);
  // Finds `delim` ('\r' for a multibulk header line, '\n' for an inline line) at or after pos_,
  // resuming where the previous search of this line stopped, so a line that arrives a byte at a
  // time is scanned once. Returns its offset from the command start, or npos.
  size_t FindLineEnd(std::string_view buf, char delim);
  // Forgets the progress through the command just handed out, ready for the next one.
  void FinishCommand();
  // Splits an inline line like Redis's sdssplitargs. False: unbalanced quotes.
  bool SplitInline(std::string_view line, std::vector<std::string_view>* args);
  // An empty scratch_ string for one unescaped inline argument of the current command.
  std::string* NextScratch();

  ParserLimits limits_;
  // Progress through a multibulk command that is not complete yet.
  int64_t expected_args_ = -1;  // -1: the "*N" line has not been read yet
  size_t pos_ = 0;              // offset of the next unread byte from the command start
  std::vector<std::pair<size_t, size_t>> arg_spans_;  // (offset, length) of each argument read
  size_t bytes_wanted_ = 0;
  ParseError error_ = ParseError::kNone;
  char error_char_ = 0;
  std::deque<std::string> scratch_;  // unescaped inline arguments
  int64_t bulk_len_ = -1;    // length of the bulk being read; -1: its "$N" line is not read yet
  size_t scan_pos_ = 0;      // offset up to which the current line was searched for its end
  size_t scratch_used_ = 0;  // scratch_ strings handed out by the current command
};

}  // namespace deadbolt::protocol
