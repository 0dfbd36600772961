#pragma once
// A reactor: one pinned thread with its own io_uring, its own shard and its own connections.

#include <absl/container/flat_hash_map.h>
#include <absl/functional/any_invocable.h>
#include <absl/functional/function_ref.h>
#include <liburing.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/acl/acl.h"
#include "server/base/config.h"
#include "server/base/fd_limit.h"
#include "server/base/task_queue.h"
#include "server/cmdtable/command.h"
#include "server/core/journal.h"
#include "server/observe/stats.h"
#include "server/pubsub/registry.h"
#include "server/tracking/tracking_table.h"
#include "server/txn/lock_table.h"
#include "server/txn/lock_waiters.h"
#include "server/txn/watch_table.h"
#include "shard/shard.h"

namespace deadbolt::server {

class Connection;
class Server;
class TlsContext;  // server/tls/tls.h
struct MovedConnection;  // connection.h

// Owned by its own thread from Start() to Join(): only that thread touches its ring, shard and
// connections. Other threads reach it only through Send()/Post(), which enqueue a task on its
// TaskQueue and wake it through an eventfd if it sleeps.
class Reactor {
 public:
  Reactor(Server* server, int id, const Config& config);
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // Main thread, before Start(): sets up the ring, the buffer ring and the listening socket.
  // Returns a message for the user when something cannot be set up.
  std::optional<std::string> Init();
  // Main thread, before Start(): the CPU the reactor's thread will run on (-1: any).
  void set_cpu(int cpu) { cpu_ = cpu; }
  // Connection placement (connection_exec.cc): StartMove cancels an idle connection's recv to
  // send it to the reactor its keys are on (Connection::move_to_); FinishMove, when the recv
  // has ended, hands the socket and session over; AdoptMoved, on the new reactor, takes them.
  void StartMove(Connection* c);
  void FinishMove(Connection* c);
  void AdoptMoved(MovedConnection m);
  // Cancels c's multishot recv; its last completion comes without IORING_CQE_F_MORE.
  void CancelRecv(Connection* c);
  int cpu() const { return cpu_; }
  void Start();
  void Join();
  // Any thread, async-signal-safe: asks the loop to stop.
  void RequestStop();
  // Any thread: whether RequestStop was called (a long Lua script stops when it is).
  bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }

  // The reactor running on the calling thread, or nullptr on other threads.
  static Reactor* Current();

  // Reactor thread, from the hook of a Lua script that has run past busy-reply-threshold (as
  // Redis's processEventsWhileBlocked): answers this reactor's clients meanwhile, so that SCRIPT
  // KILL and SHUTDOWN NOSAVE reach the script even when this is the only reactor. Commands
  // without kAllowBusy get BUSY (Connection::BusyRefuses); neither the shard nor the inbox is
  // touched. What cannot be handled now (input of the script's own client or of one with
  // anything under way, journal completions) is kept, in order, for the next turn.
  void ServeWhileBusy();
  bool serving_busy() const { return serving_busy_; }

  int id() const { return id_; }
  Server& server() { return *server_; }
  shard::Shard& shard() { return shard_; }
  const Config& config() const { return config_; }
  Config& mutable_config() { return config_; }
  // The TLS context new connections of the TLS port get (null without --tls-port). Replaced by
  // CONFIG SET tls-* through a message to each reactor; a session keeps the context it was made
  // with (SSL_new takes a reference on the SSL_CTX), so existing clients keep theirs.
  void set_tls_context(std::shared_ptr<const TlsContext> ctx) { tls_context_ = std::move(ctx); }
  int64_t now_ms() const { return now_ms_; }
  ReactorStats& stats() { return stats_; }
  LockTable& locks() { return locks_; }
  WatchTable& watches() { return watches_; }
  // CLIENT TRACKING: which clients may cache which keys of this shard (pushed.cc
  // delivers what its changes owe at the end of each turn).
  TrackingTable& tracking() { return tracking_; }
  void DeliverTracking();
  LockWaiters& lock_waiters() { return lock_waiters_; }  // LOCK.ACQUIRE ... WAIT
  // This reactor's copy of the ACL users (server/acl/acl.h); ACL SETUSER changes every copy.
  acl::Users& acl_users() { return acl_users_; }
  PubSubRegistry& pubsub() { return pubsub_; }  // this reactor's subscriptions
  // Over maxmemory, before a command runs: whether it may run. With an evicting policy
  // (volatile-ttl, volatile-lru, allkeys-lru, volatile-random, allkeys-random) this reactor first
  // evicts the keys the policy picks from its own shard (shard::Shard::Evict) until the process
  // is under (MemoryLimit's estimate), passing over keys a cross-shard transaction holds; each
  // eviction is a deletion the journal writes and INFO counts (evicted_keys). When its shard
  // has nothing left, the command may still run while another shard has keys it may evict:
  // their reactors evict on their next tick (no shard asks another). False with noeviction.
  bool EvictForMemory();
  const char* ring_mode() const { return ring_mode_; }

