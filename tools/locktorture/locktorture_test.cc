// Unit tests for locktorture's checker (fed synthetic check-ins, check-outs and grants), its key
// placement, reply helpers, options, and the connection's deadlines.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tools/locktorture/locktorture_checker.h"
#include "tools/locktorture/locktorture_conn.h"
#include "tools/locktorture/locktorture_options.h"

namespace deadbolt::locktorture {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kLease = 2000 * kMs;
constexpr int64_t kT0 = 1'000'000 * kMs;  // an arbitrary "now" far from zero

Holder H(int client, int64_t lease_from, uint64_t seq = 1) {
  Holder h;
  h.client = client;
  h.seq = seq;
  h.lease_from_ns = lease_from;
  return h;
}

Holder T(int client, uint64_t token, int64_t lease_from) {
  Holder h = H(client, lease_from);
  h.has_token = true;
  h.token = token;
  return h;
}

// --- overlap --------------------------------------------------------------------------------

TEST(TortureLockRecordTest, HoldersOneAfterAnotherAreFine) {
  ViolationLog log;
  LockRecord rec(0, kLease);
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(rec.CheckIn(H(i % 7, kT0 + i * kMs), kT0 + i * kMs + 10, &log));
    EXPECT_EQ(rec.inside(), 1);
    rec.CheckOut(i % 7);
    EXPECT_EQ(rec.inside(), 0);
  }
  EXPECT_EQ(log.total(), 0u);
  EXPECT_EQ(log.warnings(), 0u);
}

TEST(TortureLockRecordTest, SecondHolderInsideIsAnOverlap) {
  ViolationLog log;
  LockRecord rec(2, kLease);
  EXPECT_TRUE(rec.CheckIn(H(1, kT0), kT0 + 100, &log));
  EXPECT_FALSE(rec.CheckIn(H(2, kT0 + 50), kT0 + 200, &log));
  EXPECT_EQ(log.count(ViolationKind::kOverlap), 1u);
  ASSERT_EQ(log.first().size(), 1u);
  EXPECT_EQ(log.first()[0].lock, 2);
  EXPECT_NE(log.first()[0].detail.find("client 2"), std::string::npos);
  EXPECT_NE(log.first()[0].detail.find("client 1"), std::string::npos);
}

TEST(TortureLockRecordTest, OverlapIsSeenEvenAfterTheIntruderLeaves) {
  // A in, B in (overlap), B out, C in: A is still inside, so C overlaps too. A count of holders,
  // not a single owner slot that B's check-out would clear.
  ViolationLog log;
  LockRecord rec(0, kLease);
  rec.CheckIn(H(1, kT0), kT0 + 1, &log);
  rec.CheckIn(H(2, kT0), kT0 + 2, &log);
  rec.CheckOut(2);
  EXPECT_FALSE(rec.CheckIn(H(3, kT0), kT0 + 3, &log));
  EXPECT_EQ(log.count(ViolationKind::kOverlap), 2u);
  rec.CheckOut(1);
  rec.CheckOut(3);
  EXPECT_TRUE(rec.CheckIn(H(4, kT0), kT0 + 4, &log));
  EXPECT_EQ(log.total(), 2u);
}

TEST(TortureLockRecordTest, HolderPastItsLeaseIsAWarningNotAViolation) {
  // Client 1 stalled for longer than its lease: a correct server may give the lock away.
  ViolationLog log;
  LockRecord rec(0, kLease);
  rec.CheckIn(H(1, kT0), kT0 + 1, &log);
  EXPECT_TRUE(rec.CheckIn(H(2, kT0 + kLease), kT0 + kLease + 1, &log));
  EXPECT_EQ(log.total(), 0u);
  EXPECT_EQ(log.warnings(), 1u);
  // Within the margin of the lease's end counts as possibly expired too (clock granularity).
  rec.CheckOut(1);
  rec.CheckOut(2);
  rec.CheckIn(H(3, kT0), kT0, &log);
  EXPECT_TRUE(rec.CheckIn(H(4, kT0), kT0 + kLease - 5 * kMs, &log));
  EXPECT_EQ(log.warnings(), 2u);
}

TEST(TortureLockRecordTest, RenewalKeepsTheHolderLeased) {
  ViolationLog log;
  LockRecord rec(0, kLease);
  rec.CheckIn(H(1, kT0), kT0 + 1, &log);
  rec.Renewed(1, kT0 + 1500 * kMs);
  EXPECT_FALSE(rec.CheckIn(H(2, kT0 + 2100 * kMs), kT0 + 2100 * kMs, &log));
  EXPECT_EQ(log.count(ViolationKind::kOverlap), 1u);
  EXPECT_EQ(log.warnings(), 0u);
}

