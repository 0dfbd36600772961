#include "server/core/reactor.h"

#include <arpa/inet.h>
#include <mimalloc.h>  // for mi_option_t: the functions are declared weak below
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <thread>

#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/cmdtable/journal_health.h"
#include "server/cmdtable/memory_limit.h"
#include "server/cmdtable/peer_policy.h"
#include "server/core/connection.h"
#include "server/core/server.h"
#include "server/tls/tls.h"

// mimalloc's, when it is the allocator (the release binary); absent under the sanitizers.
extern "C" void mi_collect(bool force) __attribute__((weak));
extern "C" long mi_option_get(mi_option_t option) __attribute__((weak));
extern "C" void mi_option_set(mi_option_t option, long value) __attribute__((weak));

namespace deadbolt::server {
namespace {

thread_local Reactor* tls_reactor = nullptr;

constexpr unsigned kRingEntries = 1024;
// Bounds how long one active-expiry tick may run, so lock traffic never stalls behind it.
constexpr int64_t kExpireBudgetUs = 1000;
// One call of EvictLocal evicts for at most this long (Redis's limit at its default
// maxmemory-eviction-tenacity, 10); past it the command runs and the ticks go on evicting, so
// that a limit lowered far below the data does not stall the reactor for the whole of it.
constexpr int64_t kEvictBudgetUs = 500;
constexpr size_t kExpireStep = 256;  // buckets visited per active-expiry step

int64_t RealtimeMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

int64_t MonotonicUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace

Reactor::Reactor(Server* server, int id, const Config& config)
    : server_(server),
      id_(id),
      config_(config),
      shard_(id, config.databases),
      tls_context_(server->tls_context()) {
  stats_.commands.resize(CommandTable::Get().StatsSpecs().size());
  acl_users_ = server->initial_users().Clone();
  applied_requirepass_ = config_.requirepass;
  ApplyConfig();
}

void Reactor::ApplyConfig() {
  const int64_t us = config_.slowlog_log_slower_than;
  slow_ticks_ = us < 0 ? UINT64_MAX : TickClock::FromUsec(static_cast<uint64_t>(us));
  const int64_t ms = config_.latency_monitor_threshold;
  monitor_ticks_ = ms <= 0 ? UINT64_MAX : TickClock::FromUsec(static_cast<uint64_t>(ms) * 1000);
  watch_ticks_ = std::min(slow_ticks_, monitor_ticks_);
  if (run_n_) lap_start_ = CloseRun(nullptr);  // timed under the old thresholds
  runs_ok_ = watch_ticks_ >= TickClock::FromUsec(kRunMinWatchUsec);
  slowlog_.Trim(static_cast<size_t>(config_.slowlog_max_len));
  client_mem_limit_ = ClientEvictionLimit(config_.maxmemory_clients, config_.maxmemory);
  client_mem_recheck_at_ = client_mem_limit_;
  if (config_.requirepass != applied_requirepass_) {
    // CONFIG SET requirepass: the default user's password, as in Redis.
    acl_users_.SetRequirePass(config_.requirepass);
    applied_requirepass_ = config_.requirepass;
  }
}

std::optional<SlowlogEntry> Reactor::NoteSlowCall(const CommandSpec* spec, CmdArgs args,
                                                  uint64_t ticks) {
  const uint64_t usec = TickClock::ToUsec(ticks);
  if (ticks >= monitor_ticks_) {
    latency_events_[(spec->flags & kFast) ? "fast-command" : "command"].Add(now_ms_ / 1000,
                                                                           usec / 1000);
  }
  if (ticks < slow_ticks_) return std::nullopt;
  SlowlogEntry e;
  e.id = server_->NextSlowlogId();
  e.unix_sec = now_ms_ / 1000;
  e.usec = usec;
  e.args = SlowlogArgs(args.data(), args.size());
  return e;
}

void Reactor::Pause(int64_t end_ms, bool all) {
  if (pause_end_ms_ == 0) pause_all_ = false;
  pause_all_ = pause_all_ || all;
  pause_end_ms_ = std::max(pause_end_ms_, end_ms);
  AddTimer(end_ms, [this] {
    if (pause_end_ms_ != 0 && now_ms_ >= pause_end_ms_) Unpause();
  });
}

void Reactor::Unpause() {
  pause_end_ms_ = 0;
  pause_all_ = false;
  std::vector<uint64_t> waiters = std::move(pause_waiters_);
  pause_waiters_.clear();
  for (uint64_t id : waiters) {
    auto it = conns_.find(id);
    if (it != conns_.end()) it->second->EndPause();
  }
}

uint64_t Reactor::CloseRun(const Connection* conn) {
  const uint64_t now = TickClock::Now();
  const uint64_t total = now - lap_start_;
  const int n = run_n_;
  run_n_ = 0;
  const uint64_t each = total / static_cast<uint64_t>(n);
  for (int i = 0; i < n; i++) ChargeCall(*run_[i], each);
  if (total >= watch_ticks_) [[unlikely]] {
    // Which of its calls was slow is not known: one entry for the run, named after its last.
    std::vector<std::string> args = RunSlowlogArgs(run_spec_->name, n);
    std::vector<std::string_view> views(args.begin(), args.end());
    if (auto e = NoteSlowCall(run_spec_, CmdArgs(views.data(), views.size()), total)) {
      AddSlow(std::move(*e), conn);
    }
  }
  return now;
}

void Reactor::SlowCall(const CommandSpec* spec, CmdArgs args, const Connection* conn) {
  if (auto e = NoteSlowCall(spec, args, last_lap_)) AddSlow(std::move(*e), conn);
}

void Reactor::FeedMonitors(const Connection& from, CmdArgs args) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const int64_t us = static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
  auto line = std::make_shared<const std::string>(
      MonitorLine(us, from.db_index(), from.peer(), args.data(), args.size()));
  for (int i = 0; i < server_->num_shards(); i++) {
    Send(i, [line] {
      Reactor* r = Reactor::Current();
      for (uint64_t id : r->monitors_) {
        auto it = r->conns_.find(id);
        if (it != r->conns_.end()) it->second->WriteMonitorLine(*line);
      }
    });
  }
}

void Reactor::SetMonitor(Connection* c, bool on) {
  auto it = std::find(monitors_.begin(), monitors_.end(), c->id());
  if (on == (it != monitors_.end())) return;
  if (on) {
    monitors_.push_back(c->id());
    server_->monitors().fetch_add(1, std::memory_order_relaxed);
  } else {
    monitors_.erase(it);
    server_->monitors().fetch_sub(1, std::memory_order_relaxed);
  }
  // Each reactor reads the count when the message arrives: the last message it gets sees the
  // latest count.
  for (int i = 0; i < server_->num_shards(); i++) {
    Send(i, [] {
      Reactor* r = Reactor::Current();
      r->feed_monitors_ = r->server_->monitors().load(std::memory_order_relaxed) > 0;
    });
  }
}

void Reactor::AddSlow(SlowlogEntry e, const Connection* conn) {
  if (!e.args.empty()) {
    const std::string& name = e.args[0];
    if (EqualsIgnoreCase(name, "auth") || EqualsIgnoreCase(name, "hello") ||
        EqualsIgnoreCase(name, "exec")) {
      return;
    }
  }
  if (conn) {
    e.peer = conn->peer();
    e.name = conn->name();
  }
  slowlog_.Add(std::move(e), static_cast<size_t>(config_.slowlog_max_len));
}

Reactor::~Reactor() {
  // Tasks still queued at shutdown are dropped without running.
  while (Task* t = inbox_.Pop()) delete t;
  for (Task* t : local_tasks_) delete t;
  for (Task* t : spare_tasks_) delete t;
  for (auto* box : {&outbox_, &unheld_outbox_}) {
    for (auto& [first, last] : *box) {
      for (Task* t = first; t;) {
        Task* next = t == last ? nullptr : t->next.load(std::memory_order_relaxed);
        delete t;
        t = next;
      }
    }
  }
  for (auto& [id, c] : conns_) {
    close(c->fd());
    delete c;
  }
  if (ring_ready_) io_uring_queue_exit(&ring_);
  // (After the ring: the kernel is done with them.)
  while (calls_.next != &calls_) {
    IoCall* call = calls_.next;
    calls_.next = call->next;
    call->drop(call);
  }
  if (buf_ring_) munmap(buf_ring_, kBufCount * sizeof(io_uring_buf));
  free(buf_base_);
  for (const Listener& l : listeners_) {
    if (l.fd >= 0) close(l.fd);
  }
  if (event_fd_ >= 0) close(event_fd_);
}

Reactor* Reactor::Current() { return tls_reactor; }

uint64_t Reactor::JournalTag(const void* op) { return Encode(op, kOpJournal); }

void Reactor::OnJournalDurable() { journal_moved_ = true; }

namespace {
// Reactors freeing much at once (FreeingMuch): while any does, mimalloc gives freed memory back
// at once rather than after its decommit delay.
std::atomic<int> freeing_much{0};
std::atomic<long> saved_decommit_delay{0};
}  // namespace

void Reactor::FreeingMuch(const absl::FunctionRef<void()>& free_it) {
  if (!mi_collect || !mi_option_get || !mi_option_set) {
    free_it();
    return;
  }
  // mimalloc gives the memory of a freed span back to the system only when the thread next
  // allocates in that segment, after a delay (decommit_delay): an idle reactor after FLUSHALL
  // kept the pages, resident and counted in used_memory, for good. With the delay at 0 the
  // spans freed meanwhile are decommitted as they are freed, and the forced collect frees what
  // the thread still kept (retired pages, cached segments). Other threads allocating meanwhile
  // pay a few more madvise calls, for as long as a flush takes.
  if (freeing_much.fetch_add(1) == 0) {
    saved_decommit_delay.store(mi_option_get(mi_option_decommit_delay));
    mi_option_set(mi_option_decommit_delay, 0);
  }
  free_it();
  mi_collect(true);
  if (freeing_much.fetch_sub(1) == 1) {
    mi_option_set(mi_option_decommit_delay, saved_decommit_delay.load());
  }
}

void Reactor::AddTimer(int64_t at_ms, absl::AnyInvocable<void()> fn) {
  timers_.emplace(at_ms, std::move(fn));
}

void Reactor::HoldConnection(Connection* c) {
  if (c->held_) return;
  c->held_ = true;
  held_conns_.push_back(c->id());
}

namespace {
thread_local const std::string* tls_failed_reply_error = nullptr;
}  // namespace

const std::string* Reactor::FailedReplyError() { return tls_failed_reply_error; }

void Reactor::ReleaseHeldOutboxes() {
  uint64_t durable = journal_ ? journal_->durable_batch() : UINT64_MAX;
  uint64_t failed = journal_ ? journal_->failed_batch() : 0;
  while (!held_outboxes_.empty() &&
         (held_outboxes_.front().batch <= durable || held_outboxes_.front().batch <= failed)) {
    HeldChain h = held_outboxes_.front();
    held_outboxes_.pop_front();
    if (h.batch > durable) {
      // Its batch failed: the chain runs on its target between two markers, and the replies it
      // carries become errors there (FailedReplyError) rather than wait for the disk.
      auto error = std::make_shared<const std::string>(
          errors::AofWriteError(journal_->error() ? journal_->error() : EIO));
      Task* on = new Task([error] { tls_failed_reply_error = error.get(); });
      Task* off = new Task([error] { tls_failed_reply_error = nullptr; });
      on->next.store(h.first, std::memory_order_relaxed);
      h.last->next.store(off, std::memory_order_relaxed);
      h.first = on;
      h.last = off;
    }
    Reactor& r = server_->reactor(h.target);
    r.inbox_.PushChain(h.first, h.last);
    r.Wake();
  }
}

std::optional<std::string> Reactor::Init() {
  // The ring is created on the reactor's own thread: with SINGLE_ISSUER the creating thread is
  // the only one allowed to submit.
  io_uring_params p{};
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE;
  p.cq_entries = kRingEntries * 8;
  int r = io_uring_queue_init_params(kRingEntries, &ring_, &p);
  ring_mode_ = "single-issuer+defer-taskrun";
  if (r == -EINVAL) {
    p = {};
    p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE;
    p.cq_entries = kRingEntries * 8;
    r = io_uring_queue_init_params(kRingEntries, &ring_, &p);
    ring_mode_ = "coop-taskrun";
  }
  if (r == -EINVAL) {
    p = {};
    r = io_uring_queue_init_params(kRingEntries, &ring_, &p);
    ring_mode_ = "plain";
  }
  if (r < 0) {
    return std::string("cannot set up io_uring: ") + strerror(-r) +
           (r == -EPERM || r == -ENOSYS
                ? " (io_uring is disabled here: see /proc/sys/kernel/io_uring_disabled, or a "
                  "seccomp profile that blocks it)"
                : "");
  }
  ring_ready_ = true;
  if (!(p.features & IORING_FEAT_EXT_ARG)) {
    return std::string("this kernel's io_uring lacks IORING_FEAT_EXT_ARG (needs Linux 5.11+)");
  }

  // Provided buffers for multishot receive.
  size_t ring_bytes = kBufCount * sizeof(io_uring_buf);
  void* mem = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  if (mem == MAP_FAILED) return std::string("mmap of the buffer ring failed: ") + strerror(errno);
  buf_ring_ = static_cast<io_uring_buf_ring*>(mem);
  io_uring_buf_ring_init(buf_ring_);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(mem);
  reg.ring_entries = kBufCount;
  reg.bgid = kBufGroup;
  r = io_uring_register_buf_ring(&ring_, &reg, 0);
  if (r < 0) {
    return std::string("cannot register an io_uring buffer ring (needs Linux 5.19+): ") +
           strerror(-r);
  }
  if (posix_memalign(reinterpret_cast<void**>(&buf_base_), 4096, size_t{kBufCount} * kBufSize)) {
    return std::string("out of memory for receive buffers");
  }
  for (unsigned i = 0; i < kBufCount; i++) {
    io_uring_buf_ring_add(buf_ring_, buf_base_ + size_t{i} * kBufSize, kBufSize, i,
                          io_uring_buf_ring_mask(kBufCount), i);
  }
  io_uring_buf_ring_advance(buf_ring_, kBufCount);

  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) return std::string("eventfd failed: ") + strerror(errno);

