#pragma once
// One client connection: its input, its replies in pipeline order, and its session state.

#include <absl/functional/any_invocable.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_builder.h"
#include "protocol/resp_parser.h"
#include "server/acl/acl.h"
#include "server/base/output_limit.h"
#include "server/cmdtable/command.h"
#include "server/core/transaction.h"

namespace deadbolt::server {

class Reactor;
class Transaction;
class PubSubClient;               // pub/sub (server/core/pubsub.h)
enum class PubSubKind : uint8_t;  // pub/sub
struct WatchFlag;
struct RemoteCommand;
struct Relay;
struct RelayDeleter {  // relay.cc, where Relay is defined
  void operator()(Relay* r) const;
};
class ConnBlockedReply;
class BlockedReply;
class LockTable;
class TlsSession;  // server/tls/tls.h
struct CommandStats;  // server/observe/stats.h

// Whether a transaction holds (or waits for) any key of the call on this shard, and the lock
// names of its keys (server/txn/lock_table.h). Shard thread.
bool KeysBlocked(const CommandSpec* spec, CmdArgs args, int db, const LockTable& locks);
std::vector<std::string> LockNames(const CommandSpec* spec, CmdArgs args, int db);
// A command that arrived on its shard (forwarded, or in a relay) waits in the LockTable: a
// transaction holds one of its keys, or an earlier command of its client waits there.
bool MustWait(const CommandSpec* spec, CmdArgs args, int db, uint64_t client,
              const LockTable& locks);

// Runs a single-shard command's handler on this reactor's shard. For a tracking client
// (ShardCtx::track, pushed.cc) its changes are known as its own and the keys it reads
// are remembered; anyone else's call costs one test more.
void RunTrackedHandler(const CommandSpec* spec, CmdArgs args, ShardCtx& ctx);
[[gnu::always_inline]] inline void RunShardHandler(const CommandSpec* spec, CmdArgs args,
                                                   ShardCtx& ctx) {
  if (ctx.track.client == 0) [[likely]] {
    spec->shard_handler(args, ctx);
    return;
  }
  RunTrackedHandler(spec, args, ctx);
}

// FLUSHALL/FLUSHDB: every tracking client of reactor `r` learns that all its keys are invalid.
void InvalidateAllTracked(Reactor& r);
// The same on every reactor, each in its next turn (after the flush's reply).
void TellFlushToTrackers(Reactor& r);
// Every shard forgets `client`'s BCAST prefixes: those in `only`, or all of them.
void ForgetTrackingPrefixes(Reactor& r, uint64_t client, std::vector<std::string> only = {});

// What a connection and the shard its blocking command (LOCK.ACQUIRE ... WAIT) went to share
// while the call is out. Either thread may read it.
struct BlockState {
  // Set by the connection when it closes: the reply will go nowhere.
  std::atomic<bool> cancelled{false};
  // Set by the shard while the call waits in a queue (the client is blocked, as Redis counts
  // it); cleared when the wait ends.
  std::atomic<bool> waiting{false};
};

// A command's arguments copied into one block, so it can travel to another reactor or wait in a
// MULTI queue after the connection's input buffer has moved on.
struct OwnedArgs {
  explicit OwnedArgs(CmdArgs args);
  std::vector<std::string_view> Views() const;
  std::string bytes;
  std::vector<size_t> lens;
};

// Owned by the reactor thread that accepted it; no other thread touches it. A command sent to
// another shard holds a reference (Ref/Unref, on this thread only) so the object outlives its
// socket until every reply has come back.
//
// Replies leave in pipeline order: a command that runs inline writes straight to the output
// buffer when nothing is outstanding; otherwise it takes a slot in `pending_`, and slots are
// flushed in order as they complete.
class Connection {
 public:
  Connection(Reactor* reactor, int fd, uint64_t id, std::string peer, std::string local);
  ~Connection();

  // Reactor thread: bytes arrived (for a TLS connection, records: OnTlsRead).
  void OnRead(const char* data, size_t n);
  // Reactor thread: runs as many complete commands from the input as possible.
  void ProcessInput();

