#include "protocol/resp_parser.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_builder.h"

// Counts heap allocations, so that a test can prove the multibulk steady state allocates nothing.
namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

// GCC takes free() inside a replacement operator delete for a mismatched pair; it is not one here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace deadbolt::protocol {
namespace {

using Args = std::vector<std::string>;

std::string_view operator""_sv(const char* s, size_t n) { return std::string_view(s, n); }

// Concatenates pieces. (Used instead of operator+, which sets off a false -Wrestrict in GCC 12.)
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

std::string Repeat(size_t n, char c) { return std::string(n, c); }

// What a connection would see from one stream of bytes.
struct Outcome {
  std::vector<Args> commands;  // the arguments of every kOk, in order (empty commands included)
  ParseStatus last = ParseStatus::kIncomplete;  // kIncomplete: waiting for more; or kError
  ParseError error = ParseError::kNone;
  std::string error_text;
  size_t unconsumed = 0;  // bytes left in the buffer at the end

  bool operator==(const Outcome& o) const {
    return commands == o.commands && last == o.last && error == o.error &&
           error_text == o.error_text && unconsumed == o.unconsumed;
  }
};

void PrintTo(const Outcome& o, std::ostream* os) {
  *os << o.commands.size() << " commands, last=" << static_cast<int>(o.last) << " error='"
      << o.error_text << "' unconsumed=" << o.unconsumed;
}

// Feeds `input` as a connection would: the bytes arrive in pieces that end at each of `cuts` (and
// at the end of the input); after every arrival the parser runs until it needs more. Consumed
// bytes are erased from the front, and the buffer is copied to a fresh string before every call,
// so the parser never sees the same address twice.
Outcome Feed(std::string_view input, const std::vector<size_t>& cuts,
             const ParserLimits& limits = {}) {
  RespParser parser(limits);
  Outcome out;
  std::string buf;
  std::vector<std::string_view> args;
  size_t fed = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(input.size());
  for (size_t end : ends) {
    if (end < fed) continue;
    buf.append(input.substr(fed, end - fed));
    fed = end;
    for (;;) {
      const std::string moved = buf;  // a new address for the same bytes
      size_t consumed = 12345;
      const ParseStatus st = parser.Parse(moved, &consumed, &args);
      if (st == ParseStatus::kOk) {
        EXPECT_GT(consumed, 0u);
        out.commands.emplace_back(args.begin(), args.end());
        buf.erase(0, consumed);
        continue;
      }
      EXPECT_EQ(consumed, 0u);
      EXPECT_TRUE(args.empty());
      out.last = st;
      if (st == ParseStatus::kError) {
        out.error = parser.error();
        out.error_text = parser.ErrorText();
        out.unconsumed = buf.size() + (input.size() - fed);
        return out;
      }
      break;
    }
  }
  out.unconsumed = buf.size();
  return out;
}

Outcome FeedWhole(std::string_view input, const ParserLimits& limits = {}) {
  return Feed(input, {}, limits);
}

// Parses exactly one command from `input`, which must hold exactly that command.
Args ParseOne(std::string_view input, const ParserLimits& limits = {}) {
  RespParser parser(limits);
  size_t consumed = 0;
  std::vector<std::string_view> args;
  EXPECT_EQ(parser.Parse(input, &consumed, &args), ParseStatus::kOk) << parser.ErrorText();
  EXPECT_EQ(consumed, input.size());
  return Args(args.begin(), args.end());
}

// Parses `input` in one call and expects an error; returns ErrorText().
std::string ParseError1(std::string_view input, ParseError want, const ParserLimits& limits = {}) {
  RespParser parser(limits);
  size_t consumed = 7;
  std::vector<std::string_view> args{"stale"};
  EXPECT_EQ(parser.Parse(input, &consumed, &args), ParseStatus::kError) << input;
  EXPECT_EQ(parser.error(), want) << input;
  EXPECT_EQ(consumed, 0u);
  EXPECT_TRUE(args.empty());
  return parser.ErrorText();
}

// Parses `input` in one call and expects kIncomplete.
void ExpectIncomplete(std::string_view input, const ParserLimits& limits = {}) {
  RespParser parser(limits);
  size_t consumed = 7;
  std::vector<std::string_view> args;
  EXPECT_EQ(parser.Parse(input, &consumed, &args), ParseStatus::kIncomplete) << input;
  EXPECT_EQ(consumed, 0u);
  EXPECT_EQ(parser.error(), ParseError::kNone);
}

std::string Bulk(std::string_view s) {
  return Cat({"$", std::to_string(s.size()), "\r\n", s, "\r\n"});
}

std::string Command(const Args& args) {
  std::string out = Cat({"*", std::to_string(args.size()), "\r\n"});
  for (const auto& a : args) out += Bulk(a);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Multibulk

TEST(RespParserMultibulk, ParsesSet) {
  const std::string in = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
  EXPECT_EQ(ParseOne(in), (Args{"SET", "key", "value"}));
}

TEST(RespParserMultibulk, ParsesSetNxPx) {
  const Args cmd = {"SET", "lock:res", "c0ffee", "NX", "PX", "30000"};
  EXPECT_EQ(ParseOne(Command(cmd)), cmd);
}

TEST(RespParserMultibulk, ArgumentsPointIntoTheBuffer) {
  const std::string in = Command({"GET", "k"});
  RespParser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kOk);
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0].data(), in.data() + 8);
  EXPECT_EQ(args[1].data(), in.data() + 17);
}