  outbox_.assign(server_->num_shards(), {nullptr, nullptr});
  unheld_outbox_.assign(server_->num_shards(), {nullptr, nullptr});
  outbox_urgent_.assign(server_->num_shards(), 0);

  if (config_.appendonly) {
    journal_ = std::make_unique<Journal>(this, &shard_, id_, server_->num_shards());
    if (auto err = journal_->Open(RealtimeMs())) return err;
  }

  if (id_ == 0) {
    // One listening socket per port, owned by reactor 0, which hands connections out
    // round-robin. (SO_REUSEPORT would silently share the port with a second server started by
    // mistake.)
    if (auto err = OpenListener(config_.port, &listeners_[0].fd)) return err;
    if (config_.tls_port != 0) {
      if (auto err = OpenListener(config_.tls_port, &listeners_[1].fd)) return err;
    }
  }
  return std::nullopt;
}

std::optional<std::string> Reactor::OpenListener(int port, int* fd_out) {
  bool v6 = config_.bind.find(':') != std::string::npos;
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket failed: ") + strerror(errno);
  *fd_out = fd;  // closed by the destructor, also when this fails
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage ss{};
  socklen_t len;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    if (inet_pton(AF_INET6, config_.bind.c_str(), &a->sin6_addr) != 1) {
      return "invalid bind address '" + config_.bind + "'";
    }
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    std::string host = config_.bind == "localhost" ? "127.0.0.1" : config_.bind;
    if (inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) {
      return "invalid bind address '" + config_.bind + "'";
    }
    len = sizeof(*a);
  }
  // A server SIGKILLed a moment ago still holds its port for 5-10 ms after it has been reaped:
  // the kernel tears its io_uring down (and with it the multishot accept that keeps the
  // listening socket open) asynchronously. So a restart at once, by a supervisor or a test,
  // would fail; EADDRINUSE is tried again for up to a second before it is reported.
  constexpr auto kBindRetryFor = std::chrono::seconds(1);
  constexpr auto kBindRetryEvery = std::chrono::milliseconds(5);
  const auto give_up = std::chrono::steady_clock::now() + kBindRetryFor;
  while (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) < 0) {
    const int bind_errno = errno;
    if (bind_errno != EADDRINUSE || std::chrono::steady_clock::now() >= give_up) {
      return "could not bind to " + config_.bind + ":" + std::to_string(port) + ": " +
             strerror(bind_errno);
    }
    std::this_thread::sleep_for(kBindRetryEvery);
  }
  if (listen(fd, 511) < 0) return std::string("listen failed: ") + strerror(errno);
  return std::nullopt;
}

