#pragma once
// RESP2/RESP3 reply encoding. Knows nothing of shards or sockets.

#include <cstdint>
#include <string>
#include <string_view>

namespace deadbolt::protocol {

// Owned by whoever is writing one reply stream (a connection's reactor thread, or a shard's
// reactor filling a forwarded command's reply). Appends RESP to a caller-owned string. The
// protocol version decides how nulls, maps, sets, doubles, booleans and pushes are encoded;
// in RESP2 they take the forms Redis uses (null bulk, flat arrays, bulk strings, integers).
class ReplyBuilder {
 public:
  explicit ReplyBuilder(std::string* out, int resp = 2) : out_(out), resp_(resp) {}

  int resp() const { return resp_; }
  void set_resp(int v) { resp_ = v; }
  std::string* out() { return out_; }
  void set_out(std::string* out) { out_ = out; }

  void Ok();                              // +OK
  void SimpleString(std::string_view s);  // +s (CR/LF inside s become spaces, as in Error)
  // `msg` is the whole error text including its code, e.g. "ERR syntax error" or
  // "WRONGTYPE Operation ...". Written as "-msg\r\n". CR/LF inside msg become spaces.
  void Error(std::string_view msg);
  void Integer(int64_t v);        // :v
  void Bulk(std::string_view s);  // $len s
  void Null();                    // RESP2 $-1 ; RESP3 _
  void NullArray();               // RESP2 *-1 ; RESP3 _
  void ArrayHeader(size_t n);     // *n
  void MapHeader(size_t n);       // RESP3 %n ; RESP2 *2n (n = number of pairs)
  void SetHeader(size_t n);       // RESP3 ~n ; RESP2 *n
  void PushHeader(size_t n);      // RESP3 >n ; RESP2 *n
  void Double(double v);  // RESP3 ,v ; RESP2 bulk with the shortest round-trip text, inf/-inf
  void Bool(bool v);      // RESP3 #t/#f ; RESP2 :1/:0
  void Verbatim(std::string_view s);                        // RESP3 =len txt:s ; RESP2 bulk s
  void BulkArray(const std::string_view* items, size_t n);  // *n of bulks

 private:
  void AppendLength(char type, int64_t n);
  std::string* out_;
  int resp_;
};

// Shortest text that reads back as the same double ("1.5", "10", "inf", "-inf", "nan").
std::string FormatDouble(double v);

}  // namespace deadbolt::protocol