TEST(RespParserMultibulk, EmptyBulk) {
  EXPECT_EQ(ParseOne("*2\r\n$0\r\n\r\n$1\r\nx\r\n"), (Args{"", "x"}));
}

TEST(RespParserMultibulk, ZeroOrNegativeCountIsAnEmptyCommand) {
  EXPECT_EQ(ParseOne("*0\r\n"), Args{});
  EXPECT_EQ(ParseOne("*-1\r\n"), Args{});
  EXPECT_EQ(ParseOne("*-10\r\n"), Args{});
  EXPECT_EQ(ParseOne("*-9223372036854775808\r\n"), Args{});
  // Followed by a real command in the same buffer: only the empty one is consumed.
  const Outcome o = FeedWhole("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(o.commands, (std::vector<Args>{{}, {}, {"PING"}}));
  EXPECT_EQ(o.unconsumed, 0u);
}

TEST(RespParserMultibulk, BinarySafeBulks) {
  const std::string value("a\r\nb\0c\r\n\xff\x00"_sv);
  ASSERT_EQ(value.size(), 10u);
  const Args cmd = {"SET", std::string("k\0\r\n"_sv), value};
  EXPECT_EQ(ParseOne(Command(cmd)), cmd);
  // A bulk that is only CRLFs, and one that looks like a RESP header.
  const Args tricky = {"\r\n\r\n", "*1\r\n$3\r\nfoo\r\n", std::string("\0"_sv)};
  EXPECT_EQ(ParseOne(Command(tricky)), tricky);
}

TEST(RespParserMultibulk, TwoBytesAfterABulkAreSkippedUnchecked) {
  // Redis skips the two bytes after the bulk data without looking at them.
  const Outcome o = FeedWhole("*1\r\n$3\r\nfooXY*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(o.commands, (std::vector<Args>{{"foo"}, {"PING"}}));
  EXPECT_EQ(o.last, ParseStatus::kIncomplete);
  EXPECT_EQ(o.unconsumed, 0u);
}

TEST(RespParserMultibulk, HeaderLineEndsAtCrAndTheNextByteIsSkipped) {
  // Like Redis, a header line ends at its first '\r' and the byte after it is not checked.
  EXPECT_EQ(ParseOne("*2\rX$3\r\nfoo\r\n$1\r?z\r\n"), (Args{"foo", "z"}));
}

TEST(RespParserMultibulk, IncompleteAtEveryStage) {
  const std::string in = Command({"SET", "key", "value"});
  for (size_t n = 0; n < in.size(); ++n) ExpectIncomplete(std::string_view(in).substr(0, n));
  ExpectIncomplete("*1\r");  // '\r' is there, the byte after it is not
  ExpectIncomplete("*1\r\n$3\r");
}

TEST(RespParserMultibulk, StrictCountLine) {
  for (const char* bad :
       {"*\r\n", "*+1\r\n", "* 1\r\n", "*1 \r\n", "*01\r\n", "*00\r\n", "*-0\r\n", "*1a\r\n",
        "*abc\r\n", "*-\r\n", "*--1\r\n", "*1\n\r\n", "*-9223372036854775809\r\n",
        "*99999999999999999999\r\n", "*100000000000000000000\r\n"}) {
    EXPECT_EQ(ParseError1(bad, ParseError::kInvalidMultibulkLength),
              "Protocol error: invalid multibulk length")
        << bad;
  }
}

TEST(RespParserMultibulk, StrictBulkLengthLine) {
  for (const char* bad : {"$\r\n", "$+3\r\n", "$ 3\r\n", "$3 \r\n", "$03\r\n", "$00\r\n", "$-0\r\n",
                          "$-1\r\n", "$-3\r\n", "$3a\r\n", "$x\r\n", "$-\r\n",
                          "$18446744073709551616\r\n", "$9223372036854775808\r\n"}) {
    const std::string in = Cat({"*1\r\n", bad, "abc\r\n"});
    EXPECT_EQ(ParseError1(in, ParseError::kInvalidBulkLength),
              "Protocol error: invalid bulk length")
        << bad;
  }
}

TEST(RespParserMultibulk, LongLengthsTakeTheGeneralPath) {
  // 18 digits (fast path) and 19 digits (general path) parse to the same kind of result.
  ParserLimits limits;
  limits.max_bulk_len = INT64_MAX - 64;
  for (const std::string len : {"123456789012345678", "1234567890123456789"}) {
    RespParser parser(limits);
    size_t consumed = 0;
    std::vector<std::string_view> args;
    const std::string in = Cat({"*1\r\n$", len, "\r\nab"});
    ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kIncomplete);
    EXPECT_EQ(parser.BytesWanted(), 4 + 1 + len.size() + 2 + std::stoull(len) + 2);
  }
}

TEST(RespParserMultibulk, ZeroLengthBulkIsOk) { EXPECT_EQ(ParseOne("*1\r\n$0\r\n\r\n"), Args{""}); }

TEST(RespParserMultibulk, BytesWanted) {
  RespParser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  std::string in = "*2\r\n$3\r\nGET\r\n$10";
  ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kIncomplete);
  EXPECT_EQ(parser.BytesWanted(), 0u);  // the length is not known yet
  in += "0\r\nab";
  ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kIncomplete);
  EXPECT_EQ(parser.BytesWanted(), 4u + 9u + 6u + 100u + 2u);
  in += std::string(98, 'c');
  ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kIncomplete);
  EXPECT_EQ(parser.BytesWanted(), 121u);
  in += "\r";
  ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kIncomplete);
  in += "\n";
  ASSERT_EQ(in.size(), 121u);
  ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kOk);
  EXPECT_EQ(consumed, 121u);
  EXPECT_EQ(parser.BytesWanted(), 0u);
  EXPECT_EQ(args[1], Cat({"ab", Repeat(98, 'c')}));
}

