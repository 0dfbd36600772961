#include "protocol/reply_builder.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace deadbolt::protocol {
namespace {

// Room for a type byte, the longest int64 ("-9223372036854775808") and "\r\n".
constexpr size_t kHeaderMax = 1 + 20 + 2;
// Bulks up to this size are framed in a stack buffer and appended at once.
constexpr size_t kSmallPayload = 128;
// Room for the longest shortest-round-trip double ("-2.2250738585072014e-308") and more.
constexpr size_t kDoubleMax = 32;

// Writes "<type><n>\r\n" to `buf`; returns its length.
inline size_t FormatHeader(char* buf, char type, int64_t n) {
  buf[0] = type;
  char* end = std::to_chars(buf + 1, buf + kHeaderMax - 2, n).ptr;
  end[0] = '\r';
  end[1] = '\n';
  return static_cast<size_t>(end + 2 - buf);
}

// Writes the text of `v` to `buf` (kDoubleMax bytes); returns its length.
size_t FormatDoubleTo(char* buf, double v) {
  if (std::isnan(v)) {
    buf[0] = 'n';
    buf[1] = 'a';
    buf[2] = 'n';
    return 3;
  }
  // Integral values within +-2^62 print as integers, as Redis does ("10", not "1e+01"; and
  // 1e17 as "100000000000000000"). Negative zero stays "-0".
  constexpr double kIntegerLimit = 4611686018427387904.0;  // 2^62
  if (v >= -kIntegerLimit && v <= kIntegerLimit && v == std::trunc(v) &&
      !(v == 0 && std::signbit(v))) {
    return static_cast<size_t>(std::to_chars(buf, buf + kDoubleMax, static_cast<int64_t>(v)).ptr -
                               buf);
  }
  // Shortest text that reads back as `v`; infinities come out as "inf" and "-inf".
  return static_cast<size_t>(std::to_chars(buf, buf + kDoubleMax, v).ptr - buf);
}

// Appends `s` with every CR and LF turned into a space, so it cannot break the reply framing.
inline void AppendOneLine(std::string* out, std::string_view s) {
  const size_t start = out->size();
  out->append(s);
  for (size_t i = start; i < out->size(); ++i) {
    char& c = (*out)[i];
    if (c == '\r' || c == '\n') c = ' ';
  }
}

}  // namespace

std::string FormatDouble(double v) {
  char buf[kDoubleMax];
  return std::string(buf, FormatDoubleTo(buf, v));
}

void ReplyBuilder::AppendLength(char type, int64_t n) {
  char buf[kHeaderMax];
  out_->append(buf, FormatHeader(buf, type, n));
}

void ReplyBuilder::Ok() { out_->append("+OK\r\n", 5); }

void ReplyBuilder::SimpleString(std::string_view s) {
  out_->push_back('+');
  AppendOneLine(out_, s);
  out_->append("\r\n", 2);
}

void ReplyBuilder::Error(std::string_view msg) {
  out_->push_back('-');
  AppendOneLine(out_, msg);
  out_->append("\r\n", 2);
}

void ReplyBuilder::Integer(int64_t v) { AppendLength(':', v); }

void ReplyBuilder::Bulk(std::string_view s) {
  if (s.size() <= kSmallPayload) {  // one append instead of three
    char buf[kHeaderMax + kSmallPayload + 2];
    size_t len = FormatHeader(buf, '$', static_cast<int64_t>(s.size()));
    std::memcpy(buf + len, s.data(), s.size());
    len += s.size();
    buf[len++] = '\r';
    buf[len++] = '\n';
    out_->append(buf, len);
    return;
  }
  AppendLength('$', static_cast<int64_t>(s.size()));
  out_->append(s);
  out_->append("\r\n", 2);
}

void ReplyBuilder::Null() {
  if (resp_ >= 3) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("$-1\r\n", 5);
  }
}

void ReplyBuilder::NullArray() {
  if (resp_ >= 3) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("*-1\r\n", 5);
  }
}

void ReplyBuilder::ArrayHeader(size_t n) { AppendLength('*', static_cast<int64_t>(n)); }

void ReplyBuilder::MapHeader(size_t n) {
  if (resp_ >= 3) {
    AppendLength('%', static_cast<int64_t>(n));
  } else {
    AppendLength('*', static_cast<int64_t>(2 * n));
  }
}

void ReplyBuilder::SetHeader(size_t n) {
  AppendLength(resp_ >= 3 ? '~' : '*', static_cast<int64_t>(n));
}

void ReplyBuilder::PushHeader(size_t n) {
  AppendLength(resp_ >= 3 ? '>' : '*', static_cast<int64_t>(n));
}

void ReplyBuilder::Double(double v) {
  char buf[kDoubleMax];
  const size_t len = FormatDoubleTo(buf, v);
  if (resp_ >= 3) {
    out_->push_back(',');
    out_->append(buf, len);
    out_->append("\r\n", 2);
  } else {
    Bulk(std::string_view(buf, len));
  }
}

void ReplyBuilder::Bool(bool v) {
  if (resp_ >= 3) {
    out_->append(v ? "#t\r\n" : "#f\r\n", 4);
  } else {
    out_->append(v ? ":1\r\n" : ":0\r\n", 4);
  }
}

void ReplyBuilder::Verbatim(std::string_view s) {
  if (resp_ >= 3) {
    AppendLength('=', static_cast<int64_t>(s.size() + 4));
    out_->append("txt:", 4);
    out_->append(s);
    out_->append("\r\n", 2);
  } else {
    Bulk(s);
  }
}

void ReplyBuilder::BulkArray(const std::string_view* items, size_t n) {
  ArrayHeader(n);
  for (size_t i = 0; i < n; ++i) Bulk(items[i]);
}

}  // namespace deadbolt::protocol
