#include "tools/lockcrash_run.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string_view>
#include <thread>

#include "tools/lockcrash_model.h"
#include "tools/lockload_resp.h"
#include "tools/locktorture_conn.h"

extern char** environ;

namespace deadbolt::lockcrash {
namespace {

using locktorture::Conn;
using locktorture::IntegerOf;
using locktorture::IsError;
using locktorture::IsNull;
using locktorture::IsOk;
using locktorture::NowNs;
using locktorture::Printable;

constexpr int64_t kMs = 1'000'000;
constexpr size_t kCheckChunk = 256;  // keys per pipelined batch of the checks

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

// 1234567 -> "1,234,567"
std::string Commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string Tail(const std::string& path, size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "(no log: " + path + ")";
  struct stat st {};
  fstat(fd, &st);
  off_t from = st.st_size > static_cast<off_t>(max_bytes) ? st.st_size - max_bytes : 0;
  std::string out(static_cast<size_t>(st.st_size - from), '\0');
  ssize_t n = pread(fd, out.data(), out.size(), from);
  close(fd);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

int CountOccurrences(const std::string& text, std::string_view what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) n++;
  return n;
}

// From a server's log: rewrites finished, and shards whose last rewrite had started and not
// ended when the log stops.
void CountRewrites(const std::string& log, int* done, int* unfinished) {
  std::vector<int> open;  // per shard: 1 while a rewrite runs
  *done = 0;
  size_t pos = 0;
  while ((pos = log.find("shard ", pos)) != std::string::npos) {
    int shard = atoi(log.c_str() + pos + 6);
    size_t eol = log.find('\n', pos);
    std::string_view line(log.data() + pos, (eol == std::string::npos ? log.size() : eol) - pos);
    pos += 6;
    if (shard < 0 || shard > 4096) continue;
    if (open.size() <= static_cast<size_t>(shard)) open.resize(static_cast<size_t>(shard) + 1);
    if (line.find("journal rewrite started") != std::string_view::npos) {
      open[static_cast<size_t>(shard)] = 1;
    } else if (line.find("journal rewrite done") != std::string_view::npos) {
      open[static_cast<size_t>(shard)] = 0;
      (*done)++;
    } else if (line.find("journal rewrite failed") != std::string_view::npos) {
      open[static_cast<size_t>(shard)] = 0;
    }
  }
  *unfinished = 0;
  for (int o : open) *unfinished += o;
}

int FreePort(const std::string& host) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  int port = -1;
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// The elements of a flat RESP2 array reply (each element's raw bytes).
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

// ---------------------------------------------------------------------------------------------
// The server process.

class ServerProcess {
 public:
  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Starts the server and waits until it answers PING (and says it is this process).
  // A killed server's listening socket can outlive it for a moment (its io_uring, which holds a
  // multishot accept on it, is torn down after the process is gone): a start that cannot bind
  // is tried again for up to 5 s.
  std::string Start(const Options& o, int port, int threads, const std::string& log_path) {
    for (int attempt = 0;; attempt++) {
      std::string err = Spawn(o, port, threads, log_path);
      if (!err.empty()) return err;
      err = WaitReady(o, port);
      if (err.empty() || attempt >= 50 || err.find("Address already in use") == std::string::npos ||
          pid_ > 0) {
        return err;
      }
      bind_retries_++;
      usleep(100'000);
    }
  }
  int bind_retries() const { return bind_retries_; }

  // Starts the server without waiting for it.
  std::string Spawn(const Options& o, int port, int threads, const std::string& log_path) {
    std::vector<std::string> args = {o.server,
                                     "--port",
                                     std::to_string(port),
                                     "--bind",
                                     o.host,
                                     "--threads",
                                     std::to_string(threads),
                                     "--appendonly",
                                     o.fault == Fault::kNoJournal ? "no" : "yes",
                                     "--appendfsync",
                                     o.appendfsync,
                                     "--dir",
                                     o.dir,
                                     "--auto-aof-rewrite-min-size",
                                     o.rewrite_min_size};
    for (const std::string& a : o.server_args) args.push_back(a);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    log_path_ = log_path;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawn(&pid_, o.server.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      pid_ = -1;
      return "cannot start " + o.server + ": " + strerror(rc);
    }
    return {};
  }

  std::string WaitReady(const Options& o, int port) {
    const std::string& log_path = log_path_;
    const int64_t deadline = NowNs() + o.start_timeout_ms * kMs;
    std::string last_err;
    while (NowNs() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "the server exited during start-up (" + DescribeStatus(status) + "); log " +
               log_path + ":\n" + Tail(log_path, 3000);
      }
      Conn c;
      std::string reply;
      last_err = c.Connect(o.host, port, NowNs() + 500 * kMs);
      if (last_err.empty()) last_err = c.Call({"PING"}, &reply, NowNs() + 2000 * kMs);
      if (last_err.empty() && reply != "+PONG\r\n") last_err = "PING replied " + Printable(reply);
      if (last_err.empty()) {
        last_err = c.Call({"INFO", "server"}, &reply, NowNs() + 2000 * kMs);
        if (last_err.empty()) {
          std::string want = "process_id:" + std::to_string(pid_) + "\r\n";
          if (reply.find(want) == std::string::npos) {
            return "another process answers on port " + std::to_string(port);
          }
          return {};
        }
      }
      usleep(20000);
    }
    return "the server did not answer PING within " + std::to_string(o.start_timeout_ms) +
           " ms (" + last_err + "); log " + log_path + ":\n" + Tail(log_path, 3000);
  }

  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