// ---------------------------------------------------------------------------------------------
// Errors and limits

TEST(RespParserErrors, ExpectedDollar) {
  RespParser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse("*1\r\n:3\r\nfoo\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(parser.error(), ParseError::kExpectedDollar);
  EXPECT_EQ(parser.error_char(), ':');
  EXPECT_EQ(parser.ErrorText(), "Protocol error: expected '$', got ':'");
  // Redis's own test: a bulk where the next header should be.
  EXPECT_EQ(ParseError1("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", ParseError::kExpectedDollar),
            "Protocol error: expected '$', got 'f'");
  // An empty header line.
  EXPECT_EQ(ParseError1("*1\r\n\r\n", ParseError::kExpectedDollar),
            "Protocol error: expected '$', got '\r'");
}

TEST(RespParserErrors, ExpectedDollarNeedsTheWholeLine) {
  // Like Redis, the first byte is only judged once the line (and the byte after '\r') is in.
  ExpectIncomplete("*1\r\nfoo");
  ExpectIncomplete("*1\r\nfoo\r");
  ParseError1("*1\r\nfoo\r\n", ParseError::kExpectedDollar);
}

TEST(RespParserErrors, MultibulkCountLimit) {
  ParserLimits limits;
  limits.max_multibulk_len = 3;
  EXPECT_EQ(ParseOne(Command({"a", "b", "c"}), limits), (Args{"a", "b", "c"}));
  EXPECT_EQ(ParseError1("*4\r\n", ParseError::kInvalidMultibulkLength, limits),
            "Protocol error: invalid multibulk length");
  // The default is 1024 * 1024.
  ExpectIncomplete("*1048576\r\n");
  ParseError1("*1048577\r\n", ParseError::kInvalidMultibulkLength);
}

TEST(RespParserErrors, BulkLengthLimit) {
  ParserLimits limits;
  limits.max_bulk_len = 10;
  EXPECT_EQ(ParseOne(Command({"0123456789"}), limits), Args{"0123456789"});
  EXPECT_EQ(ParseError1("*1\r\n$11\r\n", ParseError::kInvalidBulkLength, limits),
            "Protocol error: invalid bulk length");
  // The default is 512 MB.
  ExpectIncomplete("*1\r\n$536870912\r\n");
  ParseError1("*1\r\n$536870913\r\n", ParseError::kInvalidBulkLength);
}

TEST(RespParserErrors, TooBigMbulkCount) {
  ParserLimits limits;
  limits.max_inline_len = 16;
  // Up to 16 bytes without '\r': wait. 17: refuse.
  ExpectIncomplete(Cat({"*", Repeat(15, '1')}), limits);
  EXPECT_EQ(ParseError1(Cat({"*", Repeat(16, '1')}), ParseError::kTooBigMbulkCount, limits),
            "Protocol error: too big mbulk count string");
  // A long line that does end is judged by its number instead.
  ParseError1(Cat({"*", Repeat(30, '1'), "\r\n"}), ParseError::kInvalidMultibulkLength, limits);
}

TEST(RespParserErrors, TooBigBulkCount) {
  ParserLimits limits;
  limits.max_inline_len = 16;
  // Counted from the start of the "$" line.
  ExpectIncomplete(Cat({"*1\r\n$", Repeat(15, '1')}), limits);
  EXPECT_EQ(ParseError1(Cat({"*1\r\n$", Repeat(16, '1')}), ParseError::kTooBigBulkCount, limits),
            "Protocol error: too big bulk count string");
  // Checked before the '$': the line is too long whatever it starts with.
  ParseError1(Cat({"*1\r\nx", Repeat(16, '1')}), ParseError::kTooBigBulkCount, limits);
  ParseError1(Cat({"*1\r\n$", Repeat(30, '1'), "\r\n"}), ParseError::kInvalidBulkLength, limits);
}

TEST(RespParserErrors, TooBigInlineRequest) {
  ParserLimits limits;
  limits.max_inline_len = 16;
  const std::string at_limit = Cat({"PING ", Repeat(11, 'x')});  // 16 bytes
  ExpectIncomplete(at_limit, limits);
  EXPECT_EQ(ParseOne(Cat({at_limit, "\n"}), limits), (Args{"PING", std::string(11, 'x')}));
  EXPECT_EQ(ParseError1(Cat({at_limit, "y"}), ParseError::kTooBigInlineRequest, limits),
            "Protocol error: too big inline request");
  // A long line that arrived whole is parsed.
  const std::string long_line = Cat({"ECHO ", Repeat(100, 'z')});
  EXPECT_EQ(ParseOne(Cat({long_line, "\r\n"}), limits), (Args{"ECHO", std::string(100, 'z')}));
  // Default 64 KB.
  ExpectIncomplete(std::string(64 * 1024, 'a'));
  ParseError1(std::string(64 * 1024 + 1, 'a'), ParseError::kTooBigInlineRequest);
}

TEST(RespParserErrors, UnbalancedQuotes) {
  for (const char* bad :
       {"\"abc\r\n", "'abc\r\n", "\"a\"b\r\n", "'a'b\r\n", "SET \"abc\\\"\r\n", "x \"abc\\\r\n",
        "it's\r\n", "\"a\"\"b\"\r\n", "'it\\'\r\n", "\"\r\n", "'\r\n", "ab\"cd\"ef\r\n"}) {
    EXPECT_EQ(ParseError1(bad, ParseError::kUnbalancedQuotes),
              "Protocol error: unbalanced quotes in request")
        << bad;
  }
}

TEST(RespParserErrors, ErrorIsStickyUntilReset) {
  RespParser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse("*x\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(parser.Parse("PING\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(parser.error(), ParseError::kInvalidMultibulkLength);
  parser.Reset();
  EXPECT_EQ(parser.error(), ParseError::kNone);
  EXPECT_EQ(parser.ErrorText(), "");
  ASSERT_EQ(parser.Parse("PING\r\n", &consumed, &args), ParseStatus::kOk);
  EXPECT_EQ(args, std::vector<std::string_view>{"PING"});
}

TEST(RespParserErrors, ResetDropsAPartialCommand) {
  RespParser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse("*2\r\n$3\r\nGET\r\n$5\r\nab", &consumed, &args),
            ParseStatus::kIncomplete);
  EXPECT_EQ(parser.BytesWanted(), 24u);
  parser.Reset();
  EXPECT_EQ(parser.BytesWanted(), 0u);
  ASSERT_EQ(parser.Parse("*1\r\n$4\r\nPING\r\n", &consumed, &args), ParseStatus::kOk);
  EXPECT_EQ(args, std::vector<std::string_view>{"PING"});
}

TEST(RespParserErrors, SetLimitsAppliesToTheNextLine) {
  RespParser parser;
  ParserLimits limits;
  limits.max_bulk_len = 2;
  parser.set_limits(limits);
  EXPECT_EQ(parser.limits().max_bulk_len, 2);
  size_t consumed = 0;
  std::vector<std::string_view> args;
  EXPECT_EQ(parser.Parse("*1\r\n$3\r\nabc\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(parser.error(), ParseError::kInvalidBulkLength);
}

// ---------------------------------------------------------------------------------------------
// Inline

TEST(RespParserInline, SplitsOnWhitespace) {
  EXPECT_EQ(ParseOne("PING\r\n"), Args{"PING"});
  EXPECT_EQ(ParseOne("PING\n"), Args{"PING"});
  EXPECT_EQ(ParseOne("SET a b\r\n"), (Args{"SET", "a", "b"}));
  EXPECT_EQ(ParseOne("  SET \t a   b \t \r\n"), (Args{"SET", "a", "b"}));
  // '\v' and '\f' are skipped between arguments but do not end one (as in sdssplitargs).
  EXPECT_EQ(ParseOne("\v\fa\vb c\f\n"), (Args{"a\vb", "c\f"}));
  // A '\r' inside the line separates arguments; only the one before '\n' is the line ending.
  EXPECT_EQ(ParseOne("a\rb\r\r\n"), (Args{"a", "b"}));
  // NUL is an ordinary byte.
  EXPECT_EQ(ParseOne("a\0b c\n"_sv), (Args{std::string("a\0b"_sv), "c"}));
}

TEST(RespParserInline, EmptyLinesAreEmptyCommands) {
  EXPECT_EQ(ParseOne("\r\n"), Args{});
  EXPECT_EQ(ParseOne("\n"), Args{});
  EXPECT_EQ(ParseOne(" \t \r\n"), Args{});
  const Outcome o = FeedWhole("\r\n\nPING\r\n");
  EXPECT_EQ(o.commands, (std::vector<Args>{{}, {}, {"PING"}}));
  EXPECT_EQ(o.unconsumed, 0u);
}

TEST(RespParserInline, DoubleQuotes) {
  EXPECT_EQ(ParseOne("SET \"hello world\" x\r\n"), (Args{"SET", "hello world", "x"}));
  EXPECT_EQ(ParseOne("\"\\n\\r\\t\\b\\a\\\\\\\"\"\n"), Args{"\n\r\t\b\a\\\""});
  EXPECT_EQ(ParseOne("\"\\x41\\x6a\\x00\\xfF\\x7e\"\n"), Args{std::string("Aj\0\xff~"_sv)});
  // \x needs two hex digits; otherwise a backslash just stands for the next byte.
  EXPECT_EQ(ParseOne("\"\\xZZ\" \"\\x4\" \"\\q\" \"\\'\"\n"), (Args{"xZZ", "x4", "q", "'"}));
  EXPECT_EQ(ParseOne("\"\"\n"), Args{""});
  EXPECT_EQ(ParseOne("\"'\"\n"), Args{"'"});
  // Raw CR and tab inside quotes are kept.
  EXPECT_EQ(ParseOne("\"a\rb\tc\"\n"), Args{"a\rb\tc"});
  // The closing quote may be followed by any space, or the end of the line.
  EXPECT_EQ(ParseOne("\"a\"\tb\n"), (Args{"a", "b"}));
  EXPECT_EQ(ParseOne("\"a\"\vb\n"), (Args{"a", "b"}));
  EXPECT_EQ(ParseOne("\"a\"\r\n"), Args{"a"});
}

TEST(RespParserInline, SingleQuotes) {
  EXPECT_EQ(ParseOne("'it\\'s' x\n"), (Args{"it's", "x"}));
  EXPECT_EQ(ParseOne("'a\\nb\\\\c\\x41'\n"), Args{"a\\nb\\\\c\\x41"});
  EXPECT_EQ(ParseOne("'a\"b'\n"), Args{"a\"b"});
  EXPECT_EQ(ParseOne("''\n"), Args{""});
}

TEST(RespParserInline, QuoteInsideABareArgument) {
  // A quote may open after bare bytes; its closing quote ends the argument.
  EXPECT_EQ(ParseOne("foo\"bar baz\" x\n"), (Args{"foobar baz", "x"}));
  EXPECT_EQ(ParseOne("ab'c d'\n"), Args{"abc d"});
}

TEST(RespParserInline, BareArgumentsPointIntoTheBufferAndEscapedOnesDoNot) {
  const std::string in = "GET \"k\\x41\" plain\r\n";
  RespParser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kOk);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0].data(), in.data());
  EXPECT_EQ(args[1], "kA");
  EXPECT_TRUE(args[1].data() < in.data() || args[1].data() >= in.data() + in.size());
  EXPECT_EQ(args[2].data(), in.data() + 12);
}

