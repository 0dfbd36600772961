#pragma once
// Pub/sub: one reactor's subscription registry and one connection's subscriptions. Delivery
// (DeliverHere, PublishNoWait) is the reactors' (server/core/reactor.h).
//
// Each reactor keeps its own registry of the subscriptions of its own connections; nothing is
// shared. A PUBLISH delivers on its own reactor inline and on each other reactor that may have a
// receiver through a message (Reactor::Send keeps messages from one reactor to another in order,
// so one publisher's messages on a channel arrive in the order it sent them). Whether another
// reactor may have a receiver is read from that reactor's hint counters (atomics), so a publish to
// a channel nobody listens to elsewhere costs no message at all.

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_builder.h"

namespace deadbolt::server {

class Connection;  // never dereferenced here

// The three namespaces of pub/sub. A PUBLISH reaches kChannel subscribers and matching kPattern
// subscribers; an SPUBLISH reaches only kShard subscribers.
enum class PubSubKind : uint8_t { kChannel = 0, kPattern = 1, kShard = 2 };
inline constexpr int kNumPubSubKinds = 3;

// Owned by its Connection (so by the connection's reactor thread): the names the connection is
// subscribed to, by kind. The registry keeps it in step with its own maps.
class PubSubClient {
 public:
  const absl::flat_hash_set<std::string>& names(PubSubKind k) const {
    return names_[static_cast<int>(k)];
  }
  size_t count(PubSubKind k) const { return names(k).size(); }
  // The count (P)SUBSCRIBE / (P)UNSUBSCRIBE replies carry: channels plus patterns. S(UN)SUBSCRIBE
  // replies carry the shard channel count alone.
  size_t ReplyCount(PubSubKind k) const {
    return k == PubSubKind::kShard ? count(PubSubKind::kShard)
                                   : count(PubSubKind::kChannel) + count(PubSubKind::kPattern);
  }
  // Subscribed to anything: in RESP2 only (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT and RESET
  // are allowed then.
  bool subscribed() const { return total() > 0; }
  size_t total() const { return names_[0].size() + names_[1].size() + names_[2].size(); }

 private:
  friend class PubSubRegistry;
  absl::flat_hash_set<std::string> names_[kNumPubSubKinds];
};

// Owned by one reactor thread (a member of its Reactor): the subscriptions of that reactor's
// connections. Only the owner calls its methods, except MayHaveReceivers(), which any reactor
// calls to decide whether a message must be sent here.
//
// Subscribers are Connection pointers the registry never dereferences (the unit test uses fake
// ones); a connection leaves the registry (UnsubscribeAll) before it is destroyed.
class PubSubRegistry {
 public:
  PubSubRegistry();
  PubSubRegistry(const PubSubRegistry&) = delete;
  PubSubRegistry& operator=(const PubSubRegistry&) = delete;

  // Adds c to `name`'s subscribers; false if it was subscribed already. The hint counters are
  // raised before this returns, so a publisher on another reactor that runs after the client
  // has seen its confirmation sends the message here.
  bool Subscribe(PubSubKind kind, std::string_view name, Connection* c, PubSubClient& state);
  // False if c was not subscribed to `name`.
  bool Unsubscribe(PubSubKind kind, std::string_view name, Connection* c, PubSubClient& state);
  // Drops every subscription of c without replying (RESET, connection close, output limit).
  void UnsubscribeAll(Connection* c, PubSubClient& state);

  // Any thread. The hash MayHaveReceivers() takes for a channel name.
  static size_t HintHash(std::string_view channel);
  // Any thread. False only if this reactor has no receiver for a message on a channel of this
  // hash: kChannel (channel subscribers, or any pattern at all) or kShard. True may be a false
  // positive (hash collisions, a subscriber leaving meanwhile).
  bool MayHaveReceivers(PubSubKind kind, size_t hint_hash) const;