void Reactor::Start() {
  std::promise<std::optional<std::string>> ready;
  auto fut = ready.get_future();
  thread_ = std::thread([this, &ready] {
    tls_reactor = this;
    // "reactor-<i>": what top -H, perf and /proc/<pid>/task/*/comm show.
    pthread_setname_np(pthread_self(), ("reactor-" + std::to_string(id_ % 10000)).c_str());
    if (cpu_ >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu_, &set);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    auto err = Init();
    bool ok = !err.has_value();
    ready.set_value(std::move(err));
    if (ok) Loop();
  });
  auto err = fut.get();
  if (err) {
    thread_.join();
    LogWarning("reactor %d: %s", id_, err->c_str());
    fprintf(stderr, "deadbolt: %s\n", err->c_str());
    exit(1);
  }
}

void Reactor::Join() {
  if (thread_.joinable()) thread_.join();
}

void Reactor::RequestStop() {
  stop_.store(true, std::memory_order_release);
  if (event_fd_ >= 0) SignalEventfd();
}

// Any thread: makes this reactor's armed eventfd read complete.
void Reactor::SignalEventfd() {
  uint64_t one = 1;
  ssize_t ignored = write(event_fd_, &one, sizeof(one));
  (void)ignored;
}

void Reactor::Wake() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.exchange(kAwake, std::memory_order_acq_rel) != kAwake) {
    SignalEventfd();
    Reactor* sender = Current();
    if (sender) sender->stats_.wakeups_sent++;
  }
}