TEST(RespParserInline, ManyQuotedArgumentsStayValid) {
  std::string in;
  Args want;
  for (int i = 0; i < 500; ++i) {
    const std::string word = Cat({"w", std::to_string(i), Repeat(i % 40, 'x')});
    in += Cat({"\"", word, "\" "});
    want.push_back(word);
  }
  in += "\n";
  // Twice with one parser: the scratch storage is reused.
  RespParser parser;
  for (int round = 0; round < 2; ++round) {
    size_t consumed = 0;
    std::vector<std::string_view> args;
    ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kOk);
    EXPECT_EQ(Args(args.begin(), args.end()), want);
  }
}

TEST(RespParserInline, LineArrivingAByteAtATime) {
  const std::string in = Cat({"SET \"a b\" ", Repeat(5000, 'v'), "\r\n"});
  std::vector<size_t> cuts;
  for (size_t i = 1; i < in.size(); ++i) cuts.push_back(i);
  const Outcome o = Feed(in, cuts);
  EXPECT_EQ(o.commands, (std::vector<Args>{{"SET", "a b", std::string(5000, 'v')}}));
}

// ---------------------------------------------------------------------------------------------
// Streams: pipelines and arbitrary splits

TEST(RespParserStream, PipelineOfTenThousandCommands) {
  std::string in;
  std::vector<Args> want;
  for (int i = 0; i < 10000; ++i) {
    Args cmd = {
        "SET", Cat({"lock:", std::to_string(i)}), Cat({"owner-", std::to_string(i * 7)}), "NX",
        "PX",  std::to_string(1000 + i)};
    if (i % 3 == 1) cmd = {"GET", Cat({"k", std::to_string(i)})};
    want.push_back(cmd);
    in += Command(cmd);
  }
  RespParser parser;
  std::vector<std::string_view> args;
  std::string_view rest = in;
  for (const Args& cmd : want) {
    size_t consumed = 0;
    ASSERT_EQ(parser.Parse(rest, &consumed, &args), ParseStatus::kOk);
    ASSERT_EQ(Args(args.begin(), args.end()), cmd);
    rest.remove_prefix(consumed);
  }
  EXPECT_TRUE(rest.empty());
  size_t consumed = 0;
  EXPECT_EQ(parser.Parse(rest, &consumed, &args), ParseStatus::kIncomplete);
}

