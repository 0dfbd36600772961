// MULTI, EXEC, DISCARD, WATCH and UNWATCH on a connection, and FanOut: a command run across
// shards under the same kind of key locks.
//
// EXEC runs as one Transaction: it locks every key its queued commands name (and its watched
// keys) on every shard concerned, shard by shard in ascending order, then checks the watches,
// then runs the commands in order — inline for this reactor's shard, one hop each for others —
// and releases the locks. No other client sees it half done. When every key lives on this
// reactor's shard the whole EXEC runs inline, with no message at all.

#include <algorithm>

#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/base/str_util.h"
#include "server/cmdtable/journal_health.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/txn/lock_table.h"
#include "server/txn/watch_table.h"

namespace deadbolt::server {

void Connection::Multi(protocol::ReplyBuilder& rb) {
  if (in_multi_) {
    rb.Error(errors::kMultiNested);
    return;
  }
  in_multi_ = true;
  multi_error_ = false;
  multi_db_ = db_index_;
  queued_bytes_ = 0;
  rb.Ok();
}

void Connection::Queue(const CommandSpec* spec, CmdArgs args) {
  auto owned = std::make_unique<OwnedArgs>(args);
  // A queue is client-controlled memory: it counts against the query buffer limit.
  queued_bytes_ += owned->bytes.size() + owned->lens.size() * sizeof(size_t) + 64;
  if (static_cast<int64_t>(queued_bytes_) > reactor_->config().client_query_buffer_limit) {
    LogWarning("closing client %s whose MULTI queue reached the query buffer limit",
               peer_.c_str());
    Kill();
    return;
  }
  queued_.push_back(QueuedCommand{spec, std::move(owned), multi_db_});
  // SELECT inside MULTI changes the database of the commands queued after it.
  if (spec->name == "select") {
    int64_t db;
    if (ParseNumber(args[1], &db) && db >= 0 && db < reactor_->config().databases) {
      multi_db_ = static_cast<int>(db);
    }
  }
  std::string* target = ReplyTarget();
  protocol::ReplyBuilder rb(target, resp_);
  rb.SimpleString("QUEUED");
  if (target != &out_) CompleteSlot(pending_base_ + pending_.size() - 1, std::move(*target));
}

void Connection::Discard(protocol::ReplyBuilder& rb) {
  if (!in_multi_) {
    rb.Error(errors::kDiscardWithoutMulti);
    return;
  }
  in_multi_ = false;
  multi_error_ = false;
  queued_.clear();
  Unwatch();
  rb.Ok();
}

void Connection::ResetTransactionState() {
  in_multi_ = false;
  multi_error_ = false;
  queued_.clear();
  Unwatch();
}

void Connection::Watch(CmdArgs args, protocol::ReplyBuilder& rb) {
  if (in_multi_) {
    rb.Error(errors::kWatchInMulti);
    return;
  }
  if (!watch_flag_) watch_flag_ = std::make_shared<WatchFlag>();
  const Server& server = reactor_->server();
  auto keys = std::make_shared<std::vector<Watched>>();
  std::vector<int> shards;
  for (size_t i = 1; i < args.size(); i++) {
    Watched w{server.ShardOf(args[i]), db_index_, std::string(args[i])};
    if (std::find(shards.begin(), shards.end(), w.shard) == shards.end()) {
      shards.push_back(w.shard);
    }
    keys->push_back(w);
    watched_.push_back(std::move(w));
  }
  // Registered on each shard before the reply, so a change made after the client saw OK is
  // always caught. Touching the key first drops it if it has already expired: a key that was
  // gone when watched does not count as changed.
  auto flag = watch_flag_;
  FanOut(
      shards,
      [keys, flag](ShardCtx& ctx) {
        Reactor* r = Reactor::Current();
        for (const Watched& w : *keys) {
          if (w.shard != r->id()) continue;
          ctx.shard.db(w.db).Exists(w.key, ctx.now_ms);
          r->watches().Add(w.db, w.key, flag);
        }
      },
      [](protocol::ReplyBuilder& rb) { rb.Ok(); });
}

void Connection::Unwatch() {
  if (watched_.empty()) {
    watch_flag_.reset();
    return;
  }
  std::shared_ptr<WatchFlag> flag = std::move(watch_flag_);
  for (Watched& w : watched_) {
    if (w.shard == reactor_->id()) {
      reactor_->watches().Remove(w.db, w.key, flag.get());
    } else {
      reactor_->Send(w.shard, [w = std::move(w), flag] {
        Reactor::Current()->watches().Remove(w.db, w.key, flag.get());
      });
    }
  }
  watched_.clear();
}

void Connection::OnClose() {
  if (paused_relay_) DropPausedRelay();  // the rest of its commands are input never run
  CancelBlock();  // a waiting LOCK.ACQUIRE leaves its queue
  FanOutsClientGone();  // a read waiting for its locks is not worth finishing
  Unwatch();
  queued_.clear();
  PubSubTeardown();
  set_monitor(false);
  // BCAST prefixes live on every shard; keys remembered for it are dropped as they fire.
  if (tracking_ && tracking_->prefixes_sent) ForgetTrackingPrefixes(*reactor_, id_);
}

void Connection::Exec(protocol::ReplyBuilder& rb) {
  if (!in_multi_) {
    rb.Error(errors::kExecWithoutMulti);
    return;
  }
  in_multi_ = false;
  if (multi_error_) {
    multi_error_ = false;
    queued_.clear();
    Unwatch();
    rb.Error(errors::kExecAbort);
    return;
  }
  // The lock plan: every key of every queued command, the whole keyspace of every shard for a
  // keyspace-wide command (KEYS, FLUSHALL, ...), and the watched keys.
  const Server& server = reactor_->server();
  std::vector<Transaction::Part> parts;
  for (const QueuedCommand& q : queued_) {
    std::vector<std::string_view> views = q.args->Views();
    CmdArgs a(views.data(), views.size());
    if (q.spec->has_keys()) {
      q.spec->ForEachKey(a, [&](int i) {
        parts.push_back(Transaction::Part{server.ShardOf(a[i]), {LockTable::Name(q.db, a[i])}});
      });
    } else if (q.spec->flags & (kWrite | kReadOnly)) {
      for (int s = 0; s < server.num_shards(); s++) parts.push_back(Transaction::Part{s, {}, true});
    }
  }
  for (const Watched& w : watched_) {
    parts.push_back(Transaction::Part{w.shard, {LockTable::Name(w.db, w.key)}});
  }
  auto st = std::make_unique<ExecState>();
  st->cmds = std::move(queued_);
  queued_.clear();
  st->resp = resp_;
  st->track = cur_track_;
  st->tx = std::make_unique<Transaction>(reactor_, std::move(parts));
  bool writes = false;
  for (const QueuedCommand& q : st->cmds) writes = writes || (q.spec->flags & kWrite);
  st->tx->set_writes(writes);
  st->seq = ReserveSlot();
  Ref();
  exec_ = std::move(st);
  paused_ = true;  // later commands of this connection wait until EXEC has replied
  exec_->tx->Lock([this] { ExecCheckWatches(); });
}

void Connection::ExecCheckWatches() {
  if (watched_.empty()) {
    ExecNext();
    return;
  }
  // Under the locks, touch every watched key so one that expired since WATCH is dropped (and
  // flags the watch), then read the flag.
  auto keys = std::make_shared<std::vector<Watched>>(watched_);
  std::vector<int> shards;
  for (const Watched& w : watched_) {
    if (std::find(shards.begin(), shards.end(), w.shard) == shards.end()) {
      shards.push_back(w.shard);
    }
  }
  exec_->tx->Hop(
      shards,
      [keys](Reactor& r) {
        for (const Watched& w : *keys) {
          if (w.shard == r.id()) r.shard().db(w.db).Exists(w.key, r.now_ms());
        }
      },
      [this] {
        if (watch_flag_ && watch_flag_->dirty.load(std::memory_order_relaxed)) {
          ExecFinish(true);
        } else {
          ExecNext();
        }
      });
}

void Connection::ExecNext() {
  ExecState& st = *exec_;
  if (st.in_loop) {
    st.resumed = true;
    return;
  }
  st.in_loop = true;
  while (st.next < st.cmds.size()) {
    QueuedCommand& q = st.cmds[st.next++];
    std::vector<std::string_view> views = q.args->Views();
    CmdArgs a(views.data(), views.size());
    // ACL again: another connection's ACL SETUSER may have taken a right away since MULTI.
    // A refused command is not run, nor counted (as Redis).
    if (!user_->unrestricted() && AclRefusesAtExec(q.spec, a, &st.replies, st.resp))
        [[unlikely]] {
      continue;
    }
    reactor_->stats().commands_processed++;
    if (q.spec->shard_handler) {
      int shard = q.spec->has_keys() ? KeyShard(q.spec, a) : -1;
      if (shard == -1) shard = reactor_->id();
      if (shard == kSpansShards && !q.spec->conn_handler) {
        protocol::ReplyBuilder rb(&st.replies, st.resp);
        rb.Error(errors::kCrossShard);
        continue;
      }
      if (shard != kSpansShards) {
        CommandStats& cs = reactor_->stats().commands[CommandTable::StatsSlot(q.spec, a)];
        cs.calls++;
        if (shard == reactor_->id()) {
          protocol::ReplyBuilder rb(&st.replies, st.resp);
          ShardCtx ctx{reactor_->shard(), reactor_->shard().db(q.db), q.db, reactor_->now_ms(),
                       reactor_->config(), rb};
          ctx.acl_user = AclUserHere();
          ctx.track = st.track;
          uint64_t prev = st.tx->EnterJournal(*reactor_);
          reactor_->StartTiming();
          RunShardHandler(q.spec, a, ctx);
          reactor_->EndCallAlone(cs, q.spec, a, this);
          st.tx->LeaveJournal(*reactor_, prev);
          continue;
        }
        // On another shard: one hop, under EXEC's locks (no lock check there).
        auto out = std::make_shared<std::string>();
        const CommandSpec* spec = q.spec;
        auto owned = std::make_shared<OwnedArgs>(a);
        int db = q.db, resp = st.resp;
        st.in_loop = false;
        std::shared_ptr<const acl::User> user = AclSnapshot();
        st.tx->Hop(
            {shard},
            [spec, owned, out, db, resp, user, track = st.track](Reactor& r) {
              std::vector<std::string_view> v = owned->Views();
              protocol::ReplyBuilder rb(out.get(), resp);
              ShardCtx ctx{r.shard(), r.shard().db(db), db, r.now_ms(), r.config(), rb};
              ctx.acl_user = user.get();
              ctx.track = track;
              RunShardHandler(spec, CmdArgs(v.data(), v.size()), ctx);
            },
            [this, out] {
              exec_->replies += *out;
              ExecNext();
            });
        return;
      }
    }
    // A connection or multi-shard command: runs here; it may fan out under EXEC's locks.
    reactor_->stats().commands[CommandTable::StatsSlot(q.spec, a)].calls++;
    db_index_ = q.db;
    st.async = false;
    st.resumed = false;
    std::string out;
    protocol::ReplyBuilder rb(&out, st.resp);
    exec_in_handler_ = true;
    cur_track_ = st.track;
    uint64_t prev = st.tx->EnterJournal(*reactor_);
    RunConnHandler(q.spec, a, rb);
    st.tx->LeaveJournal(*reactor_, prev);
    exec_in_handler_ = false;
    st.replies += out;
    if (st.async && !st.resumed) {
      st.in_loop = false;
      return;  // the fan-out calls ExecNext when it is done
    }
  }
  st.in_loop = false;
  ExecFinish(false);
}

void Connection::ExecFinish(bool aborted) {
  // The reply waits until every shard's part is in its journal (Transaction::Release); the
  // state lives until then.
  // The connection keeps owning it (a closure owning it would be a cycle through the
  // transaction, leaked if the server stops before the release completes).
  exec_releasing_ = std::move(exec_);
  exec_releasing_->tx->Release([this, aborted] {
    std::unique_ptr<ExecState> st = std::move(exec_releasing_);
    ExecReply(*st, aborted);
  });
}

void Connection::ExecReply(ExecState& s, bool aborted) {
  ExecState* st = &s;
  std::string data;
  protocol::ReplyBuilder rb(&data, st->resp);
  if (aborted) {
    rb.NullArray();
  } else {
    rb.ArrayHeader(st->cmds.size());
    data += st->replies;
  }
  // A participant's journal could not be written: the whole reply is an error.
  if (st->tx && !st->tx->failed_error().empty()) {
    data = FailHeldReplies(data, st->tx->failed_error());
  }
  Unwatch();
  paused_ = false;
  CompleteSlot(st->seq, std::move(data));
  Unref();
  // Commands that arrived while EXEC ran.
  if (!closing_) ProcessInput();
}

// --- FanOut ---

namespace {
thread_local std::string NullSink;  // fan-out work writes no reply of its own
}  // namespace

void Connection::FanOut(const std::vector<int>& shards, ShardFn per_shard,
                        absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish) {
  std::vector<ShardFn> phases;
  phases.push_back(std::move(per_shard));
  FanOutPhases(shards, std::move(phases), std::move(finish));
}

void Connection::FanOutPhases(const std::vector<int>& shards, std::vector<ShardFn> phases,
                              absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish) {
  FanOutPhasesOn(shards, std::move(phases), {}, std::move(finish));
}

void Connection::FanOutPhasesOn(const std::vector<int>& shards, std::vector<ShardFn> phases,
                                std::vector<int> on,
                                absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish) {
  std::vector<ChunkFn> whole;
  whole.reserve(phases.size());
  for (ShardFn& p : phases) {
    whole.push_back([p = std::move(p)](ShardCtx& ctx) {
      p(ctx);
      return false;
    });
  }
  FanOutChunked(shards, std::move(whole), std::move(finish), std::move(on));
}

// One fan-out in progress: its transaction, the phases left and where its reply goes.
struct Connection::FanOutRun {
  FanOutRun(Reactor* r, std::vector<Transaction::Part> parts) : tx(r, std::move(parts)) {}
  Transaction tx;
  std::vector<int> shards;
  std::vector<ChunkFn> phases;
  std::vector<int> on;  // per phase: the one shard it runs on, or -1 (or none): all of `shards`
  size_t next = 0;
  // Per shard (by index): the current phase has work left there. Written by each shard for
  // itself during a hop, read here after it; shared so that a shard never writes into a run
  // deleted under it.
  std::shared_ptr<std::vector<char>> more;
  absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish;
  int db = 0;
  int resp = 2;
  bool for_exec = false;  // the reply goes into EXEC's array, not a slot of its own
  bool pauses = false;    // the connection's later commands wait until this one is done
  // A read (no write, not in EXEC): if its client goes while it still waits for its locks, it
  // is dropped rather than run (Transaction::Abandon), since nobody can see its reply.
  bool droppable = false;
  uint64_t seq = 0;
  Connection* conn = nullptr;
  std::shared_ptr<const acl::User> acl_user;  // a restricted caller's, for scripts