  // --- maxmemory-clients (ClientEvictionLimit, ClientMemoryBoard: server/base/output_limit.h) ---
  // The limit in bytes, 0 when off (ApplyConfig).
  int64_t client_mem_limit() const { return client_mem_limit_; }
  // A client's replies grew past Connection::kOutputLimitFloor (OverOutputLimitSlow): if this
  // reactor's last count, with c as it is now and the other reactors' published totals, reaches
  // the limit, a check is due. Never evicts itself (it may run inside a PUBLISH's loop over
  // subscribers); the check runs at the next safe point: the client's own input loop
  // (ProcessInput), or the loop turn.
  void NoteClientGrowth(Connection* c);
  bool client_mem_check_due() const { return client_mem_check_due_; }
  // Counts this reactor's clients' memory, publishes it, and while the server's total reaches
  // the limit evicts this reactor's biggest client that is not CLIENT NO-EVICT, as long as it is
  // at least as big as the biggest that any other reactor has published (that one goes first,
  // by its own reactor). Each eviction is logged ("Evicting client: ..." as Redis) and counted
  // (INFO evicted_clients). Runs on every tick while the limit is on, and when due.
  void CheckClientMemory();

  // --- timing commands (INFO commandstats/latencystats, SLOWLOG; server/observe/introspect.h) ---
  // StartTiming() where a run of commands begins (a read of a connection's input, a relay's
  // hop, a forwarded command), then EndCall() after each command, which charges it the ticks
  // since the previous mark and marks again: one clock read per command, and a command's time
  // includes its parsing and dispatch.
  //
  // A clock read costs about 20 ns here, a few percent of a pipelined SET, so cheap commands
  // (kTimedInRuns: the fast ones, as Redis's CMD_FAST, and the lock path's SET and DEL) read none
  // while the slow log and the latency monitor only watch for calls of at least kRunMinWatchUsec
  // (their defaults): they join a *run*, whose time is shared equally among its commands when it
  // closes, with one read. A run closes at BeginCall of a command that is not cheap (so that one is
  // timed alone), at EndTiming (the end of a read's commands, of a relay's hop), at StartTiming,
  // after kMaxRun commands, and before the loop waits. A run slower in all than the slow log's
  // threshold is logged as one entry (RunSlowlogArgs). With a lower threshold every call is timed
  // alone, as in Redis.
  static constexpr uint64_t kRunMinWatchUsec = 1000;
  static constexpr int kMaxRun = 32;
  //
  // Within one drain of the inbox, a task's StartTiming reuses the mark the previous task's
  // EndTiming left (lap_fresh_): a relay hop then costs one clock read, not two. What ran
  // between them (freeing the task, taking the next) counts as the next call's dispatch.
  void StartTiming() {
    if (run_n_) {
      lap_start_ = CloseRun(nullptr);
    } else if (!lap_fresh_) {
      lap_start_ = TickClock::Now();
    }
    lap_fresh_ = false;
  }
  // Before a command runs: a command that is not cheap is timed alone.
  [[gnu::always_inline]] void BeginCall(const CommandSpec* spec) {
    if (run_n_ && !(spec->flags & kTimedInRuns)) [[unlikely]]
      lap_start_ = CloseRun(nullptr);
  }
  // Closes the open run; conn: its client, for a slow log entry (nullptr: none known).
  void EndTiming(const Connection* conn) {
    if (run_n_) lap_start_ = CloseRun(conn);
    lap_fresh_ = draining_;
  }
  // Ticks since the last mark; marks now.
  uint64_t Lap() {
    uint64_t now = TickClock::Now();
    last_lap_ = now - lap_start_;
    lap_start_ = now;
    return last_lap_;
  }
  // Charges a call's ticks to its command; true when it is slow enough for the slow log or the
  // latency monitor (then call NoteSlowCall). Recorded even with latency-tracking no (INFO then
  // shows nothing): a flag test here would cost as much as the histogram's increment.
  [[gnu::always_inline]] bool ChargeCall(CommandStats& cs, uint64_t ticks) {
    cs.ticks += ticks;
    cs.latency.Record(ticks);
    return ticks >= watch_ticks_;
  }
  // A cheap call that just ended joins the open run (no clock read); false when it must be timed
  // alone (Lap + ChargeCall).
  [[gnu::always_inline]] bool JoinRun(CommandStats& cs, const CommandSpec* spec) {
    if (!(spec->flags & kTimedInRuns) || !runs_ok_) return false;
    run_[run_n_++] = &cs;
    run_spec_ = spec;
    if (run_n_ == kMaxRun) [[unlikely]]
      lap_start_ = CloseRun(nullptr);
    return true;
  }
  // JoinRun, or Lap + ChargeCall + NoteSlowCall, for a call whose client is on this reactor.
  // Inline: it runs for every command.
  [[gnu::always_inline]] void EndCall(CommandStats& cs, const CommandSpec* spec, CmdArgs args,
                                      const Connection* conn) {
    if (JoinRun(cs, spec)) return;
    if (ChargeCall(cs, Lap())) [[unlikely]]
      SlowCall(spec, args, conn);
  }
  // EndCall for a call timed alone, whatever its flags (each of an EXEC's commands).
  void EndCallAlone(CommandStats& cs, const CommandSpec* spec, CmdArgs args,
                    const Connection* conn) {
    if (run_n_) lap_start_ = CloseRun(nullptr);
    if (ChargeCall(cs, Lap())) [[unlikely]] SlowCall(spec, args, conn);
  }
  uint64_t last_lap_ticks() const { return last_lap_; }
  // A call that ChargeCall flagged: feeds the latency monitor, and returns the slow log entry
  // (its id taken now, without client address and name) when it is slow enough for that.
  std::optional<SlowlogEntry> NoteSlowCall(const CommandSpec* spec, CmdArgs args, uint64_t ticks);
  // Keeps it in this reactor's slow log, with conn's address and name when conn is set. Calls
  // that Redis never logs (AUTH, HELLO, EXEC) are dropped.
  void AddSlow(SlowlogEntry e, const Connection* conn);
  // NoteSlowCall + AddSlow for the call that just ended (EndCall's cold half).
  [[gnu::noinline]] void SlowCall(const CommandSpec* spec, CmdArgs args, const Connection* conn);
  SlowLog& slowlog() { return slowlog_; }
  LatencyEvents& latency_events() { return latency_events_; }
  // --- CLIENT PAUSE: set on every reactor by the CLIENT PAUSE call ---
  // When the pause ends (unix ms; 0: no pause), and whether it holds every command or writes.
  int64_t pause_end_ms() const { return pause_end_ms_; }
  bool pause_all() const { return pause_all_; }
  // Starts (or extends) a pause until end_ms.
  void Pause(int64_t end_ms, bool all);
  // Ends it: the connections it held run their commands.
  void Unpause();
  void AddPauseWaiter(uint64_t conn_id) { pause_waiters_.push_back(conn_id); }

