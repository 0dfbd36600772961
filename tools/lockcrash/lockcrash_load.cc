// lockcrash: the load phase of a round (Tester::Load and its helpers, lockcrash_tester.h). The
// main thread drives o.conns non-blocking connections on one epoll, each keeping o.pipeline
// operations in flight on its own keys, and records every acknowledgement in the keys' histories;
// a killer thread signals the server at a random moment; the replies already on their way are
// then read (they count as acknowledged) and what is left is in flight at the kill.
//
// Threads: everything here runs on the main thread except the killer, which Load starts and
// joins; it writes only kill_ns_ (then fired_) and calls server_.Signal (lockcrash_tester.h).

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tools/lockcrash/lockcrash_model.h"
#include "tools/lockcrash/lockcrash_tester.h"
#include "tools/lockload/lockload_resp.h"
#include "tools/locktorture/locktorture_conn.h"

namespace deadbolt::lockcrash {
namespace {

using locktorture::Conn;
using locktorture::IntegerOf;
using locktorture::IsError;
using locktorture::IsOk;
using locktorture::NowNs;
using locktorture::Printable;

constexpr int64_t kMs = 1'000'000;

}  // namespace

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
  if (t <= k.max_token) TokenNotAbove(key, t, "during the load");
  tokens_[static_cast<size_t>(key)].acked.emplace_back(t, now);
  k.max_token = t;
}

void Tester::TokenNotAbove(int key, uint64_t t, const char* where) {
  Key& k = keys_[static_cast<size_t>(key)];
  auto& acked = tokens_[static_cast<size_t>(key)].acked;
  const TokenLoss loss = FindTokenLoss(acked, kills_, t);
  if (!loss.found) {
    stats_.violations++;
    std::string detail;
    if (o_.verbose) {
      detail = "; tokens acknowledged (ms after the last kill):";
      for (size_t e = acked.size() > 6 ? acked.size() - 6 : 0; e < acked.size(); e++) {
        detail += Fmt(" %llu@%lld", static_cast<unsigned long long>(acked[e].first),
                      static_cast<long long>((acked[e].second - kill_ns_) / kMs));
      }
    }
    Problem("VIOLATION token-not-increasing",
            k.name +
                Fmt(": fencing token %llu %s, but %llu was acknowledged before by the server "
                    "that handed it out",
                    static_cast<unsigned long long>(t), where,
                    static_cast<unsigned long long>(k.max_token)) +
                detail);
  } else {
    Judgement j;
    j.verdict = Verdict::kLost;
    j.lost_ops = 1;
    j.lost_since_ns = loss.ack_ns;
    j.why =
        Fmt("fencing token %llu %s, but %llu had been acknowledged before the kill that "
            "ended round %zu",
            static_cast<unsigned long long>(t), where,
            static_cast<unsigned long long>(loss.acked_token), loss.kill_index + 1);
    // Undone by an earlier restart than the last one, seen only now.
    if (loss.kill_index + 1 != kills_.size()) stats_.lost_tokens_prev++;
    Loss(key, j, std::max<int64_t>(0, (loss.kill.ns - loss.ack_ns) / kMs), /*token=*/true,
         loss.kill.graceful);
  }
  // Tokens above t are no longer what the server's counter has passed.
  acked.erase(std::find_if(acked.begin(), acked.end(), [&](const auto& e) { return e.first >= t; }),
              acked.end());
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
        Problem("ERROR during the load",
                std::string(e.kind == Expect::kMulti ? "MULTI" : "a queued command") + " replied " +
                    Printable(r));
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
  const bool rewrite_first = sig == SIGKILL && std::uniform_int_distribution<int>(0, 99)(rng_) <
                                                   o_.rewrite_before_kill_pct;
  const int64_t rewrite_at = kill_at - std::uniform_int_distribution<int64_t>(0, 8)(rng_) * kMs;
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

}  // namespace deadbolt::lockcrash