  // Its client has gone (Connection::OnClose): a read still waiting for its locks stops waiting.
  void ClientGone() {
    if (!droppable) return;
    tx.Abandon([this] { Dropped(); });
  }

  void Dropped() {
    Connection* c = conn;
    std::erase(c->fan_outs_, this);
    uint64_t s = seq;
    delete this;
    c->CompleteSlot(s, std::string());
    c->paused_ = false;
    c->Unref();
  }

  void NextPhase() {
    if (next == phases.size()) {
      // The reply waits until every shard's part is in its journal (Transaction::Release).
      tx.Release([this] { Finish(); });
      return;
    }
    if (next < on.size() && on[next] >= 0) {
      RunPhaseOn({on[next]});
    } else {
      RunPhaseOn(shards);
    }
  }

  void RunPhaseOn(const std::vector<int>& on) {
    ChunkFn phase = phases[next];
    int d = db;
    std::shared_ptr<std::vector<char>> m = more;
    std::shared_ptr<const acl::User> user = acl_user;
    tx.Hop(
        on,
        [phase, d, m, user](Reactor& r) {
          protocol::ReplyBuilder sink(&NullSink, 2);
          ShardCtx ctx{r.shard(), r.shard().db(d), d, r.now_ms(), r.config(), sink};
          ctx.acl_user = user.get();
          (*m)[r.id()] = phase(ctx) ? 1 : 0;
          NullSink.clear();
        },
        [this, on] {
          std::vector<int> left;
          for (int s : on) {
            if ((*more)[s]) left.push_back(s);
          }
          if (!left.empty()) {
            // The same phase again where work is left, in the next loop turn: the reactors
            // serve other clients in between (a hop on this reactor alone would otherwise run
            // every chunk in one go).
            conn->reactor_->Yield([this, left = std::move(left)] { RunPhaseOn(left); });
            return;
          }
          next++;
          NextPhase();
        });
  }

