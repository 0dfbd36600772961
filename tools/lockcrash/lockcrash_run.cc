// lockcrash: the rounds of a crash test (Tester::Run): start the server, then in each round load
// it and kill it (lockcrash_load.cc), maybe kill its restart too, restart it, judge every key
// against what the client knows (Tester::Check, with lockcrash_model.h), and report; then the
// totals and the exit code. Everything here runs on the main thread (lockcrash_tester.h).

#include "tools/lockcrash/lockcrash_run.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tools/lockcrash/lockcrash_model.h"
#include "tools/lockcrash/lockcrash_server.h"
#include "tools/lockcrash/lockcrash_tester.h"
#include "tools/lockload/lockload_resp.h"
#include "tools/locktorture/locktorture_conn.h"

namespace deadbolt::lockcrash {
namespace {

using locktorture::Conn;
using locktorture::IntegerOf;
using locktorture::IsError;
using locktorture::IsNull;
using locktorture::NowNs;
using locktorture::Printable;

constexpr int64_t kMs = 1'000'000;
constexpr size_t kCheckChunk = 256;  // keys per pipelined batch of the checks

// 1234567 -> "1,234,567"
std::string Commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace

std::string Fmt(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

bool ArrayElements(std::string_view r, std::vector<std::string_view>* out) {
  out->clear();
  if (r.empty() || (r[0] != '*' && r[0] != '%')) return false;
  size_t nl = r.find("\r\n");
  if (nl == std::string_view::npos) return false;
  int64_t n = atoll(std::string(r.substr(1, nl - 1)).c_str());
  if (r[0] == '%') n *= 2;
  size_t pos = nl + 2;
  for (int64_t i = 0; i < n; i++) {
    int64_t len = lockload::ScanReply(r.data() + pos, r.size() - pos);
    if (len <= 0) return false;
    out->push_back(r.substr(pos, static_cast<size_t>(len)));
    pos += static_cast<size_t>(len);
  }
  return true;
}

void Tester::Problem(const std::string& kind, const std::string& what) {
  for (auto& [k, n] : shown_) {
    if (k == kind) {
      if (n++ < o_.show) printf("   %s: %s\n", kind.c_str(), what.c_str());
      return;
    }
  }
  shown_.emplace_back(kind, 1);
  if (o_.show > 0) printf("   %s: %s\n", kind.c_str(), what.c_str());
}

void Tester::Loss(int key, const Judgement& j, int64_t age_ms, bool token) {
  Loss(key, j, age_ms, token, graceful_);
}

void Tester::Loss(int key, const Judgement& j, int64_t age_ms, bool token, bool graceful) {
  const bool allowed = o_.appendfsync != "always" && !graceful && age_ms <= o_.loss_window_ms;
  stats_.lost_ops += static_cast<uint64_t>(j.lost_ops);
  if (token) {
    stats_.lost_tokens++;
  } else {
    stats_.lost_keys++;
    stats_.lost_by_kind[static_cast<int>(j.loss)]++;
  }
  stats_.oldest_loss_ms = std::max(stats_.oldest_loss_ms, age_ms);
  std::string what = keys_[static_cast<size_t>(key)].name + ": " + j.why + "; the first of them " +
                     Fmt("acknowledged %.3f s before the kill", static_cast<double>(age_ms) / 1e3);
  if (allowed) {
    if (o_.verbose) Problem("lost (allowed)", what);
  } else {
    stats_.lost_not_allowed++;
    std::string why = graceful                     ? "after a clean shutdown"
                      : o_.appendfsync == "always" ? "with appendfsync always"
                                                   : "older than --loss-window-ms";
    Problem("LOST " + why, what);
  }
}

std::string Tester::Init() {
  uint64_t seed = o_.seed ? o_.seed : (std::random_device{}() ^ static_cast<uint64_t>(NowNs()));
  rng_.seed(seed);
  tag_ = Fmt("lc%08llx", static_cast<unsigned long long>(rng_() & 0xffffffffu));
  port_ = o_.port ? o_.port : FreePort(o_.host);
  if (port_ <= 0) return "cannot find a free port";
  const int n = o_.conns * o_.keys_per_conn;
  keys_.resize(static_cast<size_t>(n));
  tokens_.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) {
    Key& k = keys_[static_cast<size_t>(i)];
    k.name = "lockcrash:" + tag_ + ":" + std::to_string(i);
    k.native = o_.native_every > 0 && i % o_.native_every == o_.native_every - 1;
    k.history.assign(1, State{});
  }
  printf(
      "lockcrash: %s, appendfsync %s%s, %d connections x %d in flight, %d keys (%d native), "
      "leases %lld-%lld ms, seed %llu\n   dir %s, port %d, key prefix lockcrash:%s:\n",
      o_.server.c_str(), o_.appendfsync.c_str(),
      o_.fault == Fault::kNoJournal       ? ", FAULT: no journal"
      : o_.fault == Fault::kInflightAcked ? ", FAULT: in-flight operations counted as acknowledged"
                                          : "",
      o_.conns, o_.pipeline, n, o_.native_every ? n / o_.native_every : 0,
      static_cast<long long>(o_.lease_min_ms), static_cast<long long>(o_.lease_max_ms),
      static_cast<unsigned long long>(seed), o_.dir.c_str(), port_, tag_.c_str());
  return {};
}

// --- after the restart ------------------------------------------------------------------------

bool Tester::Check() {
  Conn c;
  std::string err = c.Connect(o_.host, port_, NowNs() + o_.io_timeout_ms * kMs);
  if (!err.empty()) {
    printf("lockcrash: %s\n", err.c_str());
    return false;
  }
  const size_t n = keys_.size();
  std::vector<Observation> obs(n);
  std::string cmds, reply;
  std::vector<std::string_view> el;
  for (size_t from = 0; from < n; from += kCheckChunk) {
    const size_t to = std::min(n, from + kCheckChunk);
    cmds.clear();
    for (size_t i = from; i < to; i++) {
      if (keys_[i].native) {
        lockload::AppendCommand(&cmds, {"LOCK.INFO", keys_[i].name});
      } else {
        lockload::AppendCommand(&cmds, {"GET", keys_[i].name});
        lockload::AppendCommand(&cmds, {"PTTL", keys_[i].name});
      }
    }
    const int64_t sent = NowNs();
    err = c.Send(cmds, sent + o_.io_timeout_ms * kMs);
    for (size_t i = from; i < to && err.empty(); i++) {
      Observation& o = obs[i];
      o.sent_ns = sent;
      err = c.Read(&reply, NowNs() + o_.io_timeout_ms * kMs);
      if (!err.empty()) break;
      if (IsError(reply)) {
        err = keys_[i].name + ": " + Printable(reply);
        break;
      }
      if (keys_[i].native) {
        // owner, ttl_ms, token, holds, waiters
        if (!ArrayElements(reply, &el) || el.size() != 10) {
          err = "LOCK.INFO replied " + Printable(reply);
          break;
        }
        o.exists = !IsNull(el[1]);
        o.value = std::string(lockload::ReplyPayload(el[1]));
        IntegerOf(el[3], &o.pttl_ms);
        int64_t t = 0;
        o.has_token = IntegerOf(el[5], &t);
        o.token = static_cast<uint64_t>(t);
        IntegerOf(el[7], &o.holds);
      } else {
        o.exists = !IsNull(reply);
        o.value = std::string(lockload::ReplyPayload(reply));
        err = c.Read(&reply, NowNs() + o_.io_timeout_ms * kMs);
        if (err.empty() && !IntegerOf(reply, &o.pttl_ms)) err = "PTTL replied " + Printable(reply);
      }
      if (o.exists) {
        o.owner = ParseOwner(tag_, o.value);
        o.foreign = o.owner == 0;
      }
    }
    const int64_t recv = NowNs();
    for (size_t i = from; i < to; i++) obs[i].recv_ns = recv;
    if (!err.empty()) {
      printf("lockcrash: reading the keys back: %s\n", err.c_str());
      stats_.errors++;
      return false;
    }
  }

  // Judge.
  const int64_t slack = o_.slack_ms * kMs;
  std::vector<Verdict> verdicts(n, Verdict::kViolation);
  for (size_t i = 0; i < n; i++) {
    Key& k = keys_[i];
    const Observation& o = obs[i];
    stats_.checked++;
    if (o.exists) stats_.held++;
    if (k.unknown) {
      stats_.unknown++;
      continue;
    }
    Judgement j = Judge(k, o, slack);
    verdicts[i] = j.verdict;
    switch (j.verdict) {
      case Verdict::kOk:
        if (k.pending.active) stats_.inflight_not_done++;
        break;
      case Verdict::kInflightDone:
        stats_.inflight_done++;
        break;
      case Verdict::kLost:
        Loss(static_cast<int>(i), j, (kill_ns_ - j.lost_since_ns) / kMs, false);
        break;
      case Verdict::kViolation:
        stats_.violations++;
        Problem("VIOLATION", k.name + ": " + j.why);
        break;
    }
  }

  // A MULTI/EXEC in flight at the kill took effect on both keys or on neither.
  for (size_t i = 0; i < n; i++) {
    const Key& k = keys_[i];
    const int p = k.pending.active ? k.pending.partner : -1;
    if (p < 0 || static_cast<size_t>(p) < i || k.unknown || keys_[static_cast<size_t>(p)].unknown) {
      continue;
    }
    const Verdict a = verdicts[i], b = verdicts[static_cast<size_t>(p)];
    if (a == Verdict::kInflightDone && b == Verdict::kInflightDone) stats_.multi_inflight_done++;
    const Key& k2 = keys_[static_cast<size_t>(p)];
    const int sa = locktorture::ShardOfSlot(locktorture::KeySlot(k.name), threads_at_kill_);
    const int sb = locktorture::ShardOfSlot(locktorture::KeySlot(k2.name), threads_at_kill_);
    if ((a == Verdict::kInflightDone && b == Verdict::kOk) ||
        (a == Verdict::kOk && b == Verdict::kInflightDone)) {
      stats_.torn++;
      if (sa != sb) stats_.torn_cross_shard++;
      stats_.violations++;
      auto shows = [&](size_t x) {
        return obs[x].exists ? "held by #" + std::to_string(obs[x].owner) : std::string("free");
      };
      Problem("VIOLATION torn transaction",
              std::string("MULTI, ") + OpKindName(k.pending.kind) + " " + k.name + " (shard " +
                  std::to_string(sa) + ", now " + shows(i) + "), " + OpKindName(k.pending.kind) +
                  " " + k2.name + " (shard " + std::to_string(sb) + ", now " +
                  shows(static_cast<size_t>(p)) +
                  "), EXEC: in flight at the kill, it came back half done");
    }
  }

  // Every native key that is free now: a new acquire's token must exceed every one acknowledged.
  // Foreign values are removed.
  std::vector<size_t> probe;
  cmds.clear();
  for (size_t i = 0; i < n; i++) {
    if (obs[i].foreign) lockload::AppendCommand(&cmds, {"DEL", keys_[i].name});
  }
  if (!cmds.empty()) {
    err = c.Send(cmds, NowNs() + o_.io_timeout_ms * kMs);
    for (size_t i = 0; i < n && err.empty(); i++) {
      if (obs[i].foreign) err = c.Read(&reply, NowNs() + o_.io_timeout_ms * kMs);
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (keys_[i].native && (!obs[i].exists || obs[i].foreign)) probe.push_back(i);
  }
  std::vector<int64_t> probe_lease(n, 0);
  std::vector<uint64_t> probe_owner(n, 0);
  for (size_t from = 0; from < probe.size() && err.empty(); from += kCheckChunk) {
    const size_t to = std::min(probe.size(), from + kCheckChunk);
    cmds.clear();
    char lease[24];
    for (size_t p = from; p < to; p++) {
      size_t i = probe[p];
      probe_lease[i] = RandomLease();
      probe_owner[i] = ++next_owner_;
      snprintf(lease, sizeof(lease), "%lld", static_cast<long long>(probe_lease[i]));
      lockload::AppendCommand(&cmds, {"LOCK.ACQUIRE", keys_[i].name, Owner(probe_owner[i]), lease});
    }
    const int64_t sent = NowNs();
    err = c.Send(cmds, sent + o_.io_timeout_ms * kMs);
    std::vector<int64_t> tok(to - from, 0);
    for (size_t p = from; p < to && err.empty(); p++) {
      err = c.Read(&reply, NowNs() + o_.io_timeout_ms * kMs);
      if (err.empty() && (!IntegerOf(reply, &tok[p - from]) || tok[p - from] <= 0)) {
        err = keys_[probe[p]].name + ": LOCK.ACQUIRE of a free key replied " + Printable(reply);
      }
    }
    const int64_t recv = NowNs();
    for (size_t p = from; p < to && err.empty(); p++) {
      const size_t i = probe[p];
      Key& k = keys_[i];
      const auto t = static_cast<uint64_t>(tok[p - from]);
      stats_.tokens_checked++;
      if (!k.unknown && t <= k.max_token)
        TokenNotAbove(static_cast<int>(i), t, "after the restart");
      auto& log = tokens_[i].acked;
      log.erase(std::find_if(log.begin(), log.end(), [&](const auto& e) { return e.first >= t; }),
                log.end());
      log.emplace_back(t, recv);
      k.max_token = t;
      // The probe's holding is where the next round starts.
      obs[i] = Observation{};
      obs[i].exists = true;
      obs[i].owner = probe_owner[i];
      obs[i].has_token = true;
      obs[i].token = t;
      obs[i].pttl_ms = probe_lease[i];
      obs[i].sent_ns = sent;
      obs[i].recv_ns = recv;
    }
  }
  if (!err.empty()) {
    printf("lockcrash: probing fencing tokens: %s\n", err.c_str());
    stats_.errors++;
    return false;
  }

  // The next round starts from what the server holds now.
  for (size_t i = 0; i < n; i++) {
    Key& k = keys_[i];
    k.history.assign(1, Adopt(obs[i]));
    k.pending = Pending{};
    k.unknown = false;
    if (obs[i].has_token) k.max_token = std::max(k.max_token, obs[i].token);
  }
  return true;
}

// --- the rounds ---------------------------------------------------------------------------------

int Tester::Run() {
  if (std::string err = Init(); !err.empty()) {
    printf("lockcrash: %s\n", err.c_str());
    return 2;
  }
  if (o_.power_cut) {
    if (std::string err = fs_.Mount(o_.powercutfs, o_.dir); !err.empty()) {
      printf("lockcrash: --power-cut: %s\n", err.c_str());
      return 2;
    }
    so_.dir = fs_.mount_point();
    printf(
        "   power cuts: the journal lives on a powercutfs mount (%s), which drops every "
        "unsynced write after each kill\n",
        fs_.mount_point().c_str());
  }
  auto threads_of = [&](int start) {
    return o_.threads[static_cast<size_t>(start) % o_.threads.size()];
  };
  auto log_path = [&](int start) { return o_.dir + Fmt("/lockcrash-server-%d.log", start); };
  if (std::string err = server_.Start(so_, port_, threads_of(0), log_path(0)); !err.empty()) {
    printf("lockcrash: %s\n", err.c_str());
    return 2;
  }
  const int rounds = o_.rounds + (o_.graceful_round ? 1 : 0);
  bool fatal = false;
  for (round_ = 1; round_ <= rounds && !fatal; round_++) {
    graceful_ = o_.graceful_round && round_ == rounds;
    const int sig = graceful_ ? SIGTERM : SIGKILL;
    stats_ = Stats{};
    shown_.clear();
    const int threads_before = threads_of(round_ - 1);
    const int threads_after = threads_of(round_);
    threads_at_kill_ = threads_before;
    printf("round %d/%d: %d thread%s, load, %s%s, restart with %d thread%s\n", round_, rounds,
           threads_before, threads_before == 1 ? "" : "s", graceful_ ? "SIGTERM" : "SIGKILL",
           o_.power_cut ? " + power cut" : "", threads_after, threads_after == 1 ? "" : "s");
    fflush(stdout);
    if (!Load(sig)) {
      fatal = true;
      break;
    }
    kills_.push_back(Kill{kill_ns_, drain_end_ns_, graceful_});
    int status = 0;
    const bool ended = server_.Wait(NowNs() + 60'000 * kMs, &status);
    const std::string how = ServerProcess::DescribeStatus(status);
    const bool expected_end =
        ended && (graceful_ ? ((WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
                               (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM))
                            : (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    if (!expected_end || died_early_) {
      stats_.errors++;
      Problem("ERROR", std::string("the server ended with ") + (ended ? how : "a hang") +
                           (died_early_ ? " before it was signalled" : "") + "; log " +
                           server_.log_path() + ":\n" + Tail(server_.log_path(), 3000));
    }
    CountRewrites(Tail(log_path(round_ - 1), 16 << 20), &stats_.rewrites,
                  &stats_.killed_mid_rewrite);
    if (o_.power_cut) printf("   %s\n", fs_.Cut(port_, &stats_.power_cuts).c_str());
    // Sometimes the restart itself is killed, while it replays the journals and writes fresh
    // ones (with another thread count, so files of two layouts may be left behind).
    if (std::uniform_int_distribution<int>(0, 99)(rng_) < o_.kill_start_pct) {
      const int threads_between = threads_after == 1 ? 2 : threads_after - 1;
      const int64_t after_ms = std::uniform_int_distribution<int64_t>(
          0, std::max<int64_t>(1, last_start_ms_ * 3 / 2))(rng_);
      std::string err = server_.Spawn(so_, port_, threads_between, log_path(round_) + ".killed");
      if (err.empty()) {
        usleep(static_cast<useconds_t>(after_ms * 1000));
        server_.Signal(SIGKILL);
        int st = 0;
        server_.Wait(NowNs() + 60'000 * kMs, &st);
        stats_.killed_starts++;
        std::string log = Tail(log_path(round_) + ".killed", 1 << 20);
        const char* when = log.find(" ready: ") != std::string::npos ? "after it was ready"
                           : log.find("journal: replayed") != std::string::npos
                               ? "after the replay, before it was ready"
                               : "while it loaded the journals";
        printf("   a start with %d thread%s was killed after %lld ms, %s\n", threads_between,
               threads_between == 1 ? "" : "s", static_cast<long long>(after_ms), when);
        if (o_.power_cut) printf("   %s\n", fs_.Cut(port_, &stats_.power_cuts).c_str());
      }
    }
    const int64_t t0 = NowNs();
    std::string err = server_.Start(so_, port_, threads_after, log_path(round_));
    const double restart_s = static_cast<double>(NowNs() - t0) / 1e9;
    last_start_ms_ = (NowNs() - t0) / kMs;
    if (!err.empty()) {
      stats_.errors++;
      Problem("ERROR", "restart: " + err);
      fatal = true;
    } else {
      std::string log = Tail(log_path(round_), 1 << 20);
      stats_.torn_tails = CountOccurrences(log, "incomplete frame");
      if (!Check()) fatal = true;
    }
    prev_kill_ns_ = kill_ns_;
    prev_drain_end_ns_ = drain_end_ns_;
    const Stats& s = stats_;
    printf(
        "   load %.2f s: %s operations acknowledged (%s/s): %s acquires, %s releases, %s "
        "extends; %s in flight at the %s\n",
        s.load_s, Commas(s.acked).c_str(),
        Commas(static_cast<uint64_t>(static_cast<double>(s.acked) / std::max(s.load_s, 1e-3)))
            .c_str(),
        Commas(s.acquires).c_str(), Commas(s.releases).c_str(), Commas(s.extends).c_str(),
        Commas(s.inflight).c_str(), graceful_ ? "SIGTERM" : "kill");
    printf("   journal rewrites during the load: %d%s\n", s.rewrites,
           s.killed_mid_rewrite
               ? Fmt(", and one was running on %d shard%s at the %s", s.killed_mid_rewrite,
                     s.killed_mid_rewrite == 1 ? "" : "s", graceful_ ? "SIGTERM" : "kill")
                     .c_str()
               : "");
    printf(
        "   restart %.2f s%s; %s keys checked (%s held), in flight: %s done, %s not done; %s "
        "tokens checked\n",
        restart_s,
        s.torn_tails
            ? Fmt(" (%d torn journal tail%s dropped)", s.torn_tails, s.torn_tails == 1 ? "" : "s")
                  .c_str()
            : "",
        Commas(s.checked).c_str(), Commas(s.held).c_str(), Commas(s.inflight_done).c_str(),
        Commas(s.inflight_not_done).c_str(), Commas(s.tokens_checked).c_str());
    if (s.multi_sent) {
      printf(
          "   MULTI/EXEC pairs: %s acknowledged, %s in flight at the %s: %s done whole, %s "
          "torn (%s of them across shards)\n",
          Commas(s.multi_acked).c_str(), Commas(s.multi_inflight).c_str(),
          graceful_ ? "SIGTERM" : "kill", Commas(s.multi_inflight_done).c_str(),
          Commas(s.torn).c_str(), Commas(s.torn_cross_shard).c_str());
    }
    printf(
        "   lost: %s keys (%s lost acquires, %s resurrected releases, %s lost extends, %s older "
        "owners), %s tokens%s, %s operations",
        Commas(s.lost_keys).c_str(),
        Commas(s.lost_by_kind[static_cast<int>(LossKind::kLostAcquire)]).c_str(),
        Commas(s.lost_by_kind[static_cast<int>(LossKind::kResurrected)]).c_str(),
        Commas(s.lost_by_kind[static_cast<int>(LossKind::kLostExtend)]).c_str(),
        Commas(s.lost_by_kind[static_cast<int>(LossKind::kOlderOwner)]).c_str(),
        Commas(s.lost_tokens).c_str(),
        s.lost_tokens_prev ? Fmt(" (%s undone by an earlier restart, seen only now)",
                                 Commas(s.lost_tokens_prev).c_str())
                                 .c_str()
                           : "",
        Commas(s.lost_ops).c_str());
    if (s.oldest_loss_ms >= 0) {
      printf(", the oldest acknowledged %.3f s before the kill",
             static_cast<double>(s.oldest_loss_ms) / 1e3);
    }
    printf("; %s not allowed; %s violations, %s errors%s\n", Commas(s.lost_not_allowed).c_str(),
           Commas(s.violations).c_str(), Commas(s.errors).c_str(),
           s.unknown
               ? Fmt(", %s keys unjudged after a wrong reply", Commas(s.unknown).c_str()).c_str()
               : "");
    fflush(stdout);
    total_.Add(s);
  }
  // Stop the last server cleanly.
  if (server_.running()) {
    server_.Signal(SIGTERM);
    int status = 0;
    bool ended = server_.Wait(NowNs() + 60'000 * kMs, &status);
    if (!ended || !((WIFEXITED(status) && WEXITSTATUS(status) == 0) ||
                    (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM))) {
      total_.errors++;
      printf("   ERROR: the server's final shutdown: %s; log %s:\n%s\n",
             ended ? ServerProcess::DescribeStatus(status).c_str() : "hung",
             server_.log_path().c_str(), Tail(server_.log_path(), 3000).c_str());
    }
  }
  fs_.Unmount();
  const Stats& t = total_;
  const bool pass = !fatal && t.lost_not_allowed == 0 && t.violations == 0 && t.errors == 0;
  printf(
      "lockcrash: %s: appendfsync %s, %d rounds, %s operations acknowledged (%s/s under load), "
      "%s in flight at the kills (%s done, %s not done); lost %s keys + %s tokens (%s "
      "operations), %s not allowed",
      pass ? "PASS" : "FAIL", o_.appendfsync.c_str(), round_ - 1, Commas(t.acked).c_str(),
      Commas(static_cast<uint64_t>(static_cast<double>(t.acked) / std::max(t.load_s, 1e-3)))
          .c_str(),
      Commas(t.inflight).c_str(), Commas(t.inflight_done).c_str(),
      Commas(t.inflight_not_done).c_str(), Commas(t.lost_keys).c_str(),
      Commas(t.lost_tokens).c_str(), Commas(t.lost_ops).c_str(),
      Commas(t.lost_not_allowed).c_str());
  if (t.oldest_loss_ms >= 0) {
    printf(" (oldest %.3f s before its kill)", static_cast<double>(t.oldest_loss_ms) / 1e3);
  }
  printf(
      "; %s violations (%s torn transactions), %s errors; %d journal rewrites, %d kills "
      "during one, %d starts killed, %d power cuts\n",
      Commas(t.violations).c_str(), Commas(t.torn).c_str(), Commas(t.errors).c_str(), t.rewrites,
      t.killed_mid_rewrite, t.killed_starts, t.power_cuts);
  if (server_.bind_retries()) {
    printf("lockcrash: the port was still bound by the killed server %d time%s (tried again)\n",
           server_.bind_retries(), server_.bind_retries() == 1 ? "" : "s");
  }
  if (fatal) printf("lockcrash: stopped early\n");
  fflush(stdout);
  return pass ? 0 : 1;
}

int Run(const Options& o) {
  Tester t(o);
  return t.Run();
}

}  // namespace deadbolt::lockcrash