  // Waits for the process to end. Returns false on timeout (then kills it).
  bool Wait(int64_t deadline_ns, int* status) {
    if (pid_ <= 0) return true;
    while (true) {
      pid_t r = waitpid(pid_, status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return true;
      }
      if (NowNs() > deadline_ns) {
        kill(pid_, SIGKILL);
        waitpid(pid_, status, 0);
        pid_ = -1;
        return false;
      }
      usleep(2000);
    }
  }

  bool running() const { return pid_ > 0; }
  const std::string& log_path() const { return log_path_; }

  static std::string DescribeStatus(int status) {
    if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
  }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  int bind_retries_ = 0;
};

// ---------------------------------------------------------------------------------------------
// One round's numbers, and the whole run's.

struct Stats {
  uint64_t acked = 0, acquires = 0, releases = 0, extends = 0;
  double load_s = 0;
  uint64_t inflight = 0;
  uint64_t checked = 0, held = 0, inflight_done = 0, inflight_not_done = 0, unknown = 0;
  uint64_t tokens_checked = 0;
  uint64_t lost_keys = 0, lost_ops = 0, lost_tokens = 0;
  uint64_t lost_tokens_prev = 0;  // of lost_tokens: undone by the previous restart, seen now
  uint64_t lost_by_kind[5] = {};
  uint64_t lost_not_allowed = 0;  // losses the policy does not allow (or too old)
  int64_t oldest_loss_ms = -1;    // age at the kill of the oldest acknowledged write lost
  uint64_t violations = 0, errors = 0;
  int torn_tails = 0;
  int rewrites = 0;             // journal rewrites finished during the round
  int killed_mid_rewrite = 0;   // shards whose rewrite was running at the kill
  int killed_starts = 0;        // restarts killed before they were ready
  int power_cuts = 0;
  uint64_t multi_sent = 0, multi_acked = 0, multi_inflight = 0;  // MULTI/EXEC pairs
  uint64_t multi_inflight_done = 0, torn = 0;  // in flight at the kill: done whole; done half
  uint64_t torn_cross_shard = 0;                // ... of which the two keys were on two shards

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

// A key's acknowledged fencing tokens (this round and the one before): which acquire a token that
// came back after a restart undid.
struct TokenLog {
  std::vector<std::pair<uint64_t, int64_t>> acked;  // (token, ack time), tokens increasing
};

// A reply awaited on a load connection.
struct Expect {
  enum Kind : uint8_t { kOne, kMulti, kQueued, kExec } kind;
  int key;   // kOne, kExec
  int key2;  // kExec
};

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
  int ops = 0;            // keys with an operation in flight
  bool multi = false;     // pairs plain keys in MULTI/EXEC
  bool closed = false;
  bool want_out = false;
};

class Tester {
 public:
  explicit Tester(const Options& o) : o_(o), so_(o) {}
  ~Tester() { UnmountFs(); }

  int Run();

 private:
  // Setup
  std::string Init();
  // One round: load, signal, drain. Fills stats_.
  bool Load(int sig);
  // After a restart: judge every key, probe tokens, adopt what the server shows.
  bool Check();

  void Issue(LoadConn& c, int64_t now);
  int NextKey(LoadConn& c, int skip);  // a key of c with nothing in flight, or -1
  void Prepare(int key, OpKind kind, int64_t now);
  void AppendOp(std::string* out, int key);
  void OnExpect(LoadConn& c, const Expect& e, std::string_view r, int64_t now);
  void OnReply(int key, std::string_view r, int64_t now);
  bool Flush(LoadConn& c);
  void ReadConn(LoadConn& c, int64_t now);
  void CloseConn(LoadConn& c);
  int64_t RandomLease() {
    return std::uniform_int_distribution<int64_t>(o_.lease_min_ms, o_.lease_max_ms)(rng_);
  }
  std::string Owner(uint64_t n) const { return OwnerValue(tag_, n); }

