// Unit tests for lockload's histogram, reply scanner, request writer and key placement.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tools/lockload/lockload_histogram.h"
#include "tools/lockload/lockload_options.h"
#include "tools/lockload/lockload_request.h"
#include "tools/lockload/lockload_resp.h"

namespace deadbolt::lockload {
namespace {

// --- histogram ------------------------------------------------------------------------------

TEST(LatencyHistogramTest, EmptyIsZero) {
  auto h = std::make_unique<LatencyHistogram>();
  EXPECT_EQ(h->count(), 0u);
  EXPECT_EQ(h->ValueAtQuantile(0.5), 0u);
  EXPECT_EQ(h->max(), 0u);
  EXPECT_EQ(h->min(), 0u);
}

TEST(LatencyHistogramTest, BucketsAreContiguousAndCoverEveryValue) {
  // Every bucket's lowest value maps back to it, and buckets tile the range without gaps.
  for (size_t i = 0; i + 1 < LatencyHistogram::kBucketCount; ++i) {
    ASSERT_EQ(LatencyHistogram::IndexOf(LatencyHistogram::LowestIn(i)), i) << i;
    ASSERT_EQ(LatencyHistogram::IndexOf(LatencyHistogram::HighestIn(i)), i) << i;
    ASSERT_EQ(LatencyHistogram::HighestIn(i) + 1, LatencyHistogram::LowestIn(i + 1)) << i;
  }
  EXPECT_EQ(LatencyHistogram::IndexOf(LatencyHistogram::kMaxTrackable),
            LatencyHistogram::kBucketCount - 1);
  EXPECT_EQ(LatencyHistogram::IndexOf(UINT64_MAX), LatencyHistogram::kBucketCount - 1);
}

TEST(LatencyHistogramTest, SmallValuesAreExactLargeOnesWithinAFifthOfAPercent) {
  for (uint64_t v = 0; v < 1024; ++v) {
    size_t i = LatencyHistogram::IndexOf(v);
    EXPECT_EQ(LatencyHistogram::LowestIn(i), v);
    EXPECT_EQ(LatencyHistogram::HighestIn(i), v);
  }
  for (uint64_t v = 1024; v < (uint64_t{1} << 39); v = v * 3 + 7) {
    size_t i = LatencyHistogram::IndexOf(v);
    uint64_t lo = LatencyHistogram::LowestIn(i), hi = LatencyHistogram::HighestIn(i);
    EXPECT_LE(lo, v);
    EXPECT_GE(hi, v);
    EXPECT_LE(static_cast<double>(hi - lo), static_cast<double>(v) / 512.0) << v;
  }
}

TEST(LatencyHistogramTest, QuantilesOfAUniformSpread) {
  auto h = std::make_unique<LatencyHistogram>();
  // 1..100000 us in ns.
  for (uint64_t us = 1; us <= 100000; ++us) h->Record(us * 1000);
  EXPECT_EQ(h->count(), 100000u);
  EXPECT_EQ(h->min(), 1000u);
  EXPECT_EQ(h->max(), 100000000u);
  auto near = [](double got, double want) { return std::abs(got - want) <= want * 0.002 + 1; };
  EXPECT_TRUE(near(h->ValueAtQuantile(0.5), 50000e3)) << h->ValueAtQuantile(0.5);
  EXPECT_TRUE(near(h->ValueAtQuantile(0.99), 99000e3)) << h->ValueAtQuantile(0.99);
  EXPECT_TRUE(near(h->ValueAtQuantile(0.999), 99900e3)) << h->ValueAtQuantile(0.999);
  EXPECT_EQ(h->ValueAtQuantile(1.0), 100000000u);  // capped at the exact max
  EXPECT_NEAR(h->mean(), 50000.5e3, 1);
}

TEST(LatencyHistogramTest, RecordWithCountAndMerge) {
  auto a = std::make_unique<LatencyHistogram>();
  auto b = std::make_unique<LatencyHistogram>();
  a->Record(100, 98);  // 98 samples of 100 ns
  b->Record(5000, 1);
  b->Record(7'000'000, 1);
  a->Merge(*b);
  EXPECT_EQ(a->count(), 100u);
  EXPECT_EQ(a->ValueAtQuantile(0.5), 100u);
  EXPECT_EQ(a->ValueAtQuantile(0.98), 100u);
  uint64_t p99 = a->ValueAtQuantile(0.99);
  EXPECT_GE(p99, 5000u);
  EXPECT_LE(p99, 5010u);
  EXPECT_EQ(a->max(), 7'000'000u);
  EXPECT_EQ(a->min(), 100u);
  a->Reset();
  EXPECT_EQ(a->count(), 0u);
  EXPECT_EQ(a->ValueAtQuantile(0.99), 0u);
}

TEST(LatencyHistogramTest, HugeValuesLandInTheLastBucketButMaxStaysExact) {
  auto h = std::make_unique<LatencyHistogram>();
  h->Record(uint64_t{1} << 50);
  EXPECT_EQ(h->count(), 1u);
  EXPECT_EQ(h->max(), uint64_t{1} << 50);
  EXPECT_EQ(h->ValueAtQuantile(0.5), LatencyHistogram::kMaxTrackable);
}

// --- reply scanner --------------------------------------------------------------------------

int64_t Scan(const std::string& s) { return ScanReply(s); }

TEST(ScanReplyTest, SimpleTypes) {
  EXPECT_EQ(Scan("+OK\r\n"), 5);
  EXPECT_EQ(Scan("-ERR unknown command 'DELIFEQ'\r\n"), 32);
  EXPECT_EQ(Scan(":1\r\n"), 4);
  EXPECT_EQ(Scan(":-12\r\n"), 6);
  EXPECT_EQ(Scan("_\r\n"), 3);
  EXPECT_EQ(Scan(",3.14\r\n"), 7);
  EXPECT_EQ(Scan("#t\r\n"), 4);
  EXPECT_EQ(Scan("(12345678901234567890\r\n"), 23);
  EXPECT_EQ(Scan("+\r\n"), 3);  // empty simple string
}

TEST(ScanReplyTest, BulkStrings) {
  EXPECT_EQ(Scan("$-1\r\n"), 5);
  EXPECT_EQ(Scan("$0\r\n\r\n"), 6);
  EXPECT_EQ(Scan("$3\r\nabc\r\n"), 9);
  EXPECT_EQ(Scan("$4\r\na\r\nb\r\n"), 10);  // CRLF inside the payload is payload
  EXPECT_EQ(Scan("!5\r\nERR x\r\n"), 11);
  EXPECT_EQ(Scan("=7\r\ntxt:abc\r\n"), 13);
}

TEST(ScanReplyTest, Aggregates) {
  EXPECT_EQ(Scan("*-1\r\n"), 5);
  EXPECT_EQ(Scan("*0\r\n"), 4);
  EXPECT_EQ(Scan("*2\r\n$3\r\nfoo\r\n:1\r\n"), 17);
  EXPECT_EQ(Scan("*2\r\n*1\r\n+a\r\n*0\r\n"), 16);
  EXPECT_EQ(Scan("%1\r\n+k\r\n:1\r\n"), 12);
  EXPECT_EQ(Scan("~2\r\n+a\r\n+b\r\n"), 12);
  EXPECT_EQ(Scan(">2\r\n+a\r\n+b\r\n"), 12);
  // An attribute comes before the reply it describes and is part of it.
  EXPECT_EQ(Scan("|1\r\n+k\r\n+v\r\n:5\r\n"), 16);
}

TEST(ScanReplyTest, StopsAtTheFirstReply) {
  const std::string two = "+OK\r\n$-1\r\n";
  EXPECT_EQ(Scan(two), 5);
  EXPECT_EQ(ScanReply(two.data() + 5, two.size() - 5), 5);
}

TEST(ScanReplyTest, EveryProperPrefixIsIncomplete) {
  const std::vector<std::string> replies = {
      "+OK\r\n",
      "$-1\r\n",
      "$5\r\nhello\r\n",
      "*2\r\n$1\r\na\r\n%1\r\n+k\r\n:2\r\n",
      "|1\r\n+k\r\n+v\r\n$2\r\nhi\r\n",
      "_\r\n",
  };
  for (const std::string& r : replies) {
    for (size_t n = 0; n < r.size(); ++n) {
      EXPECT_EQ(ScanReply(r.data(), n), 0) << r << " cut at " << n;
    }
    EXPECT_EQ(Scan(r), static_cast<int64_t>(r.size())) << r;
  }
}

TEST(ScanReplyTest, MalformedInput) {
  EXPECT_EQ(Scan("OK\r\n"), -1);          // no type byte
  EXPECT_EQ(Scan("+OK\n"), -1);           // bare LF
  EXPECT_EQ(Scan("$abc\r\n"), -1);        // bad length
  EXPECT_EQ(Scan("$-2\r\n"), -1);         // negative length
  EXPECT_EQ(Scan("$3\r\nabcd\r\n"), -1);  // payload longer than its length
  EXPECT_EQ(Scan("*x\r\n"), -1);
  EXPECT_EQ(Scan("\r\n"), -1);
}

TEST(ClassifyReplyTest, Types) {
  EXPECT_EQ(ClassifyReply("+OK\r\n"), ReplyType::kOk);
  EXPECT_EQ(ClassifyReply("+PONG\r\n"), ReplyType::kSimple);
  EXPECT_EQ(ClassifyReply("-ERR x\r\n"), ReplyType::kError);
  EXPECT_EQ(ClassifyReply(":0\r\n"), ReplyType::kInt0);
  EXPECT_EQ(ClassifyReply(":1\r\n"), ReplyType::kInt1);
  EXPECT_EQ(ClassifyReply(":10\r\n"), ReplyType::kInt);
  EXPECT_EQ(ClassifyReply("$-1\r\n"), ReplyType::kNull);
  EXPECT_EQ(ClassifyReply("_\r\n"), ReplyType::kNull);
  EXPECT_EQ(ClassifyReply("$2\r\nhi\r\n"), ReplyType::kBulk);
  EXPECT_EQ(ClassifyReply("*1\r\n:1\r\n"), ReplyType::kArray);
  EXPECT_EQ(ClassifyReply("*-1\r\n"), ReplyType::kNull);
}

// --- requests -------------------------------------------------------------------------------

// Splits one RESP command (array of bulks) into its arguments; empty on malformed input.
std::vector<std::string> Args(std::string_view cmd) {
  std::vector<std::string> out;
  if (ScanReply(cmd.data(), cmd.size()) != static_cast<int64_t>(cmd.size())) return {};
  size_t nl = cmd.find("\r\n");
  size_t pos = nl + 2;
  int n = std::stoi(std::string(cmd.substr(1, nl - 1)));
  for (int i = 0; i < n; ++i) {
    size_t e = cmd.find("\r\n", pos);
    size_t len = std::stoul(std::string(cmd.substr(pos + 1, e - pos - 1)));
    out.emplace_back(cmd.substr(e + 2, len));
    pos = e + 2 + len + 2;
  }
  return out;
}

std::string Render(const RequestSet& reqs, ReqKind kind, uint32_t key, const std::string& tok,
                   uint32_t key2 = 0) {
  std::string buf(reqs.MaxRequestSize(), '\0');
  std::string suffix = reqs.Suffix(kind, tok);
  char* end = reqs.Write(buf.data(), kind, key, suffix, key2);
  buf.resize(static_cast<size_t>(end - buf.data()));
  return buf;
}

TEST(RequestSetTest, WritesEachCommand) {
  Options o;
  o.ttl_ms = 5000;
  Rng rng(1);
  const std::string tok = MakeToken(&rng);
  ASSERT_EQ(tok.size(), kTokenLen);
  EXPECT_EQ(tok[8], '-');
  EXPECT_EQ(tok[14], '4');

  {
    RequestSet reqs(o, "");
    using V = std::vector<std::string>;
    EXPECT_EQ(Args(Render(reqs, ReqKind::kAcquire, 42, tok)),
              (V{"SET", "lock:42", tok, "NX", "PX", "5000"}));
    EXPECT_EQ(Args(Render(reqs, ReqKind::kRelease, 0, tok)), (V{"DELIFEQ", "lock:0", tok}));
    EXPECT_EQ(Args(Render(reqs, ReqKind::kExtend, 7, tok)), (V{"PEXPIRE", "lock:7", "5000"}));
    EXPECT_EQ(Args(Render(reqs, ReqKind::kGet, 4294967295u, tok)), (V{"GET", "lock:4294967295"}));
    EXPECT_EQ(Args(Render(reqs, ReqKind::kPing, 3, tok)), (V{"PING"}));
    EXPECT_TRUE(reqs.Expected(ReqKind::kAcquire, ReplyType::kNull));
    EXPECT_FALSE(reqs.Expected(ReqKind::kAcquire, ReplyType::kError));
    EXPECT_FALSE(reqs.Expected(ReqKind::kRelease, ReplyType::kOk));
  }
  o.release = ReleaseMode::kDelEx;
  o.extend = ExtendMode::kSetXX;
  o.prefix = std::string(120, 'p');  // a three-digit key length
  {
    RequestSet reqs(o, "");
    using V = std::vector<std::string>;
    const std::string key = o.prefix + "9";
    EXPECT_EQ(Args(Render(reqs, ReqKind::kRelease, 9, tok)), (V{"DELEX", key, "IFEQ", tok}));
    EXPECT_EQ(Args(Render(reqs, ReqKind::kExtend, 9, tok)),
              (V{"SET", key, tok, "XX", "PX", "5000"}));
  }
  o.prefix = "lock:";
  o.release = ReleaseMode::kEvalSha;
  const std::string sha(40, 'a');
  RequestSet reqs(o, sha);
  EXPECT_EQ(Args(Render(reqs, ReqKind::kRelease, 5, tok)),
            (std::vector<std::string>{"EVALSHA", sha, "1", "lock:5", tok}));
}

TEST(RequestSetTest, KeyDistributions) {
  Options o;
  o.keyspace = 1000;
  Rng rng(7);
  o.keys = KeyDist::kHot;
  EXPECT_EQ(RequestSet(o, "").PickKey(&rng), 0u);
  o.keys = KeyDist::kUniform;
  {
    RequestSet reqs(o, "");
    std::vector<int> hits(1000);
    for (int i = 0; i < 100000; ++i) ++hits[reqs.PickKey(&rng)];
    EXPECT_GT(*std::min_element(hits.begin(), hits.end()), 40);
    EXPECT_LT(*std::max_element(hits.begin(), hits.end()), 170);
  }
  o.keys = KeyDist::kZipf;
  {
    RequestSet reqs(o, "");
    std::vector<int> hits(1000);
    for (int i = 0; i < 100000; ++i) {
      uint32_t k = reqs.PickKey(&rng);
      ASSERT_LT(k, 1000u);
      ++hits[k];
    }
    // theta 0.99 over 1000 keys: key 0 gets about 1/zeta(1000) = 13%, and ranks fall off.
    EXPECT_GT(hits[0], 10000);
    EXPECT_LT(hits[0], 16000);
    EXPECT_GT(hits[0], hits[1]);
    EXPECT_GT(hits[1], hits[10]);
    EXPECT_GT(hits[10], hits[500]);
  }
}

// --- mset: two keys, placed by shard --------------------------------------------------------

TEST(KeySlotTest, MatchesRedisCluster) {
  // The values shard/base/slot_test.cc checks against Redis Cluster.
  EXPECT_EQ(KeySlot("123456789"), 12739);
  EXPECT_EQ(KeySlot("foo"), 12182);
  EXPECT_EQ(KeySlot("bar"), 5061);
  EXPECT_EQ(KeySlot(""), 0);
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("abc{foo}def"), KeySlot("foo"));
  EXPECT_NE(KeySlot("foo{}{bar}"), KeySlot("bar"));  // an empty tag: the whole key is hashed
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), KeySlot("{bar"));
}

