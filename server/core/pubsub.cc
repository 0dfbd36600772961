#include "server/core/pubsub.h"

#include <absl/container/flat_hash_set.h>

#include <functional>
#include <utility>

#include "server/base/error_strings.h"
#include "server/base/log.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "shard/base/glob.h"

namespace deadbolt::server {
namespace {

// A published message copied so that it can travel to other reactors.
struct OwnedMessage {
  OwnedMessage(std::string_view c, std::string_view p) : channel(c), payload(p) {}
  std::string channel;
  std::string payload;
};

}  // namespace

// --- PubSubRegistry ---

PubSubRegistry::PubSubRegistry() {
  for (auto& h : hints_) {
    h = std::make_unique<std::atomic<uint32_t>[]>(kHintBuckets);
    for (size_t i = 0; i < kHintBuckets; i++) h[i].store(0, std::memory_order_relaxed);
  }
}

size_t PubSubRegistry::HintHash(std::string_view channel) {
  return std::hash<std::string_view>{}(channel);
}

bool PubSubRegistry::MayHaveReceivers(PubSubKind kind, size_t hint_hash) const {
  // Acquire pairs with the seq_cst increments in Subscribe(): once a subscriber's confirmation
  // has reached its client, any publish that starts afterwards sees the raised counter.
  if (kind == PubSubKind::kChannel && pattern_hint_.load(std::memory_order_acquire) > 0) {
    return true;
  }
  return hints(kind)[hint_hash & (kHintBuckets - 1)].load(std::memory_order_acquire) > 0;
}

void PubSubRegistry::HintAdd(PubSubKind kind, std::string_view name, int delta) {
  if (kind == PubSubKind::kPattern) {
    pattern_hint_.fetch_add(static_cast<uint32_t>(delta));
  } else {
    hints(kind)[HintHash(name) & (kHintBuckets - 1)].fetch_add(static_cast<uint32_t>(delta));
  }
}

bool PubSubRegistry::MatchPattern(const std::string& pattern, std::string_view channel) {
  return shard::GlobMatch(pattern, channel);
}

const PubSubRegistry::Subscribers* PubSubRegistry::FindSubs(const Map& m, std::string_view name) {
  auto it = m.find(AV(name));
  return it == m.end() ? nullptr : &it->second;
}

bool PubSubRegistry::Subscribe(PubSubKind kind, std::string_view name, Connection* c,
                               PubSubClient& state) {
  auto& names = state.names_[static_cast<int>(kind)];
  if (names.contains(AV(name))) return false;
  bool was_subscribed = state.subscribed();
  names.emplace(name);
  auto [it, created] = map(kind).try_emplace(AV(name));
  it->second.insert(c);
  if (created) HintAdd(kind, name, 1);
  if (!was_subscribed) num_clients_++;
  return true;
}

bool PubSubRegistry::Unsubscribe(PubSubKind kind, std::string_view name, Connection* c,
                                 PubSubClient& state) {
  auto& names = state.names_[static_cast<int>(kind)];
  auto nit = names.find(AV(name));
  if (nit == names.end()) return false;
  names.erase(nit);
  Map& m = map(kind);
  auto it = m.find(AV(name));
  if (it != m.end()) {
    it->second.erase(c);
    if (it->second.empty()) {
      m.erase(it);
      HintAdd(kind, name, -1);
    }
  }
  if (!state.subscribed()) num_clients_--;
  return true;
}

void PubSubRegistry::UnsubscribeAll(Connection* c, PubSubClient& state) {
  for (int k = 0; k < kNumPubSubKinds; k++) {
    auto kind = static_cast<PubSubKind>(k);
    // Unsubscribe() erases from the set being walked: take the names first.
    std::vector<std::string> names(state.names_[k].begin(), state.names_[k].end());
    for (const std::string& name : names) Unsubscribe(kind, name, c, state);
  }
}

size_t PubSubRegistry::NumSubscribers(PubSubKind kind, std::string_view name) const {
  const Subscribers* subs = FindSubs(map(kind), name);
  return subs ? subs->size() : 0;
}

// --- messages ---

void EncodePubSubMessage(std::string* out, int resp, PubSubKind kind, const std::string* pattern,
                         std::string_view channel, std::string_view payload) {
  protocol::ReplyBuilder rb(out, resp);
  if (pattern) {
    rb.PushHeader(4);
    rb.Bulk("pmessage");
    rb.Bulk(*pattern);
  } else {
    rb.PushHeader(3);
    rb.Bulk(kind == PubSubKind::kShard ? "smessage" : "message");
  }
  rb.Bulk(channel);
  rb.Bulk(payload);
}

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

PubSubInfoPart CollectPubSubInfo(const PubSubRegistry& registry) {
  PubSubInfoPart part;
  for (int k = 0; k < kNumPubSubKinds; k++) {
    auto kind = static_cast<PubSubKind>(k);
    part.names[k].reserve(registry.num_names(kind));
    registry.ForEachName(kind, [&](const std::string& name) { part.names[k].push_back(name); });
  }
  part.clients = static_cast<int64_t>(registry.num_clients());
  return part;
}

PubSubInfoTotals MergePubSubInfo(const std::vector<PubSubInfoPart>& parts) {
  int64_t counts[kNumPubSubKinds] = {};
  for (int k = 0; k < kNumPubSubKinds; k++) {
    absl::flat_hash_set<absl::string_view> distinct;
    for (const PubSubInfoPart& p : parts) {
      for (const std::string& name : p.names[k]) distinct.insert(name);
    }
    counts[k] = static_cast<int64_t>(distinct.size());
  }
  PubSubInfoTotals t;
  t.channels = counts[static_cast<int>(PubSubKind::kChannel)];
  t.patterns = counts[static_cast<int>(PubSubKind::kPattern)];
  t.shard_channels = counts[static_cast<int>(PubSubKind::kShard)];
  for (const PubSubInfoPart& p : parts) t.clients += p.clients;
  return t;
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
  if (pending_.empty()) {
    EncodePubSubMessage(&out_, resp_, kind, pattern, channel, payload);
    AfterOutput();
  } else {
    // Behind replies still being computed elsewhere: a slot keeps the order.
    uint64_t seq = ReserveSlot();
    EncodePubSubMessage(&pending_.back().data, resp_, kind, pattern, channel, payload);
    CompleteSlot(seq, std::move(pending_.back().data));
  }
  return !OverOutputLimit();
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

}  // namespace deadbolt::server
