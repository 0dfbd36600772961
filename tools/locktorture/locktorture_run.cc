#include "tools/locktorture/locktorture_run.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <random>
#include <string_view>
#include <thread>
#include <utility>

#include "tools/locktorture/locktorture_conn.h"

namespace deadbolt::locktorture {
namespace {

constexpr int64_t kUs = 1'000;
constexpr int64_t kMs = 1'000'000;

bool IsUnknownCommand(std::string_view r) { return r.starts_with("-ERR unknown command"); }
bool IsNoScript(std::string_view r) { return r.starts_with("-NOSCRIPT"); }

std::string Str(int64_t v) { return std::to_string(v); }

std::string RedissonChannel(std::string_view key) {
  return "redisson_lock__channel:{" + std::string(key) + "}";
}
std::string RedissonLatch(std::string_view key, std::string_view request) {
  return "redisson_unlock_latch:{" + std::string(key) + "}:" + std::string(request);
}

// What the clients of one run share. Written by the main thread before the clients start
// (everything but `log` and the records' contents, which are internally locked); read-only for
// the clients after that.
struct Shared {
  const Options* opts = nullptr;
  Method method = Method::kSetNx;
  std::vector<std::string> keys;
  std::vector<std::unique_ptr<LockRecord>> records;
  ViolationLog* log = nullptr;
  std::string owner_prefix;  // unique to this run: tokens, owners and hash fields start with it
  std::string release_ok;    // native: LOCK.RELEASE's reply when it let go (learnt by the probe)
  int64_t end_ns = 0;
  bool abort = false;  // some client could not connect: everyone returns at once
  const std::atomic<bool>* stop = nullptr;
};

// One contending client: a thread with one connection. Constructed by the main thread, then
// owned and used only by its thread until the main thread joins it and reads the counters.
class Client {
 public:
  Client(const Shared* s, int id, uint64_t seed) : s_(*s), o_(*s->opts), id_(id), rng_(seed) {}

  // Client thread. Connects, counts `ready` down, waits for `go`, then takes and gives back
  // locks until the run ends or something fails.
  void Run(std::latch* ready, std::latch* go);

  // After the join.
  uint64_t acquisitions = 0, attempts = 0, extends = 0, reentries = 0, releases = 0;
  uint64_t wait_timeouts = 0, errors = 0;
  std::string first_error;
  int64_t finished_ns = 0;
  std::unique_ptr<lockload::LatencyHistogram> latency =
      std::make_unique<lockload::LatencyHistogram>();

 private:
  enum class Outcome { kAcquired, kGaveUp, kFailed };
  // One acquisition, from acquire to release.
  struct Hold {
    int lock = 0;
    Holder h;
    std::string token;  // setnx: the value stored in the key
    bool lost = false;  // the server said it is no longer ours: do not release
  };

  bool Over() const { return NowNs() >= s_.end_ns || s_.stop->load(std::memory_order_relaxed); }
  bool Fail(std::string what) {
    ++errors;
    if (first_error.empty()) first_error = "client " + Str(id_) + ": " + std::move(what);
    return false;
  }
  // Sends one command, reads its reply. `extra_ns`: how long the server may rightly take
  // (a WAIT). Records the send's begin and end times when asked.
  bool Call(std::initializer_list<std::string_view> args, std::string* reply, int64_t extra_ns = 0,
            int64_t* begin_ns = nullptr, int64_t* end_ns = nullptr);
  void Backoff();
  void HoldFor();

  Outcome Acquire(Hold* hold);
  Outcome AcquireSetNx(Hold* hold);
  Outcome AcquireRedisson(Hold* hold);
  Outcome AcquireNative(Hold* hold);
  bool Extra(Hold* hold);  // setnx: extend; redisson: re-enter; native: either
  bool Release(Hold* hold);
  void LostLock(Hold* hold, const char* what) {
    hold->lost = true;
    s_.records[hold->lock]->LostLock(hold->h, what, NowNs(), s_.log);
  }

