#include "server/pubsub/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace deadbolt::server {
namespace {

// The registry never dereferences its Connection pointers, so the tests use the addresses of
// plain bytes as stand-ins.
struct FakeConns {
  alignas(8) char bytes[16];
  Connection* operator[](int i) { return reinterpret_cast<Connection*>(&bytes[i]); }
};

using Receiver = std::pair<Connection*, std::string>;  // pattern, or "" for a channel subscriber

std::vector<Receiver> Receivers(const PubSubRegistry& reg, PubSubKind kind,
                                std::string_view channel, int64_t* counted = nullptr) {
  std::vector<Receiver> out;
  int64_t n = reg.ForEachReceiver(kind, channel, [&](Connection* c, const std::string* pattern) {
    out.emplace_back(c, pattern ? *pattern : "");
    return true;
  });
  if (counted) *counted = n;
  std::sort(out.begin(), out.end());
  return out;
}

bool MayHave(const PubSubRegistry& reg, PubSubKind kind, std::string_view channel) {
  return reg.MayHaveReceivers(kind, PubSubRegistry::HintHash(channel));
}

TEST(PubSubRegistryTest, EmptyHasNoReceivers) {
  PubSubRegistry reg;
  EXPECT_FALSE(MayHave(reg, PubSubKind::kChannel, "a"));
  EXPECT_FALSE(MayHave(reg, PubSubKind::kShard, "a"));
  EXPECT_TRUE(Receivers(reg, PubSubKind::kChannel, "a").empty());
  EXPECT_EQ(reg.num_clients(), 0u);
}

TEST(PubSubRegistryTest, SubscribeCountsLikeRedis) {
  PubSubRegistry reg;
  FakeConns fc;
  PubSubClient s;
  EXPECT_TRUE(reg.Subscribe(PubSubKind::kChannel, "a", fc[0], s));
  EXPECT_TRUE(reg.Subscribe(PubSubKind::kChannel, "b", fc[0], s));
  EXPECT_FALSE(reg.Subscribe(PubSubKind::kChannel, "a", fc[0], s));  // again: no change
  EXPECT_EQ(s.ReplyCount(PubSubKind::kChannel), 2u);
  EXPECT_TRUE(reg.Subscribe(PubSubKind::kPattern, "p*", fc[0], s));
  // Channels and patterns share one count; shard channels have their own.
  EXPECT_EQ(s.ReplyCount(PubSubKind::kChannel), 3u);
  EXPECT_EQ(s.ReplyCount(PubSubKind::kPattern), 3u);
  EXPECT_EQ(s.ReplyCount(PubSubKind::kShard), 0u);
  EXPECT_TRUE(reg.Subscribe(PubSubKind::kShard, "s", fc[0], s));
  EXPECT_EQ(s.ReplyCount(PubSubKind::kShard), 1u);
  EXPECT_EQ(s.ReplyCount(PubSubKind::kChannel), 3u);
  EXPECT_EQ(s.total(), 4u);
  EXPECT_TRUE(s.subscribed());
  EXPECT_EQ(reg.num_clients(), 1u);
  EXPECT_EQ(reg.num_names(PubSubKind::kChannel), 2u);
  EXPECT_EQ(reg.num_names(PubSubKind::kPattern), 1u);
  EXPECT_EQ(reg.num_names(PubSubKind::kShard), 1u);

  EXPECT_TRUE(reg.Unsubscribe(PubSubKind::kChannel, "a", fc[0], s));
  EXPECT_FALSE(reg.Unsubscribe(PubSubKind::kChannel, "a", fc[0], s));
  EXPECT_FALSE(reg.Unsubscribe(PubSubKind::kChannel, "never", fc[0], s));
  EXPECT_EQ(s.ReplyCount(PubSubKind::kChannel), 2u);
  EXPECT_EQ(reg.num_names(PubSubKind::kChannel), 1u);
}

TEST(PubSubRegistryTest, SeveralSubscribersPerChannel) {
  PubSubRegistry reg;
  FakeConns fc;
  PubSubClient s0, s1, s2;
  reg.Subscribe(PubSubKind::kChannel, "lock", fc[0], s0);
  reg.Subscribe(PubSubKind::kChannel, "lock", fc[1], s1);
  reg.Subscribe(PubSubKind::kChannel, "other", fc[2], s2);
  EXPECT_EQ(reg.NumSubscribers(PubSubKind::kChannel, "lock"), 2u);
  EXPECT_EQ(reg.NumSubscribers(PubSubKind::kChannel, "other"), 1u);
  EXPECT_EQ(reg.NumSubscribers(PubSubKind::kChannel, "none"), 0u);
  EXPECT_EQ(reg.num_clients(), 3u);
  int64_t n = 0;
  auto got = Receivers(reg, PubSubKind::kChannel, "lock", &n);
  EXPECT_EQ(n, 2);
  std::vector<Receiver> want = {{fc[0], ""}, {fc[1], ""}};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  // The namespaces are separate: PUBLISH doesn't reach shard subscribers and vice versa.
  EXPECT_TRUE(Receivers(reg, PubSubKind::kShard, "lock").empty());
}

TEST(PubSubRegistryTest, PatternsMatchWithGlob) {
  PubSubRegistry reg;
  FakeConns fc;
  PubSubClient s0, s1;
  reg.Subscribe(PubSubKind::kPattern, "news.*", fc[0], s0);
  reg.Subscribe(PubSubKind::kPattern, "news.[ab]?", fc[1], s1);
  reg.Subscribe(PubSubKind::kChannel, "news.a1", fc[0], s0);
  int64_t n = 0;
  auto got = Receivers(reg, PubSubKind::kChannel, "news.a1", &n);
  // fc[0] receives twice (channel and pattern), fc[1] once, as in Redis.
  EXPECT_EQ(n, 3);
  std::vector<Receiver> want = {{fc[0], ""}, {fc[0], "news.*"}, {fc[1], "news.[ab]?"}};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  got = Receivers(reg, PubSubKind::kChannel, "news.c1", &n);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(got, (std::vector<Receiver>{{fc[0], "news.*"}}));
  EXPECT_TRUE(Receivers(reg, PubSubKind::kChannel, "sport").empty());
  // Patterns never apply to shard channels.
  EXPECT_TRUE(Receivers(reg, PubSubKind::kShard, "news.a1").empty());
  // Any pattern at all makes every channel a possible one (the hint can't match globs).
  EXPECT_TRUE(MayHave(reg, PubSubKind::kChannel, "sport"));
  EXPECT_FALSE(MayHave(reg, PubSubKind::kShard, "sport"));
}

TEST(PubSubRegistryTest, ReceiverCallbackDecidesWhatCounts) {
  PubSubRegistry reg;
  FakeConns fc;
  PubSubClient s0, s1;
  reg.Subscribe(PubSubKind::kChannel, "c", fc[0], s0);
  reg.Subscribe(PubSubKind::kChannel, "c", fc[1], s1);
  int64_t n = reg.ForEachReceiver(PubSubKind::kChannel, "c",
                                  [&](Connection* c, const std::string*) { return c == fc[1]; });
  EXPECT_EQ(n, 1);  // a closing connection is skipped and not counted
}

TEST(PubSubRegistryTest, HintsFollowSubscriptions) {
  PubSubRegistry reg;
  FakeConns fc;
  PubSubClient s0, s1;
  reg.Subscribe(PubSubKind::kChannel, "lock:1", fc[0], s0);
  reg.Subscribe(PubSubKind::kChannel, "lock:1", fc[1], s1);
  reg.Subscribe(PubSubKind::kShard, "slock", fc[0], s0);
  EXPECT_TRUE(MayHave(reg, PubSubKind::kChannel, "lock:1"));
  EXPECT_TRUE(MayHave(reg, PubSubKind::kShard, "slock"));
  // Most other names fall in other buckets (the hint is exact when nothing collides).
  int false_positives = 0;
  for (int i = 0; i < 1000; i++) {
    false_positives += MayHave(reg, PubSubKind::kChannel, "x" + std::to_string(i)) ? 1 : 0;
  }
  EXPECT_LT(false_positives, 10);
  reg.Unsubscribe(PubSubKind::kChannel, "lock:1", fc[0], s0);
  EXPECT_TRUE(MayHave(reg, PubSubKind::kChannel, "lock:1"));  // fc[1] is still there
  reg.Unsubscribe(PubSubKind::kChannel, "lock:1", fc[1], s1);
  EXPECT_FALSE(MayHave(reg, PubSubKind::kChannel, "lock:1"));
  reg.Unsubscribe(PubSubKind::kShard, "slock", fc[0], s0);
  EXPECT_FALSE(MayHave(reg, PubSubKind::kShard, "slock"));
}

TEST(PubSubRegistryTest, UnsubscribeAllCleansEverything) {
  PubSubRegistry reg;
  FakeConns fc;
  PubSubClient s0, s1;
  for (int i = 0; i < 100; i++) {
    reg.Subscribe(PubSubKind::kChannel, "c" + std::to_string(i), fc[0], s0);
    reg.Subscribe(PubSubKind::kShard, "s" + std::to_string(i), fc[0], s0);
  }
  reg.Subscribe(PubSubKind::kPattern, "*", fc[0], s0);
  reg.Subscribe(PubSubKind::kChannel, "c1", fc[1], s1);
  EXPECT_EQ(reg.num_clients(), 2u);
  reg.UnsubscribeAll(fc[0], s0);
  EXPECT_EQ(s0.total(), 0u);
  EXPECT_FALSE(s0.subscribed());
  EXPECT_EQ(reg.num_clients(), 1u);
  EXPECT_EQ(reg.num_names(PubSubKind::kChannel), 1u);  // c1, still held by fc[1]
  EXPECT_EQ(reg.num_names(PubSubKind::kPattern), 0u);
  EXPECT_EQ(reg.num_names(PubSubKind::kShard), 0u);
  for (int i = 0; i < 100; i++) {
    std::string c = "c" + std::to_string(i);
    EXPECT_EQ(MayHave(reg, PubSubKind::kChannel, c), i == 1) << c;
    EXPECT_FALSE(MayHave(reg, PubSubKind::kShard, "s" + std::to_string(i)));
  }
  reg.UnsubscribeAll(fc[1], s1);
  EXPECT_EQ(reg.num_clients(), 0u);
  EXPECT_EQ(reg.num_names(PubSubKind::kChannel), 0u);
  reg.UnsubscribeAll(fc[1], s1);  // twice is harmless
  EXPECT_EQ(reg.num_clients(), 0u);
}

TEST(PubSubRegistryTest, ClientCountsOnceAcrossKinds) {
  PubSubRegistry reg;
  FakeConns fc;
  PubSubClient s;
  reg.Subscribe(PubSubKind::kShard, "s", fc[0], s);
  reg.Subscribe(PubSubKind::kChannel, "c", fc[0], s);
  EXPECT_EQ(reg.num_clients(), 1u);
  reg.Unsubscribe(PubSubKind::kChannel, "c", fc[0], s);
  EXPECT_EQ(reg.num_clients(), 1u);  // still subscribed to a shard channel
  EXPECT_TRUE(s.subscribed());
  reg.Unsubscribe(PubSubKind::kShard, "s", fc[0], s);
  EXPECT_EQ(reg.num_clients(), 0u);
  EXPECT_FALSE(s.subscribed());
}

TEST(PubSubRegistryTest, EmptyAndBinaryNames) {
  PubSubRegistry reg;
  FakeConns fc;
  PubSubClient s;
  std::string bin("a\0b\r\n", 5);
  reg.Subscribe(PubSubKind::kChannel, bin, fc[0], s);
  reg.Subscribe(PubSubKind::kChannel, "", fc[0], s);
  EXPECT_EQ(reg.NumSubscribers(PubSubKind::kChannel, bin), 1u);
  EXPECT_EQ(reg.NumSubscribers(PubSubKind::kChannel, std::string("a", 1)), 0u);
  EXPECT_EQ(reg.NumSubscribers(PubSubKind::kChannel, ""), 1u);
  EXPECT_EQ(Receivers(reg, PubSubKind::kChannel, bin).size(), 1u);
}

TEST(PubSubMessageTest, Resp2AndResp3Encodings) {
  std::string out;
  EncodePubSubMessage(&out, 2, PubSubKind::kChannel, nullptr, "ch", "hi");
  EXPECT_EQ(out, "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
  out.clear();
  EncodePubSubMessage(&out, 3, PubSubKind::kChannel, nullptr, "ch", "hi");
  EXPECT_EQ(out, ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n");
  out.clear();
  std::string pattern = "c*";
  EncodePubSubMessage(&out, 2, PubSubKind::kChannel, &pattern, "ch", "");
  EXPECT_EQ(out, "*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$0\r\n\r\n");
  out.clear();
  EncodePubSubMessage(&out, 3, PubSubKind::kShard, nullptr, "s", "x");
  EXPECT_EQ(out, ">3\r\n$8\r\nsmessage\r\n$1\r\ns\r\n$1\r\nx\r\n");
}

TEST(PubSubInfoTest, MergeCountsDistinctNames) {
  PubSubRegistry r0, r1;
  FakeConns fc;
  PubSubClient a, b, c;
  r0.Subscribe(PubSubKind::kChannel, "x", fc[0], a);
  r0.Subscribe(PubSubKind::kChannel, "y", fc[0], a);
  r0.Subscribe(PubSubKind::kPattern, "p*", fc[1], b);
  r1.Subscribe(PubSubKind::kChannel, "x", fc[2], c);  // the same channel on another reactor
  r1.Subscribe(PubSubKind::kPattern, "p*", fc[2], c);
  r1.Subscribe(PubSubKind::kShard, "s", fc[2], c);
  PubSubInfoTotals t = MergePubSubInfo({CollectPubSubInfo(r0), CollectPubSubInfo(r1)});
  EXPECT_EQ(t.channels, 2);
  EXPECT_EQ(t.patterns, 1);
  EXPECT_EQ(t.shard_channels, 1);
  EXPECT_EQ(t.clients, 3);
}

}  // namespace
}  // namespace deadbolt::server
