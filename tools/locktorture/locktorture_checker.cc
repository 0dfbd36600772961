#include "tools/locktorture/locktorture_checker.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

namespace deadbolt::locktorture {
namespace {

std::string Format(const char* fmt, auto... args) {
  char buf[512];
  snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// How far around an out-of-order pair a stall still counts: the monitor is one thread and may
// have been lucky at the very moment a reactor was not, but the load that stalls threads comes
// and goes over tens of milliseconds, not microseconds.
constexpr int64_t kStallWindowNs = 100'000'000;

}  // namespace

const char* ViolationKindName(ViolationKind k) {
  switch (k) {
    case ViolationKind::kOverlap:
      return "overlap";
    case ViolationKind::kTokenOrder:
      return "token-not-increasing";
    case ViolationKind::kOutOfOrder:
      return "out-of-order-grant";
    case ViolationKind::kLostLock:
      return "lost-lock";
    case ViolationKind::kCount:
      break;
  }
  return "?";
}

// --- ViolationLog ---------------------------------------------------------------------------

void ViolationLog::Add(Violation v) {
  std::lock_guard<std::mutex> g(mu_);
  const size_t k = static_cast<size_t>(v.kind);
  if (counts_[k]++ < keep_) first_.push_back(std::move(v));
}

void ViolationLog::Warn(std::string detail) {
  std::lock_guard<std::mutex> g(mu_);
  if (warnings_++ < keep_) first_warnings_.push_back(std::move(detail));
}

uint64_t ViolationLog::count(ViolationKind k) const {
  std::lock_guard<std::mutex> g(mu_);
  return counts_[static_cast<size_t>(k)];
}

uint64_t ViolationLog::total() const {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t n = 0;
  for (uint64_t c : counts_) n += c;
  return n;
}

uint64_t ViolationLog::warnings() const {
  std::lock_guard<std::mutex> g(mu_);
  return warnings_;
}

std::vector<Violation> ViolationLog::first() const {
  std::lock_guard<std::mutex> g(mu_);
  return first_;
}

std::vector<std::string> ViolationLog::first_warnings() const {
  std::lock_guard<std::mutex> g(mu_);
  return first_warnings_;
}

// --- LockRecord -----------------------------------------------------------------------------

bool LockRecord::CheckIn(const Holder& h, int64_t now_ns, ViolationLog* log) {
  std::vector<Violation> found;
  std::vector<std::string> warned;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const Holder& other : inside_) {
      if (CertainlyLeased(other, now_ns)) {
        found.push_back({ViolationKind::kOverlap, lock_, now_ns,
                         Format("lock %d: client %d (acquisition #%" PRIu64
                                ") entered while client %d (acquisition #%" PRIu64
                                ", lease renewed %.3f ms ago) was still inside",
                                lock_, h.client, h.seq, other.client, other.seq,
                                Ms(now_ns - other.lease_from_ns))});
      } else {
        warned.push_back(
            Format("lock %d: client %d entered while client %d was still inside, "
                   "but client %d's lease (renewed %.3f ms ago) may have expired: "
                   "that client stalled",
                   lock_, h.client, other.client, other.client, Ms(now_ns - other.lease_from_ns)));
      }
    }
    if (h.has_token) {
      if (have_token_ && h.token <= last_token_) {
        std::string what = Format("lock %d: client %d checked in with fencing token %" PRIu64
                                  " after client %d's %" PRIu64,
                                  lock_, h.client, h.token, last_token_client_, last_token_);
        if (CertainlyLeased(h, now_ns)) {
          found.push_back({ViolationKind::kTokenOrder, lock_, now_ns, std::move(what)});
        } else {
          warned.push_back(what + " (but it may have outlived its lease before checking in)");
        }
      }
      if (!have_token_ || h.token > last_token_) {
        have_token_ = true;
        last_token_ = h.token;
        last_token_client_ = h.client;
      }
    }
    inside_.push_back(h);
  }
  for (std::string& w : warned) log->Warn(std::move(w));
  const bool ok = found.empty();
  for (Violation& v : found) log->Add(std::move(v));
  return ok;
}

void LockRecord::Renewed(int client, int64_t sent_ns) {
  std::lock_guard<std::mutex> g(mu_);
  for (Holder& h : inside_) {
    if (h.client == client) h.lease_from_ns = std::max(h.lease_from_ns, sent_ns);
  }
}