  // Problems: counted, and the first o_.show of each kind printed.
  void Problem(const std::string& kind, const std::string& what);
  // A loss `age_ms` old at the kill: allowed under everysec/no within the window.
  void Loss(int key, const Judgement& j, int64_t age_ms, bool token);
  // A native acquire's token during the load: must exceed every token acknowledged before.
  void CheckLoadToken(int key, uint64_t t, int64_t now);

  const Options& o_;
  Options so_;  // what the server is started with (--dir on the FUSE mount with --power-cut)
  std::mt19937_64 rng_;
  // --power-cut
  pid_t fs_pid_ = -1;
  std::string mnt_;
  std::string MountFs();
  void UnmountFs();
  void WaitPortFree();
  std::string Cut();  // drops every unsynced write; returns the file system's account
  std::string tag_;
  int port_ = 0;
  int threads_at_kill_ = 1;      // the killed server's --threads (to place keys on shards)
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
  int64_t kill_ns_ = 0;       // this round's signal
  int64_t prev_kill_ns_ = 0;  // the previous round's (tokens lost at that restart show up now)
  int64_t drain_end_ns_ = 0;       // this round's last reply from the killed server was read
  int64_t prev_drain_end_ns_ = 0;  // ... the previous round's
  bool killed_ = false;             // the load loop has seen the signal go
  std::atomic<bool> fired_{false};  // the signal has gone (set by the killer thread)
  bool died_early_ = false;
  Stats stats_;
  Stats total_;
  std::vector<std::pair<std::string, int>> shown_;  // kind -> printed this round
};

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
  const bool allowed = o_.appendfsync != "always" && !graceful_ && age_ms <= o_.loss_window_ms;
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
    std::string why = graceful_                        ? "after a clean shutdown"
                      : o_.appendfsync == "always"     ? "with appendfsync always"
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
  printf("lockcrash: %s, appendfsync %s%s, %d connections x %d in flight, %d keys (%d native), "
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

// --- load -------------------------------------------------------------------------------------

int Tester::NextKey(LoadConn& c, int skip) {
  for (int tries = 0; tries < c.nkeys; tries++) {
    int i = c.first_key + c.cursor;
    c.cursor = (c.cursor + 1) % c.nkeys;
    const Key& k = keys_[static_cast<size_t>(i)];
    if (i != skip && !k.pending.active && !k.unknown) return i;
  }
  return -1;
}

void Tester::Prepare(int key, OpKind kind, int64_t now) {
  Key& k = keys_[static_cast<size_t>(key)];
  const State s = k.last();
  Pending& p = k.pending;
  p = Pending{};
  p.active = true;
  p.send_ns = now;
  p.kind = kind;
  switch (kind) {
    case OpKind::kAcquire:
      p.lease_ms = RandomLease();
      p.after.owner = ++next_owner_;
      p.after.exp_lo_ns = now + p.lease_ms * kMs;
      break;
    case OpKind::kExtend:
      p.lease_ms = RandomLease();
      p.after = s;
      p.after.exp_lo_ns = now + p.lease_ms * kMs;
      p.after.ack_ns = 0;
      break;
    case OpKind::kRelease:
    case OpKind::kStart:
      break;
  }
  p.after.by = kind;
}

void Tester::AppendOp(std::string* out, int key) {
  const Key& k = keys_[static_cast<size_t>(key)];
  const Pending& p = k.pending;
  char lease[24];
  snprintf(lease, sizeof(lease), "%lld", static_cast<long long>(p.lease_ms));
  switch (p.kind) {
    case OpKind::kAcquire: {
      std::string v = Owner(p.after.owner);
      if (k.native) {
        lockload::AppendCommand(out, {"LOCK.ACQUIRE", k.name, v, lease});
      } else {
        lockload::AppendCommand(out, {"SET", k.name, v, "NX", "PX", lease});
      }
      break;
    }
    case OpKind::kExtend: {
      std::string v = Owner(k.last().owner);
      if (k.native) {
        lockload::AppendCommand(out, {"LOCK.EXTEND", k.name, v, lease});
      } else {
        lockload::AppendCommand(out, {"SET", k.name, v, "IFEQ", v, "PX", lease});
      }
      break;
    }
    case OpKind::kRelease:
    case OpKind::kStart: {
      std::string v = Owner(k.last().owner);
      if (k.native) {
        lockload::AppendCommand(out, {"LOCK.RELEASE", k.name, v});
      } else {
        lockload::AppendCommand(out, {"DELIFEQ", k.name, v});
      }
      break;
    }
  }
}

void Tester::Issue(LoadConn& c, int64_t now) {
  while (c.ops < o_.pipeline) {
    const int key = NextKey(c, -1);
    if (key < 0) return;
    const Key& k = keys_[static_cast<size_t>(key)];
    // On some connections, two plain keys in one MULTI/EXEC: both taken or both released.
    if (!k.native && c.multi && c.ops + 2 <= o_.pipeline) {
      const int key2 = NextKey(c, key);
      const Key* k2 = key2 >= 0 ? &keys_[static_cast<size_t>(key2)] : nullptr;
      if (k2 && !k2->native && (k.last().owner == 0) == (k2->last().owner == 0)) {
        const OpKind kind = k.last().owner == 0 ? OpKind::kAcquire : OpKind::kRelease;
        Prepare(key, kind, now);
        Prepare(key2, kind, now);
        keys_[static_cast<size_t>(key)].pending.partner = key2;
        keys_[static_cast<size_t>(key2)].pending.partner = key;
        lockload::AppendCommand(&c.out, {"MULTI"});
        AppendOp(&c.out, key);
        AppendOp(&c.out, key2);
        lockload::AppendCommand(&c.out, {"EXEC"});
        c.q.push_back(Expect{Expect::kMulti, -1, -1});
        c.q.push_back(Expect{Expect::kQueued, -1, -1});
        c.q.push_back(Expect{Expect::kQueued, -1, -1});
        c.q.push_back(Expect{Expect::kExec, key, key2});
        c.ops += 2;
        stats_.multi_sent++;
        continue;
      }
    }
    OpKind kind = OpKind::kRelease;
    if (k.last().owner == 0) {
      kind = OpKind::kAcquire;
    } else if (o_.extend_every > 0 && rng_() % static_cast<uint64_t>(o_.extend_every) == 0) {
      kind = OpKind::kExtend;
    }
    Prepare(key, kind, now);
    AppendOp(&c.out, key);
    c.q.push_back(Expect{Expect::kOne, key, -1});
    c.ops++;
  }
}

void Tester::CheckLoadToken(int key, uint64_t t, int64_t now) {
  Key& k = keys_[static_cast<size_t>(key)];
  TokenLog& log = tokens_[static_cast<size_t>(key)];
  if (t <= k.max_token) {
    // The earliest acknowledged token this one does not exceed.
    auto it = std::find_if(log.acked.begin(), log.acked.end(),
                           [&](const auto& e) { return e.first >= t; });
    // Acknowledged after the previous server's last reply had been read: by this server.
    if (it == log.acked.end() || it->second > prev_drain_end_ns_) {
      stats_.violations++;
      std::string detail;
      if (o_.verbose) {
        detail = "; tokens acknowledged (ms after the restart):";
        for (size_t e = log.acked.size() > 6 ? log.acked.size() - 6 : 0; e < log.acked.size();
             e++) {
          const auto& [tok, at] = log.acked[e];
          detail += Fmt(" %llu@%lld", static_cast<unsigned long long>(tok),
                        static_cast<long long>((at - prev_kill_ns_) / kMs));
        }
        detail += Fmt("; now %lld", static_cast<long long>((now - prev_kill_ns_) / kMs));
      }
      Problem("VIOLATION token-not-increasing",
              k.name + Fmt(": fencing token %llu, but %llu was acknowledged before on the running "
                           "server",
                           static_cast<unsigned long long>(t),
                           static_cast<unsigned long long>(k.max_token)) +
                  detail);
    } else {
      // Acknowledged before the last restart and forgotten by it.
      Judgement j;
      j.verdict = Verdict::kLost;
      j.lost_ops = 1;
      j.why = Fmt("fencing token %llu after the last restart, but %llu had been acknowledged "
                  "before it",
                  static_cast<unsigned long long>(t), static_cast<unsigned long long>(it->first));
      // Judged against the kill that lost it (never a graceful one: that is the last round).
      const bool saved_graceful = graceful_;
      graceful_ = false;
      stats_.lost_tokens_prev++;
      Loss(key, j, (prev_kill_ns_ - it->second) / kMs, /*token=*/true);
      graceful_ = saved_graceful;
    }
    log.acked.erase(it, log.acked.end());
  }
  log.acked.emplace_back(t, now);
  k.max_token = t;
}

void Tester::OnReply(int key, std::string_view r, int64_t now) {
  Key& k = keys_[static_cast<size_t>(key)];
  Pending& p = k.pending;
  p.active = false;
  int64_t n = 0;
  bool ok = false;
  const char* expected = "";
  switch (p.kind) {
    case OpKind::kAcquire:
      if (k.native) {
        ok = IntegerOf(r, &n) && n > 0;
        expected = "a fencing token";
      } else {
        ok = IsOk(r);
        expected = "+OK";
      }
      break;
    case OpKind::kRelease:
      ok = IntegerOf(r, &n) && n == (k.native ? 0 : 1);
      expected = k.native ? ":0 (released)" : ":1 (deleted)";
      break;
    case OpKind::kExtend:
      if (k.native) {
        ok = IntegerOf(r, &n) && n == 1;
        expected = ":1";
      } else {
        ok = IsOk(r);
        expected = "+OK";
      }
      break;
    case OpKind::kStart:
      break;
  }
  if (!ok) {
    k.unknown = true;
    std::string what = k.name + ": " + OpKindName(p.kind) + " replied " + Printable(r) +
                       ", expected " + expected + "; the key was " +
                       (k.last().owner ? "held by #" + std::to_string(k.last().owner) : "free");
    if (IsError(r)) {
      stats_.errors++;
      Problem("ERROR during the load", what);
    } else if (k.last().owner != 0 && now >= k.last().exp_lo_ns - o_.slack_ms * kMs) {
      Problem("warning (lease may have run out)", what);
    } else {
      stats_.violations++;
      Problem("VIOLATION during the load", what);
    }
    return;
  }
  State s = p.after;
  s.ack_ns = now;
  if (p.kind != OpKind::kRelease) s.exp_hi_ns = now + p.lease_ms * kMs;
  if (p.kind == OpKind::kAcquire && k.native) {
    s.token = static_cast<uint64_t>(n);
    CheckLoadToken(key, s.token, now);
  }
  k.history.push_back(s);
  stats_.acked++;
  if (p.kind == OpKind::kAcquire) stats_.acquires++;
  if (p.kind == OpKind::kRelease) stats_.releases++;
  if (p.kind == OpKind::kExtend) stats_.extends++;
}

void Tester::OnExpect(LoadConn& c, const Expect& e, std::string_view r, int64_t now) {
  switch (e.kind) {
    case Expect::kOne:
      c.ops--;
      OnReply(e.key, r, now);
      return;
    case Expect::kMulti:
    case Expect::kQueued:
      if (r != (e.kind == Expect::kMulti ? "+OK\r\n" : "+QUEUED\r\n")) {
        stats_.errors++;
        Problem("ERROR during the load", std::string(e.kind == Expect::kMulti ? "MULTI" : "a queued command") +
                                             " replied " + Printable(r));
      }
      return;
    case Expect::kExec: {
      c.ops -= 2;
      std::vector<std::string_view> el;
      if (!ArrayElements(r, &el) || el.size() != 2) {
        for (int key : {e.key, e.key2}) {
          keys_[static_cast<size_t>(key)].pending.active = false;
          keys_[static_cast<size_t>(key)].unknown = true;
        }
        stats_.errors++;
        Problem("ERROR during the load", "EXEC on " + keys_[static_cast<size_t>(e.key)].name +
                                             " and " + keys_[static_cast<size_t>(e.key2)].name +
                                             " replied " + Printable(r));
        return;
      }
      OnReply(e.key, el[0], now);
      OnReply(e.key2, el[1], now);
      stats_.multi_acked++;
      return;
    }
  }
}

bool Tester::Flush(LoadConn& c) {
  while (c.out_off < c.out.size()) {
    ssize_t n = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!c.want_out) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.u32 = static_cast<uint32_t>(&c - conns_.data());
        epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
        c.want_out = true;
      }
      return true;
    }
    return false;  // the server is gone; the read side will see it
  }
  c.out.clear();
  c.out_off = 0;
  if (c.want_out) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(&c - conns_.data());
    epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
    c.want_out = false;
  }
  return true;
}