// --- fencing tokens -------------------------------------------------------------------------

TEST(TortureLockRecordTest, TokensMustGrow) {
  ViolationLog log;
  LockRecord rec(0, kLease);
  uint64_t tokens[] = {1, 2, 5, 9, 10};
  for (uint64_t t : tokens) {
    EXPECT_TRUE(rec.CheckIn(T(1, t, kT0), kT0 + 1, &log));
    rec.CheckOut(1);
  }
  EXPECT_FALSE(rec.CheckIn(T(2, 10, kT0), kT0 + 1, &log));  // equal
  rec.CheckOut(2);
  EXPECT_FALSE(rec.CheckIn(T(3, 7, kT0), kT0 + 1, &log));  // smaller
  rec.CheckOut(3);
  EXPECT_TRUE(rec.CheckIn(T(4, 11, kT0), kT0 + 1, &log));  // compared with the highest, 10
  rec.CheckOut(4);
  EXPECT_EQ(log.count(ViolationKind::kTokenOrder), 2u);
  EXPECT_EQ(log.count(ViolationKind::kOverlap), 0u);
  EXPECT_NE(log.first()[0].detail.find("token 10"), std::string::npos);
}

TEST(TortureLockRecordTest, TokensArePerLock) {
  ViolationLog log;
  LockRecord a(0, kLease), b(1, kLease);
  EXPECT_TRUE(a.CheckIn(T(1, 50, kT0), kT0, &log));
  EXPECT_TRUE(b.CheckIn(T(2, 3, kT0), kT0, &log));
  EXPECT_EQ(log.total(), 0u);
}

TEST(TortureLockRecordTest, StaleTokenFromAStalledHolderIsAWarning) {
  // Client 1 got token 5 but stalled past its lease before checking in; client 2 got 6 meanwhile.
  ViolationLog log;
  LockRecord rec(0, kLease);
  rec.CheckIn(T(2, 6, kT0 + kLease), kT0 + kLease + 1, &log);
  rec.CheckOut(2);
  EXPECT_TRUE(rec.CheckIn(T(1, 5, kT0), kT0 + kLease + 2, &log));
  EXPECT_EQ(log.total(), 0u);
  EXPECT_EQ(log.warnings(), 1u);
}

TEST(TortureLockRecordTest, UntokenedHoldersDoNotCompareTokens) {
  ViolationLog log;
  LockRecord rec(0, kLease);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(rec.CheckIn(H(1, kT0), kT0, &log));
    rec.CheckOut(1);
  }
}

// --- lost locks -----------------------------------------------------------------------------

TEST(TortureLockRecordTest, LostLockWhileLeasedIsAViolation) {
  ViolationLog log;
  LockRecord rec(1, kLease);
  EXPECT_TRUE(rec.LostLock(H(3, kT0), "release", kT0 + 5 * kMs, &log));
  EXPECT_EQ(log.count(ViolationKind::kLostLock), 1u);
  EXPECT_FALSE(rec.LostLock(H(3, kT0), "release", kT0 + kLease, &log));
  EXPECT_EQ(log.count(ViolationKind::kLostLock), 1u);
  EXPECT_EQ(log.warnings(), 1u);
}

// --- the log --------------------------------------------------------------------------------

TEST(TortureViolationLogTest, CountsAllKeepsTheFirstFewOfEachKind) {
  ViolationLog log(2);
  for (int i = 0; i < 5; ++i) log.Add({ViolationKind::kOverlap, 0, i, "o" + std::to_string(i)});
  log.Add({ViolationKind::kLostLock, 0, 9, "l"});
  for (int i = 0; i < 3; ++i) log.Warn("w");
  EXPECT_EQ(log.total(), 6u);
  EXPECT_EQ(log.count(ViolationKind::kOverlap), 5u);
  EXPECT_EQ(log.warnings(), 3u);
  auto first = log.first();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].detail, "o0");
  EXPECT_EQ(first[1].detail, "o1");
  EXPECT_EQ(first[2].detail, "l");
  EXPECT_EQ(log.first_warnings().size(), 2u);
}

// --- grant order ----------------------------------------------------------------------------

constexpr int64_t kSlack = 2 * kMs;