  // --- for command handlers (reactor thread) ---
  Reactor& reactor() { return *reactor_; }
  uint64_t id() const { return id_; }
  int db_index() const { return db_index_; }
  void set_db_index(int i) { db_index_ = i; }
  int resp() const { return resp_; }
  void set_resp(int v) { resp_ = v; }
  bool authenticated() const { return authenticated_; }
  void set_authenticated(bool v);
  // The ACL user this connection runs as (its reactor's copy; never null): the default user
  // until AUTH names another.
  acl::User& user() const { return *user_; }
  void set_user(acl::User* u) { user_ = u; }
  // For a call that runs elsewhere (another reactor, a fan-out): a read-only copy of a
  // restricted user, taken again when the user has changed since; null for a user who may do
  // everything.
  std::shared_ptr<const acl::User> AclSnapshot();
  // The user a handler running on this thread for this connection checks scripts against.
  const acl::User* AclUserHere() const { return user_->unrestricted() ? nullptr : user_; }
  // Back to the default user, authenticated when it needs no password (start, RESET).
  void ResetUser();
  // Records a refusal in ACL LOG (context "toplevel", "multi" or "lua").
  void LogAclDenial(std::string_view reason, std::string_view object, std::string_view username,
                    std::string_view context);
  // CLIENT LIST's line for this connection, for ACL LOG (set by server/commands).
  static inline std::string (*client_info_line)(Connection&) = nullptr;
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  std::string& lib_name() { return lib_name_; }
  std::string& lib_ver() { return lib_ver_; }
  const std::string& peer() const { return peer_; }
  const std::string& local() const { return local_; }
  int64_t created_ms() const { return created_ms_; }
  int64_t last_interaction_ms() const { return last_interaction_ms_; }
  // The last command this client sent, as CLIENT LIST shows it: the table's name for it ("get",
  // "client|list"), or "NULL" for an unknown command or subcommand (as Redis). Never the
  // client's own bytes, so it cannot break or forge a CLIENT LIST line.
  std::string_view last_command() const;
  size_t query_buffer_size() const { return in_.size() - in_start_; }
  // What this client costs in memory (CLIENT LIST's tot-mem; maxmemory-clients): the object,
  // the input buffer, the replies not yet sent and those waiting in their slots, as allocated.
  size_t MemoryUsage() const {
    return sizeof(Connection) + in_.capacity() + out_.capacity() + sending_.capacity() +
           done_slot_bytes_;
  }
  size_t output_buffer_size() const { return out_.size() + sending_.size(); }
  // Replies written but not yet taken by the kernel.
  size_t unsent_output() const {
    // sending_off_ keeps the size of the last send until the next one starts.
    return out_.size() + (sending_.size() > sending_off_ ? sending_.size() - sending_off_ : 0);
  }
  // Before AUTH (when a password is required) a client may leave at most this many bytes of
  // replies unread; past it the server closes it, as Redis 7.0.15 does (its 16 KB reply buffer
  // plus 1 KB in its reply list). With the parser's limits for such clients (10 arguments, bulks
  // of 16 KB) this bounds both what a stranger can make the server hold: its input and its
  // replies.
  static constexpr size_t kUnauthMaxUnsentOutput = 17 * 1024;
  // Close after the replies so far have been written (QUIT, protocol errors, CLIENT KILL).
  void CloseAfterReply() { close_after_reply_ = true; }
  void Kill();
  // client-output-buffer-limit: whether this client's unread replies are over its class's
  // limit (pubsub while subscribed, else normal), and closing it, logged, when they are.
  // Inline and nearly free below kOutputLimitFloor, as it runs after every command.
  bool OverOutputLimit() {
    if (unsent_output() + done_slot_bytes_ < kOutputLimitFloor) [[likely]] {
      output_limit_.Clear();
      return false;
    }
    return OverOutputLimitSlow();
  }
  // Redis counts only the replies that overflow a client's 16 KiB reply buffer (its
  // getClientOutputBufferMemoryUsage leaves the buffer out): under this many bytes of unread
  // replies no limit applies.
  static constexpr size_t kOutputLimitFloor = 16 * 1024;
  void CloseForOutputLimit();
  // With a normal output limit or maxmemory-clients set, a connection reads no further commands
  // while this many are out on other shards (each a relay or a forwarded command): their
  // replies, not counted until they come back, could otherwise pass the limit many times over
  // before it is checked.
  static constexpr int kMaxInflightUnderOutputLimit = 8;
  // Otherwise at most this many reads (--pipeline-order key, or quiet calls, where each command
  // goes out on its own): with no limit set, the hold on unread replies below cannot see the
  // replies of commands still out, and a pipeline of reads of one big value would multiply it.
  // Writes are not held back: their replies are small, or hand back what they remove.
  // Once held back, it goes on when half of them are back (not at each one: a reply at a time
  // would run one command a time, each with ProcessInput's look-ahead).
  static constexpr int kMaxInflightReads = 32;
  bool ThrottledByOutputLimit() const;
  bool throttled_ = false;  // ProcessInput stopped for it; OnForwardDone goes on
  // A client whose replies pile up unread (a pipeline of big reads it does not read) has no more
  // of its input run until the kernel takes them below this: what one client makes the server
  // hold stays bounded, with no output limit set, and the reactor's other clients are not held
  // up while its replies are built. Its input is still read, up to client-query-buffer-limit.
  static constexpr size_t kMaxUnsentBeforeRunning = size_t{16} << 20;
  bool input_held_ = false;  // stopped at kMaxUnsentBeforeRunning; Reactor::OnSend resumes it
  bool relay_paused() const { return paused_relay_ != nullptr; }
  bool input_ended_ = false;  // EOF read: closed once what it sent has run and been answered
  // Reactor::ServeWhileBusy kept input of it for the next turn: so is all that follows it.
  bool busy_kept_ = false;
  void ResumeHeldInput();