TEST(RequestSetTest, WritesMsetWithTwoKeys) {
  Options o;
  o.workload = Workload::kMset;
  Rng rng(3);
  const std::string tok = MakeToken(&rng);
  RequestSet reqs(o, "");
  ASSERT_EQ(reqs.error(), "");
  EXPECT_EQ(reqs.primary(), ReqKind::kMset);
  EXPECT_TRUE(reqs.two_keys(ReqKind::kMset));
  EXPECT_FALSE(reqs.two_keys(ReqKind::kSet));
  EXPECT_EQ(Args(Render(reqs, ReqKind::kMset, 12, tok, 4294967295u)),
            (std::vector<std::string>{"MSET", "lock:12", tok, "lock:4294967295", tok}));
  EXPECT_TRUE(reqs.Expected(ReqKind::kMset, ReplyType::kOk));
  EXPECT_FALSE(reqs.Expected(ReqKind::kMset, ReplyType::kNull));
}

// Every pair that `mset` picks over `draws` requests: {shard of key 1, shard of key 2} counts.
std::vector<std::vector<int>> MsetShardPairs(const Options& o, int draws) {
  RequestSet reqs(o, "");
  EXPECT_EQ(reqs.error(), "");
  Rng rng(11);
  std::vector<std::vector<int>> pairs(o.shards, std::vector<int>(o.shards));
  for (int i = 0; i < draws; ++i) {
    const uint32_t a = reqs.PickKey(&rng);
    const uint32_t b = reqs.PickPartner(a, &rng);
    EXPECT_LT(a, o.keyspace);
    EXPECT_LT(b, o.keyspace);
    // ShardOf agrees with the slot of the key as written.
    const int sa = KeySlot(o.prefix + std::to_string(a)) * o.shards / 16384;
    const int sb = KeySlot(o.prefix + std::to_string(b)) * o.shards / 16384;
    EXPECT_EQ(reqs.ShardOf(a), sa);
    EXPECT_EQ(reqs.ShardOf(b), sb);
    ++pairs[sa][sb];
  }
  return pairs;
}