void LockRecord::CheckOut(int client) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::find_if(inside_.begin(), inside_.end(),
                         [client](const Holder& h) { return h.client == client; });
  if (it != inside_.end()) inside_.erase(it);
}

bool LockRecord::LostLock(const Holder& h, const char* what, int64_t now_ns, ViolationLog* log) {
  std::string msg = Format("lock %d: client %d's %s (acquisition #%" PRIu64
                           ", lease renewed %.3f ms earlier) found the lock no longer its own",
                           lock_, h.client, what, h.seq, Ms(now_ns - h.lease_from_ns));
  if (CertainlyLeased(h, now_ns)) {
    log->Add({ViolationKind::kLostLock, lock_, now_ns, std::move(msg)});
    return true;
  }
  log->Warn(msg + " (its lease may have expired: that client stalled)");
  return false;
}

void LockRecord::AddGrant(const Grant& g) {
  std::lock_guard<std::mutex> lk(mu_);
  if (grants_.size() >= max_grants_) {
    ++dropped_grants_;
    return;
  }
  grants_.push_back(g);
}

std::vector<Grant> LockRecord::grants() const {
  std::lock_guard<std::mutex> g(mu_);
  return grants_;
}

uint64_t LockRecord::dropped_grants() const {
  std::lock_guard<std::mutex> g(mu_);
  return dropped_grants_;
}

int LockRecord::inside() const {
  std::lock_guard<std::mutex> g(mu_);
  return static_cast<int>(inside_.size());
}

// --- the order check ------------------------------------------------------------------------

void StallLog::Add(int64_t due_ns, int64_t woke_ns) {
  if (woke_ns <= due_ns) return;
  max_ = std::max(max_, woke_ns - due_ns);
  if (stalls_.size() >= max_stalls_) return;
  if (!stalls_.empty() && stalls_.back().due_ns > due_ns) sorted_ = false;
  stalls_.push_back({due_ns, woke_ns});
}

void StallLog::Merge(const StallLog& other) {
  for (const Stall& st : other.stalls_) Add(st.due_ns, st.woke_ns);
  max_ = std::max(max_, other.max_);
}

void StallLog::Sort() const {
  if (sorted_) return;
  std::sort(stalls_.begin(), stalls_.end(),
            [](const Stall& a, const Stall& b) { return a.due_ns < b.due_ns; });
  sorted_ = true;
}

int64_t StallLog::MaxStallIn(int64_t from_ns, int64_t to_ns) const {
  Sort();
  // No stall is longer than max_, so one that ends at or after from_ns began at or after
  // from_ns - max_. Scan from there to the last one that begins by to_ns.
  auto it = std::lower_bound(stalls_.begin(), stalls_.end(), from_ns - max_,
                             [](const Stall& st, int64_t t) { return st.due_ns < t; });
  int64_t longest = 0;
  for (; it != stalls_.end() && it->due_ns <= to_ns; ++it) {
    if (it->woke_ns >= from_ns) longest = std::max(longest, it->woke_ns - it->due_ns);
  }
  return longest;
}

void RunDelayLog::Add(int thread, int64_t at_ns, int64_t wait_ns) {
  if (thread < 0) return;
  if (static_cast<size_t>(thread) >= threads_.size()) threads_.resize(thread + 1);
  threads_[thread].push_back({at_ns, wait_ns});
}

void RunDelayLog::Finish() {
  stretches_.assign(threads_.size(), Stretches());
  for (size_t t = 0; t < threads_.size(); ++t) {
    const std::vector<Sample>& x = threads_[t];
    if (x.size() < 2) continue;
    // Interval i runs from sample i to sample i + 1.
    const size_t n = x.size() - 1;
    auto waited = [&x](size_t i) { return x[i + 1].wait_ns - x[i].wait_ns; };
    auto starved = [&x, &waited](size_t i) {
      const int64_t elapsed = x[i + 1].at_ns - x[i].at_ns;
      return elapsed > 0 && waited(i) * 5 >= elapsed * 4;
    };
    Stretches& out = stretches_[t];
    auto add = [&](size_t first, size_t last) {  // intervals first..last
      int64_t w = 0;
      for (size_t i = first; i <= last; ++i) w += waited(i);
      out.by_from.push_back({x[first].at_ns, x[last + 1].at_ns, w});
      out.max_span_ns = std::max(out.max_span_ns, x[last + 1].at_ns - x[first].at_ns);
    };
    // Every maximal run with starved inner intervals: two neighbours with nothing starved
    // between them, or a starved run together with the interval on each side of it.
    for (size_t i = 0; i < n; ++i) {
      if (starved(i)) {
        size_t end = i;
        while (end + 1 < n && starved(end + 1)) ++end;
        add(i > 0 ? i - 1 : i, end + 1 < n ? end + 1 : end);
        i = end;
      } else if (i + 1 < n && !starved(i + 1)) {
        add(i, i + 1);
      } else if (n == 1) {
        add(i, i);
      }
    }
    std::sort(out.by_from.begin(), out.by_from.end(),
              [](const Stretch& a, const Stretch& b) { return a.from_ns < b.from_ns; });
  }
}

