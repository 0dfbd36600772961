#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/cmdtable/journal_health.h"
#include "server/collections/blocking.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/transaction.h"
#include "server/txn/blocked_reply.h"
#include "server/txn/lock_table.h"
#include "server/txn/lock_waiters.h"
#include "shard/db.h"
#include "shard/shard.h"

// BLMOVE / BRPOPLPUSH waiting on a source whose destination is on another shard (blocking.h).
//
// The client's waiter sits in the source's queue, on the source's shard, which owns everything
// below (MoveWait, the waiter, the transaction's coordinator). When the source is ready, the
// waiter marks itself `moving` and stays at the head of the queue (the waiters behind it wait
// their turn), and a transaction over both keys checks the source (still a list with an
// element? the client still there?) and the destination (a list or missing), pops, pushes, and
// commits. Then: moved, the reply is the element; a destination of another type, WRONGTYPE;
// either way the waiter is withdrawn and the next one served. Source emptied meanwhile: the
// waiter waits on. A timeout or a cancel that comes while moving is kept and replied only if
// nothing was moved.

namespace deadbolt::server {

namespace {

using shard::ListEnd;
using shard::OpStatus;

// Owned by the source's shard thread (the registration message hands it there).
struct MoveWait {
  std::unique_ptr<BlockedReply> reply;  // the client's
  int db = 0;
  MoveAcrossWait w;
  bool moving = false;               // a transaction is moving an element for it
  bool done = false;                 // `reply` is finished
  std::optional<std::string> ended;  // a timeout's or cancel's reply that came while moving

  void End(std::string bytes) {
    if (done) return;
    done = true;
    reply->Finish(std::move(bytes));
  }
};

// The waiter's reply: the client's, held back while a move is under way.
class MoveReply final : public BlockedReply {
 public:
  explicit MoveReply(std::shared_ptr<MoveWait> m) : m_(std::move(m)) {}
  int resp() const override { return m_->reply->resp(); }
  uint64_t client_id() const override { return m_->reply->client_id(); }
  // While moving, the move's own check of the client decides.
  bool cancelled() const override { return !m_->moving && m_->reply->cancelled(); }
  void Finish(std::string reply, absl::AnyInvocable<void()>) override {
    if (m_->moving) {
      if (!m_->done && !m_->ended) m_->ended = std::move(reply);
      return;
    }
    m_->End(std::move(reply));
  }