  // Runs per_shard on each shard in `shards` (inline for this reactor's shard, as a message to the
  // others), then finish() here, which writes the command's reply. per_shard is copied to every
  // shard; it may write only to state set aside for that shard. Replies keep pipeline order.
  //
  // A command that reads or writes keys (or the whole keyspace) on several shards is atomic:
  // the fan-out takes the command's key locks on every shard first (see Transaction), so no
  // other client sees it half done. Inside EXEC it runs under EXEC's locks.
  using ShardFn = std::function<void(ShardCtx&)>;
  void FanOut(const std::vector<int>& shards, ShardFn per_shard,
              absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish);
  // The same in several phases, all under the same locks: phase k+1 starts on every shard once
  // phase k has finished on all of them, and may read what phase k wrote (MSETNX: check, then
  // write).
  void FanOutPhases(const std::vector<int>& shards, std::vector<ShardFn> phases,
                    absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish);
  // The same with each phase run only where it has work: on `on[k]` alone, or on every shard
  // when it is -1. A phase on this reactor's shard alone costs no message (LMOVE across shards:
  // the pop runs on the source only, the push on the destination only).
  void FanOutPhasesOn(const std::vector<int>& shards, std::vector<ShardFn> phases,
                      std::vector<int> on,
                      absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish);
  // The same with phases done in bounded chunks, for commands with many keys: a ChunkFn does
  // some of its shard's work and returns true if some is left; it then runs again, in another
  // hop, on the shards that said so (the locks still held), and the reactors serve other clients
  // in between. The next phase starts once no shard has work left.
  using ChunkFn = std::function<bool(ShardCtx&)>;
  void FanOutChunked(const std::vector<int>& shards, std::vector<ChunkFn> phases,
                     absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish,
                     std::vector<int> on = {});

  // For a command whose reply waits on something other than a key (WAITAOF waiting for
  // fsyncs): takes this command's reply slot and holds back the connection's later commands
  // until the returned function is called, on this reactor's thread, with the reply's RESP
  // bytes. The handler writes nothing to its ReplyBuilder then.
  absl::AnyInvocable<void(std::string)> ReplyLater();

  // For a blocking command whose keys span shards (a conn_handler, or a fan-out's finish) that
  // has to wait: the reply slot comes after anything written so far, and the connection's later
  // commands wait until the returned reply is finished, from any of `shards` (ascending). A
  // close sends a cancel to each of them (LockWaiters::Cancel).
  std::unique_ptr<BlockedReply> BlockAcross(std::vector<int> shards);
  // --- CLIENT REPLY / PAUSE / NO-EVICT / NO-TOUCH ---
  // CLIENT REPLY OFF: no reply to any command until CLIENT REPLY ON (which answers OK).
  // CLIENT REPLY SKIP: none to the next command. The CLIENT REPLY call itself sets these and
  // writes no reply for OFF and SKIP.
  void ReplyOff() { reply_off_ = true; }
  void ReplyOn() {
    reply_off_ = skip_next_ = false;
    reply_on_now_ = true;
  }
  void ReplySkipNext() { skip_next_ = true; }
  bool reply_off() const { return reply_off_; }
  bool no_evict = false;  // CLIENT NO-EVICT: never evicted for maxmemory-clients
  bool no_touch = false;  // CLIENT NO-TOUCH: its reads leave keys' access time alone
  // CLIENT PAUSE ended on this reactor: a command held by it runs now.
  void EndPause();
  // MONITOR: this connection gets a line for every command any client runs, until RESET or
  // it closes.
  bool monitor() const { return monitor_; }
  void set_monitor(bool on);
  void WriteMonitorLine(std::string_view line);

  // --- CLIENT TRACKING (pushed.cc) ---
  // Client-side caching's state of this connection; null until tracking is first turned on.
  struct TrackingState {
    bool on = false;
    bool bcast = false;
    bool optin = false;
    bool optout = false;
    bool noloop = false;
    bool caching = false;          // CLIENT CACHING yes (OPTIN) or no (OPTOUT): the next command
    bool broken_redirect = false;  // the client invalidations go to has gone
    uint64_t redirect = 0;         // that client's id (0: none), and its reactor
    int redirect_reactor = -1;
    std::vector<std::string> prefixes;  // BCAST's (none: every key)
    // BCAST prefixes were sent to the shards (even if the reply never came): forgotten there
    // when the connection closes.
    bool prefixes_sent = false;
  };
  TrackingState* tracking() const { return tracking_.get(); }
  TrackingState& EnsureTracking();
  // CLIENT TRACKING off (and RESET): its BCAST prefixes are forgotten on every shard.
  void StopTracking();
  // Appends pushed output (an invalidation) after every reply so far, as a published message.
  void WritePushed(std::string_view bytes);