TEST(RequestSetTest, MsetCrossPutsTheKeysOnDifferentShards) {
  Options o;
  o.workload = Workload::kMset;
  o.keyspace = 1000;
  o.mset = MsetKeys::kCross;
  auto p = MsetShardPairs(o, 20000);
  EXPECT_EQ(p[0][0], 0);
  EXPECT_EQ(p[1][1], 0);
  EXPECT_GT(p[0][1], 9000);  // each shard comes first about half the time
  EXPECT_GT(p[1][0], 9000);
  o.shards = 3;
  p = MsetShardPairs(o, 30000);
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      if (a == b) {
        EXPECT_EQ(p[a][b], 0);
      } else {
        EXPECT_GT(p[a][b], 4000) << a << " " << b;  // 5000 expected
      }
    }
  }
}

TEST(RequestSetTest, MsetSameKeepsBothKeysOnOneShard) {
  Options o;
  o.workload = Workload::kMset;
  o.keyspace = 1000;
  o.mset = MsetKeys::kSame;
  auto p = MsetShardPairs(o, 20000);
  EXPECT_EQ(p[0][1], 0);
  EXPECT_EQ(p[1][0], 0);
  EXPECT_GT(p[0][0], 9000);
  EXPECT_GT(p[1][1], 9000);
  // A prefix with a hash tag puts every key on one shard: same still works, cross cannot.
  o.prefix = "{t0}k:";
  const int shard = KeySlot("t0") * 2 / 16384;
  p = MsetShardPairs(o, 1000);
  EXPECT_EQ(p[shard][shard], 1000);
  o.mset = MsetKeys::kCross;
  EXPECT_NE(RequestSet(o, "").error(), "");
  o.prefix = "lock:";
  o.shards = 1;
  EXPECT_NE(RequestSet(o, "").error(), "");
}

