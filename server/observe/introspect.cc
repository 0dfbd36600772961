#include "server/observe/introspect.h"

#include <absl/strings/str_cat.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "server/base/str_util.h"

namespace deadbolt::server {

double TickClock::TicksPerUsec() {
  static const double kRate = [] {
#if defined(__x86_64__)
    auto mono_ns = [] {
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    };
    // 5 ms of wall time against the counter: an error of about a microsecond in 5,000.
    int64_t n0 = mono_ns();
    uint64_t t0 = Now();
    timespec nap{0, 5000000};
    nanosleep(&nap, nullptr);
    int64_t n1 = mono_ns();
    uint64_t t1 = Now();
    double rate = static_cast<double>(t1 - t0) / (static_cast<double>(n1 - n0) / 1000.0);
    return rate > 0 ? rate : 1000.0;
#else
    return 1000.0;  // nanoseconds
#endif
  }();
  return kRate;
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  if (!o.counts_) return;
  if (!counts_) counts_ = std::make_unique<uint64_t[]>(kBuckets);
  for (size_t i = 0; i < kBuckets; i++) counts_[i] += o.counts_[i];
}

uint64_t LatencyHistogram::total() const {
  uint64_t n = 0;
  if (counts_) {
    for (size_t i = 0; i < kBuckets; i++) n += counts_[i];
  }
  return n;
}

uint64_t LatencyHistogram::UpperBound(size_t b) {
  if (b < (1u << kSubBits)) return b;
  size_t e = (b >> kSubBits) + kSubBits - 1;
  uint64_t sub = b & ((1u << kSubBits) - 1);
  uint64_t base = (uint64_t{1} << e) | (sub << (e - kSubBits));
  return base + (uint64_t{1} << (e - kSubBits)) - 1;
}

uint64_t LatencyHistogram::Percentile(double percentile) const {
  const uint64_t n = total();
  if (n == 0) return 0;
  uint64_t want = static_cast<uint64_t>(std::ceil(percentile / 100.0 * static_cast<double>(n)));
  want = std::clamp<uint64_t>(want, 1, n);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; i++) {
    seen += counts_[i];
    if (seen >= want) return UpperBound(i);
  }
  return UpperBound(kBuckets - 1);
}

std::vector<std::pair<uint64_t, uint64_t>> LatencyHistogram::Buckets() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (!counts_) return out;
  for (size_t i = 0; i < kBuckets; i++) {
    if (counts_[i]) out.emplace_back(UpperBound(i), counts_[i]);
  }
  return out;
}

void LatencySeries::Merge(const LatencySeries& o) {
  std::deque<LatencySample> merged;
  size_t i = 0, j = 0;
  while (i < samples.size() || j < o.samples.size()) {
    LatencySample next;
    if (j >= o.samples.size() || (i < samples.size() && samples[i].unix_sec < o.samples[j].unix_sec)) {
      next = samples[i++];
    } else {
      next = o.samples[j++];
    }
    if (!merged.empty() && merged.back().unix_sec == next.unix_sec) {
      merged.back().ms = std::max(merged.back().ms, next.ms);
    } else {
      merged.push_back(next);
    }
  }
  while (merged.size() > kMaxSamples) merged.pop_front();
  samples = std::move(merged);
  max_ms = std::max(max_ms, o.max_ms);
}

namespace {

// Redis's sdscatrepr: the bytes in double quotes, with \\ \" \n \r \t \a \b escaped and other
// unprintable bytes as \xHH.
void AppendRepr(std::string* out, std::string_view s) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '\\': *out += "\\\\"; break;
      case '"': *out += "\\\""; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\a': *out += "\\a"; break;
      case '\b': *out += "\\b"; break;
      default:
        if (c >= 32 && c < 127) {
          *out += static_cast<char>(c);
        } else {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\x%02x", c);
          *out += buf;
        }
    }
  }
  *out += '"';
}

bool IsCaseless(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace

std::string MonitorLine(int64_t unix_us, int db, std::string_view peer,
                        const std::string_view* args, size_t argc) {
  char head[96];
  snprintf(head, sizeof(head), "+%lld.%06lld [%d ", static_cast<long long>(unix_us / 1000000),
           static_cast<long long>(unix_us % 1000000), db);
  std::string out = head;
  out.append(peer);
  out += ']';
  const bool auth = argc > 0 && IsCaseless(args[0], "auth");
  const bool hello = argc > 0 && IsCaseless(args[0], "hello");
  bool redact = false;
  for (size_t i = 0; i < argc; i++) {
    out += ' ';
    if ((auth && i > 0) || redact) {
      out += "\"(redacted)\"";
    } else {
      AppendRepr(&out, args[i]);
    }
    if (hello && IsCaseless(args[i], "auth")) redact = true;
  }
  out += "\r\n";
  return out;
}

std::vector<std::string> RunSlowlogArgs(std::string_view name, int n) {
  return {std::string(name), "(a run of " + std::to_string(n) + " fast calls, timed together)"};
}

std::vector<std::string> SlowlogArgs(const std::string_view* args, size_t argc) {
  constexpr size_t kMaxArgc = 32, kMaxString = 128;
  size_t n = std::min(argc, kMaxArgc);
  std::vector<std::string> out;
  out.reserve(n);
  // Secrets are not kept, as in Redis: AUTH's arguments, HELLO's after AUTH, and ACL SETUSER's
  // rules (passwords among them).
  const bool auth = argc > 0 && IsCaseless(args[0], "auth");
  const bool hello = argc > 0 && IsCaseless(args[0], "hello");
  const bool setuser = argc > 1 && IsCaseless(args[0], "acl") && IsCaseless(args[1], "setuser");
  bool redact = false;
  for (size_t i = 0; i < n; i++) {
    if ((auth && i > 0) || (setuser && i > 2) || redact) {
      out.emplace_back("(redacted)");
      continue;
    }
    if (hello && IsCaseless(args[i], "auth")) redact = true;
    if (n != argc && i == n - 1) {
      out.push_back(absl::StrCat("... (", argc - n + 1, " more arguments)"));
    } else if (args[i].size() > kMaxString) {
      out.push_back(absl::StrCat(AV(args[i].substr(0, kMaxString)), "... (",
                                 args[i].size() - kMaxString, " more bytes)"));
    } else {
      out.emplace_back(args[i]);
    }
  }
  return out;
}

}  // namespace deadbolt::server
