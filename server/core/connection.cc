#include "server/core/connection.h"

#include <absl/strings/ascii.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "server/acl/acl_log.h"
#include "server/base/error_strings.h"
#include "server/cmdtable/script_busy.h"
#include "server/base/log.h"
#include "server/base/str_util.h"
#include "server/cmdtable/journal_health.h"
#include "server/cmdtable/memory_limit.h"
#include "server/cmdtable/restart_delay.h"
#include "server/core/journal.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/tls/tls.h"
#include "server/txn/blocked_reply.h"
#include "server/txn/lock_table.h"
#include "server/txn/watch_table.h"
#include "server/pubsub/registry.h"

namespace deadbolt::server {

// The reply slot of a blocking command (LOCK.ACQUIRE ... WAIT) kept open on its shard: Finish()
// sends the reply back to the connection's reactor (see BlockedReply).
class ConnBlockedReply final : public BlockedReply {
 public:
  ConnBlockedReply(int origin, Connection* conn, uint64_t seq, int resp, uint64_t client_id,
                   std::shared_ptr<BlockState> state)
      : origin_(origin),
        conn_(conn),
        seq_(seq),
        resp_(resp),
        client_id_(client_id),
        state_(std::move(state)) {}
  int resp() const override { return resp_; }
  uint64_t client_id() const override { return client_id_; }
  bool cancelled() const override { return state_->cancelled.load(std::memory_order_relaxed); }
  void Finish(std::string reply, absl::AnyInvocable<void()> undo) override {
    state_->waiting.store(false, std::memory_order_relaxed);  // no longer blocked
    Reactor* r = Reactor::Current();
    Connection* c = conn_;  // dereferenced only back on origin_
    uint64_t seq = seq_;
    int shard = r->id();
    r->Send(origin_, [c, seq, shard, reply = std::move(reply), undo = std::move(undo)]() mutable {
      if (const std::string* e = Reactor::FailedReplyError()) reply = FailHeldReplies(reply, *e);
      c->EndBlock(seq, std::move(reply), shard, std::move(undo));
    });
  }

 private:
  int origin_;
  Connection* conn_;
  uint64_t seq_;
  int resp_;
  uint64_t client_id_;
  std::shared_ptr<BlockState> state_;
};

// A single-shard command travelling to the shard that owns its keys. If a transaction holds one
// of them there, it waits in that shard's LockTable and runs when the lock is released.
struct RemoteCommand {
  const CommandSpec* spec;
  std::unique_ptr<OwnedArgs> args;
  int origin;
  int db;
  int resp;
  Connection* conn;  // dereferenced only back on `origin`
  uint64_t seq;
  uint64_t client_id;
  // A blocking command's (Connection::ForwardBlocking): shared with its connection.
  std::shared_ptr<BlockState> block;
  // Run by the LockTable once nothing blocks it: its keys are free and it is its client's first.
  bool resumed = false;
  std::shared_ptr<const acl::User> acl_user;  // a restricted caller's, for scripts
  ShardCtx::Track track = {};                 // CLIENT TRACKING's, for a tracking client