  void Finish() {
    std::string data;
    protocol::ReplyBuilder rb(&data, resp);
    finish(rb);
    if (!tx.failed_error().empty()) data = FailHeldReplies(data, tx.failed_error());
    Connection* c = conn;
    std::erase(c->fan_outs_, this);
    if (for_exec) {
      delete this;
      c->exec_->replies += data;
      c->ExecNext();
    } else {
      uint64_t s = seq;
      bool paused = pauses;
      delete this;
      c->CompleteSlot(s, std::move(data));
      if (paused && !c->block_state_) {  // else its finish made it wait (BlockAcross)
        c->paused_ = false;
        if (!c->closing_) c->ProcessInput();  // commands that arrived meanwhile
      }
      c->Unref();
    }
  }
};

void Connection::FanOutsClientGone() {
  std::vector<FanOutRun*> runs = fan_outs_;  // a run may end (and leave the list) at once
  for (FanOutRun* run : runs) run->ClientGone();
}

void Connection::DropFanOuts() {
  for (FanOutRun* run : fan_outs_) delete run;
  fan_outs_.clear();
}

namespace {
std::vector<int> SortedUnique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}
}  // namespace

void Connection::FanOutChunked(const std::vector<int>& shards, std::vector<ChunkFn> phases,
                               absl::AnyInvocable<void(protocol::ReplyBuilder&)> finish,
                               std::vector<int> on) {
  if (cur_track_.client != 0) [[unlikely]] {
    TrackPhases(phases);
  }
  std::vector<Transaction::Part> parts;
  bool for_exec = exec_ && exec_in_handler_;
  bool few_keys = false;  // so few that one step of each phase does a shard's whole part
  // Inside EXEC the transaction's locks are already held. Otherwise a command that touches keys
  // (or the whole keyspace) locks what it touches on every shard it fans out to.
  if (!for_exec && cur_spec_ && (cur_spec_->flags & (kWrite | kReadOnly))) {
    size_t nkeys = 0;
    if (cur_spec_->has_keys()) cur_spec_->ForEachKey(cur_args_, [&](int) { nkeys++; });
    if (!cur_spec_->has_keys()) {
      for (int s : shards) parts.push_back(Transaction::Part{s, {}, true});
    } else if (nkeys > kMaxKeyLocks) {
      // So many keys that locking each would cost more than the command (a lock name and a
      // hash-table entry per key): lock the shards whole, as Redis runs any command alone.
      for (int s : shards) parts.push_back(Transaction::Part{s, {}, true});
    } else if (nkeys > 0) {
      few_keys = nkeys <= kOnePassKeys;
      // One part per shard, not per key.
      const Server& server = reactor_->server();
      std::vector<int> part_of(server.num_shards(), -1);
      cur_spec_->ForEachKey(cur_args_, [&](int i) {
        const int s = server.ShardOf(cur_args_[i]);
        if (part_of[s] < 0) {
          part_of[s] = static_cast<int>(parts.size());
          parts.push_back(Transaction::Part{s, {}});
        }
        parts[part_of[s]].names.push_back(LockTable::Name(db_index_, cur_args_[i]));
      });
    }
  }
  auto* run = new FanOutRun(reactor_, std::move(parts));
  // The journal tags a cross-shard write so that a crash cannot bring back part of it.
  if (for_exec) {
    run->tx.JournalAs(*exec_->tx);
  } else {
    run->tx.set_writes(cur_spec_ && (cur_spec_->flags & kWrite));
  }
  run->shards = shards;
  run->phases = std::move(phases);
  run->on = std::move(on);
  run->more = std::make_shared<std::vector<char>>(reactor_->server().num_shards(), 0);
  run->finish = std::move(finish);
  run->db = db_index_;
  run->resp = resp_;
  run->conn = this;
  run->acl_user = AclSnapshot();
  fan_outs_.push_back(run);
  run->for_exec = for_exec;
  run->droppable =
      !for_exec && cur_spec_ && (cur_spec_->flags & kReadOnly) && !(cur_spec_->flags & kWrite);
  if (for_exec) {
    exec_->async = true;
  } else {
    run->seq = ReserveSlot();
    Ref();
    // A locking fan-out takes its locks asynchronously, so a later command of this connection on
    // the same key could otherwise overtake it. The connection's next commands wait for it (at
    // most one transaction in flight per connection, as with EXEC).
    if (!run->tx.Shards().empty()) {
      run->pauses = true;
      paused_ = true;
    }
  }
  // A few keys, and either one phase or phases that each run on one shard (whole steps,
  // FanOutPhasesOn): lock, run, commit to the journal and release in one pass along the shards
  // (Transaction::LockRunPhases), with no stop at the coordinator in between, when the phases
  // fit that pass.
  std::vector<int> locked = run->tx.Shards();
  std::vector<int> on_each = run->on;
  if (run->phases.size() == 1 && on_each.empty()) on_each.push_back(-1);
  const bool each_on_one = on_each.size() == run->phases.size() &&
                           (run->phases.size() == 1 || std::all_of(on_each.begin(), on_each.end(),
                                                                   [](int s) { return s >= 0; }));
  if (!for_exec && each_on_one && !locked.empty() && locked == SortedUnique(run->shards) &&
      few_keys) {
    std::vector<ChunkFn> phases = run->phases;
    int d = db_index_;
    std::shared_ptr<const acl::User> user = run->acl_user;
    bool one_pass = run->tx.LockRunPhases(
        on_each,
        [phases = std::move(phases), d, user](Reactor& r, size_t k) {
          protocol::ReplyBuilder sink(&NullSink, 2);
          ShardCtx ctx{r.shard(), r.shard().db(d), d, r.now_ms(), r.config(), sink};
          ctx.acl_user = user.get();
          while (phases[k](ctx)) {
          }
          NullSink.clear();
        },
        [run] { run->Finish(); });
    if (one_pass) return;
  }
  run->tx.Lock([run] { run->NextPhase(); });
}