// From a reactor thread: wakes `r` if it sleeps or is about to. The wake-up rides in this
// reactor's own ring (IORING_OP_MSG_RING posts a completion into r's ring), submitted with this
// turn's other SQEs: no syscall of its own, and r has no eventfd read to re-arm. Falls back to
// the eventfd if the kernel refuses it (HandleCqe).
void Reactor::WakeFromHere(Reactor& r, bool urgent) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (urgent) {
    if (r.sleeping_.exchange(kAwake, std::memory_order_acq_rel) == kAwake) return;
  } else {
    // Lazy messages only: a reactor asleep for urgent ones stays asleep (and keeps saying so).
    uint8_t any = kSleepsForAny;
    if (!r.sleeping_.compare_exchange_strong(any, kAwake, std::memory_order_acq_rel)) return;
  }
  if (!msg_ring_ok_.load(std::memory_order_relaxed)) {
    r.SignalEventfd();
    stats_.wakeups_sent++;
    return;
  }
  io_uring_sqe* sqe = GetSqe();
  io_uring_prep_msg_ring(sqe, r.ring_.ring_fd, 0, Encode(nullptr, kOpMsg), 0);
  io_uring_sqe_set_data64(sqe, Encode(&r, kOpMsg));  // our own completion names the target
  stats_.wakeups_sent++;
}

