#pragma once
// locktorture: a blocking RESP connection whose every step has a deadline, and the key-slot
// arithmetic that places the contended locks on chosen shards.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace deadbolt::locktorture {

// CLOCK_MONOTONIC in nanoseconds.
int64_t NowNs();

// One TCP connection to the server, used by one thread at a time (each client thread owns its
// own). Replies are delimited with lockload's ScanReply and returned as raw bytes. Every call
// takes an absolute deadline (NowNs() clock) and fails with a message instead of waiting past it.
class Conn {
 public:
  Conn() = default;
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Connects (non-blocking connect, TCP_NODELAY). Returns "" or why it failed.
  std::string Connect(const std::string& host, int port, int64_t deadline_ns);
  // Sends `bytes` whole. Returns "" or why it failed.
  std::string Send(std::string_view bytes, int64_t deadline_ns);
  // Reads one whole reply into *reply. Returns "" or why it failed (timeout included).
  std::string Read(std::string* reply, int64_t deadline_ns);
  // Send + Read for one command.
  std::string Call(std::initializer_list<std::string_view> args, std::string* reply,
                   int64_t deadline_ns);
  void Close();
  bool connected() const { return fd_ >= 0; }

 private:
  // Waits for `events` on the socket until the deadline. Returns "" or why not.
  std::string Wait(short events, int64_t deadline_ns, const char* what);

  int fd_ = -1;
  std::string buf_;  // bytes read and not yet returned
};

// Appends a RESP array of bulk strings (a command) to *out.
void AppendArgs(std::string* out, std::initializer_list<std::string_view> args);

// --- reply helpers (on raw replies delimited by ScanReply) ---

bool IsError(std::string_view r);
bool IsNull(std::string_view r);  // $-1, *-1 or RESP3 _
bool IsOk(std::string_view r);    // +OK
// The integer of an integer reply.
bool IntegerOf(std::string_view r, int64_t* out);
// The reply without its trailing CRLF, cut to 200 bytes, for messages.
std::string Printable(std::string_view r);

// The Redis Cluster slot of a key: CRC16 (XMODEM) of the key, or of its {hash tag} when it has a
// non-empty one, mod 16384.
uint16_t KeySlot(std::string_view key);
// The shard that owns a slot when the slots are split into `shards` contiguous ranges, as
// deadbolt-server does (slot * shards / 16384).
int ShardOfSlot(uint16_t slot, int shards);
// A key "<prefix><i>" or "<prefix><i>.<n>" (smallest n) that lands on shard `shard` of `shards`.
std::string KeyOnShard(std::string_view prefix, int i, int shard, int shards);

}  // namespace deadbolt::locktorture
