#pragma once
// lockload: the little RESP it needs - finding where a reply ends, naming its type, writing a
// command, and a blocking client for setup (HELLO, SCRIPT LOAD, preload, INFO).

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace deadbolt::lockload {

// Length in bytes of the one complete RESP2/RESP3 reply at the front of [data, data + size),
// aggregates and attributes included: > 0 when complete, 0 when more bytes are needed, -1 when
// the bytes are not RESP. Reads each header line once and skips bulk payloads by length; looks at
// nothing else. Streamed aggregates ("*?") are not supported (no command lockload sends gets one).
int64_t ScanReply(const char* data, size_t size);
inline int64_t ScanReply(std::string_view s) { return ScanReply(s.data(), s.size()); }

// What a reply is, from its first bytes. The names are those of the "replies_by_type" report.
enum class ReplyType : uint8_t {
  kOk,      // +OK
  kSimple,  // any other simple string (+PONG)
  kError,   // -... or !... (RESP3 bulk error)
  kInt0,    // :0
  kInt1,    // :1
  kInt,     // any other integer
  kBulk,    // $<n> with n >= 0, or RESP3 verbatim string
  kNull,    // $-1, *-1, RESP3 _
  kArray,   // any aggregate
  kOther,   // RESP3 double, boolean, big number
  kCount,
};
const char* ReplyTypeName(ReplyType t);
// Classifies the complete reply `r` (as delimited by ScanReply).
ReplyType ClassifyReply(std::string_view r);

// Appends a RESP array of bulk strings to *out.
void AppendCommand(std::string* out, std::initializer_list<std::string_view> args);

// A blocking TCP connection used on the main thread before and after the run, and by each worker
// to open and greet its connections before handing the socket to its ring. Not thread-safe: one
// thread at a time.
class SyncClient {
 public:
  SyncClient() = default;
  ~SyncClient();
  SyncClient(const SyncClient&) = delete;
  SyncClient& operator=(const SyncClient&) = delete;

  // Connects (TCP_NODELAY). Returns an empty string or the reason it failed.
  std::string Connect(const std::string& host, int port);
  // Sends `bytes` whole. Returns an empty string or the reason it failed.
  std::string SendAll(std::string_view bytes);
  // Reads one whole reply into *reply (its raw bytes). Returns an empty string or the reason.
  std::string ReadReply(std::string* reply);
  // SendAll + ReadReply for one command.
  std::string Call(std::initializer_list<std::string_view> args, std::string* reply);

  // Gives up the socket (for a worker's ring). Bytes already read past the last reply would be
  // lost, so this is only called when nothing is pending.
  int Release();
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string buf_;  // bytes read and not yet returned
};

// The payload of a bulk or simple-string reply ("$3\r\nabc\r\n" -> "abc", "+OK\r\n" -> "OK").
std::string_view ReplyPayload(std::string_view r);

}  // namespace deadbolt::lockload