int64_t RunDelayLog::LongestStallIn(int64_t from_ns, int64_t to_ns) const {
  int64_t sum = 0;
  for (const Stretches& t : stretches_) {
    auto it = std::lower_bound(t.by_from.begin(), t.by_from.end(), from_ns - t.max_span_ns,
                               [](const Stretch& s, int64_t v) { return s.from_ns < v; });
    int64_t longest = 0;
    for (; it != t.by_from.end() && it->from_ns <= to_ns; ++it) {
      if (it->to_ns >= from_ns) longest = std::max(longest, it->wait_ns);
    }
    sum += longest;
  }
  return sum;
}

int64_t RunDelayLog::total() const {
  int64_t sum = 0;
  for (const std::vector<Sample>& t : threads_) {
    if (t.size() >= 2) sum += t.back().wait_ns - t.front().wait_ns;
  }
  return sum;
}

int64_t DelayEvidence::Between(int64_t from_ns, int64_t to_ns, std::string* what) const {
  int64_t best = 0;
  if (server_waits != nullptr) {
    const int64_t w = server_waits->LongestStallIn(from_ns, to_ns);
    if (w > best) {
      best = w;
      *what = Format("the server's threads may have gone %.3f ms without a CPU meanwhile", Ms(w));
    }
  }
  if (stalls != nullptr) {
    const int64_t s = stalls->MaxStallIn(from_ns - kStallWindowNs, to_ns + kStallWindowNs);
    if (s > best) {
      best = s;
      *what = Format("locktorture's own threads saw a %.3f ms scheduling stall around then", Ms(s));
    }
  }
  return best;
}

uint64_t CheckGrantOrder(int lock, std::vector<Grant> grants, int64_t slack_ns,
                         const DelayEvidence& evidence, ViolationLog* log) {
  // Walk the grants from the last granted (highest token) to the first, remembering the one among
  // those already walked (granted later) whose send finished earliest. A grant B is out of order
  // when that earliest sender A finished sending more than slack_ns before B began.
  std::sort(grants.begin(), grants.end(),
            [](const Grant& a, const Grant& b) { return a.token > b.token; });
  uint64_t bad = 0;
  const Grant* earliest = nullptr;
  for (const Grant& b : grants) {
    if (earliest != nullptr && earliest->token > b.token &&
        earliest->send_end_ns + slack_ns < b.send_begin_ns) {
      const Grant& a = *earliest;
      const int64_t gap = b.send_begin_ns - a.send_end_ns;
      std::string what = Format("lock %d: client %d was granted token %" PRIu64
                                " though it asked %.3f ms after client %d finished asking, and "
                                "client %d was granted only later (token %" PRIu64 ")",
                                lock, b.client, b.token, Ms(gap), a.client, a.client, a.token);
      std::string why;
      const int64_t delay =
          evidence.Between(a.send_end_ns, std::max(a.granted_ns, b.send_begin_ns), &why);
      if (delay > 0 && delay >= gap - slack_ns) {
        log->Warn(what + " (but " + why +
                  Format(", so client %d's request may have reached the "
                         "lock late)",
                         a.client));
      } else {
        ++bad;
        log->Add({ViolationKind::kOutOfOrder, lock, 0, std::move(what)});
      }
    }
    if (earliest == nullptr || b.send_end_ns < earliest->send_end_ns) earliest = &b;
  }
  return bad;
}

}  // namespace deadbolt::locktorture
