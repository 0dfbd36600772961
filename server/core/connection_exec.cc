// MULTI, EXEC, DISCARD, WATCH and UNWATCH on a connection.
//
// EXEC runs as one Transaction: it locks every key its queued commands name (and its watched
// keys) on every shard concerned, shard by shard in ascending order, then checks the watches,
// then runs the commands in order — inline for this reactor's shard, one hop each for others —
// and releases the locks. No other client sees it half done. When every key lives on this
// reactor's shard the whole EXEC runs inline, with no message at all.

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
  CancelBlock();  // a waiting LOCK.ACQUIRE leaves its queue
  FanOutsClientGone();  // a read waiting for its locks is not worth finishing
  Unwatch();
  queued_.clear();
  PubSubTeardown();
  set_monitor(false);
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
          uint64_t prev = st.tx->EnterJournal(*reactor_);
          reactor_->StartTiming();
          q.spec->shard_handler(a, ctx);
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
            [spec, owned, out, db, resp, user](Reactor& r) {
              std::vector<std::string_view> v = owned->Views();
              protocol::ReplyBuilder rb(out.get(), resp);
              ShardCtx ctx{r.shard(), r.shard().db(db), db, r.now_ms(), r.config(), rb};
              ctx.acl_user = user.get();
              spec->shard_handler(CmdArgs(v.data(), v.size()), ctx);
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

}  // namespace deadbolt::server
