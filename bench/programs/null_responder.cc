// null_responder: the cheapest RESP server this machine can run, to measure the floor under
// deadbolt's CPU per request. It does what deadbolt's reactor does with the network and nothing
// else: one thread, io_uring with SINGLE_ISSUER + DEFER_TASKRUN, multishot accept, multishot
// receive into a provided-buffer ring, one send per connection per loop turn. It splits the
// input into RESP multibulk commands and answers each with `$-1` (what a contended
// `SET k v NX PX` gets), `+PONG` to PING; no keys, no table, no command lookup.
//
//   null_responder --port N
//
// bench/compare.py runs it beside deadbolt and redis-server: whatever deadbolt costs above it
// is deadbolt's own work; what it costs itself is the kernel's loopback TCP path and io_uring.
// Owned by its one thread; not a server for anything else (no limits, no inline commands).

#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr unsigned kEntries = 1024;
constexpr unsigned kBufCount = 512;  // as deadbolt's reactor
constexpr unsigned kBufSize = 16 * 1024;
constexpr uint64_t kAccept = 1, kRecv = 2, kSend = 3;

struct Conn {
  int fd = -1;
  std::string in;       // an incomplete command carried over to the next receive
  std::string out;      // replies not yet handed to the kernel
  std::string sending;  // the send in flight
  size_t sent = 0;
  bool send_armed = false;
  bool dirty = false;
  bool dead = false;
  int in_flight = 0;  // operations the ring still holds
};

// Length of the first complete multibulk command in [p, p+n), 0 if it is incomplete, -1 if it
// is not a multibulk command. *ping: its first argument is PING (any case).
long ParseOne(const char* p, size_t n, bool* ping) {
  const char* end = p + n;
  auto number = [&](const char*& q, char type, long* v) -> int {
    if (q >= end) return 0;
    if (*q != type) return -1;
    long x = 0;
    for (++q; q < end && *q != '\r'; ++q) {
      if (*q < '0' || *q > '9') return -1;
      x = x * 10 + (*q - '0');
    }
    if (end - q < 2) return 0;
    q += 2;
    *v = x;
    return 1;
  };
  const char* q = p;
  long argc;
  int r = number(q, '*', &argc);
  if (r <= 0) return r;
  *ping = false;
  for (long i = 0; i < argc; ++i) {
    long len;
    r = number(q, '$', &len);
    if (r <= 0) return r;
    if (end - q < len + 2) return 0;
    if (i == 0) *ping = len == 4 && strncasecmp(q, "ping", 4) == 0;
    q += len + 2;
  }
  return q - p;
}