  // --- MULTI / EXEC / WATCH (connection_exec.cc) ---
  bool in_multi() const { return in_multi_; }
  // A handler running as part of EXEC.
  bool in_exec() const { return exec_ != nullptr && exec_in_handler_; }
  void Multi(protocol::ReplyBuilder& rb);
  void Exec(protocol::ReplyBuilder& rb);
  void Discard(protocol::ReplyBuilder& rb);
  void Watch(CmdArgs args, protocol::ReplyBuilder& rb);
  void Unwatch();
  // RESET: leaves MULTI and forgets WATCHed keys.
  void ResetTransactionState();

  // --- for the reactor ---
  int fd() const { return fd_; }
  void Ref() { refs_++; }
  void Unref();
  bool closing() const { return closing_; }
  // Waiting for replies from other shards (or an EXEC, fan-out or blocked command).
  bool busy() const { return !pending_.empty() || paused_; }
  // Its blocking command waits in the server for a lock (CLIENT LIST's flag b; INFO's
  // blocked_clients counts the waiters where they wait, LockWaiters::size()).
  bool blocked() const {
    return block_state_ && block_state_->waiting.load(std::memory_order_relaxed);
  }
  // CLIENT UNBLOCK: if blocked(), its waiters end now (with their timeout's reply, or with
  // `error`, a RESP error line, when not empty) and true is returned.
  bool Unblock(std::string_view error);
  // A relay of this connection's pipeline is back (server/core/relay.cc): first its replies,
  // copied out of the relay, then, once the relay is recycled, what waited for it runs.
  void OnRelayReplies(uint64_t seq, std::string_view replies, bool from_shards);
  void OnRelayDone();
  // A relay back early with the replies of a prefix of its commands (the first `front` bytes of
  // its replies), which reached kMaxUnsentBeforeRunning (server/core/relay.cc, PauseHere): they
  // go out, and the relay waits
  // here for the kernel to take them below that (ResumeHeldInput), then goes on.
  void OnRelayPaused(std::unique_ptr<Relay, RelayDeleter> relay, size_t front);
  void ResumeRelay();
  void DropPausedRelay();
  // appendfsync always: a tagged relay's parts are written at once on their shards, each
  // participant acking to here once its part is on disk (relay.cc, StartCommit). Home waits for
  // them: TaggedAcksIn says whether all are in, else keeps the relay until OnTaggedAck brings
  // the last, which sends it home again.
  bool TaggedAcksIn(std::unique_ptr<Relay>& r, bool by_message);
  void OnTaggedAck();
  std::string TakeTaggedAckError();  // a part whose journal write failed: the replies' error
  // Reactor thread, when the socket is closed: leaves shared state (watches) behind.
  void OnClose();
  bool CanFree() const { return closing_ && refs_ == 0 && !recv_armed_ && !send_in_flight_; }
  // --- TLS (server/tls/): null for a plain connection, so the hooks in OnRead, SubmitSend and
  // FlushConnections cost it one test of a pointer ---
  bool tls() const { return tls_ != nullptr; }
  // Records (the handshake's, alerts) wait to be sent.
  bool tls_wire_pending() const { return tls_ != nullptr && TlsWirePending(); }
  // Logs why the TLS session failed (rate-limited); the caller closes the connection.
  [[gnu::cold]] void LogTlsFailure();