Grant G(int client, uint64_t token, int64_t begin_ms) {
  Grant g;
  g.client = client;
  g.token = token;
  g.send_begin_ns = kT0 + begin_ms * kMs;
  g.send_end_ns = g.send_begin_ns + 20'000;  // a 20 us send
  g.granted_ns = g.send_end_ns;              // granted at once unless a test says otherwise
  return g;
}

TEST(TortureGrantOrderTest, FifoGrantsPass) {
  ViolationLog log;
  // Clients asked at 0, 1, 3, 10 ms and were served in that order (given in any order).
  std::vector<Grant> g = {G(3, 13, 10), G(0, 10, 0), G(2, 12, 3), G(1, 11, 1)};
  EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {}, &log), 0u);
  EXPECT_EQ(log.total(), 0u);
}

TEST(TortureGrantOrderTest, LaterAskerServedFirstIsCaught) {
  ViolationLog log;
  // Client 0 asked at 0 ms, client 1 at 5 ms; client 1 got the lock first.
  std::vector<Grant> g = {G(0, 11, 0), G(1, 10, 5)};
  EXPECT_EQ(CheckGrantOrder(4, g, kSlack, {}, &log), 1u);
  const std::vector<Violation> first = log.first();
  ASSERT_EQ(first.size(), 1u);
  const Violation& v = first[0];
  EXPECT_EQ(v.kind, ViolationKind::kOutOfOrder);
  EXPECT_EQ(v.lock, 4);
  EXPECT_NE(v.detail.find("client 1 was granted token 10"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("client 0"), std::string::npos) << v.detail;
}

TEST(TortureGrantOrderTest, InversionsWithinTheSlackAreNotBlamed) {
  // 1 ms apart: the two requests may have reached the lock's shard in either order.
  ViolationLog log;
  std::vector<Grant> g = {G(0, 11, 0), G(1, 10, 1)};
  EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {}, &log), 0u);
  // Overlapping sends: never ordered, whatever the slack.
  Grant a = G(0, 11, 0), b = G(1, 10, 0);
  b.send_begin_ns = a.send_end_ns - 1;
  EXPECT_EQ(CheckGrantOrder(0, {a, b}, 0, {}, &log), 0u);
  // With no slack, a send that returned before the other began is ordered.
  b.send_begin_ns = a.send_end_ns + 1;
  EXPECT_EQ(CheckGrantOrder(0, {a, b}, 0, {}, &log), 1u);
}

TEST(TortureGrantOrderTest, EveryJumperCountsOnce) {
  // Client 0 asked first and was starved while three later askers were served.
  ViolationLog log;
  std::vector<Grant> g = {G(0, 14, 0), G(1, 10, 5), G(2, 11, 6), G(3, 12, 9), G(4, 15, 20)};
  EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {}, &log), 3u);
  EXPECT_EQ(log.count(ViolationKind::kOutOfOrder), 3u);
}

TEST(TortureGrantOrderTest, WaiterThatGaveUpIsNotInTheListAndNotBlamed) {
  // Client 0 asked at 0 ms and timed out (no grant); later askers served in order are fine.
  ViolationLog log;
  std::vector<Grant> g = {G(1, 10, 5), G(2, 11, 6)};
  EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {}, &log), 0u);
}

TEST(TortureGrantOrderTest, RepeatedRequestsOfOneClientInterleaveWithOthers) {
  // A realistic FIFO trace: 3 clients cycling, each re-queueing after its release.
  ViolationLog log;
  std::vector<Grant> g;
  uint64_t token = 1;
  for (int round = 0; round < 50; ++round) {
    for (int c = 0; c < 3; ++c) g.push_back(G(c, token++, round * 30 + c * 10));
  }
  EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {}, &log), 0u);
  // Swap two grants 10 ms apart: one violation.
  std::swap(g[30].token, g[31].token);
  EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {}, &log), 1u);
}

TEST(TortureGrantOrderTest, StallThatCoversTheGapExcusesIt) {
  // Client 0 asked at 0 ms, client 1 at 5 ms and was served first: with a 2 ms slack the gap
  // needs a 3 ms stall to be explained.
  std::vector<Grant> g = {G(0, 11, 0), G(1, 10, 5)};
  {
    ViolationLog log;
    StallLog stalls;
    stalls.Add(kT0 + 1 * kMs, kT0 + 2 * kMs);  // 1 ms: not enough
    EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {&stalls, nullptr}, &log), 1u);
    EXPECT_EQ(log.warnings(), 0u);
  }
  {
    ViolationLog log;
    StallLog stalls;
    stalls.Add(kT0 + 1 * kMs, kT0 + 5 * kMs);  // 4 ms, between the two sends
    EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {&stalls, nullptr}, &log), 0u);
    EXPECT_EQ(log.total(), 0u);
    EXPECT_EQ(log.warnings(), 1u);
    EXPECT_NE(log.first_warnings()[0].find("stall"), std::string::npos);
  }
  {
    ViolationLog log;
    StallLog stalls;
    stalls.Add(kT0 + 150 * kMs, kT0 + 160 * kMs);  // long, but long after both sends
    EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {&stalls, nullptr}, &log), 1u);
  }
}

