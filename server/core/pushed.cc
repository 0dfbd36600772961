// Output a connection gets without asking, and where it comes from.
//
// Pub/sub delivery (declared in server/core/reactor.h) and the connection's pub/sub block: a
// PUBLISH delivers on every reactor that may have a receiver (server/pubsub/registry.h). Also
// MONITOR's lines.
//
// And CLIENT TRACKING, the server side of client-side caching: what a tracking client's commands
// note where they run, and how the invalidations a shard owes reach the clients.
//
// Each shard keeps its own table (server/tracking/tracking_table.h): a read by a tracking client
// remembers its keys on the shard that ran it, right after it ran there, so no change can slip
// between the read and the note. A change to a remembered key (or under a BCAST prefix) is owed
// to the client; at the end of its turn the shard delivers what it owes, to the clients of its
// own reactor directly and to others' in one message per client. The client's reactor checks
// that the client still tracks (a client that turned tracking off or left keeps its entries
// until they fire, as in Redis), drops the keys it changed itself under NOLOOP, and writes a
// RESP3 push, or sends it on to the client named by REDIRECT (a RESP2 subscriber gets it as a
// message on __redis__:invalidate). Pushes leave after every reply the connection owes so far
// (WritePushed), so the invalidation of a key never overtakes the reply that read it.

#include <absl/container/flat_hash_set.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/reply_builder.h"
#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/pubsub/registry.h"