 private:
  friend class Reactor;
  friend struct RemoteCommand;
  friend class ConnBlockedReply;
  static constexpr int kSpansShards = -2;
  // inflight_shard_ while a relay is out: no shard, so every later keyed command waits for it.
  static constexpr int kRelayShard = -3;
  // A relay carries at most this much; the commands after it wait for its replies.
  static constexpr size_t kMaxRelayCommands = 1024;
  static constexpr size_t kMaxRelayBytes = 256 * 1024;
  // A fan-out over more keys than this locks the shards it touches whole instead of each key
  // (the shards passed to it must then be all those owning its keys).
  static constexpr size_t kMaxKeyLocks = 1024;
  // A one-phase fan-out over at most this many keys runs in one pass along the shards
  // (Transaction::LockRunRelease) when there is no journal.
  static constexpr size_t kOnePassKeys = 64;
  struct QueuedCommand {
    const CommandSpec* spec;
    std::unique_ptr<OwnedArgs> args;
    int db;
  };
  // An EXEC in progress: runs the queued commands one after another under its transaction's
  // locks, gathering their replies.
  struct ExecState {
    std::vector<QueuedCommand> cmds;
    size_t next = 0;
    std::string replies;
    std::unique_ptr<Transaction> tx;
    uint64_t seq = 0;
    int resp = 2;
    bool async = false;    // the current command went to other shards; ExecNext resumes
    bool in_loop = false;  // ExecNext's loop is running (a nested call only flags a resume)
    bool resumed = false;
    ShardCtx::Track track;  // CLIENT TRACKING: for its commands (decided at EXEC)
  };
  struct FanOutRun;
  // Fan-outs in flight: each deletes itself when it finishes; those still here when the
  // connection goes (a reactor destroyed at shutdown mid-transaction) are deleted with it.
  std::vector<FanOutRun*> fan_outs_;
  void DropFanOuts();
  // The client has gone: fan-outs that only read and still wait for their locks are dropped.
  void FanOutsClientGone();
  void Dispatch(CmdArgs args);
  // Refuses a call before it runs or is queued, as Redis's rejectCommand: a refused EXEC
  // discards the transaction and says why (EXECABORT); inside MULTI, EXEC then aborts.
  void Reject(const CommandSpec* spec, std::string_view error);
  // ACL, for a user who may not do everything: refuses the call (NOPERM, ACL LOG) and says so.
  [[gnu::noinline]] bool AclRefuses(const CommandSpec* spec, CmdArgs args, CommandStats& cs);
  // ACL again at EXEC for a queued command (the user's rules may have changed since it was
  // queued, as Redis 7.0 checks): refuses it (its NOPERM in `replies`, ACL LOG) and says so.
  [[gnu::noinline]] bool AclRefusesAtExec(const CommandSpec* spec, CmdArgs args,
                                          std::string* replies, int resp);
  void Execute(const CommandSpec* spec, CmdArgs args);
  // client-query-buffer-limit: closes the client (and says so in the log) if `unread` input
  // bytes are over it.
  bool KilledForQueryLimit(size_t unread);
  // Reactor::ServeWhileBusy: whether its input may run now (nothing of it under way or waiting).
  bool ServesWhileBusy() const;
  // Reactor::ServeWhileBusy is running: refuses (BUSY) a call without kAllowBusy, or with keys.
  [[gnu::noinline]] bool BusyRefuses(const CommandSpec* spec, CmdArgs args);
  // A Lua script past busy-reply-threshold runs on a shard this command needs (`shard`: where
  // Execute would run it).
  bool NeedsBusyShard(const CommandSpec* spec, CmdArgs args, int shard) const;
  // `block`: set for a blocking command (ForwardBlocking).
  void Forward(const CommandSpec* spec, CmdArgs args, int shard,
               std::shared_ptr<BlockState> block = nullptr);
  // --- blocking commands (LOCK.ACQUIRE ... WAIT) ---
  // Sends a call that may wait in the server to its shard (even this reactor's own) and holds
  // back the connection's later commands until it replies.
  void ForwardBlocking(const CommandSpec* spec, CmdArgs args, int shard);
  // The connection waits for a blocking call on `shards`: its later commands wait too; one whose
  // input has ended is closed at the next flush instead, as Redis frees it.
  void StartBlock(std::shared_ptr<BlockState> state, std::vector<int> shards);
  // Runs one on this reactor's shard (nothing in flight): pauses only if it has to wait.
  void RunBlockingHere(const CommandSpec* spec, CmdArgs args);
  // Its reply is back (sent by ConnBlockedReply::Finish from the shard). If this connection has
  // closed meanwhile, `undo` is sent back to that shard.
  void EndBlock(uint64_t seq, std::string reply, int shard, absl::AnyInvocable<void()> undo);
  // OnClose: tells the shard that the client no longer waits.
  void CancelBlock();
  // --pipeline-order sent: gathers a command that cannot run inline, and the single-shard
  // commands after it, into relay_; SendRelay sends it on its way (server/core/relay.cc), or
  // with `run_here` (the end of a read, nothing else of the connection under way) runs this
  // shard's part at once when it goes here first.
  void RelayAdd(const CommandSpec* spec, CmdArgs args, int shard);
  bool RelayFull() const;
  void SendRelay(bool run_here = false);
  // Whether the relay leaving now may have its replies sent to the socket by its last shard:
  // nothing of this connection is being written or waits to be (no send in flight, no output,
  // the relay's slot first), and nothing but a slot can write to it meanwhile.
  bool RepliesMayLeaveFromShard() const;
  void EndDirectReply();  // the relay is home
  // Something of this connection waits behind a relay whose replies its last shard sends
  // (direct_reply_): the relay's lazy message home must wake this reactor (AddLazyWaiter).
  void WaitForRelayHome() {
    if (direct_reply_ && !lazy_waiting_) [[unlikely]]
      StartLazyWait();
  }
  void StartLazyWait();
  // Holds a command (and the input after it) until the commands in flight are done.
  void Defer(const CommandSpec* spec, CmdArgs args);
  void OnForwardDone();
  // Runs the deferred command (nothing in flight any more), then the input after it.
  void RunDeferred();
  // CLIENT PAUSE holds this call (a write in WRITE mode, anything in ALL mode).
  bool PauseHolds(const CommandSpec* spec) const;
  void PauseHold(const CommandSpec* spec, CmdArgs args);
  // CLIENT REPLY OFF/SKIP: dispatches a command whose replies are then dropped.
  void DispatchQuietly(CmdArgs args);
  // Runs fn; every reply it produced (now or later, in slots) is dropped.
  template <typename F>
  void RunQuietly(F&& fn);
  // The shard owning every key of the call; -1 without keys, kSpansShards when they span shards.
  int KeyShard(const CommandSpec* spec, CmdArgs args) const;
  // The rest of a pipeline, after the command about to run: asks for the keyspace lines its
  // next commands' local keys will be looked up in, so that their cache misses overlap (a hint;
  // it changes nothing). Returns how many commands it looked at: ProcessInput looks again once
  // they have run.
  int PrefetchPipeline(std::string_view buf);
  // The spec of command `name`, or null: the previous command's first (a pipeline mostly repeats
  // one), then the table. Dispatch and the look-ahead share it.
  const CommandSpec* LookUp(std::string_view name) {
    const CommandSpec* spec = lookup_cache_;
    if (spec == nullptr || !CommandTable::NameMatches(name, *spec)) {
      spec = CommandTable::Get().Find(name);
      if (spec) lookup_cache_ = spec;
    }
    return spec;
  }
  void RunConnHandler(const CommandSpec* spec, CmdArgs args, protocol::ReplyBuilder& rb);
  void Queue(const CommandSpec* spec, CmdArgs args);
  void ExecCheckWatches();
  void ExecNext();
  void ExecFinish(bool aborted);
  void ExecReply(ExecState& st, bool aborted);  // ExecFinish's second half, once released
  uint64_t ReserveSlot();
  // A reserved slot's replies are in; out_ takes every done slot at the front, in order.
  // `from_shards`: they came in a message from other shards, whose journals they waited for
  // (that message left only once its shard's writes were written: FlushOutboxes), so they
  // need no hold for this reactor's journal; what this reactor wrote before them still does.
  void CompleteSlot(uint64_t seq, std::string data, bool from_shards = false);
  // The same for replies the caller keeps: copied only if the slot must wait for an earlier one.
  void CompleteSlotFrom(uint64_t seq, std::string_view data, bool from_shards = false);
  void EmitDoneSlots();
  // A slot's replies into out_, unless discarded: as errors if the journal batch they waited
  // for failed, and held until it is on disk if not written yet.
  void EmitSlot(std::string_view data, uint64_t hold, bool discard, bool from_shards = false);
  // appendfsync always: before bytes that need no hold are appended, the output before them
  // that is not marked yet is held for this turn's batch (FlushConnections would have).
  void HoldOutputSoFar();
  std::string* ReplyTarget();  // out_ when nothing is pending, else a fresh slot
  void ReplyError(std::string_view msg);
  // Closes a client that left too many replies unread before AUTH (kUnauthMaxUnsentOutput).
  void CloseUnauthenticated();
  void AfterOutput();
  // OnRead for a TLS connection: records in, plaintext into in_. Kept out of line and cold so
  // that it changes nothing in how the plain path is compiled.
  [[gnu::noinline, gnu::cold]] void OnTlsRead(const char* data, size_t n);
  bool TlsWirePending() const;