TEST(TortureGrantOrderTest, ServerWithoutCpuLongEnoughExcusesIt) {
  std::vector<Grant> g = {G(0, 11, 0), G(1, 10, 5)};  // a 5 ms gap, 2 ms slack
  // Two server threads sampled every ms from -2 to 12 ms; `starved` says in which 1 ms intervals
  // each waited all the time, otherwise it waited a little (0.3 ms of each ms).
  auto log_of = [](std::vector<int> starved0, std::vector<int> starved1) {
    RunDelayLog w;
    int64_t w0 = 0, w1 = 0;
    for (int ms = -2; ms <= 12; ++ms) {
      w.Add(0, kT0 + ms * kMs, w0);
      w.Add(1, kT0 + ms * kMs, w1);
      auto in = [ms](const std::vector<int>& v) {
        return std::find(v.begin(), v.end(), ms) != v.end();
      };
      w0 += in(starved0) ? kMs : 300'000;
      w1 += in(starved1) ? kMs : 300'000;
    }
    w.Finish();
    return w;
  };
  {
    // Busy but never starved: 30% waiting everywhere adds up to 3 ms in the gap, but a
    // continuous wait can span only two neighbouring intervals: 0.6 ms on each thread.
    ViolationLog log;
    RunDelayLog w = log_of({}, {});
    EXPECT_EQ(w.LongestStallIn(kT0, kT0 + 5 * kMs), 1'200'000);
    EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {nullptr, &w}, &log), 1u);
  }
  {
    // Thread 0 starved 1..3 ms and thread 1 4..5 ms, each with 0.3 ms on either side:
    // 2.6 + 1.6 = 4.2 ms >= 5 - 2.
    ViolationLog log;
    RunDelayLog w = log_of({1, 2}, {4});
    EXPECT_EQ(w.LongestStallIn(kT0, kT0 + 5 * kMs), 4'200'000);
    EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {nullptr, &w}, &log), 0u);
    EXPECT_EQ(log.warnings(), 1u);
    EXPECT_NE(log.first_warnings()[0].find("4.200 ms without a CPU"), std::string::npos)
        << log.first_warnings()[0];
  }
  {
    // Starved 7..10 ms, after B had sent: A's request may have been held up then, as long as A
    // was not granted yet...
    ViolationLog log;
    RunDelayLog w = log_of({7, 8, 9}, {});
    std::vector<Grant> late = g;
    late[0].granted_ns = kT0 + 10 * kMs;
    EXPECT_EQ(CheckGrantOrder(0, late, kSlack, {nullptr, &w}, &log), 0u);
    // ...but not if A had its grant by then (G: granted as soon as sent).
    EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {nullptr, &w}, &log), 1u);
  }
  {
    // This process's stalls count too.
    ViolationLog log;
    RunDelayLog w = log_of({}, {});
    StallLog mine;
    mine.Add(kT0 + 1 * kMs, kT0 + 9 * kMs);
    EXPECT_EQ(CheckGrantOrder(0, g, kSlack, {&mine, &w}, &log), 0u);
    EXPECT_NE(log.first_warnings()[0].find("8.000 ms scheduling stall"), std::string::npos)
        << log.first_warnings()[0];
  }
}

