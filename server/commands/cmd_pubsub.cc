// Pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE SSUBSCRIBE SUNSUBSCRIBE PUBLISH
// SPUBLISH PUBSUB. The registry and delivery are in server/core/pubsub.*.

#include <absl/container/flat_hash_set.h>

#include <atomic>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/base/error_strings.h"
#include "server/base/str_util.h"
#include "server/cmdtable/command.h"
#include "server/commands/cmd_util.h"
#include "server/core/connection.h"
#include "server/core/reactor.h"
#include "server/core/server.h"
#include "server/pubsub/registry.h"
#include "shard/base/glob.h"

namespace deadbolt::server {
namespace {

using protocol::ReplyBuilder;

constexpr const char* kSubscribeWord[] = {"subscribe", "psubscribe", "ssubscribe"};
constexpr const char* kUnsubscribeWord[] = {"unsubscribe", "punsubscribe", "sunsubscribe"};

int Index(PubSubKind k) { return static_cast<int>(k); }

// --- (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE ---

// One confirmation per name: [subscribe, name, count] (a push in RESP3).
void Subscribe(PubSubKind kind, CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  PubSubClient& state = conn.EnsurePubSubState();
  PubSubRegistry& registry = conn.reactor().pubsub();
  for (size_t i = 1; i < args.size(); i++) {
    registry.Subscribe(kind, args[i], &conn, state);
    rb.PushHeader(3);
    rb.Bulk(kSubscribeWord[Index(kind)]);
    rb.Bulk(args[i]);
    rb.Integer(static_cast<int64_t>(state.ReplyCount(kind)));
  }
}

void UnsubscribeReply(PubSubKind kind, const std::string_view* name, size_t count,
                      ReplyBuilder& rb) {
  rb.PushHeader(3);
  rb.Bulk(kUnsubscribeWord[Index(kind)]);
  if (name) {
    rb.Bulk(*name);
  } else {
    rb.Null();
  }
  rb.Integer(static_cast<int64_t>(count));
}

// With names: one reply per name, subscribed or not. Without: one per subscription of this
// kind, or a single [unsubscribe, nil, count] when there is none.
void Unsubscribe(PubSubKind kind, CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  PubSubClient* state = conn.pubsub_state();
  PubSubRegistry& registry = conn.reactor().pubsub();
  if (args.size() > 1) {
    for (size_t i = 1; i < args.size(); i++) {
      if (state) registry.Unsubscribe(kind, args[i], &conn, *state);
      UnsubscribeReply(kind, &args[i], state ? state->ReplyCount(kind) : 0, rb);
    }
    return;
  }
  if (!state || state->count(kind) == 0) {
    UnsubscribeReply(kind, nullptr, state ? state->ReplyCount(kind) : 0, rb);
    return;
  }
  std::vector<std::string> names(state->names(kind).begin(), state->names(kind).end());
  for (const std::string& name : names) {
    registry.Unsubscribe(kind, name, &conn, *state);
    std::string_view view = name;
    UnsubscribeReply(kind, &view, state->ReplyCount(kind), rb);
  }
}

void SubscribeCmd(CmdArgs a, Connection& c, ReplyBuilder& rb) {
  Subscribe(PubSubKind::kChannel, a, c, rb);
}
void PSubscribeCmd(CmdArgs a, Connection& c, ReplyBuilder& rb) {
  Subscribe(PubSubKind::kPattern, a, c, rb);
}
void SSubscribeCmd(CmdArgs a, Connection& c, ReplyBuilder& rb) {
  Subscribe(PubSubKind::kShard, a, c, rb);
}
void UnsubscribeCmd(CmdArgs a, Connection& c, ReplyBuilder& rb) {
  Unsubscribe(PubSubKind::kChannel, a, c, rb);
}
void PUnsubscribeCmd(CmdArgs a, Connection& c, ReplyBuilder& rb) {
  Unsubscribe(PubSubKind::kPattern, a, c, rb);
}
void SUnsubscribeCmd(CmdArgs a, Connection& c, ReplyBuilder& rb) {
  Unsubscribe(PubSubKind::kShard, a, c, rb);
}

// --- PUBLISH, SPUBLISH ---

// A message on its way to other reactors, and the receivers counted so far.
struct Publication {
  Publication(std::string_view c, std::string_view p, int64_t local)
      : channel(c), payload(p), receivers(local) {}
  std::string channel;
  std::string payload;
  std::atomic<int64_t> receivers;
};

// Delivers here at once, then on every other reactor whose hints say it may have a receiver
// (none: no message at all), and replies the receivers on all of them. Messages from one
// reactor to another keep their order, so one publisher's messages stay in order.
void Publish(PubSubKind kind, CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  Reactor& r = conn.reactor();
  Server& server = r.server();
  std::string_view channel = args[1];
  std::string_view payload = args[2];
  size_t hash = PubSubRegistry::HintHash(channel);
  std::vector<int> remote;
  for (int i = 0; i < server.num_shards(); i++) {
    if (i != r.id() && server.reactor(i).pubsub().MayHaveReceivers(kind, hash)) {
      remote.push_back(i);
    }
  }
  int64_t local = DeliverHere(r, kind, channel, payload, &conn, &rb);
  if (remote.empty()) {
    rb.Integer(local);
    return;
  }
  auto pub = std::make_shared<Publication>(channel, payload, local);
  conn.FanOut(
      remote,
      [pub, kind](ShardCtx&) {
        int64_t n = DeliverHere(*Reactor::Current(), kind, pub->channel, pub->payload);
        pub->receivers.fetch_add(n, std::memory_order_relaxed);
      },
      [pub](ReplyBuilder& rb) { rb.Integer(pub->receivers.load(std::memory_order_relaxed)); });
}

void PublishCmd(CmdArgs a, Connection& c, ReplyBuilder& rb) {
  Publish(PubSubKind::kChannel, a, c, rb);
}
void SPublishCmd(CmdArgs a, Connection& c, ReplyBuilder& rb) {
  Publish(PubSubKind::kShard, a, c, rb);
}

// --- PUBSUB ---

// Runs fn on every reactor's registry and hands the results, indexed by reactor, to finish.
template <typename T>
void Gather(Connection& conn, std::function<T(const PubSubRegistry&)> fn,
            absl::AnyInvocable<void(std::vector<PerShard<T>>&, ReplyBuilder&)> finish) {
  const Server& server = conn.reactor().server();
  auto results = std::make_shared<std::vector<PerShard<T>>>(server.num_shards());
  conn.FanOut(
      AllShards(server),
      [results, fn](ShardCtx&) {
        Reactor* r = Reactor::Current();
        (*results)[r->id()].v = fn(r->pubsub());
      },
      [results, finish = std::move(finish)](ReplyBuilder& rb) mutable { finish(*results, rb); });
}

// PUBSUB CHANNELS / SHARDCHANNELS [pattern]: the distinct names with a subscriber.
void Channels(PubSubKind kind, CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  if (args.size() > 3) {
    rb.Error(errors::SubcommandSyntax(args[1], "PUBSUB"));
    return;
  }
  bool all = args.size() == 2;
  std::string pattern = all ? std::string() : std::string(args[2]);
  Gather<std::vector<std::string>>(
      conn,
      [kind, all, pattern](const PubSubRegistry& reg) {
        std::vector<std::string> names;
        reg.ForEachName(kind, [&](const std::string& name) {
          if (all || shard::GlobMatch(pattern, name)) names.push_back(name);
        });
        return names;
      },
      [](std::vector<PerShard<std::vector<std::string>>>& parts, ReplyBuilder& rb) {
        absl::flat_hash_set<absl::string_view> seen;
        std::vector<absl::string_view> names;
        for (auto& part : parts) {
          for (const std::string& name : part.v) {
            if (seen.insert(name).second) names.push_back(name);
          }
        }
        rb.ArrayHeader(names.size());
        for (absl::string_view name : names) rb.Bulk(std::string_view(name.data(), name.size()));
      });
}

// PUBSUB NUMSUB / SHARDNUMSUB [name ...]: [name, subscribers, ...] summed over reactors.
void NumSub(PubSubKind kind, CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  auto names = std::make_shared<std::vector<std::string>>(args.begin() + 2, args.end());
  Gather<std::vector<int64_t>>(
      conn,
      [kind, names](const PubSubRegistry& reg) {
        std::vector<int64_t> counts;
        counts.reserve(names->size());
        for (const std::string& name : *names) {
          counts.push_back(static_cast<int64_t>(reg.NumSubscribers(kind, name)));
        }
        return counts;
      },
      [names](std::vector<PerShard<std::vector<int64_t>>>& parts, ReplyBuilder& rb) {
        rb.ArrayHeader(names->size() * 2);
        for (size_t i = 0; i < names->size(); i++) {
          int64_t total = 0;
          for (auto& part : parts) total += part.v[i];
          rb.Bulk((*names)[i]);
          rb.Integer(total);
        }
      });
}

// PUBSUB NUMPAT: distinct patterns with a subscriber, server-wide.
void NumPat(Connection& conn) {
  Gather<std::vector<std::string>>(
      conn,
      [](const PubSubRegistry& reg) {
        std::vector<std::string> names;
        reg.ForEachName(PubSubKind::kPattern,
                        [&](const std::string& name) { names.push_back(name); });
        return names;
      },
      [](std::vector<PerShard<std::vector<std::string>>>& parts, ReplyBuilder& rb) {
        absl::flat_hash_set<absl::string_view> seen;
        for (auto& part : parts) {
          for (const std::string& name : part.v) seen.insert(name);
        }
        rb.Integer(static_cast<int64_t>(seen.size()));
      });
}

void PubSubHelp(ReplyBuilder& rb) {
  static const char* kLines[] = {
      "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "CHANNELS [<pattern>]",
      "    Channels with at least one subscriber, matching <pattern> if given.",
      "NUMPAT",
      "    Number of patterns with at least one subscriber.",
      "NUMSUB [<channel> ...]",
      "    Subscribers of each <channel> (pattern subscribers not counted).",
      "SHARDCHANNELS [<pattern>]",
      "    Shard channels with at least one subscriber, matching <pattern> if given.",
      "SHARDNUMSUB [<shardchannel> ...]",
      "    Subscribers of each shard channel.",
      "HELP",
      "    Print this help.",
  };
  rb.ArrayHeader(std::size(kLines));
  for (const char* line : kLines) rb.SimpleString(line);
}

void PubSubCmd(CmdArgs args, Connection& conn, ReplyBuilder& rb) {
  struct Sub {
    const char* name;
    int arity;
  };
  static const Sub kSubs[] = {{"channels", -2},      {"numsub", -2},      {"numpat", 2},
                              {"shardchannels", -2}, {"shardnumsub", -2}, {"help", 2}};
  std::string sub = AsciiLower(args[1]);
  const Sub* found = nullptr;
  for (const Sub& s : kSubs) {
    if (sub == s.name) found = &s;
  }
  if (!found) {
    rb.Error(errors::UnknownSubcommand(args[1], "PUBSUB"));
    return;
  }
  int a = found->arity;
  if (a >= 0 ? args.size() != static_cast<size_t>(a) : args.size() < static_cast<size_t>(-a)) {
    rb.Error(errors::WrongArity("pubsub|" + sub));
    return;
  }
  if (sub == "channels") {
    Channels(PubSubKind::kChannel, args, conn, rb);
  } else if (sub == "shardchannels") {
    Channels(PubSubKind::kShard, args, conn, rb);
  } else if (sub == "numsub") {
    NumSub(PubSubKind::kChannel, args, conn, rb);
  } else if (sub == "shardnumsub") {
    NumSub(PubSubKind::kShard, args, conn, rb);
  } else if (sub == "numpat") {
    NumPat(conn);
  } else {
    PubSubHelp(rb);
  }
}

// --- registration ---

CommandSpec Spec(std::string name, int arity, uint32_t flags, ConnHandler h,
                 std::vector<std::string> acl, int first_key = 0, int last_key = 0,
                 int key_step = 0) {
  return ConnCommand(std::move(name), arity, flags, h, std::move(acl), first_key, last_key,
                     key_step);
}

}  // namespace

void RegisterPubSubCommands(CommandTable* t) {
  const uint32_t kSub = kPubSub | kNoScript | kLoading | kStale;
  const uint32_t kPub = kPubSub | kLoading | kStale | kFast;
  const std::vector<std::string> kSlow = {"@pubsub", "@slow"};
  const std::vector<std::string> kFastAcl = {"@pubsub", "@fast"};
  t->Add(Spec("subscribe", -2, kSub, SubscribeCmd, kSlow));
  t->Add(Spec("unsubscribe", -1, kSub, UnsubscribeCmd, kSlow));
  t->Add(Spec("psubscribe", -2, kSub, PSubscribeCmd, kSlow));
  t->Add(Spec("punsubscribe", -1, kSub, PUnsubscribeCmd, kSlow));
  t->Add(Spec("publish", 3, kPub, PublishCmd, kFastAcl));
  // Shard channels are reported as keys, as Redis 7 does (cluster clients route by them); they
  // run as conn_handlers on the connection's reactor wherever their slot lives.
  t->Add(Spec("ssubscribe", -2, kSub, SSubscribeCmd, kSlow, 1, -1, 1));
  t->Add(Spec("sunsubscribe", -1, kSub, SUnsubscribeCmd, kSlow, 1, -1, 1));
  t->Add(Spec("spublish", 3, kPub, SPublishCmd, kFastAcl, 1, 1, 1));
  CommandSpec pubsub = Spec("pubsub", -2, 0, PubSubCmd, {"@slow"});
  const std::pair<const char*, int> kSubs[] = {{"help", 2},           {"channels", -2},
                                               {"numsub", -2},        {"shardnumsub", -2},
                                               {"shardchannels", -2}, {"numpat", 2}};
  for (auto& [name, arity] : kSubs) {
    bool help = std::string_view(name) == "help";
    pubsub.subcommands.push_back(Spec(std::string("pubsub|") + name, arity,
                                      help ? kLoading | kStale : kPubSub | kLoading | kStale,
                                      nullptr, help ? std::vector<std::string>{"@slow"} : kSlow));
  }
  t->Add(std::move(pubsub));
}

}  // namespace deadbolt::server