  Reactor* reactor_;
  int fd_;
  uint64_t id_;
  std::string peer_, local_;
  protocol::RespParser parser_;
  std::vector<std::string_view> args_;
  std::string in_;
  size_t in_start_ = 0;
  std::string out_;      // replies not yet handed to the kernel
  std::string sending_;  // the send in flight
  size_t sending_off_ = 0;
  struct Slot {
    std::string data;
    bool done = false;
    bool discard = false;  // CLIENT REPLY OFF/SKIP: never sent
    // The journal batch its reply must wait for (appendfsync's rule, Journal::HoldBatch),
    // taken when it completed: a slot may reach out_ turns later, behind earlier slots.
    uint64_t hold = 0;
    bool from_shards = false;  // CompleteSlot's: needs no hold of this reactor's journal
  };
  std::deque<Slot> pending_;
  size_t done_slot_bytes_ = 0;  // the replies of done slots in pending_ (not yet in out_)
  int64_t mem_counted_ = 0;     // MemoryUsage() at the reactor's last count (maxmemory-clients)
  // appendfsync always: (end offset in out_, journal batch) — out_'s bytes up to the offset
  // leave once the batch is on disk. Empty when nothing is held.
  std::deque<std::pair<size_t, uint64_t>> hold_marks_;
  // out_'s size just after bytes that need no hold here were appended (replies from other
  // shards); FlushConnections marks nothing while out_ still ends there. npos: none.
  size_t unheld_end_ = std::string::npos;
  // The newest journal batch a command of this client whose reply was dropped (CLIENT REPLY
  // OFF/SKIP) may have written into: nothing of it shows in hold_marks_.
  uint64_t quiet_batch_ = 0;
  // appendfsync always: nothing this client did waits for this reactor's journal (no output
  // held or unsent, no dropped reply whose batch is not on disk), so its relay leaving here
  // before running anything reveals nothing this shard wrote (Reactor::SendUnheld).
  bool NothingWaitsForJournal() const;
  bool held_ = false;  // in the reactor's held_conns_
  uint64_t pending_base_ = 0;  // sequence number of pending_.front()
  protocol::ReplyBuilder rb_;