TEST(OptionsTest, ParsesFlagsAndValues) {
  std::vector<std::string> a = {"lockload", "-w",     "cycle",  "--release=evalsha",
                                "-c8",      "-P",     "64",     "--rate",
                                "20k",      "--json", "--keys", "zipf",
                                "-n",       "1m"};
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  Options o;
  bool help = false;
  EXPECT_EQ(ParseOptions(static_cast<int>(argv.size()), argv.data(), &o, &help), "");
  EXPECT_EQ(o.workload, Workload::kCycle);
  EXPECT_EQ(o.release, ReleaseMode::kEvalSha);
  EXPECT_EQ(o.connections, 8);
  EXPECT_EQ(o.pipeline, 64);
  EXPECT_EQ(o.rate, 20000);
  EXPECT_TRUE(o.json);
  EXPECT_EQ(o.keys, KeyDist::kZipf);
  EXPECT_EQ(o.requests, 1000000u);
  EXPECT_EQ(o.duration_s, 0);

  std::vector<std::string> bad = {"lockload", "-w", "nope"};
  argv.clear();
  for (auto& s : bad) argv.push_back(s.data());
  Options o2;
  EXPECT_NE(ParseOptions(static_cast<int>(argv.size()), argv.data(), &o2, &help), "");

  std::vector<std::string> mset = {"lockload", "-w", "mset", "--mset", "same", "--shards", "3"};
  argv.clear();
  for (auto& s : mset) argv.push_back(s.data());
  Options o3;
  EXPECT_EQ(ParseOptions(static_cast<int>(argv.size()), argv.data(), &o3, &help), "");
  EXPECT_EQ(o3.workload, Workload::kMset);
  EXPECT_EQ(o3.mset, MsetKeys::kSame);
  EXPECT_EQ(o3.shards, 3);
  std::vector<std::string> zipf = {"lockload", "-w", "mset", "--keys", "zipf"};
  argv.clear();
  for (auto& s : zipf) argv.push_back(s.data());
  Options o4;
  EXPECT_NE(ParseOptions(static_cast<int>(argv.size()), argv.data(), &o4, &help), "");
}

