#pragma once
// lockcrash: the Tester, which runs the rounds of a crash test, and what its parts share. Internal
// to lockcrash_lib (the entry point is Run in lockcrash_run.h). Its member functions live in:
//
//   lockcrash_load.cc  the load phase: the client connections, the workload they drive, the
//                      killer thread that signals the server at a random moment, and the drain
//                      of the replies that were already on their way;
//   lockcrash_run.cc   the rounds in order (load, kill, restart, check), the checks after each
//                      restart, and the per-round and final report.
//
// The processes themselves (deadbolt-server, powercutfs) are in lockcrash_server.h.
//
// Threads: a Tester and everything in it belong to the main thread. During Tester::Load one more
// thread, the killer, runs; it reads o_, port_ and Load's locals, writes kill_ns_ and then sets
// fired_, and calls server_.Signal. The main thread reads kill_ns_ only once fired_ is set (or the
// killer is joined) and leaves server_ alone until then.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/lockcrash/lockcrash_model.h"
#include "tools/lockcrash/lockcrash_run.h"
#include "tools/lockcrash/lockcrash_server.h"

namespace deadbolt::lockcrash {

// printf into a std::string (up to 1023 bytes).
std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// The elements of a flat RESP2 array reply (each element's raw bytes).
bool ArrayElements(std::string_view r, std::vector<std::string_view>* out);

// ---------------------------------------------------------------------------------------------
// One round's numbers, and the whole run's.

struct Stats {
  uint64_t acked = 0, acquires = 0, releases = 0, extends = 0;
  double load_s = 0;
  uint64_t inflight = 0;
  uint64_t checked = 0, held = 0, inflight_done = 0, inflight_not_done = 0, unknown = 0;
  uint64_t tokens_checked = 0;
  uint64_t lost_keys = 0, lost_ops = 0, lost_tokens = 0;
  uint64_t lost_tokens_prev = 0;  // of lost_tokens: undone by an earlier restart, seen only now
  uint64_t lost_by_kind[5] = {};
  uint64_t lost_not_allowed = 0;  // losses the policy does not allow (or too old)
  int64_t oldest_loss_ms = -1;    // age at the kill of the oldest acknowledged write lost
  uint64_t violations = 0, errors = 0;
  int torn_tails = 0;
  int rewrites = 0;            // journal rewrites finished during the round
  int killed_mid_rewrite = 0;  // shards whose rewrite was running at the kill
  int killed_starts = 0;       // restarts killed before they were ready
  int power_cuts = 0;
  uint64_t multi_sent = 0, multi_acked = 0, multi_inflight = 0;  // MULTI/EXEC pairs
  uint64_t multi_inflight_done = 0, torn = 0;  // in flight at the kill: done whole; done half
  uint64_t torn_cross_shard = 0;               // ... of which the two keys were on two shards

  void Add(const Stats& s) {
    acked += s.acked;
    acquires += s.acquires;
    releases += s.releases;
    extends += s.extends;
    load_s += s.load_s;
    inflight += s.inflight;
    checked += s.checked;
    held += s.held;
    inflight_done += s.inflight_done;
    inflight_not_done += s.inflight_not_done;
    unknown += s.unknown;
    tokens_checked += s.tokens_checked;
    lost_keys += s.lost_keys;
    lost_ops += s.lost_ops;
    lost_tokens += s.lost_tokens;
    lost_tokens_prev += s.lost_tokens_prev;
    for (int i = 0; i < 5; i++) lost_by_kind[i] += s.lost_by_kind[i];
    lost_not_allowed += s.lost_not_allowed;
    oldest_loss_ms = std::max(oldest_loss_ms, s.oldest_loss_ms);
    violations += s.violations;
    errors += s.errors;
    torn_tails += s.torn_tails;
    rewrites += s.rewrites;
    killed_mid_rewrite += s.killed_mid_rewrite;
    killed_starts += s.killed_starts;
    power_cuts += s.power_cuts;
    multi_sent += s.multi_sent;
    multi_acked += s.multi_acked;
    multi_inflight += s.multi_inflight;
    multi_inflight_done += s.multi_inflight_done;
    torn += s.torn;
    torn_cross_shard += s.torn_cross_shard;
  }
};

// ---------------------------------------------------------------------------------------------

// A key's acknowledged fencing tokens, in every round so far: which acquire a token that came
// back after a restart undid (FindTokenLoss). Kept whole: a key may not be taken again for rounds
// after the kill that undid its last token.
struct TokenLog {
  std::vector<std::pair<uint64_t, int64_t>> acked;  // (token, ack time), tokens increasing
};

// A reply awaited on a load connection.
struct Expect {
  enum Kind : uint8_t { kOne, kMulti, kQueued, kExec } kind;
  int key;   // kOne, kExec
  int key2;  // kExec
};

// One load connection (non-blocking, on the load loop's epoll) and the keys it owns.
struct LoadConn {
  int fd = -1;
  int first_key = 0;
  int nkeys = 0;
  int cursor = 0;
  std::string out;
  size_t out_off = 0;
  std::string in;
  size_t in_off = 0;
  std::deque<Expect> q;  // the replies awaited, in the order sent
  int ops = 0;           // keys with an operation in flight
  bool multi = false;    // pairs plain keys in MULTI/EXEC
  bool closed = false;
  bool want_out = false;
};

class Tester {
 public:
  explicit Tester(const Options& o) : o_(o), so_(o) {}
  ~Tester() { fs_.Unmount(); }