  int db_index_ = 0;
  int resp_ = 2;
  bool authenticated_ = false;
  acl::User* user_ = nullptr;
  std::shared_ptr<const acl::User> acl_snapshot_;  // AclSnapshot()'s copy
  uint64_t acl_snapshot_version_ = 0;
  std::string name_, lib_name_, lib_ver_;
  // The last command looked up (the subcommand's own spec for a container command); null when
  // it was unknown. Set before the arity, AUTH and MULTI checks, as Redis sets its lastcmd.
  const CommandSpec* last_cmd_ = nullptr;
  const CommandSpec* lookup_cache_ = nullptr;  // the last command name LookUp found
  int64_t created_ms_ = 0;
  int64_t last_interaction_ms_ = 0;
  OutputLimitState output_limit_;
  bool OverOutputLimitSlow();

  int refs_ = 0;
  bool recv_armed_ = false;
  bool send_in_flight_ = false;
  bool in_flush_list_ = false;
  bool in_free_list_ = false;
  bool closing_ = false;
  bool close_after_reply_ = false;
  bool processing_ = false;
  bool paused_ = false;  // an EXEC, a fan-out, a deferred or a blocking command holds back input
  // CLIENT REPLY: replies dropped until ON; the next command's reply dropped; dispatching one
  // whose replies are dropped; the deferred command's replies are to be dropped; CLIENT REPLY
  // ON ran (its OK is sent).
  bool reply_off_ = false;
  bool skip_next_ = false;
  bool quiet_ = false;
  bool deferred_quiet_ = false;
  bool reply_on_now_ = false;
  bool pause_held_ = false;  // the deferred command waits for CLIENT PAUSE to end
  bool monitor_ = false;
  // Forwarded commands (or relays) not yet answered. --pipeline-order sent: all to
  // inflight_shard_ (kRelayShard for a relay). --pipeline-order key: to any shards,
  // inflight_local_ of them to this reactor's own.
  int inflight_ = 0;
  int inflight_shard_ = -1;
  int inflight_local_ = 0;
  int inflight_reads_ = 0;                      // of them, reads (kMaxInflightReads)
  std::unique_ptr<Relay, RelayDeleter> relay_;  // being gathered, not yet sent
  std::unique_ptr<Relay, RelayDeleter> paused_relay_;  // OnRelayPaused
  std::unique_ptr<Relay, RelayDeleter> tagged_home_;   // home, waiting for acks (TaggedAcksIn)
  bool tagged_home_by_message_ = false;
  uint32_t tagged_acks_ = 0;      // acks in for the relay out (a connection has one at a time)
  std::string tagged_ack_error_;  // OnTaggedAck
  bool direct_reply_ = false;  // the relay out may send its replies from its last shard
  bool lazy_waiting_ = false;  // WaitForRelayHome
  const CommandSpec* deferred_spec_ = nullptr;
  std::unique_ptr<OwnedArgs> deferred_args_;
  // While a blocking command is out: what it shares with its shards, and the shards it waits on.
  std::shared_ptr<BlockState> block_state_;
  std::vector<int> block_shards_;

  // The command a conn_handler is running, for FanOut's lock plan.
  const CommandSpec* cur_spec_ = nullptr;
  CmdArgs cur_args_;
  // CLIENT TRACKING: what the command running now is for its client (TrackCall), zero unless
  // the client tracks.
  std::unique_ptr<TrackingState> tracking_;
  ShardCtx::Track cur_track_;
  // Output pushed to the client unasked (a published message, an invalidation): `write(out)`
  // appends it to the output, or to a slot of its own behind the replies still owed (pushed.cc).
  template <typename F>
  void Push(F&& write);
  void DecideTracking(const CommandSpec* spec);
  // A fan-out's phases for a tracking client: its changes known as its own, the keys it reads
  // remembered on their shards.
  void TrackPhases(std::vector<ChunkFn>& phases);