// Tasks that ran here are kept for this reactor's own sends: a message's node then costs no
// allocation, and no free on a thread other than the one that allocated it.
Task* Reactor::NewTask(absl::AnyInvocable<void()> fn) {
  if (spare_tasks_.empty()) return new Task(std::move(fn));
  Task* t = spare_tasks_.back();
  spare_tasks_.pop_back();
  t->next.store(nullptr, std::memory_order_relaxed);
  t->fn = std::move(fn);
  return t;
}

void Reactor::DoneTask(Task* t) {
  if (spare_tasks_.size() >= kMaxSpareTasks) {
    delete t;
    return;
  }
  t->fn = nullptr;  // what it carried goes now
  spare_tasks_.push_back(t);
}

void Reactor::Send(int target, absl::AnyInvocable<void()> fn, const TaskHints& hints, bool lazy) {
  Task* t = NewTask(std::move(fn));
  t->hints = hints;
  if (target == id_) {
    local_tasks_.push_back(t);
    return;
  }
  Link(outbox_[target], t);
  if (!lazy) outbox_urgent_[target] = 1;
  stats_.messages_sent++;
}

void Reactor::Link(std::pair<Task*, Task*>& chain, Task* t) {
  auto& [first, last] = chain;
  if (!first) {
    first = last = t;
  } else {
    last->next.store(t, std::memory_order_relaxed);
    last = t;
  }
}

void Reactor::SendUnheld(int target, absl::AnyInvocable<void()> fn, const TaskHints& hints) {
  if (!journal_ || target == id_) {
    Send(target, std::move(fn), hints);
    return;
  }
  Task* t = NewTask(std::move(fn));
  t->hints = hints;
  Link(unheld_outbox_[target], t);
  outbox_urgent_[target] = 1;
  stats_.messages_sent++;
}

void Reactor::Post(absl::AnyInvocable<void()> fn) {
  inbox_.Push(new Task(std::move(fn)));
  Wake();
}

void Reactor::FlushOutboxes() {
  // appendfsync always: what this turn sends may reveal a write not yet on disk (a reply to a
  // forwarded command, a lock handed over), so it waits for the journal, behind what waits
  // already (messages to one target keep their order).
  uint64_t hold = 0;
  if (journal_) {
    ReleaseHeldOutboxes();
    hold = journal_->HoldBatch();
    if (!hold && !held_outboxes_.empty()) hold = held_outboxes_.back().batch;
  }
  for (int target = 0; target < static_cast<int>(outbox_.size()); target++) {
    auto& [first, last] = outbox_[target];
    const bool urgent = outbox_urgent_[target];
    if (unheld_outbox_[target].first) [[unlikely]] {
      // Revealing nothing written here, they need not wait for the journal.
      PushOut(target, unheld_outbox_[target], true);
      if (!first) outbox_urgent_[target] = 0;
    }
    if (!first) continue;
    outbox_urgent_[target] = 0;
    if (hold) {  // (woken for when released: ReleaseHeldOutboxes)
      held_outboxes_.push_back(HeldChain{hold, target, first, last});
      first = last = nullptr;
      continue;
    }
    PushOut(target, outbox_[target], urgent);
  }
}

void Reactor::PushOut(int target, std::pair<Task*, Task*>& chain, bool urgent) {
  Reactor& r = server_->reactor(target);
  r.inbox_.PushChain(chain.first, chain.second);
  chain = {nullptr, nullptr};
  stats_.batches_sent++;
  messages_this_turn_ = true;
  WakeFromHere(r, urgent);
}

void Reactor::DrainInbox() {
  // Bounded so that a flood of messages cannot starve this reactor's own sockets.
  int i = 0;
  draining_ = true;
  for (; i < 4096; i++) {
    Task* t = inbox_.Pop();
    if (!t) break;
    // Asked for while t runs: the next task's hinted lines (its node was asked for while the
    // task before t ran), and the node after it.
    const Task* n = inbox_.Peek();
    for (const TaskHints::Span& h : n->hints.spans) PrefetchLines(h.p, h.len);
    const char* after = reinterpret_cast<const char*>(n->next.load(std::memory_order_relaxed));
    if (after) {
      static_assert(sizeof(Task) <= 2 * kCacheLine);
      PrefetchLines(after, sizeof(Task));
    }
    t->fn();
    DoneTask(t);
  }
  draining_ = lap_fresh_ = false;
  if (i > 0) {
    stats_.messages_received += static_cast<uint64_t>(i);
    messages_this_turn_ = true;
  }
  while (!local_tasks_.empty()) {
    std::vector<Task*> batch;
    batch.swap(local_tasks_);
    for (Task* t : batch) {
      t->fn();
      DoneTask(t);
    }
  }
}