  const Shared& s_;
  const Options& o_;
  const int id_;
  std::mt19937_64 rng_;
  Conn conn_;
  uint64_t seq_ = 0;
  uint64_t requests_ = 0;  // for unique latch keys
  std::string owner_;      // native owner, redisson field
};

bool Client::Call(std::initializer_list<std::string_view> args, std::string* reply,
                  int64_t extra_ns, int64_t* begin_ns, int64_t* end_ns) {
  std::string cmd;
  AppendArgs(&cmd, args);
  const int64_t begin = NowNs();
  std::string err = conn_.Send(cmd, begin + o_.io_timeout_ms * kMs);
  const int64_t end = NowNs();
  if (begin_ns != nullptr) *begin_ns = begin;
  if (end_ns != nullptr) *end_ns = end;
  if (err.empty()) err = conn_.Read(reply, end + extra_ns + o_.io_timeout_ms * kMs);
  if (!err.empty()) {
    std::string name(*args.begin());
    conn_.Close();  // a reply may still come: the connection is out of step, never reuse it
    return Fail(name + ": " + err);
  }
  return true;
}

void Client::Backoff() {
  if (o_.backoff_us <= 0) return;
  int64_t ns = static_cast<int64_t>(rng_() % static_cast<uint64_t>(o_.backoff_us * kUs + 1));
  ns = std::min(ns, s_.end_ns - NowNs());
  if (ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

void Client::HoldFor() {
  if (o_.hold_us <= 0) return;
  const int64_t ns = static_cast<int64_t>(rng_() % static_cast<uint64_t>(o_.hold_us * kUs + 1));
  if (rng_() & 1) {
    // Busy: stay on the CPU, so the section is exactly as long as asked.
    const int64_t until = NowNs() + ns;
    while (NowNs() < until) {
    }
  } else {
    std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
  }
}

void Client::Run(std::latch* ready, std::latch* go) {
  std::string err = conn_.Connect(o_.host, o_.port, NowNs() + o_.connect_timeout_ms * kMs);
  if (!err.empty()) Fail(err);
  owner_ = s_.owner_prefix + ":" + Str(id_);
  ready->count_down();
  go->wait();
  if (s_.abort || !err.empty()) {
    finished_ns = NowNs();
    return;
  }
  while (!Over()) {
    Hold hold;
    hold.lock = static_cast<int>(rng_() % s_.records.size());
    hold.h.client = id_;
    hold.h.seq = ++seq_;
    const int64_t first_ns = NowNs();
    const Outcome outcome = Acquire(&hold);
    if (outcome != Outcome::kAcquired) break;
    ++acquisitions;
    latency->Record(static_cast<uint64_t>(std::max<int64_t>(NowNs() - first_ns, 0)));
    LockRecord& record = *s_.records[hold.lock];
    record.CheckIn(hold.h, NowNs(), s_.log);
    if (o_.extend_every > 0 && rng_() % static_cast<uint64_t>(o_.extend_every) == 0 &&
        !Extra(&hold)) {
      record.CheckOut(id_);
      break;
    }
    HoldFor();
    bool ok;
    if (o_.fault && s_.method != Method::kSetNx) {
      // Fault: give the lock back while still inside; the next holder walks in on us.
      ok = Release(&hold);
      HoldFor();
      record.CheckOut(id_);
    } else {
      record.CheckOut(id_);
      ok = Release(&hold);
    }
    if (!ok) break;
  }
  finished_ns = NowNs();
}

Client::Outcome Client::Acquire(Hold* hold) {
  switch (s_.method) {
    case Method::kSetNx:
      return AcquireSetNx(hold);
    case Method::kRedisson:
      return AcquireRedisson(hold);
    case Method::kNative:
      return AcquireNative(hold);
  }
  return Outcome::kFailed;
}

Client::Outcome Client::AcquireSetNx(Hold* hold) {
  const std::string& key = s_.keys[hold->lock];
  hold->token = owner_ + ":" + Str(static_cast<int64_t>(hold->h.seq));
  const std::string lease = Str(o_.lease_ms);
  std::string reply;
  while (!Over()) {
    int64_t begin = 0;
    ++attempts;
    bool sent = o_.fault ? Call({"SET", key, hold->token, "PX", lease}, &reply, 0, &begin)
                         : Call({"SET", key, hold->token, "NX", "PX", lease}, &reply, 0, &begin);
    if (!sent) return Outcome::kFailed;
    if (IsOk(reply)) {
      hold->h.lease_from_ns = begin;
      return Outcome::kAcquired;
    }
    if (!IsNull(reply)) {
      Fail("SET NX PX: unexpected reply " + Printable(reply));
      return Outcome::kFailed;
    }
    Backoff();
  }
  return Outcome::kGaveUp;
}

Client::Outcome Client::AcquireRedisson(Hold* hold) {
  const std::string& key = s_.keys[hold->lock];
  const std::string lease = Str(o_.lease_ms);
  std::string reply;
  int64_t pttl = 0;
  while (!Over()) {
    int64_t begin = 0;
    ++attempts;
    if (!Call({"EVALSHA", kRedissonAcquireSha, "1", key, lease, owner_}, &reply, 0, &begin)) {
      return Outcome::kFailed;
    }
    if (IsNull(reply)) {
      hold->h.lease_from_ns = begin;
      return Outcome::kAcquired;
    }
    if (!IntegerOf(reply, &pttl)) {
      Fail("EVALSHA (Redisson acquire): unexpected reply " + Printable(reply));
      return Outcome::kFailed;
    }
    Backoff();  // held by someone else; pttl is its remaining lease
  }
  return Outcome::kGaveUp;
}

Client::Outcome Client::AcquireNative(Hold* hold) {
  const std::string& key = s_.keys[hold->lock];
  const std::string lease = Str(o_.lease_ms);
  const std::string wait = Str(o_.wait_ms);
  std::string reply;
  int64_t first_begin = 0, first_end = 0;
  while (!Over()) {
    int64_t begin = 0, end = 0;
    ++attempts;
    bool sent = o_.fault_order ? Call({"LOCK.ACQUIRE", key, owner_, lease}, &reply, 0, &begin, &end)
                               : Call({"LOCK.ACQUIRE", key, owner_, lease, "WAIT", wait}, &reply,
                                      o_.wait_ms * kMs, &begin, &end);
    if (!sent) return Outcome::kFailed;
    if (first_begin == 0) {
      first_begin = begin;
      first_end = end;
    }
    int64_t token = 0;
    if (IntegerOf(reply, &token) && token >= 0) {
      hold->h.lease_from_ns = begin;
      hold->h.has_token = true;
      hold->h.token = static_cast<uint64_t>(token);
      // The order check compares the request that queued. With --fault-order the "queue entry"
      // claimed is the first poll, which the server never saw as one: the check must object.
      Grant g;
      g.client = id_;
      g.token = hold->h.token;
      g.send_begin_ns = o_.fault_order ? first_begin : begin;
      g.send_end_ns = o_.fault_order ? first_end : end;
      g.granted_ns = NowNs();
      s_.records[hold->lock]->AddGrant(g);
      return Outcome::kAcquired;
    }
    if (!IsNull(reply)) {
      Fail("LOCK.ACQUIRE: unexpected reply " + Printable(reply));
      return Outcome::kFailed;
    }
    if (o_.fault_order) {
      Backoff();
    } else {
      ++wait_timeouts;
    }
  }
  return Outcome::kGaveUp;
}

bool Client::Extra(Hold* hold) {
  const std::string& key = s_.keys[hold->lock];
  const std::string lease = Str(o_.lease_ms);
  LockRecord& record = *s_.records[hold->lock];
  std::string reply;
  int64_t begin = 0;
  switch (s_.method) {
    case Method::kSetNx:
      if (!Call({"SET", key, hold->token, "IFEQ", hold->token, "PX", lease}, &reply, 0, &begin)) {
        return false;
      }
      if (IsOk(reply)) {
        ++extends;
        hold->h.lease_from_ns = begin;
        record.Renewed(id_, begin);
      } else if (IsNull(reply)) {
        LostLock(hold, "extend (SET IFEQ)");
      } else {
        return Fail("SET IFEQ PX: unexpected reply " + Printable(reply));
      }
      return true;
    case Method::kRedisson: {
      // Re-enter (the hold count goes to 2 and the lease is renewed), then leave once (back to
      // 1: the lock must stay held).
      if (!Call({"EVALSHA", kRedissonAcquireSha, "1", key, lease, owner_}, &reply, 0, &begin)) {
        return false;
      }
      int64_t n = 0;
      if (IntegerOf(reply, &n)) {
        LostLock(hold, "re-entrant acquire (EVALSHA)");
        return true;
      }
      if (!IsNull(reply)) {
        return Fail("EVALSHA (Redisson re-entry): unexpected reply " + Printable(reply));
      }
      hold->h.lease_from_ns = begin;
      record.Renewed(id_, begin);
      const std::string request = owner_ + ":r" + Str(static_cast<int64_t>(++requests_));
      if (!Call({"EVALSHA", kRedissonReleaseSha, "3", key, RedissonChannel(key),
                 RedissonLatch(key, request), "0", lease, owner_, "publish", lease},
                &reply)) {
        return false;
      }
      if (reply == ":0\r\n") {
        ++reentries;
      } else if (reply == ":1\r\n") {
        // The count was 1: the re-entry did not count, and this release freed the lock.
        LostLock(hold, "nested release (EVALSHA), which freed the lock");
      } else if (IsNull(reply)) {
        LostLock(hold, "nested release (EVALSHA)");
      } else {
        return Fail("EVALSHA (Redisson nested release): unexpected reply " + Printable(reply));
      }
      return true;
    }
    case Method::kNative: {
      if (rng_() & 1) {
        if (!Call({"LOCK.EXTEND", key, owner_, lease}, &reply, 0, &begin)) return false;
        if (reply == ":1\r\n") {
          ++extends;
          hold->h.lease_from_ns = begin;
          record.Renewed(id_, begin);
        } else if (reply == ":0\r\n") {
          LostLock(hold, "extend (LOCK.EXTEND)");
        } else {
          return Fail("LOCK.EXTEND: unexpected reply " + Printable(reply));
        }
        return true;
      }
      // Re-enter: the same token back and a second hold (the lease renewed), then leave once:
      // one hold left, the lock still ours.
      if (!Call({"LOCK.ACQUIRE", key, owner_, lease, "REENTRANT"}, &reply, 0, &begin)) {
        return false;
      }
      int64_t token = 0;
      if (IsNull(reply)) {
        LostLock(hold, "re-entrant acquire (LOCK.ACQUIRE REENTRANT)");
        return true;
      }
      if (!IntegerOf(reply, &token)) {
        return Fail("LOCK.ACQUIRE REENTRANT: unexpected reply " + Printable(reply));
      }
      if (static_cast<uint64_t>(token) > hold->h.token) {
        // A new token: the holding had ended (its lease expired while this client stalled, or
        // not: LostLock judges), and this call took the lock afresh. Give that back at once.
        LostLock(hold, "re-entrant acquire (LOCK.ACQUIRE REENTRANT), which was granted anew");
        return Call({"LOCK.RELEASE", key, owner_}, &reply);
      }
      if (static_cast<uint64_t>(token) != hold->h.token) {
        return Fail("LOCK.ACQUIRE REENTRANT replied token " + Str(token) + ", the holding's is " +
                    Str(static_cast<int64_t>(hold->h.token)));
      }
      hold->h.lease_from_ns = begin;
      record.Renewed(id_, begin);
      if (!Call({"LOCK.RELEASE", key, owner_}, &reply)) return false;
      if (reply == ":1\r\n") {
        ++reentries;
      } else if (IsError(reply)) {
        return Fail("LOCK.RELEASE (nested): unexpected reply " + Printable(reply));
      } else {
        // Released outright (the re-entry did not count) or not ours at all.
        LostLock(hold, "nested release (LOCK.RELEASE), which did not leave one hold");
      }
      return true;
    }
  }
  return true;
}

bool Client::Release(Hold* hold) {
  if (hold->lost) return true;
  const std::string& key = s_.keys[hold->lock];
  std::string reply;
  switch (s_.method) {
    case Method::kSetNx: {
      if (o_.fault) {
        // Fault: delete whatever is there, whoever's it is.
        if (!Call({"DEL", key}, &reply)) return false;
        ++releases;
        return true;
      }
      if (!Call({"DELIFEQ", key, hold->token}, &reply)) return false;
      if (reply == ":1\r\n") {
        ++releases;
      } else if (reply == ":0\r\n") {
        LostLock(hold, "release (DELIFEQ)");
      } else {
        return Fail("DELIFEQ: unexpected reply " + Printable(reply));
      }
      return true;
    }
    case Method::kRedisson: {
      const std::string lease = Str(o_.lease_ms);
      const std::string request = owner_ + ":r" + Str(static_cast<int64_t>(++requests_));
      if (!Call({"EVALSHA", kRedissonReleaseSha, "3", key, RedissonChannel(key),
                 RedissonLatch(key, request), "0", lease, owner_, "publish", lease},
                &reply)) {
        return false;
      }
      if (reply == ":1\r\n") {
        ++releases;
      } else if (IsNull(reply)) {
        LostLock(hold, "release (EVALSHA)");
      } else {
        // :0 means a hold count is left: the lock stays held by a client that thinks it let go.
        return Fail("EVALSHA (Redisson release): expected :1, got " + Printable(reply));
      }
      return true;
    }
    case Method::kNative: {
      if (!Call({"LOCK.RELEASE", key, owner_}, &reply)) return false;
      if (reply == s_.release_ok) {
        ++releases;
      } else if (IsError(reply)) {
        return Fail("LOCK.RELEASE: unexpected reply " + Printable(reply));
      } else {
        // Any other non-error reply is the server saying the lock was not ours to release.
        LostLock(hold, "release (LOCK.RELEASE)");
      }
      return true;
    }
  }
  return true;
}

// --- probing --------------------------------------------------------------------------------

// Asks the server, on one connection, whether it has the method's commands: acquires and
// releases a lock on a key of its own. Returns "" when it does; otherwise sets *skip (the server
// lacks the method) or not (it answered something wrong) and returns why. For the native method
// it also learns LOCK.RELEASE's reply for a lock that was let go (*release_ok), told apart from
// its reply for a lock not held.
std::string Probe(const Options& o, Method method, const std::string& key, bool* skip,
                  std::string* release_ok) {
  *skip = false;
  Conn c;
  const int64_t deadline = NowNs() + o.connect_timeout_ms * kMs + 2 * o.io_timeout_ms * kMs;
  std::string err = c.Connect(o.host, o.port, NowNs() + o.connect_timeout_ms * kMs);
  if (!err.empty()) return err;
  std::string r;
  const std::string lease = Str(o.lease_ms);
  const std::string tok = "probe-token";
  auto call = [&](std::initializer_list<std::string_view> args) {
    return c.Call(args, &r, deadline);
  };
  auto lacks = [&](const std::string& what) {
    *skip = true;
    return what + " (server replied " + Printable(r) + ")";
  };
  auto wrong = [&](const std::string& what) { return what + ": unexpected reply " + Printable(r); };
  switch (method) {
    case Method::kSetNx:
      if (!(err = call({"SET", key, tok, "NX", "PX", lease})).empty()) return err;
      if (!IsOk(r)) return wrong("SET NX PX");
      if (!(err = call({"SET", key, tok, "IFEQ", tok, "PX", lease})).empty()) return err;
      if (IsError(r)) {
        call({"DEL", key});
        return lacks("SET ... IFEQ is not supported");
      }
      if (!IsOk(r)) return wrong("SET IFEQ PX");
      if (!(err = call({"DELIFEQ", key, tok})).empty()) return err;
      if (IsUnknownCommand(r)) {
        call({"DEL", key});
        return lacks("DELIFEQ is not supported");
      }
      if (r != ":1\r\n") return wrong("DELIFEQ");
      return {};
    case Method::kRedisson: {
      const std::string field = "probe:1";
      if (!(err = call({"EVALSHA", kRedissonAcquireSha, "1", key, lease, field})).empty()) {
        return err;
      }
      if (IsNoScript(r) || IsUnknownCommand(r)) {
        return lacks("Redisson's acquire script " + std::string(kRedissonAcquireSha) +
                     " is not available");
      }
      if (!IsNull(r)) return wrong("EVALSHA (Redisson acquire)");
      err = call({"EVALSHA", kRedissonReleaseSha, "3", key, RedissonChannel(key),
                  RedissonLatch(key, "probe"), "0", lease, field, "publish", lease});
      if (!err.empty()) return err;
      if (IsNoScript(r)) {
        call({"DEL", key});
        return lacks("Redisson's release script " + std::string(kRedissonReleaseSha) +
                     " is not available");
      }
      if (r != ":1\r\n") return wrong("EVALSHA (Redisson release)");
      return {};
    }
    case Method::kNative:
      if (!(err = call({"LOCK.ACQUIRE", key, "probe", lease})).empty()) return err;
      if (IsUnknownCommand(r)) return lacks("LOCK.ACQUIRE is not supported");
      int64_t token = 0;
      if (!IntegerOf(r, &token)) return wrong("LOCK.ACQUIRE " + key + " probe " + lease);
      if (!(err = call({"LOCK.RELEASE", key, "probe"})).empty()) return err;
      if (IsError(r)) return wrong("LOCK.RELEASE of a held lock");
      *release_ok = r;
      if (!(err = call({"LOCK.RELEASE", key, "probe"})).empty()) return err;
      if (IsError(r) || r == *release_ok) {
        return wrong("LOCK.RELEASE of a lock not held (after " + Printable(*release_ok) +
                     " for the held one)");
      }
      return {};
  }
  return {};
}

double Us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

// The CPUs this process may run on (at most 64), or none if that cannot be read.
std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 64; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// When the server runs on this machine and says who it is (INFO's process_id names a process
// here called deadbolt* or redis*), opens /proc/<pid>/task/<tid>/schedstat of each of its
// threads and sets *pid. Otherwise returns none.
std::vector<int> OpenServerSchedstat(const Options& o, int* pid) {
  std::vector<int> fds;
  Conn c;
  std::string reply;
  const int64_t deadline = NowNs() + o.connect_timeout_ms * kMs + o.io_timeout_ms * kMs;
  if (!c.Connect(o.host, o.port, deadline).empty() ||
      !c.Call({"INFO", "server"}, &reply, deadline).empty()) {
    return fds;
  }
  const size_t at = reply.find("\nprocess_id:");
  if (at == std::string::npos) return fds;
  const int p = atoi(reply.c_str() + at + strlen("\nprocess_id:"));
  if (p <= 0) return fds;
  const std::string dir = "/proc/" + std::to_string(p);
  char comm[64] = {};
  int cfd = open((dir + "/comm").c_str(), O_RDONLY | O_CLOEXEC);
  if (cfd < 0) return fds;
  ssize_t n = read(cfd, comm, sizeof(comm) - 1);
  close(cfd);
  std::string_view name(comm, n > 0 ? static_cast<size_t>(n) : 0);
  if (!name.starts_with("deadbolt") && !name.starts_with("redis")) return fds;
  DIR* tasks = opendir((dir + "/task").c_str());
  if (tasks == nullptr) return fds;
  while (dirent* e = readdir(tasks)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = open((dir + "/task/" + e->d_name + "/schedstat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) fds.push_back(fd);
  }
  closedir(tasks);
  if (!fds.empty()) *pid = p;
  return fds;
}

// The run-queue wait (ns) in a schedstat file: "<run ns> <wait ns> <slices>".
bool ReadRunDelay(int fd, int64_t* wait_ns) {
  char buf[128];
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* end = nullptr;
  strtoll(buf, &end, 10);
  if (end == buf) return false;
  *wait_ns = strtoll(end, nullptr, 10);
  return true;
}

// Pins the calling thread to `cpu` (best effort: unpinned if refused).
void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

// What the order check needs to tell a late request from an unfair server (DelayEvidence): the
// stall monitors, one per CPU and pinned to it, each sleeping a millisecond at a time and noting
// how late it woke (StallLog); and, when the server runs on this machine, a sampler reading its
// threads' CPU wait every millisecond (RunDelayLog). Owned by the main thread, which starts it
// before the clients run and stops it after; each of its threads writes only its own log.
class DelayWatch {
 public:
  DelayWatch() = default;
  DelayWatch(const DelayWatch&) = delete;
  DelayWatch& operator=(const DelayWatch&) = delete;
  ~DelayWatch() { Stop(); }

  void Start(const Options& o) {
    std::vector<int> cpus = AllowedCpus();
    monitor_logs_.resize(std::max<size_t>(cpus.size(), 1));
    for (size_t m = 0; m < monitor_logs_.size(); ++m) {
      const int cpu = cpus.empty() ? -1 : cpus[m];
      threads_.emplace_back([this, log = &monitor_logs_[m], cpu] {
        if (cpu >= 0) PinTo(cpu);
        constexpr int64_t kStep = kMs, kNoise = 250 * kUs;  // timer slack and wake-up cost
        while (!stop_.load(std::memory_order_relaxed)) {
          const int64_t due = NowNs() + kStep;
          std::this_thread::sleep_for(std::chrono::nanoseconds(kStep));
          const int64_t woke = NowNs();
          if (woke - due > kNoise) log->Add(due, woke);
        }
      });
    }
    if (IsLoopback(o.host)) schedstat_fds_ = OpenServerSchedstat(o, &server_pid_);
    if (schedstat_fds_.empty()) return;
    threads_.emplace_back([this] {
      while (!stop_.load(std::memory_order_relaxed)) {
        for (size_t t = 0; t < schedstat_fds_.size(); ++t) {
          int64_t wait = 0;
          if (ReadRunDelay(schedstat_fds_[t], &wait)) {
            server_waits_.Add(static_cast<int>(t), NowNs(), wait);
          }
        }
        std::this_thread::sleep_for(std::chrono::nanoseconds(kMs));
      }
    });
  }

  // Joins the threads and readies the logs. Idempotent.
  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    stop_.store(true, std::memory_order_relaxed);
    for (std::thread& t : threads_) t.join();
    for (const StallLog& l : monitor_logs_) stalls_.Merge(l);
    for (int fd : schedstat_fds_) close(fd);
    server_waits_.Finish();
  }

  // After Stop().
  DelayEvidence evidence() const {
    DelayEvidence e;
    e.stalls = &stalls_;
    if (!server_waits_.empty()) e.server_waits = &server_waits_;
    return e;
  }
  int64_t max_stall_ns() const { return stalls_.max_stall(); }
  int server_pid() const { return server_waits_.empty() ? 0 : server_pid_; }
  int64_t server_wait_ns() const { return server_waits_.total(); }

 private:
  std::atomic<bool> stop_{false};
  bool stopped_ = false;
  std::vector<std::thread> threads_;
  std::vector<StallLog> monitor_logs_;  // one per monitor thread
  StallLog stalls_;                     // merged, by Stop()
  std::vector<int> schedstat_fds_;
  int server_pid_ = 0;
  RunDelayLog server_waits_;
};

}  // namespace

std::unique_ptr<MethodResult> RunMethod(const Options& opts, Method method, uint64_t seed,
                                        const std::string& prefix, const std::atomic<bool>* stop) {
  auto result = std::make_unique<MethodResult>(static_cast<size_t>(opts.show));
  result->method = method;
  result->clients = opts.clients;
  const std::string key_prefix = prefix + MethodName(method) + ":";

  bool skip = false;
  std::string release_ok;
  std::string err = Probe(opts, method, key_prefix + "probe", &skip, &release_ok);
  if (!err.empty()) {
    if (skip) {
      result->skipped = true;
      result->skip_reason = err;
    } else {
      result->errors = 1;
      result->first_error = "probe: " + err;
    }
    return result;
  }

  Shared shared;
  shared.opts = &opts;
  shared.method = method;
  shared.log = &result->violations;
  shared.stop = stop;
  shared.owner_prefix = prefix + "owner";
  shared.release_ok = release_ok;
  for (int i = 0; i < opts.locks; ++i) {
    const int shard = i % opts.shards;
    shared.keys.push_back(KeyOnShard(key_prefix, i, shard, opts.shards));
    shared.records.push_back(std::make_unique<LockRecord>(i, opts.lease_ms * kMs));
    result->keys.push_back(shared.keys.back());
    result->key_shards.push_back(shard);
  }

  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < opts.clients; ++i) {
    clients.push_back(std::make_unique<Client>(&shared, i, seed * 1'000'003 + i + 1));
  }
  std::latch ready(opts.clients);
  std::latch go(1);
  std::vector<std::thread> threads;
  for (auto& c : clients) threads.emplace_back([&, p = c.get()] { p->Run(&ready, &go); });
  DelayWatch watch;  // for the order check
  if (method == Method::kNative) watch.Start(opts);
  ready.wait();
  for (auto& c : clients) {
    if (c->errors > 0) shared.abort = true;  // a failed connect; written before count_down
  }
  const int64_t start_ns = NowNs();
  shared.end_ns = start_ns + static_cast<int64_t>(opts.seconds * 1e9);
  go.count_down();
  int64_t finished_ns = start_ns;
  for (size_t i = 0; i < threads.size(); ++i) {
    threads[i].join();
    Client& c = *clients[i];
    result->acquisitions += c.acquisitions;
    result->attempts += c.attempts;
    result->extends += c.extends;
    result->reentries += c.reentries;
    result->releases += c.releases;
    result->wait_timeouts += c.wait_timeouts;
    result->errors += c.errors;
    if (result->first_error.empty()) result->first_error = c.first_error;
    result->latency->Merge(*c.latency);
    finished_ns = std::max(finished_ns, c.finished_ns);
  }
  result->seconds = static_cast<double>(finished_ns - start_ns) / 1e9;
  watch.Stop();
  result->max_stall_ns = watch.max_stall_ns();
  result->server_pid = watch.server_pid();
  result->server_wait_ns = watch.server_wait_ns();

  if (method == Method::kNative) {
    for (auto& rec : shared.records) {
      result->out_of_order += CheckGrantOrder(rec->lock(), rec->grants(), opts.fifo_slack_us * kUs,
                                              watch.evidence(), &result->violations);
      result->dropped_grants += rec->dropped_grants();
    }
  }
  return result;
}

void PrintResult(const Options& opts, const MethodResult& r, FILE* out) {
  const char* name = MethodName(r.method);
  if (r.skipped) {
    fprintf(out, "== %s: SKIPPED: %s\n", name, r.skip_reason.c_str());
    return;
  }
  if (r.keys.empty()) {
    fprintf(out, "== %s: FAILED: %s\n", name, r.first_error.c_str());
    return;
  }
  std::string keys;
  for (size_t i = 0; i < r.keys.size(); ++i) {
    if (i > 0) keys += ", ";
    keys += r.keys[i] + " (shard " + std::to_string(r.key_shards[i]) + ")";
  }
  fprintf(out, "== %s: %d clients, %zu locks, %.2f s%s%s\n", name, r.clients, r.keys.size(),
          r.seconds, opts.fault ? ", FAULT INJECTED" : "",
          opts.fault_order && r.method == Method::kNative ? ", QUEUE JUMPING INJECTED" : "");
  if (!opts.quiet) fprintf(out, "   keys: %s\n", keys.c_str());
  const double rate = r.seconds > 0 ? static_cast<double>(r.acquisitions) / r.seconds : 0;
  fprintf(out, "   acquisitions %" PRIu64 " (%.0f/s), acquire requests %" PRIu64, r.acquisitions,
          rate, r.attempts);
  if (r.method != Method::kRedisson) fprintf(out, ", extends %" PRIu64, r.extends);
  if (r.method != Method::kSetNx) fprintf(out, ", re-entries %" PRIu64, r.reentries);
  if (r.method == Method::kNative) fprintf(out, ", wait timeouts %" PRIu64, r.wait_timeouts);
  fprintf(out, ", releases %" PRIu64 "\n", r.releases);
  if (r.method == Method::kNative) {
    fprintf(out, "   longest scheduling stall seen by locktorture: %.3f ms",
            static_cast<double>(r.max_stall_ns) / 1e6);
    if (r.server_pid > 0) {
      fprintf(out, "; server (pid %d) threads waited %.3f ms for a CPU in all", r.server_pid,
              static_cast<double>(r.server_wait_ns) / 1e6);
    }
    fputc('\n', out);
  }
  const auto& h = *r.latency;
  fprintf(out, "   acquire latency (us): p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
          Us(h.ValueAtQuantile(0.5)), Us(h.ValueAtQuantile(0.99)), Us(h.ValueAtQuantile(0.999)),
          Us(h.max()));
  std::string kinds;
  for (size_t k = 0; k < static_cast<size_t>(ViolationKind::kCount); ++k) {
    const uint64_t n = r.violations.count(static_cast<ViolationKind>(k));
    if (n == 0) continue;
    kinds += kinds.empty() ? " (" : ", ";
    kinds += std::to_string(n) + " " + ViolationKindName(static_cast<ViolationKind>(k));
  }
  if (!kinds.empty()) kinds += ")";
  fprintf(out, "   %" PRIu64 " violations%s, %" PRIu64 " errors, %" PRIu64 " warnings\n",
          r.violations.total(), kinds.c_str(), r.errors, r.violations.warnings());
  for (const Violation& v : r.violations.first()) {
    fprintf(out, "   VIOLATION %s: %s\n", ViolationKindName(v.kind), v.detail.c_str());
  }
  if (!r.first_error.empty()) fprintf(out, "   ERROR %s\n", r.first_error.c_str());
  for (const std::string& w : r.violations.first_warnings()) {
    fprintf(out, "   warning: %s\n", w.c_str());
  }
  if (r.dropped_grants > 0) {
    fprintf(out, "   note: %" PRIu64 " grants beyond the order check's memory were not checked\n",
            r.dropped_grants);
  }
}

}  // namespace deadbolt::locktorture
