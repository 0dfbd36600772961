#include "tools/lockload/lockload_worker.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace deadbolt::lockload {
namespace {

constexpr int64_t kDrainNs = 2'000'000'000;  // how long in-flight replies may take at the end
constexpr int64_t kMaxWaitNs = 100'000'000;  // loop wakes at least this often (to see a stop)
constexpr size_t kRecvBufSize = 32 * 1024;   // grows only for a reply bigger than this
constexpr uint64_t kSendTag = 1;

// "-ERR x\r\n" -> "-ERR x"; control bytes shown as \r \n \xNN; at most `max` bytes of input.
std::string Printable(std::string_view s, size_t max = 120) {
  if (s.size() >= 2 && s.substr(s.size() - 2) == "\r\n") s.remove_suffix(2);
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch < 0x20 || ch >= 0x7f) {
      char b[8];
      snprintf(b, sizeof(b), "\\x%02x", ch);
      out += b;
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One connection, owned by its worker thread. Its buffers are sized once at set-up; nothing here
// allocates while running (except the receive buffer, doubled if one reply outgrows it).
struct Worker::Conn {
  int fd = -1;
  bool dead = false;
  bool recv_armed = false;
  bool send_armed = false;
  bool dirty = false;  // in Worker::dirty_
  Rng rng{0};
  std::string token;
  std::string_view prefix;  // RequestSet::prefix(i) of this connection
  std::array<std::string, static_cast<size_t>(ReqKind::kCount)> suffix;
  int64_t sem_clock = 1'700'000'000'000;  // semaphore: the pairs' clock (ms), +1 per pair

  // Requests: [0, out_sent) has gone out; [out_sent, out_flight) is with the kernel;
  // [out_flight, out_len) waits for the next send.
  std::unique_ptr<char[]> out;
  size_t out_cap = 0, out_len = 0, out_sent = 0, out_flight = 0;
  // Replies: [0, in_len) received and not yet consumed.
  std::unique_ptr<char[]> in;
  size_t in_cap = 0, in_len = 0;
  // Requests awaiting replies, oldest first: a ring of pend_mask + 1 entries.
  std::unique_ptr<Pending[]> pend;
  uint32_t pend_mask = 0, pend_head = 0, pend_tail = 0;
  // Closed-loop cycle: keys acquired in the last batch, released in the next.
  std::unique_ptr<uint32_t[]> rel;
  uint32_t rel_count = 0;

  uint32_t pending() const { return pend_tail - pend_head; }
  bool idle() const { return dead || (pending() == 0 && rel_count == 0 && !send_armed); }
};

Worker::Worker(int id, const Options& opts, const RequestSet& reqs, int num_conns, uint64_t budget,
               double rate, uint64_t seed)
    : id_(id),
      opts_(opts),
      reqs_(reqs),
      num_conns_(num_conns),
      rate_(rate),
      seed_(seed),
      open_loop_(rate > 0),
      count_mode_(opts.count_mode()),
      budget_(budget),
      hist_(std::make_unique<LatencyHistogram>()) {}

Worker::~Worker() {
  if (ring_ok_) io_uring_queue_exit(&ring_);  // Run() never got to Teardown()
  for (auto& c : conns_) {
    if (c->fd >= 0) close(c->fd);
  }
}

void Worker::Run(std::latch* ready, std::latch* go, const RunPlan* plan,
                 const std::atomic<bool>* stop) {
  plan_ = plan;
  stop_ = stop;
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake on time for the open-loop schedule
  setup_error_ = SetUp();
  ready->count_down();
  go->wait();
  if (setup_error_.empty() && !plan->abort) Loop();
  Teardown();
  done_.store(true, std::memory_order_release);
}

void Worker::Teardown() {
  if (!ring_ok_) return;
  // Shut every socket so that armed receives and sends complete, and wait for them: the ring must
  // not outlive this thread with operations that point into our buffers.
  for (auto& c : conns_) shutdown(c->fd, SHUT_RDWR);
  const int64_t deadline = NowNs() + 1'000'000'000;
  auto busy = [&] {
    return std::any_of(conns_.begin(), conns_.end(),
                       [](const auto& c) { return c->recv_armed || c->send_armed; });
  };
  while (busy() && NowNs() < deadline) {
    __kernel_timespec ts{0, 10'000'000};
    io_uring_cqe* cqe = nullptr;
    io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      const uint64_t data = io_uring_cqe_get_data64(cqe);
      Conn* c = reinterpret_cast<Conn*>(data & ~kSendTag);
      (data & kSendTag ? c->send_armed : c->recv_armed) = false;
      ++seen;
    }
    io_uring_cq_advance(&ring_, seen);
  }
  io_uring_queue_exit(&ring_);
  ring_ok_ = false;
}

std::string Worker::SetUp() {
  const unsigned entries = std::bit_ceil(static_cast<unsigned>(2 * num_conns_ + 16));
  // Try the requested mode, then the leaner-to-plainer ones the kernel may lack.
  // defer: completions run only when this thread enters the kernel to wait for them.
  struct Mode {
    RingMode mode;
    unsigned flags;
    const char* name;
  };
  static constexpr Mode kModes[] = {
      {RingMode::kDefer, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "defer"},
      {RingMode::kCoop, IORING_SETUP_COOP_TASKRUN, "coop"},
      {RingMode::kPlain, 0, "plain"},
  };
  int rc = -EINVAL;
  for (const Mode& m : kModes) {
    if (m.mode < opts_.ring_mode) continue;
    io_uring_params p{};
    p.flags = m.flags;
    ring_mode_ = m.name;
    rc = io_uring_queue_init_params(entries, &ring_, &p);
    if (rc != -EINVAL) break;
  }
  if (rc < 0) return std::string("io_uring_queue_init: ") + strerror(-rc);
  ring_ok_ = true;

  max_request_ = reqs_.MaxRequestSize();
  const uint32_t in_flight = open_loop_ ? static_cast<uint32_t>(opts_.max_inflight)
                                        : static_cast<uint32_t>(opts_.pipeline);
  Rng seeder(seed_ ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(id_ + 1)));
  conns_.reserve(static_cast<size_t>(num_conns_));
  dirty_.reserve(static_cast<size_t>(num_conns_));
  // This worker's first connection, numbered over all workers (main.cc gives worker i
  // connections / threads, one more while i < connections % threads).
  const int first_conn =
      id_ * (opts_.connections / opts_.threads) + std::min(id_, opts_.connections % opts_.threads);
  for (int i = 0; i < num_conns_; ++i) {
    auto c = std::make_unique<Conn>();
    c->prefix = reqs_.prefix(static_cast<size_t>(first_conn + i));
    c->rng = Rng(seeder.Next());
    c->token = MakeToken(&c->rng);
    for (size_t k = 0; k < c->suffix.size(); ++k) {
      c->suffix[k] = reqs_.Suffix(static_cast<ReqKind>(k), c->token);
    }
    // Open loop: the requests in the kernel's hands plus as many appended meanwhile.
    c->out_cap = max_request_ * in_flight * (open_loop_ ? 2 : 1);
    c->out = std::make_unique<char[]>(c->out_cap);
    c->in_cap = kRecvBufSize;
    c->in = std::make_unique<char[]>(c->in_cap);
    // A semaphore pair is two requests awaiting replies.
    const uint32_t ring_size = std::bit_ceil(in_flight * (reqs_.pairs() ? 2 : 1));
    c->pend = std::make_unique<Pending[]>(ring_size);
    c->pend_mask = ring_size - 1;
    if (reqs_.cycle()) c->rel = std::make_unique<uint32_t[]>(in_flight);
    std::string err = OpenConnection(c.get());
    if (!err.empty()) return err;
    conns_.push_back(std::move(c));
  }
  live_conns_ = num_conns_;
  return {};
}

