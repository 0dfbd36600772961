#include "tools/lockload/lockload_resp.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace deadbolt::lockload {
namespace {

// Parses the signed decimal in [p, end). Returns false if it is not one or is absurdly large.
bool ParseLength(const char* p, const char* end, int64_t* out) {
  bool neg = false;
  if (p < end && *p == '-') {
    neg = true;
    ++p;
  }
  if (p == end || end - p > 18) return false;
  int64_t v = 0;
  for (; p < end; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
  }
  *out = neg ? -v : v;
  return true;
}

}  // namespace

int64_t ScanReply(const char* data, size_t size) {
  size_t pos = 0;
  int64_t pending = 1;  // values still to read before the reply is complete
  while (pending > 0) {
    if (pos >= size) return 0;
    const char type = data[pos];
    const void* nl = memchr(data + pos + 1, '\n', size - pos - 1);
    if (nl == nullptr) return 0;
    const size_t line_end = static_cast<const char*>(nl) - data + 1;  // just past "\n"
    if (line_end - pos < 3 || data[line_end - 2] != '\r') return -1;
    const char* arg = data + pos + 1;
    const char* arg_end = data + line_end - 2;
    int64_t n = 0;
    switch (type) {
      case '+':
      case '-':
      case ':':
      case '_':
      case ',':
      case '#':
      case '(':
        pos = line_end;
        --pending;
        break;
      case '$':
      case '!':
      case '=':
        if (!ParseLength(arg, arg_end, &n) || n < -1) return -1;
        if (n == -1) {
          pos = line_end;
        } else {
          const size_t need = line_end + static_cast<size_t>(n) + 2;
          if (need > size) return 0;
          if (data[need - 2] != '\r' || data[need - 1] != '\n') return -1;
          pos = need;
        }
        --pending;
        break;
      case '*':
      case '~':
      case '>':
      case '%':
        if (!ParseLength(arg, arg_end, &n) || n < -1) return -1;
        pos = line_end;
        --pending;
        if (n > 0) pending += type == '%' ? 2 * n : n;
        break;
      case '|':  // attributes: n key-value pairs, then the value they describe
        if (!ParseLength(arg, arg_end, &n) || n < 0) return -1;
        pos = line_end;
        pending += 2 * n;
        break;
      default:
        return -1;
    }
  }
  return static_cast<int64_t>(pos);
}

const char* ReplyTypeName(ReplyType t) {
  switch (t) {
    case ReplyType::kOk:
      return "ok";
    case ReplyType::kSimple:
      return "simple";
    case ReplyType::kError:
      return "error";
    case ReplyType::kInt0:
      return "int_0";
    case ReplyType::kInt1:
      return "int_1";
    case ReplyType::kInt:
      return "int_other";
    case ReplyType::kBulk:
      return "bulk";
    case ReplyType::kNull:
      return "null";
    case ReplyType::kArray:
      return "aggregate";
    case ReplyType::kOther:
      return "other";
    case ReplyType::kCount:
      break;
  }
  return "?";
}

ReplyType ClassifyReply(std::string_view r) {
  if (r.size() < 3) return ReplyType::kOther;
  switch (r[0]) {
    case '+':
      return r.size() == 5 && r[1] == 'O' && r[2] == 'K' ? ReplyType::kOk : ReplyType::kSimple;
    case '-':
    case '!':
      return ReplyType::kError;
    case ':':
      if (r.size() == 4 && r[1] == '0') return ReplyType::kInt0;
      if (r.size() == 4 && r[1] == '1') return ReplyType::kInt1;
      return ReplyType::kInt;
    case '$':
      return r[1] == '-' ? ReplyType::kNull : ReplyType::kBulk;
    case '=':
      return ReplyType::kBulk;
    case '_':
      return ReplyType::kNull;
    case '*':
      return r[1] == '-' ? ReplyType::kNull : ReplyType::kArray;
    case '~':
    case '%':
    case '>':
    case '|':
      return ReplyType::kArray;
    default:
      return ReplyType::kOther;
  }
}

void AppendCommand(std::string* out, std::initializer_list<std::string_view> args) {
  *out += '*';
  *out += std::to_string(args.size());
  *out += "\r\n";
  for (std::string_view a : args) {
    *out += '$';
    *out += std::to_string(a.size());
    *out += "\r\n";
    *out += a;
    *out += "\r\n";
  }
}

std::string_view ReplyPayload(std::string_view r) {
  if (r.size() < 3) return {};
  size_t nl = r.find("\r\n");
  if (nl == std::string_view::npos) return {};
  if (r[0] == '$' || r[0] == '=') {
    size_t start = nl + 2;
    if (r.size() < start + 2) return {};
    return r.substr(start, r.size() - start - 2);
  }
  return r.substr(1, nl - 1);
}

SyncClient::~SyncClient() {
  if (fd_ >= 0) close(fd_);
}

std::string SyncClient::Connect(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port_str = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_str.c_str(), &hints, &res);
  if (rc != 0) return "cannot resolve " + host + ": " + gai_strerror(rc);
  std::string err = "no address for " + host;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = std::string("socket: ") + strerror(errno);
      continue;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = "connect to " + host + ":" + port_str + ": " + strerror(errno);
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fd_ = fd;
    err.clear();
    break;
  }
  freeaddrinfo(res);
  return err;
}

std::string SyncClient::SendAll(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::string("send: ") + strerror(errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

std::string SyncClient::ReadReply(std::string* reply) {
  for (;;) {
    int64_t len = ScanReply(buf_);
    if (len < 0) return "malformed reply from server";
    if (len > 0) {
      reply->assign(buf_, 0, static_cast<size_t>(len));
      buf_.erase(0, static_cast<size_t>(len));
      return {};
    }
    char tmp[16384];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::string("recv: ") + strerror(errno);
    }
    if (n == 0) return "connection closed by server";
    buf_.append(tmp, static_cast<size_t>(n));
  }
}

std::string SyncClient::Call(std::initializer_list<std::string_view> args, std::string* reply) {
  std::string cmd;
  AppendCommand(&cmd, args);
  std::string err = SendAll(cmd);
  if (!err.empty()) return err;
  return ReadReply(reply);
}

int SyncClient::Release() {
  int fd = fd_;
  fd_ = -1;
  buf_.clear();
  return fd;
}

}  // namespace deadbolt::lockload
