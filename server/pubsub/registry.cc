#include "server/pubsub/registry.h"

#include <absl/container/flat_hash_set.h>

#include <functional>
#include <utility>

#include "server/base/str_util.h"
#include "shard/base/glob.h"

namespace deadbolt::server {

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

// --- INFO ---

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

}  // namespace deadbolt::server