  // Calls fn(Connection*, const std::string* pattern) once per receiver of a message on
  // `channel`: each subscriber of the channel (pattern null), then, for kChannel, each subscriber
  // of each matching pattern (a connection subscribed to the channel and to two matching patterns
  // receives three messages, as in Redis). fn returns whether it counts as a receiver. fn must
  // not change the registry. Returns the receivers counted.
  template <typename F>
  int64_t ForEachReceiver(PubSubKind kind, std::string_view channel, F&& fn) const;

  // Subscribers of one channel, pattern or shard channel on this reactor.
  size_t NumSubscribers(PubSubKind kind, std::string_view name) const;
  // Names of this kind with at least one subscriber here, in no particular order.
  size_t num_names(PubSubKind kind) const { return map(kind).size(); }
  template <typename F>
  void ForEachName(PubSubKind kind, F&& fn) const {
    for (const auto& [name, subs] : map(kind)) fn(name);
  }
  // Connections subscribed to anything here.
  size_t num_clients() const { return num_clients_; }

 private:
  using Subscribers = absl::flat_hash_set<Connection*>;
  using Map = absl::flat_hash_map<std::string, Subscribers>;
  static constexpr size_t kHintBuckets = 4096;  // power of two

  const Map& map(PubSubKind k) const { return maps_[static_cast<int>(k)]; }
  Map& map(PubSubKind k) { return maps_[static_cast<int>(k)]; }
  std::atomic<uint32_t>* hints(PubSubKind k) const {
    return hints_[k == PubSubKind::kShard ? 1 : 0].get();
  }
  static bool MatchPattern(const std::string& pattern, std::string_view channel);
  static const Subscribers* FindSubs(const Map& m, std::string_view name);
  void HintAdd(PubSubKind kind, std::string_view name, int delta);

  Map maps_[kNumPubSubKinds];
  // Hints, written by the owner and read by any reactor: per bucket of channel-name hashes, how
  // many channel (index 0) and shard channel (index 1) names with a subscriber here fall in it;
  // and how many patterns have a subscriber here.
  std::unique_ptr<std::atomic<uint32_t>[]> hints_[2];
  std::atomic<uint32_t> pattern_hint_{0};
  size_t num_clients_ = 0;
};

template <typename F>
int64_t PubSubRegistry::ForEachReceiver(PubSubKind kind, std::string_view channel, F&& fn) const {
  int64_t n = 0;
  if (const Subscribers* subs = FindSubs(map(kind), channel)) {
    for (Connection* c : *subs) n += fn(c, static_cast<const std::string*>(nullptr)) ? 1 : 0;
  }
  if (kind != PubSubKind::kChannel) return n;
  for (const auto& [pattern, subs] : map(PubSubKind::kPattern)) {
    if (!MatchPattern(pattern, channel)) continue;
    for (Connection* c : subs) n += fn(c, &pattern) ? 1 : 0;
  }
  return n;
}

// Appends one message as Redis sends it: a RESP3 push, or in RESP2 an array —
// [message, channel, payload], [smessage, channel, payload] or [pmessage, pattern, channel,
// payload] when `pattern` is not null.
void EncodePubSubMessage(std::string* out, int resp, PubSubKind kind, const std::string* pattern,
                         std::string_view channel, std::string_view payload);

// INFO's pub/sub fields. Each reactor contributes its part (on its own thread); Merge counts
// distinct names across reactors, as Redis's pubsub_channels / pubsub_patterns /
// pubsubshard_channels are server-wide distinct counts.
struct PubSubInfoPart {
  std::vector<std::string> names[kNumPubSubKinds];
  int64_t clients = 0;
};
struct PubSubInfoTotals {
  int64_t channels = 0;        // pubsub_channels
  int64_t patterns = 0;        // pubsub_patterns
  int64_t shard_channels = 0;  // pubsubshard_channels
  int64_t clients = 0;         // pubsub_clients
};
PubSubInfoPart CollectPubSubInfo(const PubSubRegistry& registry);
PubSubInfoTotals MergePubSubInfo(const std::vector<PubSubInfoPart>& parts);

}  // namespace deadbolt::server