TEST(TortureRunDelayLogTest, ContinuousWaitsTheSamplesAllow) {
  RunDelayLog w;
  EXPECT_TRUE(w.empty());
  // Samples every 10 ns; in each interval the thread waited 2, 9, 2, 3, 10, 10, 4, 1.
  const int64_t waits[] = {2, 9, 2, 3, 10, 10, 4, 1};
  int64_t total = 0;
  w.Add(0, 0, 0);
  for (int i = 0; i < 8; ++i) w.Add(0, (i + 1) * 10, total += waits[i]);
  w.Finish();
  EXPECT_EQ(w.total(), 41);
  // Interval 1 (10..20) was starved: a wait may run from interval 0 through 2: 2 + 9 + 2.
  EXPECT_EQ(w.LongestStallIn(12, 18), 13);
  // Intervals 4-5 (40..60) starved: with their neighbours 3 + 10 + 10 + 4 = 27.
  EXPECT_EQ(w.LongestStallIn(45, 46), 27);
  EXPECT_EQ(w.LongestStallIn(0, 100), 27);
  // Only the last two intervals (60..80), neither starved: 4 + 1, or the run before (27) which
  // ends at 70 - it overlaps 75..79? No: it ends at 70.
  EXPECT_EQ(w.LongestStallIn(75, 79), 5);
  // Two threads add up.
  RunDelayLog two;
  for (int i = 0; i <= 4; ++i) {
    two.Add(0, i * 10, i * 10);  // always waiting
    two.Add(1, i * 10, i * 1);   // waiting 10%
  }
  two.Finish();
  EXPECT_EQ(two.LongestStallIn(15, 25), 40 + 2);
}

TEST(TortureStallLogTest, LongestOverlappingStall) {
  StallLog s;
  s.Add(100, 90);  // woke early: not a stall
  s.Add(1000, 1300);
  s.Add(2000, 2100);
  s.Add(5000, 5900);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.max_stall(), 900);
  EXPECT_EQ(s.MaxStallIn(0, 999), 0);
  EXPECT_EQ(s.MaxStallIn(0, 1000), 300);
  EXPECT_EQ(s.MaxStallIn(1200, 1250), 300);  // inside a stall
  EXPECT_EQ(s.MaxStallIn(1301, 2500), 100);
  EXPECT_EQ(s.MaxStallIn(1301, 5000), 900);
  EXPECT_EQ(s.MaxStallIn(6000, 9000), 0);
}

TEST(TortureStallLogTest, MergedMonitorsOverlap) {
  // Two monitors (one per CPU): their stalls interleave and overlap.
  StallLog cpu0, cpu1, all;
  cpu0.Add(1000, 1100);
  cpu0.Add(3000, 3050);
  cpu1.Add(500, 2500);  // a long one, begun before cpu0's first
  cpu1.Add(4000, 4010);
  all.Merge(cpu0);
  all.Merge(cpu1);
  EXPECT_EQ(all.size(), 4u);
  EXPECT_EQ(all.max_stall(), 2000);
  EXPECT_EQ(all.MaxStallIn(2400, 2450), 2000);
  EXPECT_EQ(all.MaxStallIn(2600, 3020), 50);
  EXPECT_EQ(all.MaxStallIn(3051, 3999), 0);
  EXPECT_EQ(all.MaxStallIn(0, 10000), 2000);
}

TEST(TortureGrantOrderTest, RecordKeepsGrants) {
  LockRecord rec(0, kLease);
  rec.AddGrant(G(0, 1, 0));
  rec.AddGrant(G(1, 2, 1));
  ASSERT_EQ(rec.grants().size(), 2u);
  EXPECT_EQ(rec.grants()[1].client, 1);
  EXPECT_EQ(rec.dropped_grants(), 0u);
}

// --- keys -----------------------------------------------------------------------------------

TEST(TortureKeySlotTest, MatchesRedisCluster) {
  EXPECT_EQ(KeySlot("123456789"), 0x31C3 % 16384);  // the CRC16/XMODEM check value
  EXPECT_EQ(KeySlot("foo"), 12182);
  EXPECT_EQ(KeySlot(""), 0);
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("foo{}{bar}"), KeySlot("foo{}{bar}"));
  EXPECT_NE(KeySlot("foo{}{bar}"), KeySlot("bar"));  // empty first tag: the whole key
  EXPECT_EQ(KeySlot("redisson_lock__channel:{lt:0}"), KeySlot("lt:0"));
}

TEST(TortureKeySlotTest, KeysLandOnTheShardAsked) {
  EXPECT_EQ(ShardOfSlot(0, 2), 0);
  EXPECT_EQ(ShardOfSlot(8191, 2), 0);
  EXPECT_EQ(ShardOfSlot(8192, 2), 1);
  EXPECT_EQ(ShardOfSlot(16383, 2), 1);
  EXPECT_EQ(ShardOfSlot(16383, 1), 0);
  for (int shards = 1; shards <= 8; ++shards) {
    for (int i = 0; i < 20; ++i) {
      std::string k = KeyOnShard("p:", i, i % shards, shards);
      EXPECT_EQ(ShardOfSlot(KeySlot(k), shards), i % shards) << k;
      EXPECT_EQ(k.rfind("p:" + std::to_string(i), 0), 0u) << k;
    }
  }
}