TEST(OptionsTest, ConnPrefixesSplitOnCommas) {
  Options o;
  bool help = false;
  std::vector<std::string> a = {"lockload", "--conn-prefixes", "{a}lock:,{b}lock:,x:"};
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  EXPECT_EQ(ParseOptions(static_cast<int>(argv.size()), argv.data(), &o, &help), "");
  EXPECT_EQ(o.conn_prefixes, (std::vector<std::string>{"{a}lock:", "{b}lock:", "x:"}));
  for (const char* bad : {"a,,b", ",a", "a,"}) {
    std::vector<std::string> b = {"lockload", "--conn-prefixes", bad};
    argv.clear();
    for (auto& s : b) argv.push_back(s.data());
    Options ob;
    EXPECT_NE(ParseOptions(static_cast<int>(argv.size()), argv.data(), &ob, &help), "") << bad;
  }
  std::vector<std::string> m = {"lockload", "-w", "mset", "--conn-prefixes", "a:,b:"};
  argv.clear();
  for (auto& s : m) argv.push_back(s.data());
  Options om;
  EXPECT_NE(ParseOptions(static_cast<int>(argv.size()), argv.data(), &om, &help), "");
}

TEST(RequestSetTest, EachConnectionWritesItsOwnPrefix) {
  Options o;
  o.conn_prefixes = {"{t0}lock:", "{a-much-longer-tag-than-the-default}lock:"};
  const RequestSet reqs(o, "");
  ASSERT_EQ(reqs.num_prefixes(), 2u);
  EXPECT_EQ(reqs.prefix(0), "{t0}lock:");
  EXPECT_EQ(reqs.prefix(3), o.conn_prefixes[1]);
  const std::string tok(kTokenLen, 'x');
  const std::string suffix = reqs.Suffix(ReqKind::kAcquire, tok);
  for (size_t conn = 0; conn < 4; ++conn) {
    std::string buf(reqs.MaxRequestSize(), '\0');
    char* end =
        reqs.Write(buf.data(), ReqKind::kAcquire, 4294967295u, suffix, 0, reqs.prefix(conn));
    ASSERT_LE(static_cast<size_t>(end - buf.data()), buf.size());
    buf.resize(static_cast<size_t>(end - buf.data()));
    const auto args = Args(buf);
    ASSERT_EQ(args.size(), 6u);
    EXPECT_EQ(args[1], o.conn_prefixes[conn % 2] + "4294967295");
  }
}