  int Run();

 private:
  // --- lockcrash_run.cc ---
  // Setup
  std::string Init();
  // After a restart: judge every key, probe tokens, adopt what the server shows.
  bool Check();
  // Problems: counted, and the first o_.show of each kind printed.
  void Problem(const std::string& kind, const std::string& what);
  // A loss `age_ms` old at the kill: allowed under everysec/no within the window, never after a
  // clean shutdown (`graceful`: that kill's; this round's when not given).
  void Loss(int key, const Judgement& j, int64_t age_ms, bool token);
  void Loss(int key, const Judgement& j, int64_t age_ms, bool token, bool graceful);
  // A fencing token `t` not above every token acknowledged for the key (k.max_token): a loss
  // judged against the kill that undid it, or a violation when no kill did. `where` names the
  // moment for the report.
  void TokenNotAbove(int key, uint64_t t, const char* where);
  int64_t RandomLease() {
    return std::uniform_int_distribution<int64_t>(o_.lease_min_ms, o_.lease_max_ms)(rng_);
  }
  std::string Owner(uint64_t n) const { return OwnerValue(tag_, n); }

  // --- lockcrash_load.cc ---
  // One round: load, signal, drain. Fills stats_.
  bool Load(int sig);
  void Issue(LoadConn& c, int64_t now);
  int NextKey(LoadConn& c, int skip);  // a key of c with nothing in flight, or -1
  void Prepare(int key, OpKind kind, int64_t now);
  void AppendOp(std::string* out, int key);
  void OnExpect(LoadConn& c, const Expect& e, std::string_view r, int64_t now);
  void OnReply(int key, std::string_view r, int64_t now);
  bool Flush(LoadConn& c);
  void ReadConn(LoadConn& c, int64_t now);
  void CloseConn(LoadConn& c);
  // A native acquire's token during the load: must exceed every token acknowledged before.
  void CheckLoadToken(int key, uint64_t t, int64_t now);

  const Options& o_;
  Options so_;  // what the server is started with (--dir on the FUSE mount with --power-cut)
  std::mt19937_64 rng_;
  PowerCutFs fs_;  // --power-cut
  std::string tag_;
  int port_ = 0;
  int threads_at_kill_ = 1;     // the killed server's --threads (to place keys on shards)
  int64_t last_start_ms_ = 50;  // how long the last start took to answer PING
  ServerProcess server_;
  std::vector<Key> keys_;
  std::vector<TokenLog> tokens_;
  uint64_t next_owner_ = 0;
  std::vector<LoadConn> conns_;
  int epfd_ = -1;

  // The current round.
  int round_ = 0;
  bool graceful_ = false;
  int64_t round_start_ns_ = 0;
  int64_t kill_ns_ = 0;            // this round's signal
  int64_t prev_kill_ns_ = 0;       // the previous round's (tokens lost at that restart show up now)
  int64_t drain_end_ns_ = 0;       // this round's last reply from the killed server was read
  int64_t prev_drain_end_ns_ = 0;  // ... the previous round's
  std::vector<Kill> kills_;        // every round's end so far, this round's once it is signalled
  bool killed_ = false;            // the load loop has seen the signal go
  std::atomic<bool> fired_{false};  // the signal has gone (set by the killer thread)
  bool died_early_ = false;
  Stats stats_;
  Stats total_;
  std::vector<std::pair<std::string, int>> shown_;  // kind -> printed this round
};

}  // namespace deadbolt::lockcrash