std::string Worker::OpenConnection(Conn* c) {
  SyncClient client;
  std::string err = client.Connect(opts_.host, opts_.port);
  if (!err.empty()) return err;
  std::string reply;
  if (opts_.resp3) {
    err = opts_.password.empty()
              ? client.Call({"HELLO", "3"}, &reply)
              : client.Call({"HELLO", "3", "AUTH", "default", opts_.password}, &reply);
    if (err.empty() && ClassifyReply(reply) == ReplyType::kError) {
      err = "HELLO 3: " + Printable(reply);
    }
  } else if (!opts_.password.empty()) {
    err = client.Call({"AUTH", opts_.password}, &reply);
    if (err.empty() && ClassifyReply(reply) == ReplyType::kError) err = "AUTH: " + Printable(reply);
  }
  if (!err.empty()) return err;
  c->fd = client.Release();
  return {};
}

io_uring_sqe* Worker::GetSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {  // cannot happen with 2 per connection, but never lose a request
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

void Worker::ArmRecv(Conn* c) {
  if (c->recv_armed || c->dead) return;
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_recv(sqe, c->fd, c->in.get() + c->in_len, c->in_cap - c->in_len, 0);
  io_uring_sqe_set_data64(sqe, reinterpret_cast<uint64_t>(c));
  c->recv_armed = true;
}

void Worker::Kick(Conn* c) {
  if (c->send_armed || c->dead || c->out_sent == c->out_len) return;
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_send(sqe, c->fd, c->out.get() + c->out_sent, c->out_len - c->out_sent,
                     MSG_NOSIGNAL);
  io_uring_sqe_set_data64(sqe, reinterpret_cast<uint64_t>(c) | kSendTag);
  c->out_flight = c->out_len;
  c->send_armed = true;
}

bool Worker::Issuing(int64_t now) const { return !stopped_ && now < plan_->end_ns; }

bool Worker::TakeBudget(int64_t now) {
  if (!count_mode_ || now < plan_->measure_ns || budget_ == 0) return false;
  --budget_;
  return true;
}

void Worker::Append(Conn* c, ReqKind kind, uint32_t key, int64_t intended, bool measured) {
  if (kind == ReqKind::kZTrim) {  // the semaphore's pair
    char* end = reqs_.WriteSemaphorePair(c->out.get() + c->out_len, key, c->prefix,
                                         c->sem_clock++, c->token);
    c->out_len = static_cast<size_t>(end - c->out.get());
    c->pend[c->pend_tail & c->pend_mask] = Pending{intended, key, ReqKind::kZTrim, measured};
    ++c->pend_tail;
    c->pend[c->pend_tail & c->pend_mask] = Pending{intended, key, ReqKind::kZAdd, measured};
    ++c->pend_tail;
    sent_ += 2;
    return;
  }
  const uint32_t key2 = reqs_.two_keys(kind) ? reqs_.PickPartner(key, &c->rng) : 0;
  char* end = reqs_.Write(c->out.get() + c->out_len, kind, key,
                          c->suffix[static_cast<size_t>(kind)], key2, c->prefix);
  c->out_len = static_cast<size_t>(end - c->out.get());
  c->pend[c->pend_tail & c->pend_mask] = Pending{intended, key, kind, measured};
  ++c->pend_tail;
  ++sent_;
}

void Worker::MarkDirty(Conn* c) {
  if (c->dirty) return;
  c->dirty = true;
  dirty_.push_back(c);
}

void Worker::StartBatch(Conn* c, int64_t now) {
  const bool issuing = Issuing(now) && !(count_mode_ && now >= plan_->measure_ns && budget_ == 0);
  // Releases first: they free the keys the last batch took, whether or not we go on.
  const uint32_t releases = c->rel_count;
  for (uint32_t i = 0; i < releases; ++i) {
    Append(c, ReqKind::kRelease, c->rel[i], now, TakeBudget(now));
  }
  c->rel_count = 0;
  if (issuing) {
    const ReqKind kind = reqs_.primary();
    const uint32_t n = static_cast<uint32_t>(opts_.pipeline) - releases;
    for (uint32_t i = 0; i < n; ++i) {
      const bool measured = TakeBudget(now);
      if (count_mode_ && now >= plan_->measure_ns && !measured) break;  // budget spent
      Append(c, kind, reqs_.PickKey(&c->rng), now, measured);
    }
  }
  Kick(c);
}

void Worker::IssueTicks(int64_t now) {
  const ReqKind kind = reqs_.primary();
  while (next_tick_ns_ <= now && Issuing(now) && live_conns_ > 0) {
    Conn* c = conns_[tick_conn_].get();
    if (!c->dead) {
      if (c->pending() >= static_cast<uint32_t>(opts_.max_inflight) ||
          c->out_len + max_request_ > c->out_cap) {
        break;  // the schedule waits; its latency still counts from the intended time
      }
      const bool measured = TakeBudget(next_tick_ns_);
      if (count_mode_ && next_tick_ns_ >= plan_->measure_ns && !measured) {
        stopped_ = true;  // budget spent
        break;
      }
      Append(c, kind, reqs_.PickKey(&c->rng), next_tick_ns_, measured);
      MarkDirty(c);
    }
    ++tick_;
    next_tick_ns_ = TickTime(tick_);
    if (++tick_conn_ == conns_.size()) tick_conn_ = 0;
  }
}

int64_t Worker::TickTime(uint64_t tick) const {
  // Threads interleave their schedules: thread i of T is i/T of an interval behind thread 0.
  const double phase = static_cast<double>(id_) / opts_.threads;
  return plan_->start_ns + static_cast<int64_t>((static_cast<double>(tick) + phase) * 1e9 / rate_);
}

void Worker::KillConn(Conn* c, const std::string& why, int64_t now) {
  if (c->dead) return;
  if (!stopped_ || c->pending() > 0) NoteError(now, [&] { return why; });
  c->dead = true;
  shutdown(c->fd, SHUT_RDWR);  // the fd closes in the destructor, after the ring is gone
  --live_conns_;
}

void Worker::OnSend(Conn* c, int res, int64_t now) {
  c->send_armed = false;
  if (c->dead) return;
  if (res < 0) {
    KillConn(c, std::string("send: ") + strerror(-res), now);
    return;
  }
  c->out_sent += static_cast<size_t>(res);
  if (c->out_sent < c->out_flight) {  // short send: the rest of it
    Kick(c);
    return;
  }
  if (c->out_sent == c->out_len) {
    c->out_sent = c->out_len = 0;
  } else {  // open loop: requests appended while this send was out
    memmove(c->out.get(), c->out.get() + c->out_sent, c->out_len - c->out_sent);
    c->out_len -= c->out_sent;
    c->out_sent = 0;
    Kick(c);
  }
  if (!open_loop_ && c->pending() == 0) StartBatch(c, now);
}

void Worker::OnRecv(Conn* c, int res, int64_t now) {
  c->recv_armed = false;
  if (c->dead) return;
  if (res <= 0) {
    KillConn(c,
             res == 0 ? std::string("connection closed by server")
                      : std::string("recv: ") + strerror(-res),
             now);
    return;
  }
  c->in_len += static_cast<size_t>(res);
  const char* buf = c->in.get();
  size_t pos = 0;
  const bool in_window = now >= plan_->measure_ns && now < plan_->end_ns;
  uint64_t measured = 0;
  // Replies of one batch share a latency: count them in one histogram update.
  int64_t run_latency = 0;
  uint64_t run_count = 0;
  auto flush_run = [&] {
    if (run_count > 0) hist_->Record(static_cast<uint64_t>(run_latency), run_count);
    run_count = 0;
  };
  while (pos < c->in_len) {
    const int64_t len = ScanReply(buf + pos, c->in_len - pos);
    if (len == 0) break;
    if (len < 0) {
      KillConn(c, "malformed reply: " + Printable(std::string_view(buf + pos, c->in_len - pos)),
               now);
      return;
    }
    const std::string_view r(buf + pos, static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    if (r[0] == '>') continue;  // RESP3 push: not a reply to anything we sent
    if (c->pending() == 0) {
      NoteError(now, [&] { return "reply with no request outstanding: " + Printable(r); });
      continue;
    }
    const Pending p = c->pend[c->pend_head & c->pend_mask];
    ++c->pend_head;
    const ReplyType t = ClassifyReply(r);
    ++by_type_[static_cast<size_t>(t)];
    if (!reqs_.Expected(p.kind, t)) {
      NoteError(now, [&] {
        return std::string(t == ReplyType::kError ? "error reply to " : "unexpected reply to ") +
               ReqKindName(p.kind) + ": " + Printable(r);
      });
    }
    if (count_mode_ ? p.measured : in_window) {
      const int64_t latency = std::max<int64_t>(now - p.intended_ns, 0);
      if (latency != run_latency) {
        flush_run();
        run_latency = latency;
      }
      ++run_count;
      ++measured;
    }
    if (p.kind == ReqKind::kAcquire && t == ReplyType::kOk && reqs_.cycle()) {
      if (open_loop_) {
        Append(c, ReqKind::kRelease, p.key, now, TakeBudget(now));
        MarkDirty(c);
      } else {
        c->rel[c->rel_count++] = p.key;
      }
    }
  }
  flush_run();
  if (measured > 0) {
    ops_.store(ops_.load(std::memory_order_relaxed) + measured, std::memory_order_relaxed);
    last_measured_ns_ = now;
  }
  // Keep the unfinished reply at the front; grow only if one reply outgrows the buffer.
  if (pos > 0) {
    memmove(c->in.get(), c->in.get() + pos, c->in_len - pos);
    c->in_len -= pos;
  } else if (c->in_len == c->in_cap) {
    auto bigger = std::make_unique<char[]>(c->in_cap * 2);
    memcpy(bigger.get(), c->in.get(), c->in_len);
    c->in = std::move(bigger);
    c->in_cap *= 2;
  }
  ArmRecv(c);
  if (!open_loop_ && c->pending() == 0 && !c->send_armed) StartBatch(c, now);
}

void Worker::HandleCqe(io_uring_cqe* cqe, int64_t now) {
  const uint64_t data = io_uring_cqe_get_data64(cqe);
  Conn* c = reinterpret_cast<Conn*>(data & ~kSendTag);
  if (data & kSendTag) {
    OnSend(c, cqe->res, now);
  } else {
    OnRecv(c, cqe->res, now);
  }
}

bool Worker::AllIdle() const {
  for (const auto& c : conns_) {
    if (!c->idle()) return false;
  }
  return true;
}

void Worker::Loop() {
  int64_t now = NowNs();
  next_tick_ns_ = TickTime(0);
  for (auto& c : conns_) ArmRecv(c.get());
  if (!open_loop_) {
    for (auto& c : conns_) StartBatch(c.get(), now);
  }
  for (;;) {
    if (!stopped_ && (!Issuing(now) || stop_->load(std::memory_order_relaxed) ||
                      (count_mode_ && now >= plan_->measure_ns && budget_ == 0))) {
      stopped_ = true;
    }
    if (open_loop_) {
      if (!stopped_) IssueTicks(now);  // may set stopped_ (budget spent)
      for (Conn* c : dirty_) {         // one send per connection for all that this turn appended
        c->dirty = false;
        Kick(c);
      }
      dirty_.clear();
    }
    if (stopped_ && stopped_ns_ == 0) stopped_ns_ = now;
    if (live_conns_ == 0) break;
    if (stopped_) {
      if (AllIdle()) break;
      if (stop_->load(std::memory_order_relaxed) || now > stopped_ns_ + kDrainNs) break;
    }
    int64_t wake = now + kMaxWaitNs;
    if (open_loop_ && !stopped_) wake = std::min(wake, next_tick_ns_);
    if (!stopped_ && plan_->end_ns != INT64_MAX) wake = std::min(wake, plan_->end_ns);
    if (now < plan_->measure_ns) wake = std::min(wake, plan_->measure_ns);
    int64_t wait = std::max<int64_t>(wake - now, 0);
    __kernel_timespec ts{wait / 1'000'000'000, wait % 1'000'000'000};
    io_uring_cqe* cqe = nullptr;
    int rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      NoteError(now,
                [&] { return std::string("io_uring_submit_and_wait_timeout: ") + strerror(-rc); });
      break;
    }
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      now = NowNs();
      HandleCqe(cqe, now);
      ++seen;
    }
    io_uring_cq_advance(&ring_, seen);
    now = NowNs();
  }
}

}  // namespace deadbolt::lockload