TEST(RespParserStream, SteadyStateAllocatesNothing) {
  std::string in;
  for (int i = 0; i < 10000; ++i) {
    in += Command({"SET", Cat({"lock:", std::to_string(i)}), "owner", "NX", "PX", "30000"});
  }
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(in, &consumed, &args), ParseStatus::kOk);  // warm up
  std::string_view rest = std::string_view(in).substr(consumed);
  size_t commands = 1;
  bool all_ok = true;
  const int64_t before = g_allocations.load();
  while (!rest.empty()) {
    all_ok &= parser.Parse(rest, &consumed, &args) == ParseStatus::kOk && args.size() == 6;
    rest.remove_prefix(consumed);
    ++commands;
  }
  const int64_t allocations = g_allocations.load() - before;
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(commands, 10000u);
  EXPECT_EQ(allocations, 0);
}

// A stream with every kind of request: multibulk (binary, empty, zero-count, negative-count),
// inline with quotes and escapes, and empty lines.
std::string MixedStream() {
  std::string s;
  s += Command({"SET", "lock:a", "owner-1", "NX", "PX", "30000"});
  s += "*0\r\n";
  s += "PING\r\n";
  s += Command({std::string("bin\0\r\nary"_sv), "", "\r\n"});
  s += "\r\n";
  s += "SET \"k \\x41\\n\" 'v\\'s' bare\n";
  s += "*-1\r\n";
  s += "*1\r\n$3\r\nfooXY";  // trailing bytes skipped unchecked
  s += "\n";
  s += Command({"GET", std::string(300, 'g')});
  s += "  ECHO  \"\"  ''  \r\n";
  s += Command({"DEL", "a", "b", "c"});
  return s;
}