  void operator()() {
    Reactor* r = Reactor::Current();
    std::vector<std::string_view> views = args->Views();
    CmdArgs a(views.data(), views.size());
    if (!resumed && MustWait(spec, a, db, client_id, r->locks())) {
      std::vector<std::string> names = LockNames(spec, a, db);
      uint64_t owner = client_id;
      resumed = true;
      r->locks().Park(std::move(names), owner, std::move(*this));
      return;
    }
    CommandStats& cs = r->stats().commands[spec->stats_slot];
    cs.calls++;
    r->StartTiming();
    std::string reply;
    protocol::ReplyBuilder rb(&reply, resp);
    ShardCtx ctx{r->shard(), r->shard().db(db), db, r->now_ms(), r->config(), rb};
    ctx.acl_user = acl_user.get();
    ctx.track = track;
    if (block) {
      // A blocking command: the handler may keep the reply open by taking `pending` (the client
      // now waits); if it does not, the reply goes now. One whose client has already gone is not
      // run at all.
      std::unique_ptr<BlockedReply> pending =
          std::make_unique<ConnBlockedReply>(origin, conn, seq, resp, client_id, block);
      if (!pending->cancelled()) {
        ctx.block = &pending;
        RunShardHandler(spec, a, ctx);
        r->ChargeCall(cs, r->Lap());  // not logged as slow: its client is not here
      }
      if (pending) {
        pending->Finish(std::move(reply), nullptr);
      } else {
        block->waiting.store(true, std::memory_order_relaxed);
      }
      return;
    }
    RunShardHandler(spec, a, ctx);
    // A slow call's entry goes home with the reply, where its client's address and name are.
    std::unique_ptr<SlowlogEntry> slow;
    if (r->ChargeCall(cs, r->Lap())) [[unlikely]] {
      if (auto e = r->NoteSlowCall(spec, a, r->last_lap_ticks())) {
        slow = std::make_unique<SlowlogEntry>(std::move(*e));
      }
    }
    Connection* c = conn;
    uint64_t s = seq;
    const bool local = r->id() == origin;
    const bool read = (spec->flags & kReadOnly) && !block;
    r->Send(origin,
            [c, s, local, read, reply = std::move(reply), slow = std::move(slow)]() mutable {
              if (slow) [[unlikely]]
                Reactor::Current()->AddSlow(std::move(*slow), c);
              // Held for a journal batch of that shard that could not be written: an error, not OK.
              if (const std::string* e = Reactor::FailedReplyError())
                reply = FailHeldReplies(reply, *e);
              if (local) c->inflight_local_--;
              if (read) c->inflight_reads_--;
              // From another shard, its message held for that shard's journal; run here (a
              // message to itself) it is this reactor's own output.
              c->CompleteSlot(s, std::move(reply), /*from_shards=*/!local);
              c->OnForwardDone();
              c->Unref();
            });
  }
};

Connection::Connection(Reactor* reactor, int fd, uint64_t id, std::string peer, std::string local)
    : reactor_(reactor),
      fd_(fd),
      id_(id),
      peer_(std::move(peer)),
      local_(std::move(local)),
      rb_(&out_, 2) {
  const Config& cfg = reactor_->config();
  protocol::ParserLimits limits;
  limits.max_bulk_len = cfg.proto_max_bulk_len;
  limits.max_multibulk_len = cfg.max_multibulk_len;
  parser_.set_limits(limits);
  ResetUser();
  created_ms_ = last_interaction_ms_ = reactor_->now_ms();
}

void Connection::ResetUser() {
  user_ = reactor_->acl_users().Default();
  // As Redis: a client starts authenticated when the default user is on and has no password.
  set_authenticated(user_->enabled() && user_->nopass());
}

void Connection::LogAclDenial(std::string_view reason, std::string_view object,
                              std::string_view username, std::string_view context) {
  acl::LogEntry e;
  e.reason = std::string(reason);
  e.context = std::string(context);
  e.object = std::string(object);
  e.username = std::string(username);
  e.updated_ms = reactor_->now_ms();
  if (client_info_line) e.client_info = client_info_line(*this);
  acl::AclLog::Get().Add(std::move(e));
}

std::shared_ptr<const acl::User> Connection::AclSnapshot() {
  if (user_->unrestricted()) return nullptr;
  if (!acl_snapshot_ || acl_snapshot_version_ != user_->version() ||
      acl_snapshot_->name() != user_->name()) {
    acl_snapshot_ = std::make_shared<const acl::User>(*user_);
    acl_snapshot_version_ = user_->version();
  }
  return acl_snapshot_;
}

void Connection::set_authenticated(bool v) {
  authenticated_ = v;
  protocol::ParserLimits limits = parser_.limits();
  limits.unauthenticated = !v;
  parser_.set_limits(limits);
}

Connection::~Connection() {
  PubSubTeardown();  // pub/sub: leave the registry
  DropFanOuts();
}

void Connection::Unref() {
  refs_--;
  if (closing_) reactor_->MaybeFree(this);
}

void Connection::Kill() { reactor_->CloseConnection(this); }

void Connection::OnRead(const char* data, size_t n) {
  reactor_->stats().net_input_bytes += n;
  if (tls_) [[unlikely]] {
    OnTlsRead(data, n);
    return;
  }
  if (close_after_reply_) return;  // input after QUIT or a protocol error is ignored
  in_.append(data, n);
  if (moving_) [[unlikely]]
    return;  // runs on the reactor it moves to
  WaitForRelayHome();
  ProcessInput();
}

void Connection::OnTlsRead(const char* data, size_t n) {
  const bool was_done = tls_->handshake_done();
  // Input after QUIT or a protocol error is decrypted (the session must follow the stream)
  // and dropped.
  const size_t before = in_.size();
  bool ok = tls_->Feed(data, n, &in_);
  if (close_after_reply_) in_.resize(before);
  if (!ok) {
    LogTlsFailure();
    Kill();
    return;
  }
  if (tls_->wire_pending() || (!was_done && tls_->handshake_done())) {
    reactor_->MarkForFlush(this);  // handshake records; replies written before it was done
  }
  if (in_.size() > before) ProcessInput();
  if (tls_->peer_closed() && !closing_) CloseAfterReply();  // close_notify: nothing more comes
}

bool Connection::TlsWirePending() const { return tls_->wire_pending(); }

void Connection::LogTlsFailure() {
  static thread_local LogRateLimiter limiter(60 * 1000, 10);
  uint64_t suppressed = 0;
  if (!limiter.Allow(reactor_->now_ms(), &suppressed)) return;
  if (suppressed > 0) {
    LogWarning("closing TLS client %s: %s (%llu more such lines left out)", peer_.c_str(),
               tls_->error().c_str(), static_cast<unsigned long long>(suppressed));
  } else {
    LogWarning("closing TLS client %s: %s", peer_.c_str(), tls_->error().c_str());
  }
}

bool Connection::KilledForQueryLimit(size_t unread) {
  if (static_cast<int64_t>(unread) <= reactor_->config().client_query_buffer_limit) return false;
  LogWarning("closing client %s that reached max query buffer length (%zu bytes)", peer_.c_str(),
             unread);
  Kill();
  return true;
}

void Connection::ProcessInput() {
  if (processing_) return;
  processing_ = true;
  reactor_->StartTiming();
  int looked_ahead = 0;  // commands ahead that PrefetchPipeline has looked at
  while (!closing_ && !close_after_reply_ && !paused_ && !input_held_ && in_start_ < in_.size() &&
         !ThrottledByOutputLimit()) {
    size_t consumed = 0;
    std::string_view buf(in_.data() + in_start_, in_.size() - in_start_);
    protocol::ParseStatus st = parser_.Parse(buf, &consumed, &args_);
    if (st == protocol::ParseStatus::kIncomplete) {
      if (KilledForQueryLimit(buf.size())) break;
      // Room for the rest of the command, asked for at once, in steps: the lengths are the
      // client's (up to proto-max-bulk-len, which may be anything), and may never come.
      constexpr size_t kMaxReserveStep = size_t{64} << 20;
      if (size_t want = parser_.BytesWanted(); want > buf.size()) {
        in_.reserve(in_start_ + std::min(want, buf.size() + kMaxReserveStep));
      }
      break;
    }
    if (st == protocol::ParseStatus::kError) {
      ReplyError(errors::ProtocolError(parser_.ErrorText()));
      CloseAfterReply();
      in_.clear();
      in_start_ = 0;
      break;
    }
    in_start_ += consumed;
    if (args_.empty()) continue;
    if (looked_ahead > 0) {
      looked_ahead--;  // this command's keys were asked for already
    } else {
      looked_ahead = PrefetchPipeline(buf.substr(consumed));
    }
    Dispatch(CmdArgs(args_.data(), args_.size()));
    if (!authenticated_ && unsent_output() > kUnauthMaxUnsentOutput) {
      CloseUnauthenticated();
      break;
    }
    // OverOutputLimit, spelt out: below the floor (nearly always) nothing else is looked at.
    if (unsent_output() + done_slot_bytes_ >= kOutputLimitFloor) [[unlikely]] {
      if (OverOutputLimitSlow()) {  // no more commands for a client that does not read replies
        CloseForOutputLimit();
        break;
      }
      if (unsent_output() + done_slot_bytes_ >= kMaxUnsentBeforeRunning) {
        input_held_ = true;  // until the kernel has taken enough (ResumeHeldInput)
        break;
      }
      if (reactor_->client_mem_check_due()) {
        // maxmemory-clients: replies took the server over (NoteClientGrowth, just now in
        // OverOutputLimitSlow); the biggest clients go now, this one perhaps, before it runs
        // anything more.
        reactor_->CheckClientMemory();
        if (closing_) break;
      }
    } else {
      output_limit_.Clear();
    }
  }
  reactor_->EndTiming(this);
  throttled_ = in_start_ < in_.size() && ThrottledByOutputLimit();
  if (input_held_) [[unlikely]]
    KilledForQueryLimit(in_.size() - in_start_);  // what it sends while held is kept until then
  SendRelay(/*run_here=*/true);  // the commands gathered from this input go in one relay
  if (in_start_ == in_.size()) {
    in_.clear();
    in_start_ = 0;
    if (in_.capacity() > (4 << 20)) std::string().swap(in_);
  } else if (in_start_ > 0 && (in_start_ >= 65536 || in_start_ * 2 >= in_.size())) {
    in_.erase(0, in_start_);
    in_start_ = 0;
  }
  processing_ = false;
  AfterOutput();
}

void Connection::AfterOutput() {
  if (!out_.empty() || close_after_reply_) reactor_->MarkForFlush(this);
}

void Connection::ReplyError(std::string_view msg) {
  reactor_->stats().total_error_replies++;
  std::string* target = ReplyTarget();
  protocol::ReplyBuilder rb(target, resp_);
  rb.Error(msg);
  if (target != &out_) CompleteSlot(pending_base_ + pending_.size() - 1, std::move(*target));
}

std::string* Connection::ReplyTarget() {
  if (pending_.empty()) return &out_;
  ReserveSlot();
  return &pending_.back().data;
}

uint64_t Connection::ReserveSlot() {
  // A reply of its own after a relay's: the relay, whose one slot holds the replies of all its
  // commands, takes no more (the commands after this one wait for it).
  if (relay_) SendRelay();
  pending_.emplace_back();
  WaitForRelayHome();
  return pending_base_ + pending_.size() - 1;
}

void Connection::CompleteSlot(uint64_t seq, std::string data, bool from_shards) {
  Slot& s = pending_[seq - pending_base_];
  s.data = std::move(data);
  s.done = true;
  s.from_shards = from_shards;
  done_slot_bytes_ += s.data.size();
  Journal* j = reactor_->journal();
  if (j && !from_shards) s.hold = j->TurnBatch();  // what ran this turn is in this turn's batch
  EmitDoneSlots();
}

void Connection::CompleteSlotFrom(uint64_t seq, std::string_view data, bool from_shards) {
  if (seq != pending_base_) {  // waits behind an earlier slot: kept until that one is done
    CompleteSlot(seq, std::string(data), from_shards);
    return;
  }
  Journal* j = reactor_->journal();
  EmitSlot(data, j && !from_shards ? j->TurnBatch() : 0, pending_.front().discard, from_shards);
  pending_.pop_front();
  pending_base_++;
  EmitDoneSlots();
}

void Connection::EmitDoneSlots() {
  while (!pending_.empty() && pending_.front().done) {
    Slot& front = pending_.front();
    done_slot_bytes_ -= front.data.size();
    EmitSlot(front.data, front.hold, front.discard, front.from_shards);
    pending_.pop_front();
    pending_base_++;
  }
  AfterOutput();
}

void Connection::HoldOutputSoFar() {
  Journal* j = reactor_->journal();
  const size_t marked = hold_marks_.empty() ? 0 : hold_marks_.back().first;
  if (out_.size() <= marked || out_.size() == unheld_end_) return;
  const uint64_t batch = j->TurnBatch();
  if (batch > j->durable_batch()) hold_marks_.emplace_back(out_.size(), batch);
}

bool Connection::NothingWaitsForJournal() const {
  const Journal* j = reactor_->journal();
  return out_.empty() && hold_marks_.empty() && pending_.size() == 1 && !quiet_ &&
         quiet_batch_ <= j->durable_batch();
}

void Connection::EmitSlot(std::string_view data, uint64_t hold, bool discard, bool from_shards) {
  if (discard) {  // CLIENT REPLY OFF/SKIP: neither sent nor held
    quiet_batch_ = std::max(quiet_batch_, hold);
    return;
  }
  Journal* j = reactor_->journal();
  if (j && from_shards) {
    HoldOutputSoFar();
    out_.append(data);
    unheld_end_ = out_.size();
    return;
  }
  std::string failed;
  if (j && hold && hold > j->durable_batch() && hold <= j->failed_batch()) {
    // Its batch could not be written while it waited behind earlier slots: an error, not OK.
    failed = FailHeldReplies(data, errors::AofWriteError(j->error() ? j->error() : EIO));
    data = failed;
    hold = 0;
  }
  out_.append(data);
  if (hold && hold > j->durable_batch()) {
    // Held until its batch is written, as FlushConnections holds output of this turn (marks
    // out of batch order only hold longer).
    if (!hold_marks_.empty() && hold_marks_.back().second == hold) {
      hold_marks_.back().first = out_.size();
    } else {
      hold_marks_.emplace_back(out_.size(), hold);
    }
  }
}

void Connection::Dispatch(CmdArgs args) {
  if ((reply_off_ || skip_next_) && !quiet_) [[unlikely]] {
    DispatchQuietly(args);
    return;
  }
  last_interaction_ms_ = reactor_->now_ms();
  const CommandSpec* spec = LookUp(args[0]);
  // What CLIENT LIST shows as cmd=: the looked-up spec, never the client's bytes.
  last_cmd_ = spec;
  if (spec && !spec->subcommands.empty() && args.size() > 1) {
    last_cmd_ = CommandTable::FindSubcommand(*spec, args[1]);
  }
  if (!spec) {
    if (in_multi_) multi_error_ = true;
    ReplyError(errors::UnknownCommand(args[0], args.data() + 1, args.size() - 1));
    return;
  }
  reactor_->BeginCall(spec);  // a command that is not fast is timed alone
  CommandStats& cs = reactor_->stats().commands[CommandTable::StatsSlot(spec, args)];
  if (!spec->ArityOk(args.size())) {
    cs.rejected_calls++;
    Reject(spec, errors::WrongArity(spec->name));
    return;
  }
  if (!spec->subcommands.empty() && args.size() > 1 &&
      (!last_cmd_ || !last_cmd_->ArityOk(args.size()))) [[unlikely]] {
    // A subcommand that does not exist or has the wrong arity, refused as an unknown command is.
    cs.rejected_calls++;
    Reject(spec, last_cmd_ ? errors::WrongArity(last_cmd_->name)
                           : errors::UnknownSubcommand(args[1], AsciiUpper(spec->name)));
    return;
  }
  if (!authenticated_ && !(spec->flags & kNoAuth)) {
    cs.rejected_calls++;
    Reject(spec, errors::kNoAuth);
    return;
  }
  // ACL: one flag test for a user who may run everything (the default user, +@all ~* &*); the
  // check itself is out of line, so that it costs such a user nothing more.
  if (!user_->unrestricted() && AclRefuses(spec, args, cs)) [[unlikely]] {
    return;
  }
  if ((spec->flags & kMayCreate) && reactor_->config().restart_delay_ms > 0) {
    // --restart-delay: a call that could take a lock is refused while it runs. Before queueing,
    // as Redis rejects a denyoom command under OOM: inside MULTI, EXEC then aborts.
    if (auto refusal = RestartDelayRefusal(reactor_->server().restart_delay(), *spec, args,
                                           reactor_->now_ms())) {
      cs.rejected_calls++;
      Reject(spec, *refusal);
      return;
    }
  }
  if (MemoryLimit::Over() && !reactor_->EvictForMemory()) [[unlikely]] {
    // Over maxmemory, after eviction (volatile-ttl) from this reactor's shard, if any, as Redis
    // evicts before every command: as Redis, refuse what may grow the data, and queueing inside
    // MULTI; reads, deletes and releases run.
    const bool is_exec = in_multi_ && spec->name == "exec";
    bool exec_denyoom = false;
    if (is_exec) {
      for (const QueuedCommand& q : queued_) {
        exec_denyoom = exec_denyoom || (q.spec->flags & kDenyOom);
      }
    }
    if (auto refusal = OomRefusal(*spec, in_multi_, exec_denyoom)) {
      cs.rejected_calls++;
      if (is_exec) {
        ResetTransactionState();  // Redis's execCommandAbort
        ReplyError(errors::ExecAbortBecause(*refusal));
        return;
      }
      if (in_multi_) multi_error_ = true;
      ReplyError(*refusal);
      return;
    }
  }
  if (int err = reactor_->server().journal_health().Error(); err != 0) {
    // The journal cannot be written (disk full, EPERM, EIO): as Redis, refuse writes (and PING,
    // and an EXEC that would write) with MISCONF until a journal write succeeds again.
    const bool is_exec = in_multi_ && spec->name == "exec";
    bool exec_writes = false;
    if (is_exec) {
      for (const QueuedCommand& q : queued_) exec_writes = exec_writes || (q.spec->flags & kWrite);
    }
    if (auto refusal = JournalRefusal(reactor_->server().journal_health(), *spec, exec_writes)) {
      cs.rejected_calls++;
      if (is_exec) {
        ResetTransactionState();  // Redis's execCommandAbort
        ReplyError(errors::ExecAbortBecause(*refusal));
        return;
      }
      if (in_multi_ && !(spec->flags & kNoQueue)) multi_error_ = true;
      ReplyError(*refusal);
      return;
    }
  }
  if (reactor_->serving_busy()) [[unlikely]] {
    if (BusyRefuses(spec, args)) return;  // a Lua script here is past busy-reply-threshold
  }
  if (pubsub_ && PubSubFilter(spec, args)) return;  // pub/sub: subscribed-mode rules
  if (reactor_->pause_end_ms() != 0 && PauseHolds(spec)) [[unlikely]] {
    PauseHold(spec, args);  // before MULTI's queue, as Redis: a queued write waits too
    return;
  }
  if (in_multi_ && !(spec->flags & kNoQueue)) {
    if (spec->flags & kNoMulti) [[unlikely]] {
      cs.rejected_calls++;
      Reject(spec, errors::kNotInMulti);  // EXEC then aborts
      return;
    }
    if (ScriptBusy::Get().any() && NeedsBusyShard(spec, args, kSpansShards)) [[unlikely]] {
      cs.rejected_calls++;  // refused when queued, as Redis: EXEC then aborts
      Reject(spec, ScriptBusy::Get().busy_error());
      return;
    }
    Queue(spec, args);
  } else {
    Execute(spec, args);
  }
  // MONITOR sees what ran (after it ran: SELECT shows its new database), but not admin commands
  // (CONFIG, SLOWLOG, DEBUG, ...), as Redis. The arguments still point into the input buffer.
  if (reactor_->feed_monitors() && !(spec->flags & kAdmin)) [[unlikely]] {
    reactor_->FeedMonitors(*this, args);
  }
}

bool Connection::AclRefuses(const CommandSpec* spec, CmdArgs args, CommandStats& cs) {
  auto denial = acl::Check(*user_, *spec, last_cmd_ ? *last_cmd_ : *spec, args);
  if (!denial) return false;
  cs.rejected_calls++;
  reactor_->stats().acl_access_denied[denial->reason]++;
  LogAclDenial(acl::DenialReason(*denial), denial->object, user_->name(),
               in_multi_ ? "multi" : "toplevel");
  Reject(spec, acl::DenialError(*denial));
  return true;
}

void Connection::Reject(const CommandSpec* spec, std::string_view error) {
  if (spec->name == "exec") {  // Redis's execCommandAbort, inside MULTI or not
    ResetTransactionState();
    ReplyError(errors::ExecAbortBecause(error));
    return;
  }
  if (in_multi_) multi_error_ = true;
  ReplyError(error);
}

bool Connection::AclRefusesAtExec(const CommandSpec* spec, CmdArgs args, std::string* replies,
                                  int resp) {
  const CommandSpec* sub = spec;
  if (!spec->subcommands.empty() && args.size() > 1) {
    if (const CommandSpec* s = CommandTable::FindSubcommand(*spec, args[1])) sub = s;
  }
  auto denial = acl::Check(*user_, *spec, *sub, args);
  if (!denial) return false;
  reactor_->stats().acl_access_denied[denial->reason]++;
  LogAclDenial(acl::DenialReason(*denial), denial->object, user_->name(), "multi");
  protocol::ReplyBuilder rb(replies, resp);
  rb.Error(acl::DenialAtExec(*denial));
  return true;
}

std::string_view Connection::last_command() const {
  return last_cmd_ ? std::string_view(last_cmd_->name) : std::string_view("NULL");
}

int Connection::KeyShard(const CommandSpec* spec, CmdArgs args) const {
  const Server& server = reactor_->server();
  int shard = -1;
  spec->ForEachKey(args, [&](int i) {
    if (shard == kSpansShards) return;
    int s = server.ShardOf(args[i]);
    if (shard == -1) {
      shard = s;
    } else if (s != shard) {
      shard = kSpansShards;
    }
  });
  return shard;
}

bool Connection::NeedsBusyShard(const CommandSpec* spec, CmdArgs args, int shard) const {
  const ScriptBusy& busy = ScriptBusy::Get();
  if (shard != kSpansShards) return shard != reactor_->id() && busy.busy(shard);
  if (!spec->has_keys()) return false;
  const Server& server = reactor_->server();
  bool needs = false;
  spec->ForEachKey(args, [&](int i) { needs = needs || busy.busy(server.ShardOf(args[i])); });
  return needs;
}

void Connection::Execute(const CommandSpec* spec, CmdArgs args) {
  // Where it runs: the one shard owning its keys, or (conn_handler) here.
  int shard = kSpansShards;
  if (spec->shard_handler) {
    // With one shard every key is this reactor's (KeyShard would say 0, or -1 for none).
    shard = spec->has_keys() && !reactor_->server().single_shard() ? KeyShard(spec, args) : -1;
    if (shard >= 0) NotePlace(shard);
    if (shard == -1) shard = reactor_->id();
    if (shard == kSpansShards && !spec->conn_handler) {
      ReplyError(errors::kCrossShard);
      return;
    }
  }
  if (ScriptBusy::Get().any() && NeedsBusyShard(spec, args, shard)) {
    // A Lua script has run past busy-reply-threshold on a shard this command needs: BUSY, as
    // Redis answers while a script runs (server/cmdtable/script_busy.h).
    reactor_->stats().commands[CommandTable::StatsSlot(spec, args)].rejected_calls++;
    ReplyError(ScriptBusy::Get().busy_error());
    return;
  }
  const bool on_shard = shard != kSpansShards;
  const bool blocking = on_shard && spec->blocks && spec->blocks(args);  // LOCK.ACQUIRE ... WAIT
  const bool key_order = reactor_->config().pipeline_order == Config::PipelineOrder::kKey;
  // --pipeline-order sent: a relay being gathered takes every single-shard command after it
  // (relay.cc); anything else waits for it.
  if (relay_) {
    if (on_shard && !blocking && !RelayFull()) {
      if (tracking_) [[unlikely]] {
        DecideTracking(spec);
      }
      reactor_->stats().commands_processed++;
      RelayAdd(spec, args, shard);
      return;
    }
    SendRelay();
  }
  // Effects happen in the order the client sent its commands (sent): what is in flight goes to
  // one shard at a time (that shard's queue keeps them in order), as one relay or one blocking
  // call; a command for another shard waits until they are done. With --pipeline-order key,
  // commands for any shards may be in flight at once (each shard's queue keeps the order of a
  // key's commands); a blocking command waits. In both, every command that runs here rather
  // than on one shard (fan-outs, MULTI/EXEC, WATCH, SELECT, WAITAOF, PUBLISH, CLIENT, CONFIG,
  // scripts across shards, ...) is a barrier: it runs once everything before it has.
  if (inflight_ > 0) {
    bool wait;
    if (!on_shard) {
      wait = true;
    } else if (key_order) {
      wait = blocking;
    } else {
      wait = shard != inflight_shard_;
    }
    if (wait) {
      Defer(spec, args);
      return;
    }
  }
  if (tracking_) [[unlikely]] {
    DecideTracking(spec);
  }
  reactor_->stats().commands_processed++;
  if (on_shard) {
    const bool local_busy = key_order ? inflight_local_ > 0 : inflight_ > 0;
    if (shard != reactor_->id() || local_busy ||
        (!reactor_->locks().idle() && KeysBlocked(spec, args, db_index_, reactor_->locks()))) {
      // To the owner, or behind a lock (or earlier work) here.
      if (blocking) {
        ForwardBlocking(spec, args, shard);
      } else if (key_order || quiet_) {
        Forward(spec, args, shard);  // quiet: a slot of its own, whose reply is dropped
      } else {
        RelayAdd(spec, args, shard);  // sent when the input read so far has been gathered
      }
      return;
    }
    CommandStats& cs = reactor_->stats().commands[CommandTable::StatsSlot(spec, args)];
    cs.calls++;
    if (blocking) {
      RunBlockingHere(spec, args);
      reactor_->EndCall(cs, spec, args, this);
      return;
    }
    bool slotted = !pending_.empty();
    uint64_t seq = 0;
    if (slotted) {
      seq = ReserveSlot();
      rb_.set_out(&pending_.back().data);
    } else {
      rb_.set_out(&out_);
    }
    rb_.set_resp(resp_);
    ShardCtx ctx{reactor_->shard(), reactor_->shard().db(db_index_), db_index_,
                 reactor_->now_ms(), reactor_->config(), rb_};
    ctx.acl_user = AclUserHere();
    ctx.track = cur_track_;
    RunShardHandler(spec, args, ctx);
    reactor_->EndCall(cs, spec, args, this);
    if (slotted) CompleteSlot(seq, std::move(pending_[seq - pending_base_].data));
    return;
  }
  CommandStats& cs = reactor_->stats().commands[CommandTable::StatsSlot(spec, args)];
  cs.calls++;
  bool slotted = !pending_.empty();
  uint64_t seq = 0;
  if (slotted) {
    seq = ReserveSlot();
    rb_.set_out(&pending_.back().data);
  } else {
    rb_.set_out(&out_);
  }
  rb_.set_resp(resp_);
  RunConnHandler(spec, args, rb_);
  reactor_->EndCall(cs, spec, args, this);
  if (slotted) CompleteSlot(seq, std::move(pending_[seq - pending_base_].data));
}

void Connection::Defer(const CommandSpec* spec, CmdArgs args) {
  WaitForRelayHome();
  deferred_spec_ = spec;
  deferred_args_ = std::make_unique<OwnedArgs>(args);
  deferred_quiet_ = quiet_;
  paused_ = true;
}

void Connection::OnForwardDone() {
  --inflight_;
  if (throttled_ && !ThrottledByOutputLimit() && inflight_reads_ <= kMaxInflightReads / 2 &&
      !deferred_spec_ && !paused_ && !closing_ && !input_held_) {
    throttled_ = false;
    ProcessInput();  // input left unread while too much was out (ThrottledByOutputLimit)
  }
  if (inflight_ > 0 || !deferred_spec_ || pause_held_) return;
  RunDeferred();
}

void Connection::RunDeferred() {
  const CommandSpec* spec = deferred_spec_;
  std::unique_ptr<OwnedArgs> owned = std::move(deferred_args_);
  deferred_spec_ = nullptr;
  paused_ = false;
  std::vector<std::string_view> views = owned->Views();
  reactor_->StartTiming();
  // A command held by CLIENT PAUSE inside MULTI is queued now.
  auto run = [&] {
    CmdArgs a(views.data(), views.size());
    if (reactor_->pause_end_ms() != 0 && PauseHolds(spec)) {
      PauseHold(spec, a);  // deferred for other reasons, runnable now, but a pause began
    } else if (in_multi_ && !(spec->flags & kNoQueue)) {
      Queue(spec, a);
    } else {
      Execute(spec, a);
    }
  };
  if (deferred_quiet_) {
    deferred_quiet_ = false;
    RunQuietly(run);
  } else {
    run();
  }
  reactor_->EndTiming(this);
  if (!paused_ && !closing_) ProcessInput();
  SendRelay();  // the deferred command may have started one (ProcessInput sends its own)
}

template <typename F>
void Connection::RunQuietly(F&& fn) {
  SendRelay();  // an open relay's one slot holds earlier commands' replies
  const bool direct = pending_.empty();
  const size_t out_mark = out_.size();
  const uint64_t first_seq = pending_base_ + pending_.size();
  const bool was_quiet = quiet_;
  quiet_ = true;
  reply_on_now_ = false;
  fn();
  quiet_ = was_quiet;
  SendRelay();
  if (Journal* j = reactor_->journal()) quiet_batch_ = std::max(quiet_batch_, j->TurnBatch());
  if (reply_on_now_) return;  // CLIENT REPLY ON: its OK goes out
  if (direct && out_.size() > out_mark) {
    out_.resize(out_mark);
    if (unheld_end_ != std::string::npos && unheld_end_ > out_mark) unheld_end_ = std::string::npos;
    for (auto& mark : hold_marks_) mark.first = std::min(mark.first, out_mark);
  }
  for (uint64_t seq = std::max(first_seq, pending_base_); seq < pending_base_ + pending_.size();
       seq++) {
    pending_[seq - pending_base_].discard = true;
  }
}

void Connection::DispatchQuietly(CmdArgs args) {
  skip_next_ = false;  // SKIP covers this one command
  RunQuietly([&] { Dispatch(args); });
}

void Connection::RunConnHandler(const CommandSpec* spec, CmdArgs args,
                                protocol::ReplyBuilder& rb) {
  cur_spec_ = spec;
  cur_args_ = args;
  spec->conn_handler(args, *this, rb);
  cur_spec_ = nullptr;
  cur_args_ = {};
}

void Connection::Forward(const CommandSpec* spec, CmdArgs args, int shard,
                         std::shared_ptr<BlockState> block) {
  uint64_t seq = ReserveSlot();
  Ref();
  inflight_++;
  inflight_shard_ = shard;
  if (shard == reactor_->id() && !block) inflight_local_++;
  if ((spec->flags & kReadOnly) && !block) inflight_reads_++;
  RemoteCommand cmd{spec,
                    std::make_unique<OwnedArgs>(args),
                    reactor_->id(),
                    db_index_,
                    resp_,
                    this,
                    seq,
                    id_,
                    std::move(block),
                    /*resumed=*/false,
                    /*acl_user=*/user_->unrestricted() ? nullptr : AclSnapshot(),
                    cur_track_};
  reactor_->Send(shard, std::move(cmd));
}

// --- blocking commands ---
//
// A call that may wait in the server (LOCK.ACQUIRE ... WAIT) hands its shard handler a reply
// slot it can keep open (ConnBlockedReply). On another shard the call travels as a message and
// the connection pauses at once (its later commands would otherwise reach that shard behind it
// and run while it waits). On this reactor's shard it runs inline and the connection pauses only
// if the handler keeps the reply. While paused, the connection's later commands, pipelined or
// not, wait, as with a blocked client in Redis. The shard marks the shared BlockState `waiting`
// while the call sits in a queue (CLIENT LIST's flag b). Closing the connection sets its
// `cancelled` flag and sends a cancel to the shard, so the waiter leaves the queue at once; the
// shard still finishes the reply, which is what releases this connection's reference.

void Connection::RunBlockingHere(const CommandSpec* spec, CmdArgs args) {
  const uint64_t seq = ReserveSlot();
  auto state = std::make_shared<BlockState>();
  std::unique_ptr<BlockedReply> pending = std::make_unique<ConnBlockedReply>(
      reactor_->id(), this, seq, resp_, id_, state);
  std::string reply;
  protocol::ReplyBuilder rb(&reply, resp_);
  ShardCtx ctx{reactor_->shard(), reactor_->shard().db(db_index_), db_index_,
               reactor_->now_ms(), reactor_->config(), rb, &pending};
  ctx.track = cur_track_;
  RunShardHandler(spec, args, ctx);
  if (pending) {  // answered now
    CompleteSlot(seq, std::move(reply));
    return;
  }
  // Waiting: as if forwarded to this shard (EndBlock undoes all of it).
  Ref();
  inflight_++;
  inflight_shard_ = reactor_->id();
  state->waiting.store(true, std::memory_order_relaxed);
  StartBlock(std::move(state), {reactor_->id()});
}

std::unique_ptr<BlockedReply> Connection::BlockAcross(std::vector<int> shards) {
  const uint64_t seq = ReserveSlot();
  auto state = std::make_shared<BlockState>();
  state->waiting.store(true, std::memory_order_relaxed);
  // Closed while the attempt was out (OnClose found no block to cancel): the shards see the
  // flag and finish the reply at once instead of queueing it.
  if (closing_) state->cancelled.store(true, std::memory_order_relaxed);
  auto reply = std::make_unique<ConnBlockedReply>(reactor_->id(), this, seq, resp_, id_, state);
  // As a forwarded blocking call (EndBlock undoes all of it), to no single shard.
  Ref();
  inflight_++;
  inflight_shard_ = kRelayShard;
  StartBlock(std::move(state), std::move(shards));
  return reply;
}

absl::AnyInvocable<void(std::string)> Connection::ReplyLater() {
  const uint64_t seq = ReserveSlot();
  Ref();
  paused_ = true;
  return [this, seq](std::string reply) {
    paused_ = false;
    CompleteSlot(seq, std::move(reply));
    if (!closing_) ProcessInput();  // the commands that came in meanwhile
    Unref();
  };
}

void Connection::ForwardBlocking(const CommandSpec* spec, CmdArgs args, int shard) {
  StartBlock(std::make_shared<BlockState>(), {shard});
  Forward(spec, args, shard, block_state_);
}

void Connection::StartBlock(std::shared_ptr<BlockState> state, std::vector<int> shards) {
  block_state_ = std::move(state);
  block_shards_ = std::move(shards);
  paused_ = true;
  if (input_ended_) reactor_->MarkForFlush(this);  // closed there, as Redis frees it
}

void Connection::EndBlock(uint64_t seq, std::string reply, int shard,
                          absl::AnyInvocable<void()> undo) {
  // Granted to a client that has gone (its reply would go nowhere): give it back.
  if (closing_ && undo) reactor_->Send(shard, std::move(undo));
  block_state_.reset();
  block_shards_.clear();
  paused_ = false;
  CompleteSlot(seq, std::move(reply));
  OnForwardDone();
  if (!paused_ && !closing_) ProcessInput();  // the commands that came in meanwhile
  Unref();
}

bool Connection::Unblock(std::string_view error) {
  if (!blocked()) return false;
  const uint64_t id = id_;
  for (int s : block_shards_) {
    reactor_->Send(
        s, [id, e = std::string(error)] { Reactor::Current()->lock_waiters().Unblock(id, e); });
  }
  return true;
}

void Connection::CancelBlock() {
  if (!block_state_) return;
  block_state_->cancelled.store(true, std::memory_order_relaxed);
  uint64_t id = id_;
  for (int s : block_shards_) {
    reactor_->Send(s, [id] { Reactor::Current()->lock_waiters().Cancel(id); });
  }
}

}  // namespace deadbolt::server
