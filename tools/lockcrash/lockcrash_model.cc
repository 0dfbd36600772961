#include "tools/lockcrash/lockcrash_model.h"

#include <algorithm>
#include <cstdint>

namespace deadbolt::lockcrash {
namespace {

constexpr int64_t kMs = 1'000'000;

std::string Describe(const State& s) {
  if (s.owner == 0) return "free";
  std::string r = "held by #" + std::to_string(s.owner);
  if (s.token) r += " token " + std::to_string(s.token);
  return r;
}

std::string Describe(const Observation& o) {
  if (!o.exists) return "free";
  std::string r = o.foreign ? "holding the foreign value '" + o.value + "'"
                            : "held by #" + std::to_string(o.owner);
  r += ", pttl " + std::to_string(o.pttl_ms) + " ms";
  if (o.has_token) r += ", token " + std::to_string(o.token);
  if (o.holds >= 0) r += ", holds " + std::to_string(o.holds);
  return r;
}

}  // namespace

const char* OpKindName(OpKind k) {
  switch (k) {
    case OpKind::kStart:
      return "start";
    case OpKind::kAcquire:
      return "acquire";
    case OpKind::kRelease:
      return "release";
    case OpKind::kExtend:
      return "extend";
  }
  return "?";
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kInflightDone:
      return "in-flight-done";
    case Verdict::kLost:
      return "lost";
    case Verdict::kViolation:
      return "violation";
  }
  return "?";
}

const char* LossKindName(LossKind k) {
  switch (k) {
    case LossKind::kNone:
      return "none";
    case LossKind::kLostAcquire:
      return "lost-acquire";
    case LossKind::kResurrected:
      return "resurrected-release";
    case LossKind::kLostExtend:
      return "lost-extend";
    case LossKind::kOlderOwner:
      return "older-owner";
  }
  return "?";
}

bool Admits(const State& s, const Observation& o, int64_t slack_ns) {
  if (o.foreign) return false;
  // Could the lease have run out by the time the server answered?
  const bool may_have_expired = s.owner != 0 && o.recv_ns >= s.exp_lo_ns - slack_ns;
  if (s.owner == 0) return !o.exists;
  if (!o.exists) return may_have_expired;
  if (o.owner != s.owner) return false;
  if (o.pttl_ms == -2) return may_have_expired;  // gone between the GET and the PTTL
  if (o.pttl_ms < 0) return false;               // no lease at all
  const int64_t left_ns = o.pttl_ms * kMs;
  if (left_ns < s.exp_lo_ns - o.recv_ns - slack_ns) return false;  // shorter than granted
  if (left_ns > s.exp_hi_ns - o.sent_ns + slack_ns) return false;  // longer than granted
  if (o.holds >= 0 && o.holds != 1) return false;                  // nobody here re-enters
  if (s.token != 0 && o.holds >= 0 && (!o.has_token || o.token != s.token)) return false;
  return true;
}

Judgement Judge(const Key& k, const Observation& o, int64_t slack_ns) {
  Judgement j;
  const State& last = k.last();
  if (Admits(last, o, slack_ns)) return j;
  if (k.pending.active && Admits(k.pending.after, o, slack_ns)) {
    // An acquire in flight whose token never reached the client: it must still be a new one.
    if (k.native && k.pending.kind == OpKind::kAcquire && o.exists && o.has_token &&
        o.token <= k.max_token) {
      j.verdict = Verdict::kViolation;
      j.why = "the in-flight acquire took effect with token " + std::to_string(o.token) +
              ", not above the " + std::to_string(k.max_token) + " acknowledged before";
      return j;
    }
    j.verdict = Verdict::kInflightDone;
    return j;
  }
  const auto& h = k.history;
  for (size_t i = h.size() - 1; i-- > 0;) {
    if (!Admits(h[i], o, slack_ns)) continue;
    j.verdict = Verdict::kLost;
    j.lost_ops = static_cast<int>(h.size() - 1 - i);
    j.lost_since_ns = h[i + 1].ack_ns;
    if (last.owner != 0 && !o.exists) {
      j.loss = LossKind::kLostAcquire;
    } else if (last.owner == 0) {
      j.loss = LossKind::kResurrected;
    } else if (o.owner == last.owner) {
      j.loss = LossKind::kLostExtend;
    } else {
      j.loss = LossKind::kOlderOwner;
    }
    j.why = "expected " + Describe(last) + " (after its " + OpKindName(last.by) + "), found " +
            Describe(o) + ": the last " + std::to_string(j.lost_ops) +
            " acknowledged operations were undone";
    return j;
  }
  j.verdict = Verdict::kViolation;
  j.why = "expected " + Describe(last) + " (after its " + OpKindName(last.by) + ")";
  if (k.pending.active) {
    j.why += std::string(" or, with the ") + OpKindName(k.pending.kind) + " in flight, " +
             Describe(k.pending.after);
  }
  j.why += "; found " + Describe(o) + ", a state this key never had";
  if (o.exists && !o.foreign && o.pttl_ms >= 0) {
    for (const State& s : h) {
      if (s.owner == o.owner) {
        j.why += " (owner right, lease between " + std::to_string((s.exp_lo_ns - o.recv_ns) / kMs) +
                 " and " + std::to_string((s.exp_hi_ns - o.sent_ns) / kMs) + " ms expected)";
        break;
      }
    }
  }
  return j;
}

TokenLoss FindTokenLoss(const std::vector<std::pair<uint64_t, int64_t>>& acked,
                        const std::vector<Kill>& kills, uint64_t t) {
  TokenLoss r;
  auto it = std::find_if(acked.begin(), acked.end(), [&](const auto& e) { return e.first >= t; });
  if (it == acked.end()) return r;
  auto kill = std::find_if(kills.begin(), kills.end(),
                           [&](const Kill& k) { return k.drain_end_ns >= it->second; });
  if (kill == kills.end()) return r;
  r.found = true;
  r.acked_token = it->first;
  r.ack_ns = it->second;
  r.kill = *kill;
  r.kill_index = static_cast<size_t>(kill - kills.begin());
  return r;
}

State Adopt(const Observation& o) {
  State s;
  if (!o.exists || o.foreign) return s;
  s.owner = o.owner;
  s.token = o.has_token ? o.token : 0;
  if (o.pttl_ms >= 0) {
    s.exp_lo_ns = o.sent_ns + o.pttl_ms * kMs - kMs;
    s.exp_hi_ns = o.recv_ns + o.pttl_ms * kMs + kMs;
  } else {
    s.exp_lo_ns = s.exp_hi_ns = INT64_MAX / 2;
  }
  return s;
}

std::string OwnerValue(const std::string& tag, uint64_t n) { return tag + ":" + std::to_string(n); }

uint64_t ParseOwner(const std::string& tag, const std::string& v) {
  if (v.size() <= tag.size() + 1 || v.compare(0, tag.size(), tag) != 0 || v[tag.size()] != ':') {
    return 0;
  }
  uint64_t n = 0;
  for (size_t i = tag.size() + 1; i < v.size(); i++) {
    if (v[i] < '0' || v[i] > '9' || n > UINT64_MAX / 10 - 10) return 0;
    n = n * 10 + static_cast<uint64_t>(v[i] - '0');
  }
  return n;
}

}  // namespace deadbolt::lockcrash