// --- placement: a connection moves to the reactor that owns its keys ---

void Connection::PlaceWindowDone() {
  const int own = reactor_->id();
  if (place_shard_ == own) {
    move_to_ = -1;  // its keys are here again: a move not yet made is off
  } else if (place_lead_ >= kPlaceLead && reactor_->config().move_connections && !tls_ &&
             reactor_->now_ms() - moved_ms_ >= kPlaceMinGapMs) {
    move_to_ = place_shard_;
  }
  place_shard_ = -1;
  place_lead_ = 0;
  place_seen_ = 0;
}

bool Connection::Movable() const {
  return !closing_ && refs_ == 0 && inflight_ == 0 && pending_.empty() && !relay_ &&
         !deferred_spec_ && !paused_ && !pause_held_ && !quiet_ && !close_after_reply_ && !held_ &&
         hold_marks_.empty() && sending_.empty() && !send_in_flight_ && !processing_ &&
         !in_multi_ && queued_.empty() && watched_.empty() && !exec_ && !exec_releasing_ &&
         fan_outs_.empty() && !block_state_ && !pubsub_ && !monitor_ && !tls_ && !reply_off_ &&
         !skip_next_ && !tracking_ && recv_armed_;
}

void Reactor::StartMove(Connection* c) {
  // (Tried again after a send; not while a busy script serves the clients: ServeWhileBusy.)
  if (c->moving_ || serving_busy_ || !c->Movable() || c->move_to_ == id_) return;
  c->moving_ = true;
  // Input that arrives until the recv has ended is kept and run on the new reactor.
  CancelRecv(c);
}

