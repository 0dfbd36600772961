#include "server/collections/blocking.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/base/error_strings.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/txn/lock_waiters.h"
#include "shard/base/numeric.h"

namespace deadbolt::server {

bool ParseBlockTimeout(std::string_view s, int64_t now_ms, int64_t* deadline,
                       protocol::ReplyBuilder& rb) {
  long double secs;
  if (!shard::ParseLongDouble(s, &secs)) {
    rb.Error(errors::kTimeoutNotFloat);
    return false;
  }
  if (secs < 0 || std::isinf(secs) || secs * 1000 > static_cast<long double>(INT64_MAX / 2)) {
    rb.Error(errors::kTimeoutNegative);
    return false;
  }
  // Rounded up, as Redis 7 (ceill): 0.0001 waits 1 ms, and only 0 waits forever.
  const auto ms = static_cast<int64_t>(std::ceil(secs * 1000));
  *deadline = ms == 0 || ms > LockWaiters::kForever - now_ms ? LockWaiters::kForever : now_ms + ms;
  return true;
}

std::string RespOf(int resp, const std::string_view* items, size_t n, bool bulk_only) {
  std::string out;
  protocol::ReplyBuilder rb(&out, resp);
  if (bulk_only) {
    rb.Bulk(items[0]);
  } else {
    rb.BulkArray(items, n);
  }
  return out;
}

std::string ErrorOf(int resp, std::string_view msg) {
  std::string out;
  protocol::ReplyBuilder rb(&out, resp);
  rb.Error(msg);
  return out;
}

bool OthersWait(ShardCtx& ctx, std::string_view key) {
  Reactor* r = Reactor::Current();
  if (r == nullptr) return false;  // no reactor (a unit test): nobody waits
  LockWaiters& waiters = r->lock_waiters();
  if (!waiters.HasWaiters(ctx.db_index, key)) return false;
  waiters.HandOver(ctx.db_index, key);
  return waiters.HasWaiters(ctx.db_index, key);
}

void ServeWaiters(ShardCtx& ctx, std::string_view key) {
  // No reactor (a handler run by a unit test, or by a script's redis.call there): nobody waits.
  Reactor* r = Reactor::Current();
  if (r == nullptr) return;
  LockWaiters& waiters = r->lock_waiters();
  if (waiters.HasWaiters(ctx.db_index, key)) waiters.HandOver(ctx.db_index, key);
}

bool AlwaysMayBlock(CmdArgs) { return true; }

void ReplyScore(protocol::ReplyBuilder& rb, double d) {
  char buf[40];
  int n;
  if (std::isinf(d)) {
    n = std::snprintf(buf, sizeof(buf), "%s", d > 0 ? "inf" : "-inf");
  } else {
    n = std::snprintf(buf, sizeof(buf), "%.17g", d);
  }
  if (rb.resp() >= 3) {
    std::string* out = rb.out();
    out->push_back(',');
    out->append(buf, static_cast<size_t>(n));
    out->append("\r\n", 2);
  } else {
    rb.Bulk(std::string_view(buf, static_cast<size_t>(n)));
  }
}

int64_t ListSizeOrWrongType(shard::Db& d, std::string_view key, int64_t now) {
  auto r = d.ListLen(key, now);
  return r.ok() ? *r : -1;
}

int64_t ZSizeOrWrongType(shard::Db& d, std::string_view key, int64_t now) {
  auto r = d.ZCard(key, now);
  return r.ok() ? *r : -1;
}

bool ListPopInto(shard::Db& d, std::string_view key, shard::ListEnd end, size_t count, int64_t now,
                 std::vector<Popped>* out) {
  auto r = d.ListPop(key, end, count, now);
  if (!r.ok() || r->empty()) return false;
  for (std::string& v : *r) out->push_back(Popped{std::move(v), 0});
  return true;
}

void ListPutBack(shard::Db& d, std::string_view key, shard::ListEnd end,
                 const std::vector<Popped>& got, int64_t now) {
  std::vector<std::string_view> values;  // the last taken goes back first
  for (auto it = got.rbegin(); it != got.rend(); ++it) values.push_back(it->value);
  d.ListPush(key, values, end, false, now);
}

bool ZPopInto(shard::Db& d, std::string_view key, bool max, size_t count, int64_t now,
              std::vector<Popped>* out) {
  auto r = d.ZPop(key, max, static_cast<int64_t>(count), now);
  if (!r.ok() || r->empty()) return false;
  for (auto& [member, score] : *r) out->push_back(Popped{std::move(member), score});
  return true;
}

void ZPutBack(shard::Db& d, std::string_view key, const std::vector<Popped>& got, int64_t now) {
  shard::ZAddOptions nx;
  nx.nx = true;
  std::vector<std::pair<double, std::string_view>> members;
  for (const Popped& p : got) members.emplace_back(p.score, p.value);
  d.ZAdd(key, nx, members, now);
}

bool PopFirstReady(ShardCtx& ctx, CmdArgs keys, size_t count, const PopFns& fns) {
  for (std::string_view key : keys) {
    if (OthersWait(ctx, key)) continue;
    const int64_t n = fns.size(ctx.db, key, ctx.now_ms);
    if (n < 0) {
      ctx.rb.Error(errors::kWrongType);
      return true;
    }
    std::vector<Popped> got;
    if (n > 0 && fns.pop(ctx.db, key, ctx.now_ms, count, &got)) {
      fns.reply(ctx.rb, key, got);
      return true;
    }
  }
  return false;
}

// --- waiting on several keys ---
//
// A client blocked on k1 k2 ... has one LockWaiters waiter per distinct key, each in its key's
// shard's queue, all sharing one WaitGroup that holds the client's reply. Whichever waiter
// ends first (a key ready, a timeout, the client gone) must Claim() the group: an atomic flag
// set once. A key's shard claims before it takes the element (on its own thread, so the element
// it saw is still there when it takes it); a waiter that loses the claim leaves its queue
// without taking anything, and its queue goes on to the next waiter. The winner finishes the
// client's reply and sends every shard of the group a Withdraw, so the other waiters leave at
// once rather than when met. Each key's queue stays first come first served; the client is
// served exactly once.

namespace {

// Shared by the waiters of one blocked client (one per key, on any reactor): the claim flag is
// the only field written after they are queued.
struct WaitGroup {
  std::atomic<bool> claimed{false};
  std::unique_ptr<BlockedReply> reply;  // the client's; only the claimant calls Finish
  uint64_t client = 0;
  std::vector<int> shards;  // where it has waiters (ascending)
  size_t waiters = 0;
};

// One waiter's view of its group's reply. Owned by the waiter's shard thread.
class GroupReply final : public BlockedReply {
 public:
  explicit GroupReply(std::shared_ptr<WaitGroup> g) : g_(std::move(g)) {}
  int resp() const override { return g_->reply->resp(); }
  uint64_t client_id() const override { return g_->client; }
  // Another waiter of the group has ended the wait: this one is as good as gone.
  bool cancelled() const override {
    return g_->reply->cancelled() || (!mine_ && g_->claimed.load(std::memory_order_acquire));
  }
  bool Claim() override {
    if (!mine_) mine_ = !g_->claimed.exchange(true, std::memory_order_acq_rel);
    return mine_;
  }
  void Finish(std::string reply, absl::AnyInvocable<void()> undo) override {
    if (!Claim()) return;  // ended through another key: nothing to send
    g_->reply->Finish(std::move(reply), std::move(undo));
    if (g_->waiters <= 1) return;
    // By message even on this shard: this may run while LockWaiters serves a queue.
    Reactor* r = Reactor::Current();
    for (int s : g_->shards) {
      r->Send(s, [g = g_] { Reactor::Current()->lock_waiters().Withdraw(g->client, g.get()); });
    }
  }