void Tester::CloseConn(LoadConn& c) {
  if (c.closed) return;
  epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  close(c.fd);
  c.fd = -1;
  c.closed = true;
}

void Tester::ReadConn(LoadConn& c, int64_t now) {
  char buf[65536];
  while (!c.closed) {
    ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      if (!fired_.load()) {
        died_early_ = true;
        stats_.errors++;
        Problem("ERROR", std::string("a connection was closed by the server before the kill (") +
                             (n == 0 ? "EOF" : strerror(errno)) + ")");
      }
      CloseConn(c);
      return;
    }
    c.in.append(buf, static_cast<size_t>(n));
    while (c.in_off < c.in.size()) {
      int64_t len = lockload::ScanReply(c.in.data() + c.in_off, c.in.size() - c.in_off);
      if (len == 0) break;
      if (len < 0 || c.q.empty()) {
        stats_.errors++;
        Problem("ERROR", len < 0 ? "malformed reply: " + Printable(c.in.substr(c.in_off, 200))
                                 : "a reply with nothing in flight: " +
                                       Printable(c.in.substr(c.in_off, 200)));
        CloseConn(c);
        return;
      }
      const Expect e = c.q.front();
      c.q.pop_front();
      OnExpect(c, e, std::string_view(c.in).substr(c.in_off, static_cast<size_t>(len)), now);
      c.in_off += static_cast<size_t>(len);
    }
    if (c.in_off == c.in.size()) {
      c.in.clear();
      c.in_off = 0;
    } else if (c.in_off > (1u << 16)) {
      c.in.erase(0, c.in_off);
      c.in_off = 0;
    }
  }
}

