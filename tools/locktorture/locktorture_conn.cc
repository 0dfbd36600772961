#include "tools/locktorture/locktorture_conn.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tools/lockload/lockload_resp.h"

namespace deadbolt::locktorture {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

Conn::~Conn() { Close(); }

void Conn::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  buf_.clear();
}

std::string Conn::Wait(short events, int64_t deadline_ns, const char* what) {
  for (;;) {
    const int64_t left = deadline_ns - NowNs();
    if (left <= 0) return std::string("timed out waiting to ") + what;
    pollfd p{fd_, events, 0};
    // Round up so that a wait never ends a little before the deadline and spins.
    const int ms = static_cast<int>(std::min<int64_t>((left + 999'999) / 1'000'000, 1'000'000));
    int n = poll(&p, 1, ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::string("poll: ") + strerror(errno);
    }
    if (n > 0) return {};
  }
}

std::string Conn::Connect(const std::string& host, int port, int64_t deadline_ns) {
  Close();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port_str = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_str.c_str(), &hints, &res);
  if (rc != 0) return "cannot resolve " + host + ": " + gai_strerror(rc);
  std::string err = "no address for " + host;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd_ = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd_ < 0) {
      err = std::string("socket: ") + strerror(errno);
      continue;
    }
    err.clear();
    if (connect(fd_, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        err = std::string(strerror(errno));
      } else {
        err = Wait(POLLOUT, deadline_ns, "connect");
        if (err.empty()) {
          int so_error = 0;
          socklen_t len = sizeof(so_error);
          getsockopt(fd_, SOL_SOCKET, SO_ERROR, &so_error, &len);
          if (so_error != 0) err = strerror(so_error);
        }
      }
    }
    if (err.empty()) break;
    err = "connect to " + host + ":" + port_str + ": " + err;
    Close();
  }
  freeaddrinfo(res);
  if (!err.empty()) return err;
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return {};
}

std::string Conn::Send(std::string_view bytes, int64_t deadline_ns) {
  if (fd_ < 0) return "not connected";
  while (!bytes.empty()) {
    ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        std::string err = Wait(POLLOUT, deadline_ns, "send");
        if (!err.empty()) return err;
        continue;
      }
      return std::string("send: ") + strerror(errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

std::string Conn::Read(std::string* reply, int64_t deadline_ns) {
  if (fd_ < 0) return "not connected";
  for (;;) {
    int64_t len = lockload::ScanReply(buf_);
    if (len < 0) return "malformed reply from server: " + Printable(buf_);
    if (len > 0) {
      reply->assign(buf_, 0, static_cast<size_t>(len));
      buf_.erase(0, static_cast<size_t>(len));
      return {};
    }
    char tmp[16384];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        std::string err = Wait(POLLIN, deadline_ns, "read a reply");
        if (!err.empty()) return err;
        continue;
      }
      return std::string("recv: ") + strerror(errno);
    }
    if (n == 0) return "connection closed by server";
    buf_.append(tmp, static_cast<size_t>(n));
  }
}

std::string Conn::Call(std::initializer_list<std::string_view> args, std::string* reply,
                       int64_t deadline_ns) {
  std::string cmd;
  AppendArgs(&cmd, args);
  std::string err = Send(cmd, deadline_ns);
  if (!err.empty()) return err;
  return Read(reply, deadline_ns);
}

void AppendArgs(std::string* out, std::initializer_list<std::string_view> args) {
  lockload::AppendCommand(out, args);
}

bool IsError(std::string_view r) { return !r.empty() && (r[0] == '-' || r[0] == '!'); }

bool IsNull(std::string_view r) { return r == "$-1\r\n" || r == "*-1\r\n" || r == "_\r\n"; }

bool IsOk(std::string_view r) { return r == "+OK\r\n"; }

bool IntegerOf(std::string_view r, int64_t* out) {
  if (r.size() < 4 || r[0] != ':' || r.substr(r.size() - 2) != "\r\n") return false;
  std::string_view digits = r.substr(1, r.size() - 3);
  bool neg = false;
  if (!digits.empty() && digits[0] == '-') {
    neg = true;
    digits.remove_prefix(1);
  }
  if (digits.empty() || digits.size() > 19) return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

std::string Printable(std::string_view r) {
  if (r.ends_with("\r\n")) r.remove_suffix(2);
  std::string out;
  for (char c : r.substr(0, 200)) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += '?';
    } else {
      out += c;
    }
  }
  if (r.size() > 200) out += "...";
  return out;
}

uint16_t KeySlot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  // CRC16/XMODEM, bit by bit: polynomial 0x1021, no reflection, initial value and xor-out 0.
  uint32_t crc = 0;
  for (unsigned char byte : key) {
    crc ^= static_cast<uint32_t>(byte) << 8;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) : (crc << 1);
    crc &= 0xffff;
  }
  return static_cast<uint16_t>(crc % 16384);
}

int ShardOfSlot(uint16_t slot, int shards) {
  if (shards <= 1) return 0;
  return static_cast<int>(int64_t{slot} * shards / 16384);
}

std::string KeyOnShard(std::string_view prefix, int i, int shard, int shards) {
  if (shards < 1) shards = 1;
  shard = ((shard % shards) + shards) % shards;
  std::string base = std::string(prefix) + std::to_string(i);
  if (ShardOfSlot(KeySlot(base), shards) == shard) return base;
  for (int n = 0;; ++n) {
    std::string k = base + "." + std::to_string(n);
    if (ShardOfSlot(KeySlot(k), shards) == shard) return k;
  }
}

}  // namespace deadbolt::locktorture