// --- replies --------------------------------------------------------------------------------

TEST(TortureRepliesTest, Helpers) {
  int64_t v = 0;
  EXPECT_TRUE(IntegerOf(":42\r\n", &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(IntegerOf(":-2\r\n", &v));
  EXPECT_EQ(v, -2);
  EXPECT_FALSE(IntegerOf("$2\r\n42\r\n", &v));
  EXPECT_FALSE(IntegerOf(":\r\n", &v));
  EXPECT_FALSE(IntegerOf(":99999999999999999999\r\n", &v));
  EXPECT_TRUE(IsNull("$-1\r\n"));
  EXPECT_TRUE(IsNull("*-1\r\n"));
  EXPECT_TRUE(IsNull("_\r\n"));
  EXPECT_FALSE(IsNull("$0\r\n\r\n"));
  EXPECT_TRUE(IsOk("+OK\r\n"));
  EXPECT_TRUE(IsError("-NOSCRIPT No matching script.\r\n"));
  EXPECT_EQ(Printable("+OK\r\n"), "+OK");
  EXPECT_EQ(Printable("$2\r\nab\r\n"), "$2\\r\\nab");
}

// --- options --------------------------------------------------------------------------------

std::string Parse(std::vector<std::string> args, Options* o) {
  std::vector<char*> argv;
  static char name[] = "locktorture";
  argv.push_back(name);
  for (std::string& a : args) argv.push_back(a.data());
  bool help = false;
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), o, &help);
}

TEST(TortureOptionsTest, DefaultsAndMethods) {
  Options o;
  EXPECT_EQ(Parse({}, &o), "");
  EXPECT_EQ(o.methods.size(), 3u);
  EXPECT_EQ(o.clients, 16);
  EXPECT_EQ(o.locks, 3);
  EXPECT_EQ(o.seconds, 2);
  EXPECT_EQ(Parse({"--method", "native,setnx", "-c", "4", "--seconds=0.5"}, &o), "");
  ASSERT_EQ(o.methods.size(), 2u);
  EXPECT_EQ(o.methods[0], Method::kNative);
  EXPECT_EQ(o.methods[1], Method::kSetNx);
  EXPECT_EQ(o.clients, 4);
  EXPECT_EQ(o.seconds, 0.5);
  EXPECT_EQ(Parse({"--fault", "--port", "7000"}, &o), "");
  EXPECT_TRUE(o.fault);
  EXPECT_EQ(o.port, 7000);
}

TEST(TortureOptionsTest, BadValuesAreRefused) {
  Options o;
  EXPECT_NE(Parse({"--method", "zookeeper"}, &o), "");
  EXPECT_NE(Parse({"--clients", "0"}, &o), "");
  EXPECT_NE(Parse({"--clients"}, &o), "");
  EXPECT_NE(Parse({"--seconds", "-1"}, &o), "");
  EXPECT_NE(Parse({"--prefix", "a{b}"}, &o), "");
  EXPECT_NE(Parse({"--lease", "100", "--hold", "100000"}, &o), "");
  EXPECT_NE(Parse({"--bogus"}, &o), "");
}

// --- deadlines ------------------------------------------------------------------------------

TEST(TortureConnTest, ReadFromASilentServerTimesOut) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(lfd, 4), 0);
  socklen_t len = sizeof(addr);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);

  Conn c;
  ASSERT_EQ(c.Connect("127.0.0.1", port, NowNs() + 1000 * kMs), "");
  std::string reply;
  const int64_t start = NowNs();
  std::string err = c.Call({"PING"}, &reply, start + 100 * kMs);
  const int64_t took = NowNs() - start;
  EXPECT_NE(err.find("timed out"), std::string::npos) << err;
  EXPECT_GE(took, 100 * kMs);
  EXPECT_LT(took, 2000 * kMs);
  close(lfd);
}

TEST(TortureConnTest, RefusedConnectionFails) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(lfd);  // bound, never listened, now closed: nothing listens on the port
  Conn c;
  std::string err = c.Connect("127.0.0.1", ntohs(addr.sin_port), NowNs() + 1000 * kMs);
  EXPECT_NE(err, "");
  EXPECT_FALSE(c.connected());
}

}  // namespace
}  // namespace deadbolt::locktorture
