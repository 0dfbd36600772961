// Unit tests for lockcrash's judgement of a key after a restart
// (tools/lockcrash/lockcrash_model.h), and its options.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/lockcrash/lockcrash_model.h"
#include "tools/lockcrash/lockcrash_run.h"

namespace deadbolt::lockcrash {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1'000'000 * kMs;  // an arbitrary "now" far from zero
constexpr int64_t kLease = 30'000;        // ms
constexpr int64_t kSlack = 50 * kMs;

// The state after an acquire sent at `sent` and acknowledged at `acked`.
State Held(uint64_t owner, int64_t sent, int64_t acked, uint64_t token = 0,
           OpKind by = OpKind::kAcquire) {
  State s;
  s.owner = owner;
  s.token = token;
  s.exp_lo_ns = sent + kLease * kMs;
  s.exp_hi_ns = acked + kLease * kMs;
  s.ack_ns = acked;
  s.by = by;
  return s;
}

State Free(int64_t acked) {
  State s;
  s.ack_ns = acked;
  s.by = OpKind::kRelease;
  return s;
}

// What GET + PTTL show at `at` (sent and answered within 1 ms) for a lease ending at `exp`.
Observation Shows(uint64_t owner, int64_t exp, int64_t at) {
  Observation o;
  o.exists = true;
  o.owner = owner;
  o.value = "t:" + std::to_string(owner);
  o.pttl_ms = (exp - at) / kMs;
  o.sent_ns = at;
  o.recv_ns = at + kMs;
  return o;
}

Observation ShowsFree(int64_t at) {
  Observation o;
  o.sent_ns = at;
  o.recv_ns = at + kMs;
  return o;
}

Key KeyWith(std::vector<State> history) {
  Key k;
  k.name = "k";
  k.history = std::move(history);
  return k;
}

const int64_t kCheck = kT0 + 2000 * kMs;  // when the restarted server is read

TEST(LockcrashJudge, LastAcknowledgedStateIsOk) {
  Key k = KeyWith({State{}, Held(7, kT0, kT0 + 2 * kMs)});
  EXPECT_EQ(Judge(k, Shows(7, kT0 + kMs + kLease * kMs, kCheck), kSlack).verdict, Verdict::kOk);
  Key f = KeyWith({State{}, Held(7, kT0, kT0 + kMs), Free(kT0 + 5 * kMs)});
  EXPECT_EQ(Judge(f, ShowsFree(kCheck), kSlack).verdict, Verdict::kOk);
}

TEST(LockcrashJudge, LostAcquireIsALossDatedByItsAcknowledgement) {
  Key k = KeyWith({State{}, Held(7, kT0, kT0 + 2 * kMs)});
  Judgement j = Judge(k, ShowsFree(kCheck), kSlack);
  EXPECT_EQ(j.verdict, Verdict::kLost);
  EXPECT_EQ(j.loss, LossKind::kLostAcquire);
  EXPECT_EQ(j.lost_ops, 1);
  EXPECT_EQ(j.lost_since_ns, kT0 + 2 * kMs);
}

TEST(LockcrashJudge, ResurrectedRelease) {
  State a = Held(7, kT0, kT0 + kMs);
  Key k = KeyWith({State{}, a, Free(kT0 + 9 * kMs)});
  Judgement j = Judge(k, Shows(7, kT0 + kLease * kMs, kCheck), kSlack);
  EXPECT_EQ(j.verdict, Verdict::kLost);
  EXPECT_EQ(j.loss, LossKind::kResurrected);
  EXPECT_EQ(j.lost_since_ns, kT0 + 9 * kMs);
}

TEST(LockcrashJudge, SeveralOperationsUndoneCountFromTheFirst) {
  // acquire #1, release, acquire #2, release: the server shows #1 again.
  Key k = KeyWith({State{}, Held(1, kT0, kT0 + kMs), Free(kT0 + 2 * kMs),
                   Held(2, kT0 + 3 * kMs, kT0 + 4 * kMs), Free(kT0 + 5 * kMs)});
  Judgement j = Judge(k, Shows(1, kT0 + kLease * kMs, kCheck), kSlack);
  EXPECT_EQ(j.verdict, Verdict::kLost);
  EXPECT_EQ(j.lost_ops, 3);
  EXPECT_EQ(j.lost_since_ns, kT0 + 2 * kMs);
}

TEST(LockcrashJudge, LostExtendShowsTheOlderLease) {
  State a = Held(7, kT0, kT0 + kMs);
  State e = a;  // extended 10 s later to 30 s from then
  e.exp_lo_ns = kT0 + 10'000 * kMs + kLease * kMs;
  e.exp_hi_ns = kT0 + 10'001 * kMs + kLease * kMs;
  e.ack_ns = kT0 + 10'001 * kMs;
  e.by = OpKind::kExtend;
  Key k = KeyWith({State{}, a, e});
  const int64_t at = kT0 + 11'000 * kMs;
  EXPECT_EQ(Judge(k, Shows(7, e.exp_lo_ns, at), kSlack).verdict, Verdict::kOk);
  Judgement j = Judge(k, Shows(7, a.exp_lo_ns, at), kSlack);
  EXPECT_EQ(j.verdict, Verdict::kLost);
  EXPECT_EQ(j.loss, LossKind::kLostExtend);
}

TEST(LockcrashJudge, WrongLeaseIsAViolation) {
  Key k = KeyWith({State{}, Held(7, kT0, kT0 + kMs)});
  // Longer than ever granted (a replay that extended the lock).
  EXPECT_EQ(Judge(k, Shows(7, kT0 + (kLease + 1000) * kMs, kCheck), kSlack).verdict,
            Verdict::kViolation);
  // Shorter.
  EXPECT_EQ(Judge(k, Shows(7, kT0 + (kLease - 1000) * kMs, kCheck), kSlack).verdict,
            Verdict::kViolation);
  // No TTL at all.
  Observation o = Shows(7, kT0 + kLease * kMs, kCheck);
  o.pttl_ms = -1;
  EXPECT_EQ(Judge(k, o, kSlack).verdict, Verdict::kViolation);
  // Within the slack is fine.
  EXPECT_EQ(Judge(k, Shows(7, kT0 + kLease * kMs + 30 * kMs, kCheck), kSlack).verdict,
            Verdict::kOk);
}

TEST(LockcrashJudge, ForeignOrUnknownOwnerIsAViolation) {
  Key k = KeyWith({State{}, Held(7, kT0, kT0 + kMs)});
  EXPECT_EQ(Judge(k, Shows(8, kT0 + kLease * kMs, kCheck), kSlack).verdict, Verdict::kViolation);
  Observation o = Shows(7, kT0 + kLease * kMs, kCheck);
  o.foreign = true;
  o.owner = 0;
  EXPECT_EQ(Judge(k, o, kSlack).verdict, Verdict::kViolation);
}

TEST(LockcrashJudge, InflightOperationMayGoEitherWay) {
  // Held, release in flight: free or held are both fine.
  Key k = KeyWith({State{}, Held(7, kT0, kT0 + kMs)});
  k.pending.active = true;
  k.pending.kind = OpKind::kRelease;
  k.pending.after = State{};
  EXPECT_EQ(Judge(k, ShowsFree(kCheck), kSlack).verdict, Verdict::kInflightDone);
  EXPECT_EQ(Judge(k, Shows(7, kT0 + kLease * kMs, kCheck), kSlack).verdict, Verdict::kOk);
  // Free, acquire in flight (sent at kT0 + 5 ms, the server died by kT0 + 6 ms).
  Key f = KeyWith({State{}, Held(7, kT0, kT0 + kMs), Free(kT0 + 2 * kMs)});
  f.pending.active = true;
  f.pending.kind = OpKind::kAcquire;
  f.pending.after = Held(8, kT0 + 5 * kMs, kT0 + 6 * kMs);
  EXPECT_EQ(Judge(f, Shows(8, kT0 + 5 * kMs + kLease * kMs, kCheck), kSlack).verdict,
            Verdict::kInflightDone);
  EXPECT_EQ(Judge(f, ShowsFree(kCheck), kSlack).verdict, Verdict::kOk);
  // ... but not an older state.
  EXPECT_EQ(Judge(f, Shows(7, kT0 + kLease * kMs, kCheck), kSlack).verdict, Verdict::kLost);
}

TEST(LockcrashJudge, InflightNativeAcquireNeedsANewToken) {
  Key k = KeyWith({State{}, Held(7, kT0, kT0 + kMs, 40), Free(kT0 + 2 * kMs)});
  k.native = true;
  k.max_token = 40;
  k.pending.active = true;
  k.pending.kind = OpKind::kAcquire;
  k.pending.after = Held(8, kT0 + 5 * kMs, kT0 + 6 * kMs);
  Observation o = Shows(8, kT0 + 5 * kMs + kLease * kMs, kCheck);
  o.has_token = true;
  o.holds = 1;
  o.token = 41;
  EXPECT_EQ(Judge(k, o, kSlack).verdict, Verdict::kInflightDone);
  o.token = 40;
  EXPECT_EQ(Judge(k, o, kSlack).verdict, Verdict::kViolation);
}

TEST(LockcrashJudge, NativeHoldingMustKeepItsToken) {
  Key k = KeyWith({State{}, Held(7, kT0, kT0 + kMs, 12)});
  k.native = true;
  k.max_token = 12;
  Observation o = Shows(7, kT0 + kLease * kMs, kCheck);
  o.has_token = true;
  o.token = 12;
  o.holds = 1;
  EXPECT_EQ(Judge(k, o, kSlack).verdict, Verdict::kOk);
  o.token = 13;
  EXPECT_EQ(Judge(k, o, kSlack).verdict, Verdict::kViolation);
  o.has_token = false;  // the lock record did not come back
  EXPECT_EQ(Judge(k, o, kSlack).verdict, Verdict::kViolation);
  o.has_token = true;
  o.token = 12;
  o.holds = 2;
  EXPECT_EQ(Judge(k, o, kSlack).verdict, Verdict::kViolation);
}

TEST(LockcrashJudge, ExpiredLeaseMayBeGone) {
  Key k = KeyWith({State{}, Held(7, kT0, kT0 + kMs)});
  EXPECT_EQ(Judge(k, ShowsFree(kT0 + kLease * kMs + 10 * kMs), kSlack).verdict, Verdict::kOk);
}

TEST(LockcrashJudge, TokenLossIsJudgedAgainstTheKillAfterItsAcknowledgement) {
  // Round 1's server acknowledged 10 and 11 and was killed (replies read until kT0 + 5 ms);
  // round 2's acknowledged 20 and ended cleanly; round 3's server is running.
  const std::vector<Kill> kills = {Kill{kT0 + 4 * kMs, kT0 + 5 * kMs, false},
                                   Kill{kT0 + 20 * kMs, kT0 + 21 * kMs, true}};
  const std::vector<std::pair<uint64_t, int64_t>> acked = {
      {10, kT0 + kMs}, {11, kT0 + 4500 * 1000}, {20, kT0 + 10 * kMs}, {30, kT0 + 30 * kMs}};
  // 11 again: undid round 1's 11 (read during round 1's drain), so round 1's kill lost it, even
  // if it shows only after round 2 (the key was not taken in between).
  TokenLoss l = FindTokenLoss(acked, kills, 11);
  ASSERT_TRUE(l.found);
  EXPECT_EQ(l.acked_token, 11u);
  EXPECT_EQ(l.kill_index, 0u);
  EXPECT_FALSE(l.kill.graceful);
  // 10: the earliest undone is 10.
  l = FindTokenLoss(acked, kills, 10);
  ASSERT_TRUE(l.found);
  EXPECT_EQ(l.ack_ns, kT0 + kMs);
  // 15: undid round 2's 20, lost across a clean shutdown.
  l = FindTokenLoss(acked, kills, 15);
  ASSERT_TRUE(l.found);
  EXPECT_EQ(l.kill_index, 1u);
  EXPECT_TRUE(l.kill.graceful);
  // 25: undid 30, acknowledged by the running server: no kill explains it.
  EXPECT_FALSE(FindTokenLoss(acked, kills, 25).found);
  // Above everything acknowledged: nothing undone.
  EXPECT_FALSE(FindTokenLoss(acked, kills, 31).found);
}

TEST(LockcrashJudge, AdoptWhatTheServerShows) {
  Observation o = Shows(9, kCheck + 10'000 * kMs, kCheck);
  o.has_token = true;
  o.token = 5;
  State s = Adopt(o);
  EXPECT_EQ(s.owner, 9u);
  EXPECT_EQ(s.token, 5u);
  EXPECT_EQ(s.by, OpKind::kStart);
  EXPECT_TRUE(Admits(s, o, 0));
  EXPECT_EQ(Adopt(ShowsFree(kCheck)).owner, 0u);
}

TEST(LockcrashOwner, RoundTrip) {
  EXPECT_EQ(OwnerValue("lcab", 42), "lcab:42");
  EXPECT_EQ(ParseOwner("lcab", "lcab:42"), 42u);
  EXPECT_EQ(ParseOwner("lcab", "lcab:"), 0u);
  EXPECT_EQ(ParseOwner("lcab", "lcac:42"), 0u);
  EXPECT_EQ(ParseOwner("lcab", "lcab:4x"), 0u);
  EXPECT_EQ(ParseOwner("lcab", "lcab42"), 0u);
}

std::string Parse(std::vector<std::string> args, Options* o) {
  std::vector<char*> argv;
  static char name[] = "lockcrash";
  argv.push_back(name);
  for (auto& a : args) argv.push_back(a.data());
  bool help = false;
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), o, &help);
}

TEST(LockcrashOptions, Parse) {
  Options o;
  EXPECT_EQ(Parse({"--server", "/bin/x", "--appendfsync=everysec", "--threads", "3,1", "-r", "7",
                   "--fault", "no-journal", "--", "--hz", "50"},
                  &o),
            "");
  EXPECT_EQ(o.server, "/bin/x");
  EXPECT_EQ(o.appendfsync, "everysec");
  EXPECT_EQ(o.threads, (std::vector<int>{3, 1}));
  EXPECT_EQ(o.rounds, 7);
  EXPECT_EQ(o.fault, Fault::kNoJournal);
  EXPECT_EQ(o.server_args, (std::vector<std::string>{"--hz", "50"}));
  Options bad;
  EXPECT_NE(Parse({"--server", "x", "--appendfsync", "sometimes"}, &bad), "");
  EXPECT_NE(Parse({"--server", "x", "-P", "64", "--keys-per-conn", "64"}, &bad), "");
  EXPECT_NE(Parse({"--server", "x", "--threads", "2,,1"}, &bad), "");
}

}  // namespace
}  // namespace deadbolt::lockcrash