void Reactor::Tick() {
  int64_t start = MonotonicUs();
  size_t removed = 0;
  // A small step, repeated while at least an eighth of what it visits has expired, within the
  // time budget. Each tick delays whatever arrives meanwhile: with nothing to expire it costs a
  // few microseconds (a 1,024-bucket step cost about 30 us, 0.3% of the time at hz 100).
  for (;active_expire_;) {  // DEBUG SET-ACTIVE-EXPIRE 0 turns it off
    size_t n = shard_.ActiveExpire(now_ms_, kExpireStep);
    removed += n;
    if (n < kExpireStep / 8 || MonotonicUs() - start > kExpireBudgetUs) break;
  }
  stats_.expired_keys += removed;
  stats_.expire_cycle_us += static_cast<uint64_t>(MonotonicUs() - start);
  if (journal_) journal_->Tick(now_ms_);
  // maxmemory: the first reactor measures for all (one allocator query per tick).
  if (id_ == 0 && (config_.maxmemory > 0 || MemoryLimit::Over())) {
    MemoryLimit::Refresh(config_.maxmemory);
  }
  if (MemoryLimit::Over() && config_.maxmemory > 0 &&
      config_.maxmemory_policy != Config::MaxmemoryPolicy::kNoEviction) {
    // An evicting policy: every reactor evicts from its own shard while the process is over,
    // also for writes that other reactors let through (EvictForMemory).
    EvictLocal();
  } else {
    UpdateEvictable();  // whatever the policy, so that it is known when one is set
  }
  next_tick_ms_ = now_ms_ + 1000 / std::max(1, config_.hz);
  if (config_.timeout > 0 && now_ms_ >= next_idle_check_ms_) CloseIdleClients();
  if (client_mem_limit_ > 0) {
    CheckClientMemory();
  } else if (clients_mem_ != 0) {  // turned off: the others stop counting this reactor's
    clients_mem_ = 0;
    ClientMemoryBoard::Publish(id_, 0, 0);
  }
}

void Reactor::NoteClientGrowth(Connection* c) {
  const int64_t estimate = others_clients_mem_ + clients_mem_ - c->mem_counted_ +
                           static_cast<int64_t>(c->MemoryUsage());
  if (estimate >= client_mem_recheck_at_) client_mem_check_due_ = true;
}

void Reactor::CheckClientMemory() {
  client_mem_check_due_ = false;
  int64_t total = 0, biggest = 0;
  for (auto& [id, c] : conns_) {
    if (c->closing_ || c->moving_) continue;  // a moving one is counted where it lands
    c->mem_counted_ = static_cast<int64_t>(c->MemoryUsage());
    total += c->mem_counted_;
    if (!c->no_evict) biggest = std::max(biggest, c->mem_counted_);
  }
  ClientMemoryBoard::Others(id_, server_->num_shards(), &others_clients_mem_,
                            &others_biggest_client_);
  if (client_mem_limit_ > 0 && total + others_clients_mem_ >= client_mem_limit_ &&
      biggest >= others_biggest_client_ && biggest > 0) {
    // Over: this reactor's evictable clients, biggest first, while over and while the next is
    // at least as big as every other reactor's biggest.
    std::vector<Connection*> order;
    for (auto& [id, c] : conns_) {
      if (!c->closing_ && !c->moving_ && !c->no_evict) order.push_back(c);
    }
    std::sort(order.begin(), order.end(),
              [](Connection* a, Connection* b) { return a->mem_counted_ > b->mem_counted_; });
    biggest = 0;
    for (Connection* c : order) {
      if (total + others_clients_mem_ < client_mem_limit_ ||
          c->mem_counted_ < others_biggest_client_) {
        biggest = c->mem_counted_;
        break;
      }
      if (Connection::client_info_line) {
        LogNotice("Evicting client: %s", Connection::client_info_line(*c).c_str());
      } else {
        LogNotice("Evicting client: id=%llu addr=%s", static_cast<unsigned long long>(c->id()),
                  c->peer().c_str());
      }
      stats_.evicted_clients++;
      total -= c->mem_counted_;
      CloseConnection(c);
    }
  }
  clients_mem_ = total;
  ClientMemoryBoard::Publish(id_, total, biggest);
  // Still over (nothing here may go): look again once the estimate has grown by a sixteenth of
  // the limit, not at every reply.
  const int64_t now = total + others_clients_mem_;
  client_mem_recheck_at_ =
      now < client_mem_limit_ ? client_mem_limit_
                              : now + std::max<int64_t>(client_mem_limit_ / 16, 64 * 1024);
}

namespace {

// The shard's name for an evicting policy (never called with noeviction).
shard::EvictPolicy EvictPolicyOf(Config::MaxmemoryPolicy p) {
  switch (p) {
    case Config::MaxmemoryPolicy::kVolatileLru:
      return shard::EvictPolicy::kVolatileLru;
    case Config::MaxmemoryPolicy::kAllkeysLru:
      return shard::EvictPolicy::kAllkeysLru;
    case Config::MaxmemoryPolicy::kVolatileRandom:
      return shard::EvictPolicy::kVolatileRandom;
    case Config::MaxmemoryPolicy::kAllkeysRandom:
      return shard::EvictPolicy::kAllkeysRandom;
    case Config::MaxmemoryPolicy::kVolatileTtl:
    case Config::MaxmemoryPolicy::kNoEviction:
      break;
  }
  return shard::EvictPolicy::kVolatileTtl;
}

}  // namespace

