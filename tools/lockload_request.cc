#include "tools/lockload_request.h"

#include <algorithm>
#include <cmath>

namespace deadbolt::lockload {
namespace {

std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

uint32_t Bits(std::initializer_list<ReplyType> types) {
  uint32_t m = 0;
  for (ReplyType t : types) m |= 1u << static_cast<unsigned>(t);
  return m;
}

// sum_{i=1..n} i^-theta; exact up to ten million terms, then the integral of the rest.
double Zeta(uint64_t n, double theta) {
  const uint64_t exact = std::min<uint64_t>(n, 10'000'000);
  double sum = 0;
  for (uint64_t i = 1; i <= exact; ++i) sum += std::pow(static_cast<double>(i), -theta);
  if (n > exact) {
    double a = static_cast<double>(exact) + 0.5, b = static_cast<double>(n) + 0.5;
    sum += (std::pow(b, 1 - theta) - std::pow(a, 1 - theta)) / (1 - theta);
  }
  return sum;
}

}  // namespace

const char* ReqKindName(ReqKind k) {
  switch (k) {
    case ReqKind::kAcquire:
      return "acquire";
    case ReqKind::kRelease:
      return "release";
    case ReqKind::kExtend:
      return "extend";
    case ReqKind::kGet:
      return "get";
    case ReqKind::kSet:
      return "set";
    case ReqKind::kPing:
      return "ping";
    case ReqKind::kCount:
      break;
  }
  return "?";
}

std::string MakeToken(Rng* rng) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string t(kTokenLen, '-');
  uint64_t bits = rng->Next();
  int left = 16;
  for (size_t i = 0; i < kTokenLen; ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) continue;
    if (left == 0) {
      bits = rng->Next();
      left = 16;
    }
    t[i] = kHex[bits & 15];
    bits >>= 4;
    --left;
  }
  t[14] = '4';                          // version 4
  t[19] = kHex[8 + (rng->Next() & 3)];  // variant 10xx
  return t;
}

RequestSet::RequestSet(const Options& opts, std::string_view evalsha)
    : prefix_(opts.prefix),
      keyspace_(opts.keys == KeyDist::kHot ? 1 : opts.keyspace),
      dist_(opts.keys),
      cycle_(opts.workload == Workload::kCycle),
      ttl_(std::to_string(opts.ttl_ms)),
      release_(opts.release),
      extend_(opts.extend) {
  switch (opts.workload) {
    case Workload::kAcquire:
    case Workload::kCycle:
      primary_ = ReqKind::kAcquire;
      break;
    case Workload::kExtend:
      primary_ = ReqKind::kExtend;
      break;
    case Workload::kGet:
      primary_ = ReqKind::kGet;
      break;
    case Workload::kSet:
      primary_ = ReqKind::kSet;
      break;
    case Workload::kPing:
      primary_ = ReqKind::kPing;
      break;
  }
  auto set = [&](ReqKind k, int argc, std::initializer_list<std::string_view> before_key,
                 bool has_key, uint32_t expected) {
    std::string h = "*" + std::to_string(argc) + "\r\n";
    for (std::string_view a : before_key) h += Bulk(a);
    head_[static_cast<size_t>(k)] = std::move(h);
    has_key_[static_cast<size_t>(k)] = has_key;
    expected_[static_cast<size_t>(k)] = expected;
  };
  const uint32_t ok_or_null = Bits({ReplyType::kOk, ReplyType::kNull});
  const uint32_t zero_or_one = Bits({ReplyType::kInt0, ReplyType::kInt1});
  set(ReqKind::kAcquire, 6, {"SET"}, true, ok_or_null);
  switch (release_) {
    case ReleaseMode::kDelIfEq:
      set(ReqKind::kRelease, 3, {"DELIFEQ"}, true, zero_or_one);
      break;
    case ReleaseMode::kDelEx:
      set(ReqKind::kRelease, 4, {"DELEX"}, true, zero_or_one);
      break;
    case ReleaseMode::kEvalSha:
      set(ReqKind::kRelease, 5, {"EVALSHA", evalsha, "1"}, true, zero_or_one);
      break;
  }
  if (extend_ == ExtendMode::kPexpire) {
    set(ReqKind::kExtend, 3, {"PEXPIRE"}, true, zero_or_one);
  } else {
    set(ReqKind::kExtend, 6, {"SET"}, true, ok_or_null);
  }
  set(ReqKind::kGet, 2, {"GET"}, true, Bits({ReplyType::kBulk, ReplyType::kNull}));
  set(ReqKind::kSet, 3, {"SET"}, true, Bits({ReplyType::kOk}));
  set(ReqKind::kPing, 1, {"PING"}, false, Bits({ReplyType::kSimple}));

  if (dist_ == KeyDist::kZipf && keyspace_ > 2) {
    theta_ = opts.zipf_theta;
    zetan_ = Zeta(keyspace_, theta_);
    half_pow_theta_ = std::pow(0.5, theta_);
    const double zeta2 = 1 + half_pow_theta_;
    alpha_ = 1 / (1 - theta_);
    eta_ = (1 - std::pow(2.0 / static_cast<double>(keyspace_), 1 - theta_)) / (1 - zeta2 / zetan_);
  }
}

uint32_t RequestSet::PickKey(Rng* rng) const {
  switch (dist_) {
    case KeyDist::kHot:
      return 0;
    case KeyDist::kUniform:
      return static_cast<uint32_t>(rng->Below(keyspace_));
    case KeyDist::kZipf: {
      if (keyspace_ <= 2) return static_cast<uint32_t>(rng->Below(keyspace_));
      const double u = rng->Unit();
      const double uz = u * zetan_;
      if (uz < 1) return 0;
      if (uz < 1 + half_pow_theta_) return 1;
      auto k = static_cast<uint64_t>(static_cast<double>(keyspace_) *
                                     std::pow(eta_ * u - eta_ + 1, alpha_));
      return static_cast<uint32_t>(std::min(k, keyspace_ - 1));
    }
  }
  return 0;
}

std::string RequestSet::Suffix(ReqKind kind, std::string_view token) const {
  switch (kind) {
    case ReqKind::kAcquire:
      return Bulk(token) + Bulk("NX") + Bulk("PX") + Bulk(ttl_);
    case ReqKind::kRelease:
      return release_ == ReleaseMode::kDelEx ? Bulk("IFEQ") + Bulk(token) : Bulk(token);
    case ReqKind::kExtend:
      return extend_ == ExtendMode::kPexpire ? Bulk(ttl_)
                                             : Bulk(token) + Bulk("XX") + Bulk("PX") + Bulk(ttl_);
    case ReqKind::kSet:
      return Bulk(token);
    case ReqKind::kGet:
    case ReqKind::kPing:
    case ReqKind::kCount:
      break;
  }
  return {};
}

size_t RequestSet::MaxRequestSize() const {
  size_t head = 0;
  for (const std::string& h : head_) head = std::max(head, h.size());
  const std::string token(kTokenLen, 'x');
  size_t suffix = 0;
  for (size_t k = 0; k < static_cast<size_t>(ReqKind::kCount); ++k) {
    suffix = std::max(suffix, Suffix(static_cast<ReqKind>(k), token).size());
  }
  const size_t key = 1 + 20 + 2 + prefix_.size() + 10 + 2;
  return head + key + suffix;
}

}  // namespace deadbolt::lockload