std::vector<size_t> EveryByte(size_t n) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < n; ++i) cuts.push_back(i);
  return cuts;
}

TEST(RespParserStream, MixedStreamParsesAsExpected) {
  const Outcome o = FeedWhole(MixedStream());
  const std::vector<Args> want = {
      {"SET", "lock:a", "owner-1", "NX", "PX", "30000"},
      {},
      {"PING"},
      {std::string("bin\0\r\nary"_sv), "", "\r\n"},
      {},
      {"SET", "k A\n", "v's", "bare"},
      {},
      {"foo"},
      {},
      {"GET", std::string(300, 'g')},
      {"ECHO", "", ""},
      {"DEL", "a", "b", "c"},
  };
  EXPECT_EQ(o.commands, want);
  EXPECT_EQ(o.last, ParseStatus::kIncomplete);
  EXPECT_EQ(o.unconsumed, 0u);
}

TEST(RespParserStream, OneByteAtATimeMatchesWhole) {
  const std::string in = MixedStream();
  EXPECT_EQ(Feed(in, EveryByte(in.size())), FeedWhole(in));
}

TEST(RespParserStream, EverySplitPointMatchesWhole) {
  const std::string in = MixedStream();
  const Outcome whole = FeedWhole(in);
  for (size_t k = 0; k <= in.size(); ++k) {
    ASSERT_EQ(Feed(in, {k}), whole) << "split at " << k;
  }
}