  // --- MONITOR ---
  // Whether any client of any reactor is a MONITOR: commands dispatched here are then fed to
  // every reactor's monitors (FeedMonitors).
  bool feed_monitors() const { return feed_monitors_; }
  void FeedMonitors(const Connection& from, CmdArgs args);
  // Connection c (of this reactor) becomes, or stops being, a monitor; every reactor is told.
  void SetMonitor(Connection* c, bool on);

  // DEBUG SET-ACTIVE-EXPIRE: whether Tick removes expired keys (lazy expiry always runs).
  void set_active_expire(bool on) { active_expire_ = on; }

  // After CONFIG SET: recomputes what is derived from the config (the slow log's threshold in
  // ticks, its length).
  void ApplyConfig();

  // Reactor thread: runs fn on reactor `target`. Messages to the same target keep their order;
  // they are sent in one batch at the end of this loop turn. target may be this reactor.
  // `hints`: what fn reads first (TaskHints), asked for ahead on the target.
  // `lazy`: nothing on the target waits for fn unless the target says so (AddLazyWaiter), so a
  // target asleep for anything else is not woken for it: it runs in the target's next turn.
  void Send(int target, absl::AnyInvocable<void()> fn, const TaskHints& hints = {},
            bool lazy = false);
  // The same for a message that reveals nothing this shard wrote (a relay leaving its origin
  // before running anything there, for a client with nothing of its own waiting for this
  // journal): with appendfsync always it leaves at the end of this turn even while the journal
  // holds the other messages, and may so overtake them.
  void SendUnheld(int target, absl::AnyInvocable<void()> fn, const TaskHints& hints = {});
  // Reactor thread: a connection here has work behind a lazy message on its way (a relay whose
  // replies its last shard sent to the socket itself): until RemoveLazyWaiter, lazy messages
  // wake this reactor as any other does.
  void AddLazyWaiter() { lazy_waiters_++; }
  void RemoveLazyWaiter() { lazy_waiters_--; }
  // Reactor thread: an operation of this ring whose completion calls `done` with its result;
  // `drop` frees what it holds if the reactor ends first (the ring is gone then).
  struct IoCall {
    void (*done)(IoCall* call, int res) = nullptr;
    void (*drop)(IoCall* call) = nullptr;
    IoCall* prev = nullptr;  // in the reactor's list of calls in flight (calls_)
    IoCall* next = nullptr;
  };
  // Reactor thread: sends `data` (kept alive by the caller until `call` is done) to a socket
  // another reactor's connection owns, in this turn's submission; the caller sees to it that
  // the connection writes nothing meanwhile and keeps the descriptor open.
  void SubmitSendCall(int fd, std::string_view data, IoCall* call);
  // Any thread: enqueue fn here now and wake the loop.
  void Post(absl::AnyInvocable<void()> fn);