bool Tester::Load(int sig) {
  // Tokens acknowledged before the previous round's load are forgotten: a restart that undid
  // one of them would be a violation whatever the policy, and is reported as one.
  for (TokenLog& t : tokens_) {
    std::erase_if(t.acked, [&](const auto& e) { return e.second < round_start_ns_; });
  }
  conns_.assign(static_cast<size_t>(o_.conns), LoadConn{});
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  for (int i = 0; i < o_.conns; i++) {
    LoadConn& c = conns_[static_cast<size_t>(i)];
    lockload::SyncClient sc;
    std::string err = sc.Connect(o_.host, port_);
    if (!err.empty()) {
      printf("lockcrash: %s\n", err.c_str());
      return false;
    }
    c.fd = sc.Release();
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    c.multi = o_.multi_every > 0 && i % o_.multi_every == o_.multi_every - 1;
    c.first_key = i * o_.keys_per_conn;
    c.nkeys = o_.keys_per_conn;
    c.cursor = static_cast<int>(rng_() % static_cast<uint64_t>(c.nkeys));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(epfd_, EPOLL_CTL_ADD, c.fd, &ev);
  }
  round_start_ns_ = NowNs();
  const int64_t kill_at =
      round_start_ns_ +
      std::uniform_int_distribution<int64_t>(o_.kill_min_ms, o_.kill_max_ms)(rng_) * kMs;
  // The signal comes from a thread of its own, so it lands at a moment that has nothing to do
  // with where the load loop is (the loop may be anywhere between sending and reading).
  fired_.store(false);
  died_early_ = false;
  std::atomic<bool> cancel{false};
  // Sometimes a rewrite is started just before the kill, so that kills land during rewrites.
  // Not before a SIGTERM: a BGREWRITEAOF still fanning out when the server stops leaks its
  // fan-out (Connection::FanOutRun), which an ASan build reports at exit (a known bug, not
  // one of the journal's).
  const bool rewrite_first =
      sig == SIGKILL && std::uniform_int_distribution<int>(0, 99)(rng_) < o_.rewrite_before_kill_pct;
  const int64_t rewrite_at =
      kill_at - std::uniform_int_distribution<int64_t>(0, 8)(rng_) * kMs;
  std::thread killer([&] {
    Conn side;
    bool rewrite_sent = !rewrite_first;
    if (rewrite_first) side.Connect(o_.host, port_, NowNs() + 1000 * kMs);
    while (!cancel.load()) {
      if (!rewrite_sent && NowNs() >= rewrite_at) {
        std::string cmd;
        lockload::AppendCommand(&cmd, {"BGREWRITEAOF"});
        side.Send(cmd, NowNs() + 100 * kMs);  // the reply is not awaited
        rewrite_sent = true;
      }
      const int64_t left = (rewrite_sent ? kill_at : rewrite_at) - NowNs();
      if (NowNs() >= kill_at) {
        kill_ns_ = NowNs();
        server_.Signal(sig);
        fired_.store(true);
        return;
      }
      timespec ts{0, static_cast<long>(std::clamp<int64_t>(left, 0, kMs))};
      nanosleep(&ts, nullptr);
    }
  });
  killed_ = false;
  int64_t drain_deadline = 0;
  epoll_event evs[256];
  while (true) {
    int64_t now = NowNs();
    if (!killed_ && died_early_) {
      cancel.store(true);
      killer.join();
      if (!fired_.load()) {
        kill_ns_ = now;
        server_.Signal(sig);
        fired_.store(true);
      }
    }
    if (!killed_ && fired_.load()) {
      if (killer.joinable()) killer.join();
      killed_ = true;
      stats_.load_s = static_cast<double>(kill_ns_ - round_start_ns_) / 1e9;
      drain_deadline = now + (sig == SIGTERM ? 60'000 : 10'000) * kMs;
    }
    bool open = false;
    for (LoadConn& c : conns_) open = open || !c.closed;
    if (!open || (killed_ && now > drain_deadline)) break;
    if (!killed_) {
      for (LoadConn& c : conns_) {
        if (c.closed) continue;
        Issue(c, now);
        if (!c.out.empty() && !c.want_out) Flush(c);
      }
    }
    int timeout = killed_ ? 50 : 1;
    int n = epoll_wait(epfd_, evs, 256, timeout);
    now = NowNs();
    for (int i = 0; i < n; i++) {
      LoadConn& c = conns_[evs[i].data.u32];
      if (c.closed) continue;
      if (evs[i].events & EPOLLOUT) Flush(c);
      if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadConn(c, now);
    }
  }
  if (killer.joinable()) {
    cancel.store(true);
    killer.join();
  }
  const int64_t end_ns = NowNs();
  drain_end_ns_ = end_ns;
  for (LoadConn& c : conns_) {
    std::vector<int> left;
    for (const Expect& e : c.q) {
      if (e.kind == Expect::kOne || e.kind == Expect::kExec) left.push_back(e.key);
      if (e.kind == Expect::kExec) {
        left.push_back(e.key2);
        stats_.multi_inflight++;
      }
    }
    for (int key : left) {
      Key& k = keys_[static_cast<size_t>(key)];
      stats_.inflight++;
      // The server may have done it at any moment up to its death.
      if (k.pending.kind != OpKind::kRelease) {
        k.pending.after.exp_hi_ns = end_ns + k.pending.lease_ms * kMs;
      }
      if (o_.fault == Fault::kInflightAcked) {
        State s = k.pending.after;
        s.ack_ns = kill_ns_;
        k.history.push_back(s);
        k.pending.active = false;
      }
    }
    if (!c.closed) CloseConn(c);
  }
  close(epfd_);
  epfd_ = -1;
  return true;
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
      auto shows = [&](size_t x) { return obs[x].exists ? "held by #" + std::to_string(obs[x].owner) : std::string("free"); };
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
      if (!k.unknown) {
        Judgement j = JudgeToken(k, t);
        if (j.verdict == Verdict::kViolation) {
          stats_.violations++;
          Problem("VIOLATION", k.name + ": " + j.why);
        } else if (j.verdict == Verdict::kLost) {
          // lost_since from this round's history; an earlier token log entry may be older still.
          auto& log = tokens_[i].acked;
          auto it = std::find_if(log.begin(), log.end(), [&](const auto& e) { return e.first >= t; });
          if (it != log.end()) j.lost_since_ns = std::min(j.lost_since_ns, it->second);
          Loss(static_cast<int>(i), j, (kill_ns_ - j.lost_since_ns) / kMs, true);
        }
      }
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

std::string Tester::MountFs() {
  const std::string backing = o_.dir + "/backing";
  mnt_ = o_.dir + "/mnt";
  mkdir(backing.c_str(), 0755);
  mkdir(mnt_.c_str(), 0755);
  std::string fs = o_.powercutfs;
  if (fs.empty()) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : "lockcrash";
    fs = dir.substr(0, dir.rfind('/') + 1) + "powercutfs";
  }
  std::vector<std::string> args = {fs, backing, mnt_, "-f"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = o_.dir + "/powercutfs.log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  int rc = posix_spawn(&fs_pid_, fs.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    fs_pid_ = -1;
    return "cannot start " + fs + ": " + strerror(rc) + " (build it: it needs libfuse3-dev)";
  }
  const int64_t deadline = NowNs() + 5000 * kMs;
  while (NowNs() < deadline) {
    struct statfs st {};
    if (statfs(mnt_.c_str(), &st) == 0 && st.f_type == 0x65735546) {  // FUSE_SUPER_MAGIC
      so_.dir = mnt_;
      return {};
    }
    int status = 0;
    if (waitpid(fs_pid_, &status, WNOHANG) == fs_pid_) {
      fs_pid_ = -1;
      return fs + " exited (" + ServerProcess::DescribeStatus(status) +
             "); is /dev/fuse there? log:\n" + Tail(log, 2000);
    }
    usleep(10000);
  }
  return fs + " did not mount " + mnt_ + " within 5 s";
}