TEST(RespParserStream, EveryPairOfSplitPointsMatchesWhole) {
  const std::string in =
      Cat({Command({"SET", "k", "v", "NX"}), "PING \"a\"\r\n", "*1\r\n$2\r\nab\r\n"});
  const Outcome whole = FeedWhole(in);
  for (size_t a = 0; a <= in.size(); ++a) {
    for (size_t b = a; b <= in.size(); ++b) ASSERT_EQ(Feed(in, {a, b}), whole) << a << "," << b;
  }
}

// A "*N" line cut before its '\r' leaves the general path's search position behind; after the
// command is parsed in one pass, the next line search (here an inline command's) must start
// afresh.
TEST(RespParserStream, WholeCommandAfterACutCountLine) {
  const std::string first =
      Command({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"});  // "*10\r\n..."
  const std::string in = first + "a\nPING\r\n";
  const Outcome whole = FeedWhole(in);
  ASSERT_EQ(whole.commands.size(), 3u);
  EXPECT_EQ(whole.commands[1], Args{"a"});
  EXPECT_EQ(Feed(in, {3}), whole);
}

// Lengths of every size of header (one, two, three and more digits), split anywhere.
TEST(RespParserStream, BulkLengthsOfEveryWidthMatchWhole) {
  std::string in;
  for (size_t len : {0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345}) {
    in += Command({"SET", std::string(len, 'k'), std::string(len % 7, 'v')});
  }
  const Outcome whole = FeedWhole(in);
  ASSERT_EQ(whole.commands.size(), 11u);
  EXPECT_EQ(whole.commands[5][1], std::string(99, 'k'));
  for (size_t k = 0; k <= in.size(); k += 7) ASSERT_EQ(Feed(in, {k}), whole) << "split at " << k;
}

// Past 1024 arguments a command takes the general path even when it is all there.
TEST(RespParserStream, ManyArgumentsParseOnEitherPath) {
  for (size_t n : {1023, 1024, 1025, 3000}) {
    Args cmd;
    for (size_t i = 0; i < n; ++i) cmd.push_back(std::to_string(i));
    const std::string in = Command(cmd) + Command({"GET", "k"});
    const Outcome whole = FeedWhole(in);
    ASSERT_EQ(whole.commands.size(), 2u) << n;
    EXPECT_EQ(whole.commands[0], cmd);
    EXPECT_EQ(Feed(in, {in.size() / 2}), whole) << n;
  }
}

TEST(RespParserStream, ErrorsAreFoundAtEverySplit) {
  struct Case {
    std::string tail;
    ParseError error;
  };
  const std::vector<Case> cases = {
      {"*1\r\n$x\r\n", ParseError::kInvalidBulkLength},
      {"*1\r\n$-1\r\n", ParseError::kInvalidBulkLength},
      {"*z\r\n", ParseError::kInvalidMultibulkLength},
      {"*2\r\n$1\r\na\r\n+b\r\n", ParseError::kExpectedDollar},
      {"*1\r\n$01\r\na\r\n", ParseError::kInvalidBulkLength},
      {"*2\r\n$1\r\na\r\n$1a\r\nb\r\n", ParseError::kInvalidBulkLength},
      {"SET \"a\r\n", ParseError::kUnbalancedQuotes},
  };
  for (const Case& c : cases) {
    const std::string in = MixedStream() + c.tail + Command({"NEVER", "SEEN"});
    const Outcome whole = FeedWhole(in);
    EXPECT_EQ(whole.last, ParseStatus::kError);
    EXPECT_EQ(whole.error, c.error);
    EXPECT_EQ(whole.commands.size(), 12u);
    EXPECT_EQ(Feed(in, EveryByte(in.size())), whole) << c.tail;
    for (size_t k = 0; k <= in.size(); ++k) ASSERT_EQ(Feed(in, {k}), whole) << c.tail << " " << k;
  }
}

TEST(RespParserStream, BigBulkInSmallChunks) {
  const size_t kSize = 16 * 1024 * 1024;
  std::string value(kSize, '\0');
  for (size_t i = 0; i < kSize; ++i) value[i] = static_cast<char>((i * 131) >> 3);
  const std::string in = Command({"SET", "big", value}) + Command({"GET", "big"});
  const size_t first = in.size() - Command({"GET", "big"}).size();
  const size_t header = first - kSize - 2;  // everything before the value's bytes

  RespParser parser;
  std::vector<std::string_view> args;
  std::string buf;
  size_t fed = 0;
  size_t calls = 0;
  std::vector<Args> got;
  while (fed < in.size()) {
    const size_t chunk = 1000 + (calls % 97);  // odd sizes, so every boundary is hit somewhere
    buf.append(in, fed, std::min(chunk, in.size() - fed));
    fed += std::min(chunk, in.size() - fed);
    ++calls;
    for (;;) {
      size_t consumed = 0;
      const ParseStatus st = parser.Parse(buf, &consumed, &args);
      ASSERT_NE(st, ParseStatus::kError);
      if (st == ParseStatus::kIncomplete) {
        if (got.empty() && buf.size() >= header) {
          ASSERT_EQ(parser.BytesWanted(), first);
        }
        break;
      }
      got.emplace_back(args.begin(), args.end());
      buf.erase(0, consumed);
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0][2] == value, true);
  EXPECT_EQ(got[1], (Args{"GET", "big"}));
  EXPECT_TRUE(buf.empty());
}

TEST(RespParserStream, ReplyBuilderOutputParsesBack) {
  // A command written by ReplyBuilder::BulkArray is itself a valid request.
  const std::vector<std::string_view> items = {"SET", "k", "v\r\n\0"_sv, "", "PX", "100"};
  std::string wire;
  ReplyBuilder rb(&wire);
  rb.BulkArray(items.data(), items.size());
  RespParser parser;
  size_t consumed = 0;
  std::vector<std::string_view> args;
  ASSERT_EQ(parser.Parse(wire, &consumed, &args), ParseStatus::kOk);
  EXPECT_EQ(consumed, wire.size());
  EXPECT_EQ(args, items);
}

}  // namespace
}  // namespace deadbolt::protocol