  // Reactor thread: connection bookkeeping.
  void MarkForFlush(Connection* c);
  void ArmRecv(Connection* c);
  void CloseConnection(Connection* c);      // shuts the socket; freed once nothing is in flight
  void MaybeFree(Connection* c);
  const absl::flat_hash_map<uint64_t, Connection*>& connections() const { return conns_; }

  // Any reactor thread: runs free_it, which frees much memory on this thread (FLUSHALL), and
  // has the allocator give the freed pages back to the system at once.
  static void FreeingMuch(const absl::FunctionRef<void()>& free_it);

  // Reactor thread: runs fn in the next loop turn, after that turn's completions (other
  // clients' input) have been handled: for long work done in steps (Connection::FanOutChunked).
  void Yield(absl::AnyInvocable<void()> fn) { yielded_.push_back(std::move(fn)); }

  // Reactor thread: runs fn on this thread at (or soon after) at_ms, unix time.
  void AddTimer(int64_t at_ms, absl::AnyInvocable<void()> fn);

  // --- the journal (--appendonly yes; null otherwise) ---
  Journal* journal() { return journal_.get(); }
  io_uring* ring() { return &ring_; }
  io_uring_sqe* GetSqe();
  // user_data for a journal operation (8-aligned address).
  static uint64_t JournalTag(const void* op);
  // The journal's durable batch moved: held output may leave (next flush).
  void OnJournalDurable();
  // A journal write or fsync failed: held output for the failed batches leaves as errors.
  void OnJournalFailed() { journal_failed_ = true; }
  // Reactor thread: while it runs messages that were held for a journal batch whose write failed
  // (on the reactor that sent them), the error the replies they carry must become; else null.
  // Read where a reply comes back from another shard (a forwarded command, a lock handed over,
  // a transaction's acknowledgements).
  static const std::string* FailedReplyError();
  // Journal::Shutdown reaps completions itself once the loop has stopped.
  void HandleCqeDuringShutdown(io_uring_cqe* cqe) {
    HandleCqe({cqe->user_data, cqe->res, cqe->flags});
  }