void Tester::UnmountFs() {
  if (fs_pid_ <= 0) return;
  pid_t p = -1;
  std::vector<std::string> args = {"fusermount3", "-u", mnt_};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawnp(&p, "fusermount3", nullptr, nullptr, argv.data(), environ) == 0) {
    waitpid(p, nullptr, 0);
  }
  int status = 0;
  const int64_t deadline = NowNs() + 5000 * kMs;
  while (waitpid(fs_pid_, &status, WNOHANG) != fs_pid_) {
    if (NowNs() > deadline) {
      kill(fs_pid_, SIGKILL);
      waitpid(fs_pid_, &status, 0);
      break;
    }
    usleep(10000);
  }
  fs_pid_ = -1;
}

void Tester::WaitPortFree() {
  const int64_t deadline = NowNs() + 5000 * kMs;
  while (NowNs() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port_));
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return;
    usleep(2000);
  }
}

std::string Tester::Cut() {
  // The dead server's io_uring lets go of its files (and its listening socket) only once its
  // last operations are over: a write landing after the cut would outlive the power cut.
  WaitPortFree();
  usleep(20000);
  int fd = open((mnt_ + "/.powercut").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "1", 1) != 1) {
    std::string err = std::string("power cut failed: ") + strerror(errno);
    if (fd >= 0) close(fd);
    return err;
  }
  close(fd);
  stats_.power_cuts++;
  std::string log = Tail(o_.dir + "/powercutfs.log", 4096);
  size_t at = log.rfind("power cut ");
  if (at == std::string::npos) return "power cut";
  size_t colon = log.find(": ", at);
  size_t eol = log.find('\n', at);
  return "power cut: " + log.substr(colon + 2, eol - colon - 2);
}