 private:
  std::shared_ptr<WaitGroup> g_;
  bool mine_ = false;  // this waiter claimed the group
};

// A pop's key-ready hook for one key: takes up to `count` elements once the key has some.
ServeFn PopServe(int db, const PopFns* fns, size_t count) {
  return [db, fns, count](shard::Db& d, std::string_view key, int64_t now, BlockedReply& reply) {
    // Missing, empty or of another type (Redis keeps such a waiter waiting): wait on.
    if (fns->size(d, key, now) <= 0) return false;
    if (!reply.Claim()) return true;  // served through another key: leave, take nothing
    std::vector<Popped> got;
    fns->pop(d, key, now, count, &got);
    std::string bytes;
    protocol::ReplyBuilder rb(&bytes, reply.resp());
    fns->reply(rb, key, got);
    // A client gone before its reply reached it: the elements go back.
    reply.Finish(std::move(bytes), [db, fns, k = std::string(key), got = std::move(got)] {
      Reactor* r = Reactor::Current();
      fns->put_back(r->shard().db(db), k, got, r->now_ms());
    });
    return true;
  };
}

MakeServeFn PopServes(const PopFns* fns, size_t count) {
  return [fns, count](int db, std::string_view) { return PopServe(db, fns, count); };
}

// Queues one waiter of `g` on (db, key) on this reactor's shard.
void Register(int db, std::string_view key, const std::shared_ptr<WaitGroup>& g, bool counts,
              int64_t deadline, ServeFn serve) {
  LockWaiters::Waiter w;
  w.deadline_ms = deadline;
  w.timeout_null_array = true;
  w.reply = std::make_unique<GroupReply>(g);
  w.group = g.get();
  w.counts = counts;
  w.try_serve = std::move(serve);
  Reactor::Current()->lock_waiters().Wait(db, key, std::move(w));
}

void AddDistinct(std::vector<std::string>* keys, std::string_view key) {
  if (std::find(keys->begin(), keys->end(), key) == keys->end()) keys->emplace_back(key);
}

}  // namespace

void WaitOnKeysWith(ShardCtx& ctx, CmdArgs keys, int64_t deadline, const MakeServeFn& make) {
  auto g = std::make_shared<WaitGroup>();
  g->reply = std::move(*ctx.block);
  g->client = g->reply->client_id();
  g->shards = {ctx.shard.index()};
  std::vector<std::string> distinct;
  for (std::string_view k : keys) AddDistinct(&distinct, k);
  g->waiters = distinct.size();
  for (size_t i = 0; i < distinct.size(); ++i) {
    Register(ctx.db_index, distinct[i], g, i == 0, deadline, make(ctx.db_index, distinct[i]));
  }
}

void WaitOnKeys(ShardCtx& ctx, CmdArgs keys, int64_t deadline, const PopFns& fns, size_t count) {
  WaitOnKeysWith(ctx, keys, deadline, PopServes(&fns, count));
}

void WaitAcross(Connection& conn, const std::vector<std::string>& keys,
                const std::vector<int>& key_shards, const std::vector<int>& shards,
                int64_t deadline, MakeServeFn make) {
  Connection* c = &conn;
  const int db = conn.db_index();
  auto g = std::make_shared<WaitGroup>();
  g->reply = c->BlockAcross(shards);
  g->client = g->reply->client_id();
  g->shards = shards;
  g->waiters = 0;
  std::vector<std::vector<std::string>> keys_of(shards.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t s = std::lower_bound(shards.begin(), shards.end(), key_shards[i]) - shards.begin();
    const size_t before = keys_of[s].size();
    AddDistinct(&keys_of[s], keys[i]);
    g->waiters += keys_of[s].size() - before;
  }
  auto shared_make = std::make_shared<MakeServeFn>(std::move(make));
  for (size_t s = 0; s < shards.size(); ++s) {
    c->reactor().Send(shards[s], [g, db, deadline, make = shared_make, counts = s == 0,
                                  keys = std::move(keys_of[s])] {
      // Served already (through a shard that got here first): nothing to queue. A claim made
      // after this check sends its Withdraw after it, so none is left behind. Gone: its reply
      // is finished (once, by whoever claims it) to let the connection go.
      if (g->claimed.load(std::memory_order_acquire)) return;
      if (g->reply->cancelled()) {
        if (!g->claimed.exchange(true, std::memory_order_acq_rel)) g->reply->Finish({});
        return;
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        Register(db, keys[i], g, counts && i == 0, deadline, (*make)(db, keys[i]));
      }
      LockWaiters& waiters = Reactor::Current()->lock_waiters();
      for (const std::string& k : keys) waiters.HandOver(db, k);
    });
  }
}

void PopAcross(CmdArgs keys, int64_t deadline, size_t count, bool may_wait, Connection& conn,
               protocol::ReplyBuilder& rb, const PopFns& fns) {
  const Server& server = conn.reactor().server();
  struct State {
    const PopFns* fns;
    size_t count;
    std::vector<std::string> keys;
    std::vector<int> shard;
    std::vector<int64_t> len;  // per key: its size, -1 for another type (slot i: its shard)
    size_t pick = SIZE_MAX;
    std::vector<Popped> popped;
    bool may_wait;
  };
  auto st = std::make_shared<State>();
  st->fns = &fns;
  st->count = count;
  std::vector<int> shards;
  for (std::string_view key : keys) {
    st->keys.emplace_back(key);
    st->shard.push_back(server.ShardOf(key));
    shards.push_back(st->shard.back());
  }
  st->len.assign(st->keys.size(), 0);
  st->may_wait = may_wait && !conn.in_exec();
  std::sort(shards.begin(), shards.end());
  shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
  std::vector<Connection::ShardFn> phases;
  phases.push_back([st](ShardCtx& ctx) {
    for (size_t i = 0; i < st->keys.size(); ++i) {
      if (st->shard[i] == ctx.shard.index()) {
        st->len[i] = st->fns->size(ctx.db, st->keys[i], ctx.now_ms);
      }
    }
  });
  phases.push_back([st](ShardCtx& ctx) {
    size_t pick = SIZE_MAX;
    for (size_t i = 0; i < st->keys.size() && pick == SIZE_MAX; ++i) {
      if (st->len[i] != 0) pick = i;
    }
    if (pick == SIZE_MAX || st->len[pick] < 0 || st->shard[pick] != ctx.shard.index()) return;
    if (st->fns->pop(ctx.db, st->keys[pick], ctx.now_ms, st->count, &st->popped)) st->pick = pick;
  });
  Connection* c = &conn;
  const int db = conn.db_index();
  conn.FanOutPhases(
      shards, std::move(phases), [st, c, db, deadline, shards](protocol::ReplyBuilder& rb) {
        for (size_t i = 0; i < st->keys.size(); ++i) {
          if (st->len[i] < 0) {
            rb.Error(errors::kWrongType);
            return;
          }
          if (st->len[i] > 0) break;
        }
        if (st->pick != SIZE_MAX) {
          st->fns->reply(rb, st->keys[st->pick], st->popped);
          return;
        }
        if (!st->may_wait) {
          rb.NullArray();
          return;
        }
        // Nothing to take: the client waits on every key, each on its shard. An element that came
        // meanwhile is seen when the waiter is queued (HandOver).
        WaitAcross(*c, st->keys, st->shard, shards, deadline, PopServes(st->fns, st->count));
      });
}

}  // namespace deadbolt::server