 private:
  friend class Connection;
  // Receive buffers provided to the ring (kBufGroup): kBufCount of kBufSize bytes.
  static constexpr unsigned kBufCount = 512;  // power of two
  static constexpr unsigned kBufSize = 16 * 1024;
  static constexpr int kBufGroup = 0;
  // What a completion is for, in the low bits of its user_data (the pointer's alignment leaves
  // them free).
  enum OpKind : uint64_t {
    kOpCall = 0,  // an IoCall (null: nothing)
    kOpAccept = 1,
    kOpRecv = 2,
    kOpSend = 3,
    kOpEvent = 4,
    kOpIgnore = 5,
    kOpJournal = 6,
    kOpMsg = 7,  // a wake-up posted into this ring by another reactor (IORING_OP_MSG_RING)
  };
  static uint64_t Encode(const void* p, OpKind k) { return reinterpret_cast<uint64_t>(p) | k; }

  void Loop();
  void Turn();
  // Counts one loop turn that worked `us` microseconds (INFO eventloop_*).
  void CountTurn(int64_t us);
  bool Spin();  // true when a message arrived while spinning
  // A listening socket: the plain port's (listeners_[0]) or --tls-port's (listeners_[1]).
  struct alignas(8) Listener {
    int fd = -1;
    bool armed = false;  // a multishot accept is in the ring
  };
  // Binds and listens on `port` at --bind; *fd_out is set as soon as the socket exists.
  std::optional<std::string> OpenListener(int port, int* fd_out);
  // An accept's user_data: null for the plain port, non-null (OnAccept's `tls`) for TLS.
  void* AcceptTag(Listener& l) { return &l == &listeners_[1] ? &l : nullptr; }
  void Adopt(int fd, bool tls);
  // A completion, copied out of the ring before it is handled (ServeWhileBusy may take the rest
  // of a batch while one of them runs a script).
  struct Completion {
    uint64_t user_data;
    int32_t res;
    uint32_t flags;
  };
  void HandleCqe(Completion cqe);
  // Appends the ring's completions to completions_ and releases their ring entries.
  void TakeCompletions();
  // ServeWhileBusy: handles it now, or keeps it for the next turn; `served`: the clients whose
  // input it ran.
  void HandleWhileBusy(Completion cqe, std::vector<Connection*>* served);
  void OnAccept(bool tls, int res, uint32_t flags);
  void OnRecv(Connection* c, int res, uint32_t flags);
  void OnSend(Connection* c, int res);
  // Arms a multishot accept on every listener that has none.
  void ArmAccept();
  // Out of descriptors: stop accepting for a while (AcceptBackoff), then try again.
  void PauseAccept(int err);
  void ResumeAccept();
  void ArmEventfd();
  void SubmitSend(Connection* c);
  void DrainInbox();
  void FlushOutboxes();
  void FlushConnections();
  void Tick();
  // EvictForMemory's work on this shard: true once the process is under the limit, or when
  // its time (500 us a call) ran out first; false when the shard has nothing left to evict.
  bool EvictLocal();
  // Tells MemoryLimit whether this shard has keys the policy may evict (evictable_): with a TTL,
  // or any for allkeys-*.
  void UpdateEvictable();
  void CloseIdleClients();
  void Wake();
  // Any thread: completes this reactor's armed eventfd read (Wake, Stop, WakeFromHere's fallback).
  void SignalEventfd();
  // `urgent` false: a chain of lazy messages only (Send), which wakes r only if it sleeps for
  // any message (it has a lazy waiter).
  void WakeFromHere(Reactor& r, bool urgent);
  void RecycleBuffer(uint16_t bid);
  // Output held until the journal's batch `hold` is on disk (appendfsync always).
  void HoldConnection(Connection* c);
  void ReleaseHeldOutboxes();
  // Turns c's output held for batches up to `failed` into errors, which may leave at once.
  void FailHeldOutput(Connection* c, uint64_t failed, const std::string& error);