bool Reactor::EvictForMemory() {
  if (config_.maxmemory_policy == Config::MaxmemoryPolicy::kNoEviction) return false;
  return EvictLocal() || MemoryLimit::evictable_shards() > 0;
}

bool Reactor::EvictLocal() {
  shard::Shard::EvictSkip skip;
  if (!locks_.idle()) {
    skip = [this](int db, std::string_view key) { return locks_.Blocked(db, key); };
  }
  bool under = true;
  const int64_t start = MonotonicUs();
  for (uint64_t n = 1; MemoryLimit::StillOver(config_.maxmemory); ++n) {
    std::optional<size_t> freed =
        shard_.Evict(EvictPolicyOf(config_.maxmemory_policy), config_.maxmemory_samples, now_ms_,
                     skip);
    if (!freed) {
      under = false;
      break;
    }
    stats_.evicted_keys++;
    MemoryLimit::NoteEvicted(*freed, config_.maxmemory);
    // Out of time (checked every 16 keys): as Redis's EVICT_RUNNING, the command runs.
    if (n % 16 == 0 && MonotonicUs() - start > kEvictBudgetUs) break;
  }
  UpdateEvictable();
  return under;
}

void Reactor::UpdateEvictable() {
  const bool allkeys = config_.maxmemory_policy == Config::MaxmemoryPolicy::kAllkeysLru ||
                       config_.maxmemory_policy == Config::MaxmemoryPolicy::kAllkeysRandom;
  const bool evictable = (allkeys ? shard_.Size() : shard_.ExpiresSize()) > 0;
  if (evictable != evictable_) {
    MemoryLimit::CountEvictableShard(evictable ? 1 : -1);
    evictable_ = evictable;
  }
}

// --timeout: closes clients idle for longer, as Redis does — except subscribers and clients
// waiting for a reply (a blocked command, a transaction in flight).
void Reactor::CloseIdleClients() {
  next_idle_check_ms_ = now_ms_ + 1000;
  const int64_t limit_ms = config_.timeout * 1000;
  std::vector<Connection*> idle;
  for (auto& [id, c] : conns_) {
    if (!c->closing() && !c->subscribed() && !c->busy() &&
        now_ms_ - c->last_interaction_ms() > limit_ms) {
      idle.push_back(c);
    }
  }
  for (Connection* c : idle) CloseConnection(c);
}