int Tester::Run() {
  if (std::string err = Init(); !err.empty()) {
    printf("lockcrash: %s\n", err.c_str());
    return 2;
  }
  if (o_.power_cut) {
    if (std::string err = MountFs(); !err.empty()) {
      printf("lockcrash: --power-cut: %s\n", err.c_str());
      return 2;
    }
    printf("   power cuts: the journal lives on a powercutfs mount (%s), which drops every "
           "unsynced write after each kill\n",
           mnt_.c_str());
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
    if (o_.power_cut) printf("   %s\n", Cut().c_str());
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
        if (o_.power_cut) printf("   %s\n", Cut().c_str());
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
    printf("   load %.2f s: %s operations acknowledged (%s/s): %s acquires, %s releases, %s "
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
    printf("   restart %.2f s%s; %s keys checked (%s held), in flight: %s done, %s not done; %s "
           "tokens checked\n",
           restart_s,
           s.torn_tails ? Fmt(" (%d torn journal tail%s dropped)", s.torn_tails,
                              s.torn_tails == 1 ? "" : "s")
                              .c_str()
                        : "",
           Commas(s.checked).c_str(), Commas(s.held).c_str(), Commas(s.inflight_done).c_str(),
           Commas(s.inflight_not_done).c_str(), Commas(s.tokens_checked).c_str());
    if (s.multi_sent) {
      printf("   MULTI/EXEC pairs: %s acknowledged, %s in flight at the %s: %s done whole, %s "
             "torn (%s of them across shards)\n",
             Commas(s.multi_acked).c_str(), Commas(s.multi_inflight).c_str(),
             graceful_ ? "SIGTERM" : "kill", Commas(s.multi_inflight_done).c_str(),
             Commas(s.torn).c_str(), Commas(s.torn_cross_shard).c_str());
    }
    printf("   lost: %s keys (%s lost acquires, %s resurrected releases, %s lost extends, %s older "
           "owners), %s tokens%s, %s operations",
           Commas(s.lost_keys).c_str(),
           Commas(s.lost_by_kind[static_cast<int>(LossKind::kLostAcquire)]).c_str(),
           Commas(s.lost_by_kind[static_cast<int>(LossKind::kResurrected)]).c_str(),
           Commas(s.lost_by_kind[static_cast<int>(LossKind::kLostExtend)]).c_str(),
           Commas(s.lost_by_kind[static_cast<int>(LossKind::kOlderOwner)]).c_str(),
           Commas(s.lost_tokens).c_str(),
           s.lost_tokens_prev
               ? Fmt(" (%s by the previous restart, seen by this round's acquires)",
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
           s.unknown ? Fmt(", %s keys unjudged after a wrong reply", Commas(s.unknown).c_str()).c_str()
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
  UnmountFs();
  const Stats& t = total_;
  const bool pass = !fatal && t.lost_not_allowed == 0 && t.violations == 0 && t.errors == 0;
  printf("lockcrash: %s: appendfsync %s, %d rounds, %s operations acknowledged (%s/s under load), "
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
  printf("; %s violations (%s torn transactions), %s errors; %d journal rewrites, %d kills "
         "during one, %d starts killed, %d power cuts\n",
         Commas(t.violations).c_str(), Commas(t.torn).c_str(), Commas(t.errors).c_str(),
         t.rewrites, t.killed_mid_rewrite, t.killed_starts, t.power_cuts);
  if (server_.bind_retries()) {
    printf("lockcrash: the port was still bound by the killed server %d time%s (tried again)\n",
           server_.bind_retries(), server_.bind_retries() == 1 ? "" : "s");
  }
  if (fatal) printf("lockcrash: stopped early\n");
  fflush(stdout);
  return pass ? 0 : 1;
}

}  // namespace

int Run(const Options& o) {
  Tester t(o);
  return t.Run();
}

}  // namespace deadbolt::lockcrash