  Server* server_;
  const int id_;
  Config config_;
  int cpu_ = -1;
  shard::Shard shard_;
  std::shared_ptr<const TlsContext> tls_context_;  // this reactor's copy (set_tls_context)
  ReactorStats stats_;
  bool evictable_ = false;  // counted in MemoryLimit::evictable_shards()
  // maxmemory-clients: the limit, this reactor's clients at the last count, the others' total
  // and biggest evictable client as read then, the estimate at which the next check is due.
  int64_t client_mem_limit_ = 0;
  int64_t clients_mem_ = 0;
  int64_t others_clients_mem_ = 0;
  int64_t others_biggest_client_ = 0;
  int64_t client_mem_recheck_at_ = 0;
  bool client_mem_check_due_ = false;
  uint64_t lap_start_ = 0;
  bool draining_ = false;   // DrainInbox is running tasks
  bool lap_fresh_ = false;  // lap_start_ was marked by the last EndTiming of this drain
  uint64_t last_lap_ = 0;
  // The open run of fast calls (StartTiming): their commands' stats, and the last one's spec.
  int run_n_ = 0;
  bool runs_ok_ = false;  // watch_ticks_ >= kRunMinWatchUsec
  const CommandSpec* run_spec_ = nullptr;
  CommandStats* run_[kMaxRun];
  // Charges the open run's time to its calls, logs it when slow; returns the clock read.
  [[gnu::noinline]] uint64_t CloseRun(const Connection* conn);
  uint64_t slow_ticks_ = UINT64_MAX;     // slowlog-log-slower-than in ticks (UINT64_MAX: off)
  uint64_t monitor_ticks_ = UINT64_MAX;  // latency-monitor-threshold in ticks (UINT64_MAX: off)
  uint64_t watch_ticks_ = UINT64_MAX;    // the smaller of the two
  SlowLog slowlog_;
  LatencyEvents latency_events_;
  int64_t pause_end_ms_ = 0;
  bool pause_all_ = false;
  std::vector<uint64_t> pause_waiters_;  // connections held by CLIENT PAUSE
  bool active_expire_ = true;
  bool feed_monitors_ = false;           // Server::monitors() > 0, as last heard
  std::vector<uint64_t> monitors_;       // this reactor's MONITOR connections
  LockTable locks_;
  WatchTable watches_{&shard_};
  TrackingTable tracking_{&shard_};
  // Clients waiting for this shard's lock keys. A handover after a Db change runs as a task on
  // this reactor, after the command that made the change; its timers wake the loop (Turn).
  LockWaiters lock_waiters_{&shard_, &locks_,
                            [this] { Send(id_, [this] { lock_waiters_.Drain(); }); },
                            [this] { return now_ms_; }};
  acl::Users acl_users_;
  std::string applied_requirepass_;  // the default user's password follows CONFIG SET requirepass
  PubSubRegistry pubsub_;  // pub/sub; other reactors only read its hints

  io_uring ring_{};
  bool ring_ready_ = false;
  const char* ring_mode_ = "";
  io_uring_buf_ring* buf_ring_ = nullptr;
  char* buf_base_ = nullptr;
  Listener listeners_[2];  // reactor 0 only
  AcceptBackoff accept_backoff_;
  int event_fd_ = -1;
  uint64_t event_buf_ = 0;
  std::thread thread_;