// The semaphore's pair: two well-formed commands back to back, the trim window below the
// clock, the member the token with the clock's last 12 bits in its last three digits, and the
// whole within MaxRequestSize (a three-digit key length and a clock past 10 digits included).
TEST(RequestSetTest, WritesTheSemaphorePair) {
  Options o;
  o.workload = Workload::kSemaphore;
  o.ttl_ms = 10'000;
  Rng rng(3);
  const std::string tok = MakeToken(&rng);
  for (const std::string& prefix : {std::string("sem:"), std::string(120, 's')}) {
    o.prefix = prefix;
    RequestSet reqs(o, "");
    EXPECT_TRUE(reqs.pairs());
    EXPECT_EQ(reqs.primary(), ReqKind::kZTrim);
    for (int64_t clock : {int64_t{1'700'000'000'123}, int64_t{9'000'000'000'000'000'000}}) {
      std::string buf(reqs.MaxRequestSize(), '\0');
      char* end = reqs.WriteSemaphorePair(buf.data(), 4294967295u, prefix, clock, tok);
      ASSERT_LE(static_cast<size_t>(end - buf.data()), buf.size());
      buf.resize(static_cast<size_t>(end - buf.data()));
      const int64_t first = ScanReply(buf.data(), buf.size());
      ASSERT_GT(first, 0);
      const std::string key = prefix + "4294967295";
      EXPECT_EQ(Args(std::string_view(buf).substr(0, static_cast<size_t>(first))),
                (std::vector<std::string>{"ZREMRANGEBYSCORE", key, "-inf",
                                          std::to_string(clock - 10'000)}));
      std::string member = tok;
      const char* hex = "0123456789abcdef";
      member[33] = hex[(clock >> 8) & 15];
      member[34] = hex[(clock >> 4) & 15];
      member[35] = hex[clock & 15];
      EXPECT_EQ(Args(std::string_view(buf).substr(static_cast<size_t>(first))),
                (std::vector<std::string>{"ZADD", key, std::to_string(clock), member}));
    }
    EXPECT_TRUE(reqs.Expected(ReqKind::kZTrim, ReplyType::kInt));
    EXPECT_TRUE(reqs.Expected(ReqKind::kZAdd, ReplyType::kInt1));
    EXPECT_FALSE(reqs.Expected(ReqKind::kZAdd, ReplyType::kError));
  }
  // Other workloads are not pairs.
  o.workload = Workload::kAcquire;
  EXPECT_FALSE(RequestSet(o, "").pairs());
}

}  // namespace
}  // namespace deadbolt::lockload