 private:
  std::shared_ptr<MoveWait> m_;
};

// One move in progress, coordinated from the source's shard.
struct MoveRun {
  MoveRun(Reactor* r, std::vector<Transaction::Part> parts) : tx(r, std::move(parts)) {}
  Transaction tx;
  std::shared_ptr<MoveWait> m;
  // Written by the source's shard: the source's state, the client gone, the element taken.
  OpStatus src_status = OpStatus::kOk;
  bool cancelled = false;
  std::optional<std::string> value;
  // Written by the destination's shard.
  OpStatus dst_status = OpStatus::kOk;
};

void Finished(MoveRun* run) {
  std::shared_ptr<MoveWait> m = run->m;
  m->moving = false;
  LockWaiters& waiters = Reactor::Current()->lock_waiters();
  const int resp = m->reply->resp();
  bool withdraw = true;
  if (run->value) {
    const std::string_view one[1] = {*run->value};
    std::string bytes = RespOf(resp, one, 1, true);
    // A participant's journal batch could not be written: the move may not be on disk.
    if (!run->tx.failed_error().empty()) bytes = FailHeldReplies(bytes, run->tx.failed_error());
    m->End(std::move(bytes));
  } else if (run->cancelled) {
    m->End({});
  } else if (run->src_status != OpStatus::kOk) {
    // Emptied (or made another type) before the move took its locks: wait on, unless a
    // timeout or cancel came meanwhile.
    withdraw = false;
    if (m->ended) {
      m->End(std::move(*m->ended));
    } else {
      waiters.HandOver(m->db, m->w.src);  // in case it is ready again
    }
  } else {
    m->End(ErrorOf(resp, errors::ForStatus(run->dst_status)));
  }
  // The waiter leaves the source's queue (finished already: its Finish is a no-op) and the one
  // behind it is served.
  if (withdraw) waiters.Withdraw(m->reply->client_id(), m.get());
  delete run;
}

void StartMove(std::shared_ptr<MoveWait> m) {
  Reactor* r = Reactor::Current();
  const MoveAcrossWait& w = m->w;
  std::vector<Transaction::Part> parts = {{w.src_shard, {LockTable::Name(m->db, w.src)}},
                                          {w.dst_shard, {LockTable::Name(m->db, w.dst)}}};
  auto* run = new MoveRun(r, std::move(parts));
  run->m = m;
  run->tx.set_writes(true);
  run->tx.Lock([run] {
    const MoveAcrossWait& w = run->m->w;
    const int db = run->m->db;
    run->tx.Hop(
        {w.src_shard, w.dst_shard},
        [run, db](Reactor& r) {
          const MoveAcrossWait& w = run->m->w;
          shard::Db& d = r.shard().db(db);
          if (r.id() == w.src_shard) {
            run->cancelled = run->m->reply->cancelled();
            auto len = d.ListLen(w.src, r.now_ms());
            run->src_status = !len.ok()   ? len.status()
                              : *len == 0 ? OpStatus::kKeyNotFound
                                          : OpStatus::kOk;
          } else {
            run->dst_status = d.ListCheckType(w.dst, r.now_ms());
          }
        },
        [run, db] {
          const MoveAcrossWait& w = run->m->w;
          if (run->cancelled || run->src_status != OpStatus::kOk ||
              run->dst_status != OpStatus::kOk) {
            run->tx.Release([run] { Finished(run); });
            return;
          }
          run->tx.Hop(
              {w.src_shard},
              [run, db](Reactor& r) {
                const MoveAcrossWait& w = run->m->w;
                auto v = r.shard().db(db).ListPop(w.src, w.from, 1, r.now_ms());
                if (v.ok() && !v->empty()) run->value = std::move(v->front());
              },
              [run, db] {
                const MoveAcrossWait& w = run->m->w;
                run->tx.Hop(
                    {w.dst_shard},
                    [run, db](Reactor& r) {
                      const MoveAcrossWait& w = run->m->w;
                      const std::string_view one[1] = {*run->value};
                      r.shard().db(db).ListPush(w.dst, one, w.to, false, r.now_ms());
                      // Its waiters are served once the transaction lets go of the key.
                      r.lock_waiters().HandOver(db, w.dst);
                    },
                    [run] { run->tx.Release([run] { Finished(run); }); });
              });
        });
  });
}

void Register(const std::shared_ptr<MoveWait>& m) {
  LockWaiters::Waiter waiter;
  waiter.deadline_ms = m->w.deadline;
  waiter.timeout_null_array = true;  // as Redis: a timed-out BLMOVE replies a null array
  waiter.reply = std::make_unique<MoveReply>(m);
  waiter.group = m.get();
  waiter.try_serve = [m](shard::Db& d, std::string_view key, int64_t now, BlockedReply&) {
    if (m->moving) return false;  // its move is under way: the queue waits for it
    auto len = d.ListLen(key, now);
    if (!len.ok() || *len == 0) return false;  // missing, empty, another type: wait on
    m->moving = true;
    Reactor* r = Reactor::Current();
    r->Send(r->id(), [m] { StartMove(m); });  // not from inside the queue's serving
    return false;                             // stays at the head until the move is done
  };
  Reactor::Current()->lock_waiters().Wait(m->db, m->w.src, std::move(waiter));
}

}  // namespace

void WaitToMoveAcross(Connection& conn, MoveAcrossWait wait) {
  auto m = std::make_shared<MoveWait>();
  m->db = conn.db_index();
  m->reply = conn.BlockAcross({wait.src_shard});
  m->w = std::move(wait);
  conn.reactor().Send(m->w.src_shard, [m] {
    if (m->reply->cancelled()) {  // gone already: let the connection go
      m->End({});
      return;
    }
    Register(m);
    Reactor::Current()->lock_waiters().HandOver(m->db, m->w.src);  // ready meanwhile?
  });
}

}  // namespace deadbolt::server