  TaskQueue inbox_;
  // What a sleeping reactor wants to be woken for; set just before it sleeps, cleared by whoever
  // wakes it (or by itself on waking).
  enum : uint8_t { kAwake = 0, kSleepsForAny = 1, kSleepsForUrgent = 2 };
  std::atomic<uint8_t> sleeping_{kAwake};
  int lazy_waiters_ = 0;  // AddLazyWaiter
  // SubmitSendCall's, not yet done: a circular list through IoCall::prev/next, this its head.
  IoCall calls_{nullptr, nullptr, &calls_, &calls_};
  // IORING_OP_MSG_RING works between the reactors' rings (cleared on the first refusal; shared
  // by every reactor, so one failure moves all of them to the eventfd).
  static inline std::atomic<bool> msg_ring_ok_{true};
  std::atomic<bool> stop_{false};
  std::vector<std::pair<Task*, Task*>> outbox_;  // per target: chain built this turn
  std::vector<std::pair<Task*, Task*>> unheld_outbox_;  // the same, for SendUnheld's
  static void Link(std::pair<Task*, Task*>& chain, Task* t);  // t at the chain's end
  // Hands a chain built this turn to `target`'s inbox, and wakes it if it sleeps.
  void PushOut(int target, std::pair<Task*, Task*>& chain, bool urgent);
  std::vector<uint8_t> outbox_urgent_;           // per target: a message not lazy in the chain
  std::vector<Task*> local_tasks_;
  // Nodes of tasks that ran here, reused by NewTask (DoneTask).
  static constexpr size_t kMaxSpareTasks = 4096;
  std::vector<Task*> spare_tasks_;
  Task* NewTask(absl::AnyInvocable<void()> fn);
  void DoneTask(Task* t);
  bool messages_this_turn_ = false;  // sent or received a cross-reactor message (Spin)

  int64_t now_ms_ = 0;
  int64_t next_tick_ms_ = 0;
  int64_t last_slow_turn_log_ms_ = -60000;
  int64_t next_idle_check_ms_ = 0;
  absl::flat_hash_map<uint64_t, Connection*> conns_;
  std::vector<Connection*> flush_list_;
  std::vector<Connection*> free_list_;
  // This turn's completions and the next to handle; those ServeWhileBusy kept for the next turn
  // (handled before any newer one); whether it is running.
  std::vector<Completion> completions_;
  size_t completion_pos_ = 0;
  std::vector<Completion> busy_kept_;
  bool serving_busy_ = false;

  std::multimap<int64_t, absl::AnyInvocable<void()>> timers_;
  std::vector<absl::AnyInvocable<void()>> yielded_;  // Yield(): for the next turn
  std::unique_ptr<Journal> journal_;
  // Messages to other reactors produced while a journal batch was not yet on disk, in order,
  // with the batch they wait for.
  struct HeldChain {
    uint64_t batch;
    int target;
    Task* first;
    Task* last;
  };
  std::deque<HeldChain> held_outboxes_;
  std::vector<uint64_t> held_conns_;  // ids of connections whose output waits for the journal
  bool journal_moved_ = false;        // OnJournalDurable since the last flush
  bool journal_failed_ = false;       // OnJournalFailed since the last flush
};

// --- pub/sub delivery (server/core/pushed.cc) ---

// Reactor thread: delivers a message on the calling reactor `r` (kind kChannel for PUBLISH,
// kShard for SPUBLISH) and returns the receivers there. Subscribers whose output goes over the
// pub/sub limit are closed. When the publisher `self` is itself a receiver and `self_rb` writes
// its reply straight to the client, its copy goes into `self_rb`, before the PUBLISH reply as in
// Redis 7.0; inside EXEC (whose array must stay whole) it comes after the EXEC reply, as in 7.2.
int64_t DeliverHere(Reactor& r, PubSubKind kind, std::string_view channel, std::string_view payload,
                    Connection* self = nullptr, protocol::ReplyBuilder* self_rb = nullptr);

// Reactor thread, for publishing without a connection to reply to (e.g. PUBLISH / SPUBLISH
// called from a script running on a shard's reactor): delivers on this reactor now, sends the
// message to every other reactor that may have a receiver, and does not wait for them. Returns
// the receivers on this reactor only. Messages keep their order per channel.
int64_t PublishNoWait(Reactor& r, PubSubKind kind, std::string_view channel,
                      std::string_view payload);

}  // namespace deadbolt::server
