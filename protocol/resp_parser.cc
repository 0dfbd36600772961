#include "protocol/resp_parser.h"

#include <algorithm>
#include <cstring>

namespace deadbolt::protocol {
namespace {

constexpr size_t kNpos = std::string_view::npos;

// A "*N" line makes room for at most this many arguments up front, so that a client announcing a
// million arguments cannot make us allocate for them before it sends them.
constexpr size_t kMaxPreallocArgs = 1024;
// After a command with more arguments than this, the span storage is given back.
constexpr size_t kMaxKeptSpans = 64 * 1024;
// Scratch storage kept for inline arguments between commands.
constexpr size_t kMaxScratchStrings = 64;
constexpr size_t kMaxScratchCapacity = 64 * 1024;

// Redis's string2ll rules: an optional '-', then digits with no leading zero ("0" alone is fine,
// "-0" is not), no '+', no spaces, fewer than 21 characters, and the value must fit in int64.
bool ParseStrictInt(const char* p, size_t len, int64_t* out) {
  if (len == 0 || len >= 21) return false;
  if (len == 1 && p[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = 0;
  const bool negative = p[0] == '-';
  if (negative) {
    if (len == 1) return false;
    i = 1;
  }
  if (p[i] < '1' || p[i] > '9') return false;
  uint64_t v = 0;
  for (; i < len; ++i) {
    const unsigned d = static_cast<unsigned char>(p[i]) - unsigned{'0'};
    if (d > 9) return false;
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > (uint64_t{1} << 63)) return false;
    *out = static_cast<int64_t>(0 - v);  // modular in C++20: 2^63 becomes INT64_MIN
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

// The common header line "<type><digits>\r<any byte>": 1 to 18 digits, no sign, no leading zero
// unless the number is "0". Returns the offset just past the line, or 0 when the line is anything
// else (incomplete, negative, odd) and must take the general path. Whenever it succeeds, the
// general path would have found the same line end and the same value.
inline size_t ParseSimpleHeader(const char* p, size_t avail, int64_t* out) {
  const size_t limit = std::min(avail, size_t{19});  // type byte + 18 digits
  uint64_t v = 0;
  size_t i = 1;
  for (; i < limit; ++i) {
    const unsigned d = static_cast<unsigned char>(p[i]) - unsigned{'0'};
    if (d > 9) break;
    v = v * 10 + d;
  }
  if (i == 1 || i + 1 >= avail || p[i] != '\r') return 0;
  if (p[1] == '0' && i > 2) return 0;
  *out = static_cast<int64_t>(v);
  return i + 2;
}

// "$<one or two digits>\r<any byte>", the header of nearly every argument, in straight-line
// code: ParseSimpleHeader's result for those lines, 0 for any other (which then takes
// ParseSimpleHeader).
inline size_t ParseShortBulkHeader(const char* p, size_t avail, int64_t* out) {
  if (avail < 4) return 0;
  const unsigned d0 = static_cast<unsigned char>(p[1]) - unsigned{'0'};
  if (d0 > 9) return 0;
  if (p[2] == '\r') {
    *out = d0;
    return 4;
  }
  const unsigned d1 = static_cast<unsigned char>(p[2]) - unsigned{'0'};
  if (d1 > 9 || d0 == 0 || p[3] != '\r' || avail < 5) return 0;
  *out = d0 * 10 + d1;
  return 5;
}

// C-locale isspace(): blanks skipped between inline arguments, and allowed after a closing quote.
inline bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Bytes that end an unquoted inline argument. Like sdssplitargs, '\v' and '\f' do not.
inline bool EndsBareArg(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte a backslash escape inside double quotes stands for.
inline char Unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;  // \\, \", and any other byte stand for themselves
  }
}

// True when a closing quote at `quote` is followed by a space or by the end of the line.
inline bool QuoteClosesArg(std::string_view line, size_t quote) {
  return quote + 1 == line.size() || IsSpace(line[quote + 1]);
}

// Reads a "double quoted" argument body; *i is just past the opening quote and ends just past the
// closing one. Escapes: \n \r \t \b \a \xHH, and a backslash before any other byte stands for that
// byte (so \\ and \"). False: no closing quote, or one followed by something other than a space.
bool ReadDoubleQuoted(std::string_view line, size_t* i, std::string* out) {
  const size_t n = line.size();
  size_t p = *i;
  while (p < n) {
    const char c = line[p];
    if (c == '\\' && p + 3 < n && line[p + 1] == 'x' && HexValue(line[p + 2]) >= 0 &&
        HexValue(line[p + 3]) >= 0) {
      out->push_back(static_cast<char>(HexValue(line[p + 2]) * 16 + HexValue(line[p + 3])));
      p += 4;
    } else if (c == '\\' && p + 1 < n) {
      out->push_back(Unescape(line[p + 1]));
      p += 2;
    } else if (c == '"') {
      if (!QuoteClosesArg(line, p)) return false;
      *i = p + 1;
      return true;
    } else {
      out->push_back(c);
      ++p;
    }
  }
  return false;
}

// Reads a 'single quoted' argument body: the only escape is \' (any other backslash is literal).
bool ReadSingleQuoted(std::string_view line, size_t* i, std::string* out) {
  const size_t n = line.size();
  size_t p = *i;
  while (p < n) {
    const char c = line[p];
    if (c == '\\' && p + 1 < n && line[p + 1] == '\'') {
      out->push_back('\'');
      p += 2;
    } else if (c == '\'') {
      if (!QuoteClosesArg(line, p)) return false;
      *i = p + 1;
      return true;
    } else {
      out->push_back(c);
      ++p;
    }
  }
  return false;
}

}  // namespace

ParseStatus RespParser::Parse(std::string_view buf, size_t* consumed,
                              std::vector<std::string_view>* args) {
  *consumed = 0;
  ParseStatus status;
  if (error_ != ParseError::kNone) {
    status = ParseStatus::kError;  // sticky until Reset()
  } else if (buf.empty()) {
    bytes_wanted_ = 0;
    status = ParseStatus::kIncomplete;
  } else if (expected_args_ >= 0) {
    status = ParseMultibulk(buf, consumed, args);
  } else if (buf[0] == '*') {
    status = ParseWholeMultibulk(buf, consumed, args) ? ParseStatus::kOk
                                                      : ParseMultibulk(buf, consumed, args);
  } else {
    status = ParseInline(buf, consumed, args);
  }
  if (status != ParseStatus::kOk) args->clear();
  return status;
}

bool RespParser::ParseWholeMultibulk(std::string_view buf, size_t* consumed,
                                     std::vector<std::string_view>* args) {
  const char* const data = buf.data();
  const size_t size = buf.size();
  int64_t n = 0;
  size_t pos = ParseSimpleHeader(data, size, &n);
  // More than kMaxPreallocArgs arguments: the general path, which sizes nothing up front.
  if (pos == 0 || n <= 0 || n > static_cast<int64_t>(kMaxPreallocArgs) ||
      n > limits_.max_multibulk_len ||
      (limits_.unauthenticated && n > ParserLimits::kUnauthMaxArgs)) {
    return false;
  }
  // In locals: the stores to *args below could otherwise alias the limits and force reloads.
  const int64_t max_bulk = limits_.unauthenticated
                               ? std::min(limits_.max_bulk_len, ParserLimits::kUnauthMaxBulk)
                               : limits_.max_bulk_len;
  args->resize(static_cast<size_t>(n));
  std::string_view* out = args->data();
  for (int64_t k = 0; k < n; ++k) {
    if (pos >= size || data[pos] != '$') return false;
    int64_t len = 0;
    size_t header = ParseShortBulkHeader(data + pos, size - pos, &len);
    if (header == 0) header = ParseSimpleHeader(data + pos, size - pos, &len);
    if (header == 0 || len > max_bulk) return false;
    pos += header;
    // The bulk and the two bytes after it (skipped unchecked, as in ParseMultibulk).
    if (size - pos < static_cast<size_t>(len) + 2) return false;
    out[k] = std::string_view(data + pos, static_cast<size_t>(len));
    pos += static_cast<size_t>(len) + 2;
  }
  *consumed = pos;
  // Nothing of a command was kept, but a "*N" line that was incomplete last time left its
  // search position behind.
  scan_pos_ = 0;
  bytes_wanted_ = 0;
  return true;
}

ParseStatus RespParser::ParseMultibulk(std::string_view buf, size_t* consumed,
                                       std::vector<std::string_view>* args) {
  const char* const data = buf.data();
  const size_t size = buf.size();
  bytes_wanted_ = 0;

  if (expected_args_ < 0) {  // the "*N" line; pos_ is 0
    int64_t n = 0;
    size_t next = ParseSimpleHeader(data, size, &n);
    if (next == 0) {
      const size_t cr = FindLineEnd(buf, '\r');
      if (cr == kNpos) {
        if (size > limits_.max_inline_len) return Fail(ParseError::kTooBigMbulkCount);
        return ParseStatus::kIncomplete;
      }
      if (cr + 2 > size) return ParseStatus::kIncomplete;  // the byte after '\r' is not here yet
      if (!ParseStrictInt(data + 1, cr - 1, &n)) return Fail(ParseError::kInvalidMultibulkLength);
      next = cr + 2;
    }
    if (n > limits_.max_multibulk_len) return Fail(ParseError::kInvalidMultibulkLength);
    if (limits_.unauthenticated && n > ParserLimits::kUnauthMaxArgs) {
      return Fail(ParseError::kUnauthMultibulkLength);
    }
    if (n <= 0) {  // "*0", "*-1": an empty command, which the caller skips
      args->clear();
      *consumed = next;
      FinishCommand();
      return ParseStatus::kOk;
    }
    expected_args_ = n;
    pos_ = next;
    arg_spans_.reserve(std::min(static_cast<size_t>(n), kMaxPreallocArgs));
  }

  while (arg_spans_.size() < static_cast<size_t>(expected_args_)) {
    if (bulk_len_ < 0) {  // the "$N" line
      if (pos_ >= size) return ParseStatus::kIncomplete;
      int64_t len = 0;
      size_t next = data[pos_] == '$' ? ParseSimpleHeader(data + pos_, size - pos_, &len) : 0;
      if (next != 0) {
        next += pos_;
      } else {
        const size_t cr = FindLineEnd(buf, '\r');
        if (cr == kNpos) {
          if (size - pos_ > limits_.max_inline_len) return Fail(ParseError::kTooBigBulkCount);
          return ParseStatus::kIncomplete;
        }
        if (cr + 2 > size) return ParseStatus::kIncomplete;
        if (data[pos_] != '$') return Fail(ParseError::kExpectedDollar, data[pos_]);
        if (!ParseStrictInt(data + pos_ + 1, cr - pos_ - 1, &len) || len < 0) {
          return Fail(ParseError::kInvalidBulkLength);
        }
        next = cr + 2;
      }
      if (len > limits_.max_bulk_len) return Fail(ParseError::kInvalidBulkLength);
      if (limits_.unauthenticated && len > ParserLimits::kUnauthMaxBulk) {
        return Fail(ParseError::kUnauthBulkLength);
      }
      bulk_len_ = len;
      pos_ = next;
    }
    // The bulk and the two bytes after it. Like Redis, those two bytes are skipped unchecked.
    const size_t end = pos_ + static_cast<size_t>(bulk_len_) + 2;
    if (size < end) {
      bytes_wanted_ = end;
      return ParseStatus::kIncomplete;
    }
    arg_spans_.emplace_back(pos_, static_cast<size_t>(bulk_len_));
    pos_ = end;
    bulk_len_ = -1;
  }

  args->clear();
  for (const auto& [offset, length] : arg_spans_) args->emplace_back(data + offset, length);
  *consumed = pos_;
  FinishCommand();
  return ParseStatus::kOk;
}

ParseStatus RespParser::ParseInline(std::string_view buf, size_t* consumed,
                                    std::vector<std::string_view>* args) {
  bytes_wanted_ = 0;
  const size_t newline = FindLineEnd(buf, '\n');
  if (newline == kNpos) {
    if (buf.size() > limits_.max_inline_len) return Fail(ParseError::kTooBigInlineRequest);
    return ParseStatus::kIncomplete;
  }
  const size_t line_end = newline > 0 && buf[newline - 1] == '\r' ? newline - 1 : newline;
  if (scratch_.size() > kMaxScratchStrings) scratch_.clear();
  scratch_used_ = 0;
  args->clear();
  if (!SplitInline(buf.substr(0, line_end), args)) return Fail(ParseError::kUnbalancedQuotes);
  *consumed = newline + 1;
  FinishCommand();
  return ParseStatus::kOk;
}

bool RespParser::SplitInline(std::string_view line, std::vector<std::string_view>* args) {
  const size_t n = line.size();
  size_t i = 0;
  for (;;) {
    while (i < n && IsSpace(line[i])) ++i;
    if (i == n) return true;
    const size_t start = i;
    while (i < n && !EndsBareArg(line[i]) && line[i] != '"' && line[i] != '\'') ++i;
    if (i == n || EndsBareArg(line[i])) {  // no quotes: the argument is the input bytes
      args->emplace_back(line.data() + start, i - start);
      continue;
    }
    // A quote opens, possibly after some bare bytes ("ab'c d'" is "abc d"), and its closing quote
    // ends the argument.
    std::string* arg = NextScratch();
    arg->assign(line.data() + start, i - start);
    const char quote = line[i++];
    const bool closed =
        quote == '"' ? ReadDoubleQuoted(line, &i, arg) : ReadSingleQuoted(line, &i, arg);
    if (!closed) return false;
    args->emplace_back(*arg);
  }
}

std::string* RespParser::NextScratch() {
  if (scratch_used_ == scratch_.size()) scratch_.emplace_back();
  std::string* s = &scratch_[scratch_used_++];
  if (s->capacity() > kMaxScratchCapacity) {
    std::string().swap(*s);
  } else {
    s->clear();
  }
  return s;
}

size_t RespParser::FindLineEnd(std::string_view buf, char delim) {
  const size_t from = std::max(scan_pos_, pos_);
  if (from < buf.size()) {
    const void* hit = std::memchr(buf.data() + from, delim, buf.size() - from);
    if (hit != nullptr) {
      scan_pos_ = static_cast<size_t>(static_cast<const char*>(hit) - buf.data());
      return scan_pos_;
    }
  }
  scan_pos_ = std::max(from, buf.size());
  return kNpos;
}

void RespParser::FinishCommand() {
  expected_args_ = -1;
  pos_ = 0;
  bulk_len_ = -1;
  scan_pos_ = 0;
  bytes_wanted_ = 0;
  if (arg_spans_.capacity() > kMaxKeptSpans) {
    std::vector<std::pair<size_t, size_t>>().swap(arg_spans_);
  } else {
    arg_spans_.clear();
  }
}

ParseStatus RespParser::Fail(ParseError e, char c) {
  error_ = e;
  error_char_ = c;
  bytes_wanted_ = 0;
  return ParseStatus::kError;
}

void RespParser::Reset() {
  FinishCommand();
  error_ = ParseError::kNone;
  error_char_ = 0;
  scratch_.clear();
  scratch_used_ = 0;
}

std::string RespParser::ErrorText() const {
  switch (error_) {
    case ParseError::kNone:
      return {};
    case ParseError::kInvalidMultibulkLength:
      return "Protocol error: invalid multibulk length";
    case ParseError::kInvalidBulkLength:
      return "Protocol error: invalid bulk length";
    case ParseError::kExpectedDollar: {
      std::string text = "Protocol error: expected '$', got ' '";
      text[text.size() - 2] = error_char_;
      return text;
    }
    case ParseError::kTooBigInlineRequest:
      return "Protocol error: too big inline request";
    case ParseError::kTooBigMbulkCount:
      return "Protocol error: too big mbulk count string";
    case ParseError::kTooBigBulkCount:
      return "Protocol error: too big bulk count string";
    case ParseError::kUnbalancedQuotes:
      return "Protocol error: unbalanced quotes in request";
    case ParseError::kUnauthMultibulkLength:
      return "Protocol error: unauthenticated multibulk length";
    case ParseError::kUnauthBulkLength:
      return "Protocol error: unauthenticated bulk length";
  }
  return {};
}

}  // namespace deadbolt::protocol