  // MULTI / EXEC / WATCH
  bool in_multi_ = false;
  bool multi_error_ = false;
  int multi_db_ = 0;
  size_t queued_bytes_ = 0;
  std::vector<QueuedCommand> queued_;
  std::unique_ptr<ExecState> exec_;
  std::unique_ptr<ExecState> exec_releasing_;  // EXEC done, its reply waits for the release
  bool exec_in_handler_ = false;
  struct Watched {
    int shard;
    int db;
    std::string key;
  };
  std::vector<Watched> watched_;
  std::shared_ptr<WatchFlag> watch_flag_;

  // --- pub/sub (defined in server/core/pushed.cc) ---
 public:
  // This connection's subscriptions; null until its first (P|S)SUBSCRIBE.
  PubSubClient* pubsub_state() { return pubsub_.get(); }
  const PubSubClient* pubsub_state() const { return pubsub_.get(); }
  PubSubClient& EnsurePubSubState();
  // Subscribed to any channel, pattern or shard channel (CLIENT LIST's flag P).
  bool subscribed() const;
  // Appends a published message (a RESP3 push, or a RESP2 array) after every reply so far.
  // Returns false when the output went over the pub/sub output buffer limit: the caller closes
  // the connection.
  bool WritePubSubMessage(PubSubKind kind, const std::string* pattern, std::string_view channel,
                          std::string_view payload);
  // True if a handler writing to `target` writes this connection's next reply to the client (the
  // output buffer or the newest slot), not into a reply being assembled (EXEC's array).
  bool IsDirectReply(const std::string* target) const;

 private:
  // Dispatch(), for a connection that has subscribed: RESET drops the subscriptions; in RESP2
  // subscribed mode only (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT and RESET run, and PING
  // answers [pong, msg]. True when the command was answered here.
  bool PubSubFilter(const CommandSpec* spec, CmdArgs args);
  // Leaves the reactor's registry (destructor; safe to call again, e.g. from OnClose()).
  void PubSubTeardown();
  std::unique_ptr<PubSubClient> pubsub_;
  std::unique_ptr<TlsSession> tls_;  // set by Reactor::Adopt for --tls-port's clients

  // --- placement (connection_exec.cc): moving to the reactor that owns the client's keys ---
  // Every single-shard keyed command votes for its shard (a majority vote: the leader gains one
  // for a command on its shard and loses one for any other). After kPlaceWindow votes, a leader
  // that is another reactor's shard and leads by kPlaceLead (about 7 commands in 8 for it) is
  // where the connection moves (move_to_), once it is idle (Reactor::StartMove). Keys spread
  // over the shards never lead by that much (by about the square root of the window).
  static constexpr uint16_t kPlaceWindow = 256;
  static constexpr uint16_t kPlaceLead = 192;
  static constexpr int64_t kPlaceMinGapMs = 1000;  // at most one move a second
  [[gnu::always_inline]] void NotePlace(int shard) {
    if (shard == place_shard_) {
      place_lead_++;
    } else if (place_lead_ == 0) {
      place_shard_ = shard;
      place_lead_ = 1;
    } else {
      place_lead_--;
    }
    if (++place_seen_ == kPlaceWindow) [[unlikely]]
      PlaceWindowDone();
  }
  void PlaceWindowDone();
  // Nothing of it is out or waiting anywhere, and it has no state that lives outside it
  // (transactions, subscriptions, blocking calls, TLS, ...): it may move.
  bool Movable() const;
  int place_shard_ = -1;
  uint16_t place_lead_ = 0;
  uint16_t place_seen_ = 0;
  int move_to_ = -1;     // decided: moves when next idle
  bool moving_ = false;  // its recv is being cancelled; input is kept, not run
  int64_t moved_ms_ = 0;
};

// A connection on its way to another reactor: its socket and session, copied (the Connection
// object stays behind and is freed there).
struct MovedConnection {
  int fd = -1;
  uint64_t id = 0;
  std::string peer, local;
  int db = 0;
  int resp = 2;
  bool authenticated = false;
  std::string user;
  std::string name, lib_name, lib_ver;
  const CommandSpec* last_cmd = nullptr;
  int64_t created_ms = 0, last_interaction_ms = 0, moved_ms = 0;
  bool no_evict = false, no_touch = false;
  std::string input;   // bytes received and not yet run
  std::string output;  // replies not yet sent
};

}  // namespace deadbolt::server