namespace deadbolt::server {
namespace {

// A published message copied so that it can travel to other reactors.
struct OwnedMessage {
  OwnedMessage(std::string_view c, std::string_view p) : channel(c), payload(p) {}
  std::string channel;
  std::string payload;
};

}  // namespace

// --- delivery ---

int64_t DeliverHere(Reactor& r, PubSubKind kind, std::string_view channel, std::string_view payload,
                    Connection* self, protocol::ReplyBuilder* self_rb) {
  std::vector<Connection*> over_limit;
  int64_t n =
      r.pubsub().ForEachReceiver(kind, channel, [&](Connection* c, const std::string* pattern) {
        if (c->closing()) return false;
        if (c == self && self_rb && c->IsDirectReply(self_rb->out())) {
          EncodePubSubMessage(self_rb->out(), self_rb->resp(), kind, pattern, channel, payload);
        } else if (!c->WritePubSubMessage(kind, pattern, channel, payload)) {
          over_limit.push_back(c);
        }
        return true;
      });
  for (Connection* c : over_limit) {
    if (c->closing()) continue;  // listed twice (a channel and a pattern)
    c->CloseForOutputLimit();
  }
  return n;
}

int64_t PublishNoWait(Reactor& r, PubSubKind kind, std::string_view channel,
                      std::string_view payload) {
  size_t hash = PubSubRegistry::HintHash(channel);
  std::shared_ptr<const OwnedMessage> msg;
  Server& server = r.server();
  for (int i = 0; i < server.num_shards(); i++) {
    if (i == r.id() || !server.reactor(i).pubsub().MayHaveReceivers(kind, hash)) continue;
    if (!msg) msg = std::make_shared<const OwnedMessage>(channel, payload);
    r.Send(i, [msg, kind] { DeliverHere(*Reactor::Current(), kind, msg->channel, msg->payload); });
  }
  return DeliverHere(r, kind, channel, payload);
}

// --- Connection's pub/sub block (declared in server/core/connection.h) ---

PubSubClient& Connection::EnsurePubSubState() {
  if (!pubsub_) pubsub_ = std::make_unique<PubSubClient>();
  return *pubsub_;
}

bool Connection::subscribed() const { return pubsub_ && pubsub_->subscribed(); }

bool Connection::IsDirectReply(const std::string* target) const {
  return target == &out_ || (!pending_.empty() && target == &pending_.back().data);
}

bool Connection::WritePubSubMessage(PubSubKind kind, const std::string* pattern,
                                    std::string_view channel, std::string_view payload) {
  if (closing_ || close_after_reply_) return true;  // as Redis: nothing more after QUIT
  Push([&](std::string* out) { EncodePubSubMessage(out, resp_, kind, pattern, channel, payload); });
  return !OverOutputLimit();
}

template <typename F>
void Connection::Push(F&& write) {
  if (pending_.empty()) {
    write(&out_);
    AfterOutput();
  } else {
    // Behind replies still being computed elsewhere: a slot keeps the order.
    uint64_t seq = ReserveSlot();
    write(&pending_.back().data);
    CompleteSlot(seq, std::move(pending_.back().data));
  }
}

bool Connection::PubSubFilter(const CommandSpec* spec, CmdArgs args) {
  static const CommandSpec* const kReset = CommandTable::Get().Find("reset");
  static const CommandSpec* const kPing = CommandTable::Get().Find("ping");
  static const CommandSpec* const kAllowed[] = {
      CommandTable::Get().Find("subscribe"),  CommandTable::Get().Find("unsubscribe"),
      CommandTable::Get().Find("psubscribe"), CommandTable::Get().Find("punsubscribe"),
      CommandTable::Get().Find("ssubscribe"), CommandTable::Get().Find("sunsubscribe"),
      CommandTable::Get().Find("quit"),       kReset,
  };
  if (spec == kReset) {
    // RESET leaves pub/sub silently, then runs as usual.
    reactor_->pubsub().UnsubscribeAll(this, *pubsub_);
    return false;
  }
  if (resp_ != 2 || !pubsub_->subscribed()) return false;
  for (const CommandSpec* a : kAllowed) {
    if (spec == a) return false;
  }
  if (spec == kPing) {
    // In RESP2 subscribed mode PING answers [pong, message] (an empty message by default).
    reactor_->stats().commands_processed++;
    reactor_->stats().commands[CommandTable::StatsSlot(spec, args)].calls++;
    std::string* target = ReplyTarget();
    protocol::ReplyBuilder rb(target, 2);
    rb.ArrayHeader(2);
    rb.Bulk("pong");
    rb.Bulk(args.size() > 1 ? args[1] : std::string_view(""));
    if (target != &out_) CompleteSlot(pending_base_ + pending_.size() - 1, std::move(*target));
    return true;
  }
  std::string name = spec->name;
  if (!spec->subcommands.empty() && args.size() > 1) {
    // Redis names the subcommand ("client|id"); an unknown subcommand or a subcommand's arity
    // error is reported first, so those run and fail as usual.
    std::string full = spec->name + "|" + AsciiLower(args[1]);
    const CommandSpec* sub = nullptr;
    for (const CommandSpec& s : spec->subcommands) {
      if (s.name == full) sub = &s;
    }
    if (!sub || !sub->ArityOk(args.size())) return false;
    name = std::move(full);
  }
  reactor_->stats().commands[CommandTable::StatsSlot(spec, args)].rejected_calls++;
  ReplyError(errors::PubSubNotAllowed(name));
  return true;
}

void Connection::PubSubTeardown() {
  if (!pubsub_) return;
  reactor_->pubsub().UnsubscribeAll(this, *pubsub_);
  pubsub_.reset();
}

void Connection::set_monitor(bool on) {
  if (monitor_ == on) return;
  monitor_ = on;
  reactor_->SetMonitor(this, on);
}

void Connection::WriteMonitorLine(std::string_view line) {
  if (closing_ || close_after_reply_) return;
  if (pending_.empty()) {
    out_.append(line);
    AfterOutput();
  } else {
    uint64_t seq = ReserveSlot();  // behind replies still being computed elsewhere
    CompleteSlot(seq, std::string(line));
  }
}

// --- client-side caching (CLIENT TRACKING) ---

namespace {

constexpr std::string_view kInvalidateChannel = "__redis__:invalidate";

// The command runs a script whose reads are the caller's (EVAL, EVALSHA, FCALL): all its keys
// are remembered, a superset of what its reads touch (an extra invalidation is harmless; a
// missing one would leave a stale cache).
bool RunsScript(const CommandSpec* spec) {
  static const CommandSpec* const kScripts[] = {CommandTable::Get().Find("eval"),
                                                CommandTable::Get().Find("evalsha"),
                                                CommandTable::Get().Find("fcall")};
  for (const CommandSpec* s : kScripts) {
    if (spec == s) return true;
  }
  return false;
}

// Whether a call of `spec` reads keys a client may cache (Redis: its read-only commands,
// pub/sub's shard channels aside; and here the keys of a script).
bool Remembers(const CommandSpec* spec) {
  if (spec->flags & kPubSub) return false;
  return (spec->flags & kReadOnly) || RunsScript(spec);
}

// An invalidation as `to` reads it: a RESP3 push ["invalidate", keys], or for a RESP2 client
// that invalidations are redirected to and that is subscribed, a message on
// __redis__:invalidate. `keys` null: every key (after a flush). Empty when `to` can get none.
std::string Encode(const Connection& to, bool redirected, const std::vector<std::string>* keys,
                   int null_resp) {
  std::string out;
  protocol::ReplyBuilder rb(&out, to.resp());
  if (to.resp() >= 3) {
    rb.PushHeader(2);
    rb.Bulk("invalidate");
  } else if (redirected && to.subscribed()) {
    rb.ArrayHeader(3);
    rb.Bulk("message");
    rb.Bulk(kInvalidateChannel);
  } else {
    return {};  // RESP2 without a redirect: nothing can be pushed on the connection
  }
  if (keys == nullptr) {
    out += null_resp >= 3 ? "_\r\n" : "$-1\r\n";
  } else {
    rb.ArrayHeader(keys->size());
    for (const std::string& k : *keys) rb.Bulk(k);
  }
  return out;
}

// On the reactor of the client invalidations are redirected to.
void DeliverRedirected(uint64_t to_id, uint64_t from_id, int from_reactor,
                       std::vector<std::vector<std::string>> pushes, bool all, int null_resp) {
  Reactor& r = *Reactor::Current();
  auto it = r.connections().find(to_id);
  if (it == r.connections().end() || it->second->closing()) {
    // The client redirected to has gone: the tracking client learns it (RESP3), as in Redis.
    r.Send(from_reactor, [from_id] {
      Reactor& home = *Reactor::Current();
      auto c = home.connections().find(from_id);
      if (c == home.connections().end() || c->second->closing()) return;
      Connection::TrackingState* t = c->second->tracking();
      if (t == nullptr || !t->on) return;
      t->broken_redirect = true;
      if (c->second->resp() >= 3) {
        std::string out;
        protocol::ReplyBuilder rb(&out, 3);
        rb.PushHeader(2);
        rb.Bulk("tracking-redir-broken");
        rb.Integer(static_cast<int64_t>(t->redirect));
        c->second->WritePushed(out);
      }
    });
    return;
  }
  Connection& to = *it->second;
  if (all) {
    std::string out = Encode(to, true, nullptr, null_resp);
    if (!out.empty()) to.WritePushed(out);
    return;
  }
  for (const std::vector<std::string>& keys : pushes) {
    std::string out = Encode(to, true, &keys, null_resp);
    if (!out.empty()) to.WritePushed(out);
  }
}

// On the tracking client's reactor: `pushes` (each an array of keys with its last writer) or,
// with `all`, the null that invalidates every key. `bcast` says which mode they were owed in.
void Deliver(Reactor& r, uint64_t client, bool bcast,
             std::vector<std::vector<std::pair<std::string, uint64_t>>> pushes, bool all) {
  auto it = r.connections().find(client);
  if (it == r.connections().end() || it->second->closing()) return;
  Connection& c = *it->second;
  const Connection::TrackingState* t = c.tracking();
  if (t == nullptr || !t->on || (!all && t->bcast != bcast)) return;
  // NOLOOP: the keys this client changed itself are left out.
  std::vector<std::vector<std::string>> kept;
  for (auto& push : pushes) {
    std::vector<std::string> keys;
    for (auto& [key, writer] : push) {
      if (t->noloop && writer == client) continue;
      keys.push_back(std::move(key));
    }
    if (!keys.empty()) kept.push_back(std::move(keys));
  }
  if (!all && kept.empty()) return;
  if (t->redirect != 0) {
    const uint64_t to = t->redirect;
    const int resp = c.resp();
    if (t->redirect_reactor == r.id()) {
      DeliverRedirected(to, client, r.id(), std::move(kept), all, resp);
    } else {
      r.Send(t->redirect_reactor,
             [to, client, from = r.id(), kept = std::move(kept), all, resp]() mutable {
               DeliverRedirected(to, client, from, std::move(kept), all, resp);
             });
    }
    return;
  }
  if (all) {
    std::string out = Encode(c, false, nullptr, c.resp());
    if (!out.empty()) c.WritePushed(out);
    return;
  }
  for (const std::vector<std::string>& keys : kept) {
    std::string out = Encode(c, false, &keys, c.resp());
    if (!out.empty()) c.WritePushed(out);
  }
}

// What one shard owes one client, delivered on the client's reactor.
struct Owed {
  uint64_t client;
  bool bcast;
  std::vector<std::vector<std::pair<std::string, uint64_t>>> pushes;
};

void DeliverAll(Reactor& r, std::vector<Owed> owed) {
  for (Owed& o : owed) Deliver(r, o.client, o.bcast, std::move(o.pushes), false);
}

// tracking-table-max-keys, this shard's share of it (0: no limit).
size_t TrackingMaxKeys(Reactor& r) {
  const int64_t max = r.config().tracking_table_max_keys;
  if (max <= 0) return 0;
  const int64_t shards = r.server().num_shards();
  return static_cast<size_t>((max + shards - 1) / shards);
}

}  // namespace

void RunTrackedHandler(const CommandSpec* spec, CmdArgs args, ShardCtx& ctx) {
  Reactor& r = *Reactor::Current();
  TrackingTable& table = r.tracking();
  table.set_writer(ctx.track.client);
  spec->shard_handler(args, ctx);
  table.set_writer(0);
  if (ctx.track.remember && Remembers(spec)) {
    const Tracker t{ctx.track.client, ctx.track.reactor};
    spec->ForEachKey(args, [&](int i) { table.Remember(args[i], t); });
    table.Limit(TrackingMaxKeys(r));
  }
}

void Reactor::DeliverTracking() {
  // One message per reactor that has clients to tell, whatever their number.
  std::vector<std::vector<Owed>> by_reactor(server_->num_shards());
  for (KeyInvalidation& k : tracking_.TakeKeyInvalidations()) {
    // Default mode: a push per key, as Redis sends them.
    Owed o{k.to.client, false, {}};
    o.pushes.reserve(k.keys.size());
    for (auto& key : k.keys) o.pushes.push_back({std::move(key)});
    by_reactor[k.to.reactor].push_back(std::move(o));
  }
  for (PrefixInvalidation& p : tracking_.TakePrefixInvalidations()) {
    // BCAST: one push with every key changed under the prefix since the last delivery.
    for (const Tracker& t : p.to) by_reactor[t.reactor].push_back(Owed{t.client, true, {p.keys}});
  }
  for (int i = 0; i < static_cast<int>(by_reactor.size()); i++) {
    if (by_reactor[i].empty()) continue;
    if (i == id_) {
      DeliverAll(*this, std::move(by_reactor[i]));
    } else {
      Send(i, [owed = std::move(by_reactor[i])]() mutable {
        DeliverAll(*Reactor::Current(), std::move(owed));
      });
    }
  }
}

void InvalidateAllTracked(Reactor& r) {
  for (auto& [id, c] : r.connections()) {
    const Connection::TrackingState* t = c->tracking();
    if (t != nullptr && t->on && !c->closing()) Deliver(r, id, t->bcast, {}, true);
  }
}

void TellFlushToTrackers(Reactor& r) {
  for (int i = 0; i < r.server().num_shards(); i++) {
    r.Send(i, [] { InvalidateAllTracked(*Reactor::Current()); });
  }
}

void ForgetTrackingPrefixes(Reactor& r, uint64_t client, std::vector<std::string> only) {
  auto shared = std::make_shared<const std::vector<std::string>>(std::move(only));
  for (int i = 0; i < r.server().num_shards(); i++) {
    r.Send(i, [client, shared] {
      TrackingTable& table = Reactor::Current()->tracking();
      if (shared->empty()) {
        table.RemovePrefixes(client);
      } else {
        for (const std::string& p : *shared) table.RemovePrefix(client, p);
      }
    });
  }
}

// --- the connection's side ---

Connection::TrackingState& Connection::EnsureTracking() {
  if (!tracking_) tracking_ = std::make_unique<TrackingState>();
  return *tracking_;
}

void Connection::StopTracking() {
  if (!tracking_) return;
  if (tracking_->prefixes_sent) ForgetTrackingPrefixes(*reactor_, id_);
  *tracking_ = TrackingState();
}

void Connection::WritePushed(std::string_view bytes) {
  if (closing_ || close_after_reply_) return;
  Push([&](std::string* out) { out->append(bytes); });
  if (OverOutputLimit()) CloseForOutputLimit();
}

void Connection::DecideTracking(const CommandSpec* spec) {
  TrackingState& t = *tracking_;
  cur_track_ = {};
  if (!t.on) return;
  cur_track_.client = id_;
  cur_track_.reactor = reactor_->id();
  // OPTIN: only after CLIENT CACHING yes; OPTOUT: unless after CLIENT CACHING no. BCAST
  // remembers no key.
  cur_track_.remember = !t.bcast && !(t.optin && !t.caching) && !(t.optout && t.caching);
  // CLIENT CACHING covers the next command, or the transaction MULTI opens (as Redis, CLIENT's
  // own subcommands leave it alone).
  static const CommandSpec* const kClient = CommandTable::Get().Find("client");
  static const CommandSpec* const kMulti = CommandTable::Get().Find("multi");
  if (spec != kClient && spec != kMulti) t.caching = false;
}

void Connection::TrackPhases(std::vector<ChunkFn>& phases) {
  // The keys this command reads, with their shards, remembered on each once it has run there.
  auto keys = std::make_shared<std::vector<std::pair<std::string, int>>>();
  if (cur_track_.remember && cur_spec_ && cur_spec_->has_keys() && Remembers(cur_spec_)) {
    const Server& server = reactor_->server();
    cur_spec_->ForEachKey(cur_args_, [&](int i) {
      keys->emplace_back(std::string(cur_args_[i]), server.ShardOf(cur_args_[i]));
    });
  }
  const ShardCtx::Track track = cur_track_;
  for (ChunkFn& p : phases) {
    p = [inner = std::move(p), keys, track](ShardCtx& ctx) {
      Reactor& r = *Reactor::Current();
      TrackingTable& table = r.tracking();
      table.set_writer(track.client);
      const bool more = inner(ctx);
      table.set_writer(0);
      for (const auto& [key, shard] : *keys) {
        if (shard == r.id()) table.Remember(key, Tracker{track.client, track.reactor});
      }
      if (!keys->empty()) table.Limit(TrackingMaxKeys(r));
      return more;
    };
  }
}

}  // namespace deadbolt::server