void Reactor::Turn() {
  int64_t work_start = MonotonicUs();
  int64_t worked = 0;
  DrainInbox();
  if (journal_) journal_->EndTurn(now_ms_);
  if (tracking_.owes()) [[unlikely]]
    DeliverTracking();
  FlushOutboxes();
  if (client_mem_check_due_) [[unlikely]] CheckClientMemory();  // maxmemory-clients
  FlushConnections();

  EndTiming(nullptr);  // (every run of commands closes where it ends; this is a safety net)
  bool block =
      local_tasks_.empty() && yielded_.empty() && !inbox_.MaybeNonEmpty() && busy_kept_.empty();
  if (block && messages_this_turn_ && config_.spin_us > 0) block = !Spin();
  messages_this_turn_ = false;
  if (block) {
    sleeping_.store(lazy_waiters_ > 0 ? kSleepsForAny : kSleepsForUrgent,
                    std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (inbox_.MaybeNonEmpty() || stop_.load(std::memory_order_acquire)) {
      block = false;
      sleeping_.store(kAwake, std::memory_order_relaxed);
    }
  }
  if (block) {
    // Sleep until the next tick, or the next lock timer (a lease ending on a key with waiters,
    // a waiter's timeout) if that comes first.
    int64_t wake_ms = std::min(next_tick_ms_, lock_waiters_.next_deadline_ms());
    if (!timers_.empty()) wake_ms = std::min(wake_ms, timers_.begin()->first);
    int64_t wait_ms = std::max<int64_t>(0, wake_ms - now_ms_);
    __kernel_timespec ts{wait_ms / 1000, (wait_ms % 1000) * 1000000};
    io_uring_cqe* cqe = nullptr;
    worked = MonotonicUs() - work_start;
    io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
    work_start = MonotonicUs();
    sleeping_.store(kAwake, std::memory_order_relaxed);
  } else {
    io_uring_submit_and_get_events(&ring_);
  }
  now_ms_ = RealtimeMs();

  // Completions a busy script's ServeWhileBusy kept come first, then the ring's, taken out of it
  // before any is handled: a script that goes busy while one runs serves the rest itself.
  completions_.clear();
  completion_pos_ = 0;
  if (!busy_kept_.empty()) [[unlikely]] {
    completions_.swap(busy_kept_);
    for (const Completion& k : completions_) {
      if ((k.user_data & 7) == kOpRecv) {
        reinterpret_cast<Connection*>(k.user_data & ~uint64_t{7})->busy_kept_ = false;
      }
    }
  }
  TakeCompletions();
  while (completion_pos_ < completions_.size()) HandleCqe(completions_[completion_pos_++]);

  if (!yielded_.empty()) {
    // Work that stepped aside for this turn's input; what it yields again waits for the next.
    std::vector<absl::AnyInvocable<void()>> batch;
    batch.swap(yielded_);
    for (auto& fn : batch) fn();
  }
  if (now_ms_ >= next_tick_ms_) Tick();
  if (now_ms_ >= lock_waiters_.next_deadline_ms()) lock_waiters_.OnTimer();
  while (!timers_.empty() && timers_.begin()->first <= now_ms_) {
    auto fn = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    fn();
  }

  std::vector<Connection*> keep;
  for (Connection* c : free_list_) {
    if (c->in_flush_list_) {
      keep.push_back(c);  // still named in flush_list_: free it next turn
      continue;
    }
    c->in_free_list_ = false;
    if (c->CanFree()) {
      if (c->fd() >= 0) {  // (-1: moved to another reactor, which has the socket now)
        conns_.erase(c->id());
        close(c->fd());
      }
      delete c;
      if (accept_backoff_.paused()) ResumeAccept();  // a descriptor is free again
    }
  }
  free_list_.swap(keep);
  CountTurn(worked + (MonotonicUs() - work_start));
}

// Messages went back and forth this turn, so more are likely on their way (the replies to what
// was sent, the next hop of a transaction): poll the inbox for a moment before sleeping. A
// message that arrives meanwhile costs its sender no eventfd write and this reactor no wake-up
// (sleeping_ stays false). What this turn queued for the ring is submitted first, so the spin
// delays no reply; socket input that arrives during it waits for the spin to end (at most
// --spin-us).
bool Reactor::Spin() {
  stats_.spins++;
  io_uring_submit(&ring_);
  const int64_t until = MonotonicUs() + config_.spin_us;
  do {
    for (int i = 0; i < 64; i++) {
      if (inbox_.MaybeNonEmpty()) {
        stats_.spin_hits++;
        return true;
      }
      __builtin_ia32_pause();
    }
  } while (MonotonicUs() < until && !stop_.load(std::memory_order_relaxed));
  return false;
}

void Reactor::CountTurn(int64_t us) {
  stats_.eventloop_cycles++;
  stats_.eventloop_duration_us += static_cast<uint64_t>(us);
  if (static_cast<uint64_t>(us) > stats_.eventloop_duration_max_us) {
    stats_.eventloop_duration_max_us = static_cast<uint64_t>(us);
  }
  // A turn this long kept every client of this reactor waiting: say so, at most once a minute.
  constexpr int64_t kSlowTurnUs = 500000;
  if (us >= kSlowTurnUs && now_ms_ - last_slow_turn_log_ms_ >= 60000) {
    last_slow_turn_log_ms_ = now_ms_;
    LogWarning("reactor %d: one loop turn took %lld ms (longest so far %llu ms)", id_,
               static_cast<long long>(us / 1000),
               static_cast<unsigned long long>(stats_.eventloop_duration_max_us / 1000));
  }
}

void Reactor::Loop() {
  now_ms_ = RealtimeMs();
  next_tick_ms_ = now_ms_ + 1000 / std::max(1, config_.hz);
  ArmEventfd();
  ArmAccept();
  while (!stop_.load(std::memory_order_acquire)) Turn();
  // The journal's completions that a busy script's ServeWhileBusy kept (SHUTDOWN NOSAVE sent
  // meanwhile): Journal::Shutdown waits for every operation in flight to complete.
  for (const Completion& k : busy_kept_) {
    if ((k.user_data & 7) == kOpJournal) HandleCqe(k);
  }
  busy_kept_.clear();
  // Say goodbye: put the journal on disk, flush what is already written, then stop.
  if (journal_) {
    DrainInbox();
    journal_->Shutdown();
    ReleaseHeldOutboxes();
    // What the last write did not put in the journal is answered with errors, not OK.
    const std::string error = errors::AofWriteError(journal_->error() ? journal_->error() : EIO);
    const bool lost = journal_->error() && journal_->durable_batch() < journal_->failed_batch();
    for (auto& [id, c] : conns_) {
      // Output not marked yet came from the last commands, whose changes the journal's last
      // write carried: if that write failed, it waited for the failed batch too.
      if (lost && !c->out_.empty() &&
          (c->hold_marks_.empty() || c->hold_marks_.back().first != c->out_.size())) {
        c->hold_marks_.emplace_back(c->out_.size(), journal_->failed_batch());
      }
      if (journal_->error()) FailHeldOutput(c, journal_->failed_batch(), error);
      c->hold_marks_.clear();
      MarkForFlush(c);
    }
    held_conns_.clear();
  }
  FlushConnections();
  io_uring_submit(&ring_);
}

}  // namespace deadbolt::server