class Responder {
 public:
  bool Init(int port) {
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
    p.cq_entries = kEntries * 8;
    if (int r = io_uring_queue_init_params(kEntries, &ring_, &p); r < 0) {
      fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-r));
      return false;
    }
    void* mem = mmap(nullptr, kBufCount * sizeof(io_uring_buf), PROT_READ | PROT_WRITE,
                     MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) return false;
    bufs_ = static_cast<io_uring_buf_ring*>(mem);
    io_uring_buf_ring_init(bufs_);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<uint64_t>(mem);
    reg.ring_entries = kBufCount;
    reg.bgid = 0;
    if (int r = io_uring_register_buf_ring(&ring_, &reg, 0); r < 0) {
      fprintf(stderr, "io_uring_register_buf_ring: %s\n", strerror(-r));
      return false;
    }
    base_ = static_cast<char*>(aligned_alloc(4096, size_t{kBufCount} * kBufSize));
    for (unsigned i = 0; i < kBufCount; ++i) Recycle(i);
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0 ||
        listen(listen_fd_, 511) < 0) {
      fprintf(stderr, "bind/listen on port %d: %s\n", port, strerror(errno));
      return false;
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_multishot_accept(sqe, listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, kAccept);
    return true;
  }

  void Run() {
    for (;;) {
      for (Conn* c : dirty_) {
        c->dirty = false;
        if (c->dead) {
          Close(c);
        } else if (!c->send_armed && !c->out.empty()) {
          Send(c);
        }
      }
      dirty_.clear();
      io_uring_submit_and_wait(&ring_, 1);
      unsigned head, n = 0;
      io_uring_cqe* cqe;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        Handle(cqe);
        ++n;
      }
      io_uring_cq_advance(&ring_, n);
    }
  }

 private:
  void Recycle(unsigned bid) {
    io_uring_buf_ring_add(bufs_, base_ + size_t{bid} * kBufSize, kBufSize,
                          static_cast<uint16_t>(bid), io_uring_buf_ring_mask(kBufCount), 0);
    io_uring_buf_ring_advance(bufs_, 1);
  }

  static uint64_t Tag(Conn* c, uint64_t op) { return reinterpret_cast<uint64_t>(c) | op; }

  void ArmRecv(Conn* c) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_recv_multishot(sqe, c->fd, nullptr, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 0;
    io_uring_sqe_set_data64(sqe, Tag(c, kRecv));
    ++c->in_flight;
  }

  void Send(Conn* c) {
    c->sending.swap(c->out);
    c->out.clear();
    c->sent = 0;
    SubmitSend(c);
  }

  void SubmitSend(Conn* c) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_send(sqe, c->fd, c->sending.data() + c->sent, c->sending.size() - c->sent,
                       MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, Tag(c, kSend));
    c->send_armed = true;
    ++c->in_flight;
  }

  void Close(Conn* c) {
    if (!c->dead) {
      c->dead = true;
      shutdown(c->fd, SHUT_RDWR);
    }
    if (c->in_flight == 0 && !c->dirty) {  // a dirty one goes when Run() drops it from dirty_
      close(c->fd);
      delete c;
    }
  }

  // Answers every complete command in [p, p+n); returns the bytes used, or -1 on bad input.
  long Answer(Conn* c, const char* p, size_t n) {
    size_t used = 0;
    for (;;) {
      bool ping = false;
      long len = ParseOne(p + used, n - used, &ping);
      if (len < 0) return -1;
      if (len == 0) break;
      c->out.append(ping ? "+PONG\r\n" : "$-1\r\n");
      used += static_cast<size_t>(len);
    }
    if (!c->out.empty() && !c->dirty) {
      c->dirty = true;
      dirty_.push_back(c);
    }
    return static_cast<long>(used);
  }

  void OnData(Conn* c, const char* data, size_t n) {
    if (c->in.empty()) {
      long used = Answer(c, data, n);
      if (used < 0) return Close(c);
      c->in.assign(data + used, n - static_cast<size_t>(used));
      return;
    }
    c->in.append(data, n);
    long used = Answer(c, c->in.data(), c->in.size());
    if (used < 0) return Close(c);
    c->in.erase(0, static_cast<size_t>(used));
  }

  void Handle(io_uring_cqe* cqe) {
    uint64_t tag = io_uring_cqe_get_data64(cqe);
    if (tag == kAccept) {
      if (cqe->res >= 0) {
        auto* c = new Conn;
        c->fd = cqe->res;
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ArmRecv(c);
      }
      return;
    }
    auto* c = reinterpret_cast<Conn*>(tag & ~uint64_t{7});
    const bool more = cqe->flags & IORING_CQE_F_MORE;
    if (!more) --c->in_flight;
    if ((tag & 7) == kRecv) {
      if (cqe->res > 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
        unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        if (!c->dead) OnData(c, base_ + size_t{bid} * kBufSize, static_cast<size_t>(cqe->res));
        Recycle(bid);
      }
      if (more) return;
      if (cqe->res == -ENOBUFS || (cqe->res > 0 && !c->dead)) return ArmRecv(c);
      return Close(c);  // end of stream or an error
    }
    c->send_armed = false;  // kSend
    if (cqe->res < 0 || c->dead) return Close(c);
    c->sent += static_cast<size_t>(cqe->res);
    if (c->sent < c->sending.size()) return SubmitSend(c);
    if (!c->out.empty()) Send(c);
  }

  io_uring ring_{};
  io_uring_buf_ring* bufs_ = nullptr;
  char* base_ = nullptr;
  int listen_fd_ = -1;
  std::vector<Conn*> dirty_;
};

}  // namespace

int main(int argc, char** argv) {
  int port = 6399;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
  }
  Responder r;
  if (!r.Init(port)) return 1;
  r.Run();
}
