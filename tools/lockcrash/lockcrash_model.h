#pragma once
// lockcrash: what the client knows about each of its lock keys, and the judgement of what a
// restarted server shows for it. Pure logic (no sockets, no clocks): unit-tested in
// lockcrash_test.cc.
//
// Every key belongs to one client connection, so the client knows its whole history: the state
// after each acknowledged operation (with the time of the acknowledgement), and the one operation
// that may be in flight. After a crash a key must show its last acknowledged state, or, when an
// operation was in flight, the state that operation would have produced (either is fine: the
// client cannot know whether the server did it). Anything else is a loss, attributed to the
// earliest acknowledged state the key has gone back to - or a violation when the key shows a state
// it never had.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace deadbolt::lockcrash {

enum class OpKind : uint8_t {
  kStart,    // the state the round started from (learnt from the server)
  kAcquire,  // SET k owner NX PX lease / LOCK.ACQUIRE k owner lease
  kRelease,  // DELIFEQ k owner / LOCK.RELEASE k owner
  kExtend,   // SET k owner IFEQ owner PX lease / LOCK.EXTEND k owner lease
};
const char* OpKindName(OpKind k);

// What a key holds, as the client knows it. Times are the client's CLOCK_MONOTONIC in ns.
struct State {
  uint64_t owner = 0;     // 0: free; else the owner's sequence number (the value is "<tag>:<n>")
  uint64_t token = 0;     // native locks: the holding's fencing token (0: unknown / none)
  int64_t exp_lo_ns = 0;  // held: the lease ends no earlier than this ...
  int64_t exp_hi_ns = 0;  // ... and no later than this
  int64_t ack_ns = 0;     // when the client learnt it (kStart: before the round)
  OpKind by = OpKind::kStart;
};

// The operation in flight on a key (at most one).
struct Pending {
  bool active = false;
  OpKind kind = OpKind::kAcquire;
  int64_t send_ns = 0;
  int64_t lease_ms = 0;
  State after;       // the state if it takes effect (exp_hi_ns filled in once its fate is known)
  int partner = -1;  // the other key of the same MULTI/EXEC: both take effect or neither
};

struct Key {
  std::string name;
  bool native = false;         // LOCK.* commands, else SET NX / DELIFEQ
  std::vector<State> history;  // front: the round's start; back: last acknowledged
  Pending pending;
  bool unknown = false;    // a wrong reply during the round: adopt what the server shows
  uint64_t max_token = 0;  // every fencing token ever acknowledged for this key
  const State& last() const { return history.back(); }
};

// What the restarted server shows for a key (GET + PTTL, or LOCK.INFO for native keys).
struct Observation {
  bool exists = false;
  bool foreign = false;  // a value that is not one of ours ("<tag>:<n>")
  std::string value;     // raw value, for messages
  uint64_t owner = 0;
  int64_t pttl_ms = -2;
  bool has_token = false;  // LOCK.INFO: the holding's token (nil for SET NX holdings)
  uint64_t token = 0;
  int64_t holds = -1;   // LOCK.INFO: hold count (-1: not asked)
  int64_t sent_ns = 0;  // the read was sent no earlier than this
  int64_t recv_ns = 0;  // ... and answered no later than this
};

// Does the server showing `o` fit the key being in state `s`? `slack_ns` absorbs rounding to
// milliseconds and the difference between the client's and the server's clocks.
bool Admits(const State& s, const Observation& o, int64_t slack_ns);

enum class Verdict : uint8_t {
  kOk,            // the last acknowledged state
  kInflightDone,  // the in-flight operation's result (fine)
  kLost,          // an older acknowledged state: acknowledged operations were lost
  kViolation,     // a state the key never had (wrong owner, wrong lease, missing key, ...)
};
const char* VerdictName(Verdict v);

enum class LossKind : uint8_t {
  kNone,
  kLostAcquire,  // should be held, is free
  kResurrected,  // should be free, is held again (a release was lost)
  kLostExtend,   // held by the right owner with an older lease
  kOlderOwner,   // held by an earlier owner of this round
};
const char* LossKindName(LossKind k);

struct Judgement {
  Verdict verdict = Verdict::kOk;
  LossKind loss = LossKind::kNone;
  int lost_ops = 0;           // kLost: acknowledged operations undone
  int64_t lost_since_ns = 0;  // kLost: acknowledgement time of the first operation undone
  std::string why;            // kLost / kViolation: a sentence for the report
};

// Judges key `k` (its pending operation's after.exp_hi_ns already set) against `o`.
Judgement Judge(const Key& k, const Observation& o, int64_t slack_ns);

// One end of a server under test: its signal, when its last reply was read, and whether it was a
// clean shutdown (SIGTERM), after which nothing acknowledged may be lost.
struct Kill {
  int64_t ns = 0;
  int64_t drain_end_ns = 0;
  bool graceful = false;
};

// A fencing token `t` that is not above every token acknowledged for its key undid an
// acknowledgement: the earliest in `acked` ((token, ack time), tokens increasing) at or above t.
// The kill that undid it is the end of the server that acknowledged it: the first of `kills` (in
// order) whose last reply was read at or after the acknowledgement. The loss is judged against
// that kill however many restarts later it shows, since a key may not be taken again for rounds
// (under everysec a token handed out just before a power cut may come back two rounds later).
// found is false when no kill followed the acknowledgement: the running server went back on its
// own token, a violation whatever the policy.
struct TokenLoss {
  bool found = false;
  uint64_t acked_token = 0;
  int64_t ack_ns = 0;
  Kill kill;
  size_t kill_index = 0;  // in `kills`
};
TokenLoss FindTokenLoss(const std::vector<std::pair<uint64_t, int64_t>>& acked,
                        const std::vector<Kill>& kills, uint64_t t);

// The state a key is in according to `o`, to start the next round from.
State Adopt(const Observation& o);

// Owner values: "<tag>:<n>".
std::string OwnerValue(const std::string& tag, uint64_t n);
// The n of "<tag>:<n>", or 0 when `v` is not one of ours.
uint64_t ParseOwner(const std::string& tag, const std::string& v);

}  // namespace deadbolt::lockcrash