void Reactor::FinishMove(Connection* c) {
  MovedConnection m;
  m.fd = c->fd_;
  m.id = c->id_;
  m.peer = c->peer_;
  m.local = c->local_;
  m.db = c->db_index_;
  m.resp = c->resp_;
  m.authenticated = c->authenticated_;
  m.user = c->user_->name();
  m.name = std::move(c->name_);
  m.lib_name = std::move(c->lib_name_);
  m.lib_ver = std::move(c->lib_ver_);
  m.last_cmd = c->last_cmd_;
  m.created_ms = c->created_ms_;
  m.last_interaction_ms = c->last_interaction_ms_;
  m.moved_ms = now_ms_;
  m.no_evict = c->no_evict;
  m.no_touch = c->no_touch;
  m.input.assign(c->in_, c->in_start_, std::string::npos);
  m.output = std::move(c->out_);
  const int target = c->move_to_;
  // The object stays here until the turn ends (a caller may be inside it); the socket, the
  // client id and the client count go with the session.
  c->fd_ = -1;
  c->closing_ = true;
  conns_.erase(c->id_);
  MaybeFree(c);
  Send(target, [m = std::move(m)]() mutable { Reactor::Current()->AdoptMoved(std::move(m)); });
}

void Reactor::AdoptMoved(MovedConnection m) {
  acl::User* user = acl_users().Find(m.user);
  if (!user || !user->enabled()) {
    // Its user went meanwhile (ACL DELUSER, or off): as Redis, such a client is disconnected.
    close(m.fd);
    server_->connected_clients().fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  auto* c = new Connection(this, m.fd, m.id, std::move(m.peer), std::move(m.local));
  c->user_ = user;
  c->set_authenticated(m.authenticated);
  c->db_index_ = m.db;
  c->resp_ = m.resp;
  c->name_ = std::move(m.name);
  c->lib_name_ = std::move(m.lib_name);
  c->lib_ver_ = std::move(m.lib_ver);
  c->last_cmd_ = m.last_cmd;
  c->created_ms_ = m.created_ms;
  c->last_interaction_ms_ = m.last_interaction_ms;
  c->moved_ms_ = m.moved_ms;
  c->no_evict = m.no_evict;
  c->no_touch = m.no_touch;
  c->out_ = std::move(m.output);
  conns_[c->id()] = c;
  stats_.connections_moved_in++;
  ArmRecv(c);
  if (!c->out_.empty()) MarkForFlush(c);
  if (!m.input.empty()) {
    c->in_ = std::move(m.input);
    c->ProcessInput();
  }
}

// --- CLIENT PAUSE: commands held until the pause ends ---

void Connection::PauseHold(const CommandSpec* spec, CmdArgs args) {
  // CLIENT PAUSE: held, with the input after it, until the pause ends (Reactor::Unpause).
  if (relay_) SendRelay();
  Defer(spec, args);
  pause_held_ = true;
  reactor_->AddPauseWaiter(id_);
}

void Connection::EndPause() {
  if (!pause_held_) return;
  pause_held_ = false;
  if (inflight_ > 0 || !deferred_spec_ || closing_) return;  // OnForwardDone runs it
  RunDeferred();
}

bool Connection::PauseHolds(const CommandSpec* spec) const {
  if (reactor_->pause_all()) return true;
  if (spec->flags & kWrite) return true;
  // Commands that may write or replicate without the write flag, as Redis's may-replicate.
  static constexpr std::string_view kMayReplicate[] = {"eval",    "evalsha",  "fcall",
                                                       "publish", "spublish", "pfcount"};
  for (std::string_view n : kMayReplicate) {
    if (spec->name == n) return true;
  }
  if (spec->name == "exec" && in_multi_) {
    for (const QueuedCommand& q : queued_) {
      if (q.spec->flags & kWrite) return true;
    }
  }
  return false;
}

// --- a command's keys against this shard's locks; its arguments copied to travel ---

bool KeysBlocked(const CommandSpec* spec, CmdArgs args, int db, const LockTable& locks) {
  bool blocked = false;
  spec->ForEachKey(args, [&](int i) { blocked = blocked || locks.Blocked(db, args[i]); });
  return blocked;
}

bool MustWait(const CommandSpec* spec, CmdArgs args, int db, uint64_t client,
              const LockTable& locks) {
  return !locks.idle() && (KeysBlocked(spec, args, db, locks) || locks.HasParked(client));
}

std::vector<std::string> LockNames(const CommandSpec* spec, CmdArgs args, int db) {
  std::vector<std::string> names;
  spec->ForEachKey(args, [&](int i) { names.push_back(LockTable::Name(db, args[i])); });
  return names;
}

OwnedArgs::OwnedArgs(CmdArgs args) {
  size_t total = 0;
  for (auto a : args) total += a.size();
  bytes.reserve(total);
  lens.reserve(args.size());
  for (auto a : args) {
    bytes.append(a);
    lens.push_back(a.size());
  }
}

std::vector<std::string_view> OwnedArgs::Views() const {
  std::vector<std::string_view> v;
  v.reserve(lens.size());
  size_t off = 0;
  for (size_t n : lens) {
    v.emplace_back(bytes.data() + off, n);
    off += n;
  }
  return v;
}

// --- a pipeline's keys asked for ahead of its inline lookups (relay.cc's PrefetchKeys is the
// relay's side) ---

// The inline side of the same idea as a relay's PrefetchKeys: commands the connection runs here
// itself, out of its input.
int Connection::PrefetchPipeline(std::string_view buf) {
  // Parsed again by Dispatch: the look here costs a fraction of one miss per command. Only whole
  // multibulk commands (their arguments are views into `buf`) in the first kLookaheadBytes (a
  // big or unfinished command is not scanned again and again as it arrives), and only this
  // shard's keys: the others' keyspaces are their reactors' alone.
  constexpr int kLookahead = 32;
  constexpr size_t kLookaheadBytes = 4096;
  thread_local protocol::RespParser look;
  thread_local std::vector<std::string_view> args;
  thread_local std::vector<std::string_view> keys;
  buf = buf.substr(0, std::min(buf.size(), kLookaheadBytes));
  look.set_limits(parser_.limits());
  keys.clear();
  const Server& server = reactor_->server();
  const int me = reactor_->id();
  size_t off = 0;
  int looked = 0;
  for (; looked < kLookahead && off < buf.size() && buf[off] == '*'; looked++) {
    size_t consumed = 0;
    look.Reset();
    if (look.Parse(buf.substr(off), &consumed, &args) != protocol::ParseStatus::kOk) break;
    off += consumed;
    if (args.empty()) continue;
    const CommandSpec* spec = LookUp(args[0]);
    if (spec == nullptr || !spec->ArityOk(args.size())) continue;
    spec->ForEachKey(CmdArgs(args.data(), args.size()), [&](int k) {
      if (server.ShardOf(args[k]) == me) keys.push_back(args[k]);
    });
  }
  if (!keys.empty()) reactor_->shard().db(db_index_).PrefetchKeys(keys.data(), keys.size());
  return looked;
}

}  // namespace deadbolt::server