namespace deadbolt::protocol {
namespace {

// Before AUTH, Redis 7 takes at most 10 arguments and 16 KB bulks; after, the normal limits.
TEST(RespParserUnauthenticated, SmallLimitsUntilAuthenticated) {
  ParserLimits limits;
  limits.unauthenticated = true;
  RespParser p(limits);
  size_t consumed = 0;
  std::vector<std::string_view> args;
  std::string ten = "*10\r\n";
  for (int i = 0; i < 10; i++) ten += "$1\r\nx\r\n";
  EXPECT_EQ(p.Parse(ten, &consumed, &args), ParseStatus::kOk);
  EXPECT_EQ(args.size(), 10u);
  EXPECT_EQ(p.Parse("*11\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(p.ErrorText(), "Protocol error: unauthenticated multibulk length");

  RespParser q(limits);
  std::string ok = "*1\r\n$16384\r\n" + std::string(16384, 'a') + "\r\n";
  EXPECT_EQ(q.Parse(ok, &consumed, &args), ParseStatus::kOk);
  EXPECT_EQ(q.Parse("*1\r\n$16385\r\n", &consumed, &args), ParseStatus::kError);
  EXPECT_EQ(q.ErrorText(), "Protocol error: unauthenticated bulk length");

  limits.unauthenticated = false;
  RespParser r(limits);
  EXPECT_EQ(r.Parse("*11\r\n", &consumed, &args), ParseStatus::kIncomplete);
}

}  // namespace
}  // namespace deadbolt::protocol
