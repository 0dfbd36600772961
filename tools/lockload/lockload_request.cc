#include "tools/lockload/lockload_request.h"

#include <algorithm>
#include <array>
#include <charconv>
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

constexpr int kNumSlots = 16384;

// CRC16-CCITT as XMODEM (polynomial 0x1021, initial value 0, no reflection, no final xor), as
// Redis Cluster uses; a copy of shard/base/slot.cc's, since lockload depends on nothing else here.
constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned crc = i << 8;
    for (int b = 0; b < 8; ++b) crc = (crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1;
    t[i] = static_cast<uint16_t>(crc);
  }
  return t;
}
constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

// Continues `crc` over `s`.
uint16_t Crc16(std::string_view s, uint16_t crc = 0) {
  for (unsigned char c : s) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16Table[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

// The {hash tag} of `key` as Redis Cluster reads it: between the first '{' and the first '}'
// after it, if not empty; else the whole key.
std::string_view HashedPart(std::string_view key) {
  const size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

}  // namespace

uint16_t KeySlot(std::string_view key) {
  return static_cast<uint16_t>(Crc16(HashedPart(key)) % kNumSlots);
}

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
    case ReqKind::kMset:
      return "mset";
    case ReqKind::kZTrim:
      return "zremrangebyscore";
    case ReqKind::kZAdd:
      return "zadd";
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
      prefixes_(opts.conn_prefixes.empty() ? std::vector<std::string>{opts.prefix}
                                           : opts.conn_prefixes),
      keyspace_(opts.keys == KeyDist::kHot ? 1 : opts.keyspace),
      dist_(opts.keys),
      cycle_(opts.workload == Workload::kCycle),
      ttl_(std::to_string(opts.ttl_ms)),
      ttl_ms_(opts.ttl_ms),
      release_(opts.release),
      extend_(opts.extend),
      mset_(opts.mset),
      shards_(opts.shards) {
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
    case Workload::kMset:
      primary_ = ReqKind::kMset;
      break;
    case Workload::kSemaphore:
      primary_ = ReqKind::kZTrim;
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
  set(ReqKind::kMset, 5, {"MSET"}, true, Bits({ReplyType::kOk}));
  two_keys_[static_cast<size_t>(ReqKind::kMset)] = true;
  const uint32_t any_int = Bits({ReplyType::kInt0, ReplyType::kInt1, ReplyType::kInt});
  set(ReqKind::kZTrim, 4, {"ZREMRANGEBYSCORE"}, true, any_int);
  set(ReqKind::kZAdd, 4, {"ZADD"}, true, zero_or_one);

  if (opts.workload == Workload::kMset) {
    // A complete {tag} in the prefix fixes every key's slot; otherwise the digits, which hold
    // no braces, only extend what is hashed.
    const std::string_view hashed = HashedPart(prefix_);
    if (hashed.size() != prefix_.size()) {
      fixed_slot_ = KeySlot(prefix_);
    } else {
      prefix_crc_ = Crc16(prefix_);
    }
    std::vector<std::vector<uint32_t>> by_shard(static_cast<size_t>(shards_));
    for (uint64_t n = 0; n < keyspace_; ++n) {
      by_shard[static_cast<size_t>(ShardOf(static_cast<uint32_t>(n)))].push_back(
          static_cast<uint32_t>(n));
    }
    pool_of_shard_.assign(static_cast<size_t>(shards_), -1);
    for (int s = 0; s < shards_; ++s) {
      if (by_shard[static_cast<size_t>(s)].empty()) continue;
      pool_of_shard_[static_cast<size_t>(s)] = static_cast<int>(pools_.size());
      pools_.push_back(std::move(by_shard[static_cast<size_t>(s)]));
    }
    if (mset_ == MsetKeys::kCross && pools_.size() < 2) {
      error_ = "mset --mset cross needs keys on two shards, but " + prefix_ + "0.." + prefix_ +
               std::to_string(keyspace_ - 1) + " all sit on one of the " + std::to_string(shards_) +
               " (--shards, --keyspace, --prefix)";
    }
  }

  if (dist_ == KeyDist::kZipf && keyspace_ > 2) {
    theta_ = opts.zipf_theta;
    zetan_ = Zeta(keyspace_, theta_);
    half_pow_theta_ = std::pow(0.5, theta_);
    const double zeta2 = 1 + half_pow_theta_;
    alpha_ = 1 / (1 - theta_);
    eta_ = (1 - std::pow(2.0 / static_cast<double>(keyspace_), 1 - theta_)) / (1 - zeta2 / zetan_);
  }
}

int RequestSet::ShardOf(uint32_t n) const {
  int slot = fixed_slot_;
  if (slot < 0) {
    char digits[10];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), n);
    slot =
        Crc16(std::string_view(digits, static_cast<size_t>(end - digits)), prefix_crc_) % kNumSlots;
  }
  return static_cast<int>(int64_t{slot} * shards_ / kNumSlots);
}

uint32_t RequestSet::PickPartner(uint32_t first, Rng* rng) const {
  size_t pool = static_cast<size_t>(pool_of_shard_[static_cast<size_t>(ShardOf(first))]);
  if (mset_ == MsetKeys::kCross) {  // any other pool, uniformly
    const size_t other = rng->Below(pools_.size() - 1);
    pool = other >= pool ? other + 1 : other;
  }
  const std::vector<uint32_t>& keys = pools_[pool];
  return keys[rng->Below(keys.size())];
}

uint32_t RequestSet::PickKey(Rng* rng) const {
  if (!pools_.empty()) {  // mset: a shard, then a key of it
    const std::vector<uint32_t>& keys = pools_[rng->Below(pools_.size())];
    return keys[rng->Below(keys.size())];
  }
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
    case ReqKind::kMset:
      return Bulk(token);
    case ReqKind::kGet:
    case ReqKind::kPing:
    case ReqKind::kZTrim:  // WriteSemaphorePair writes their arguments
    case ReqKind::kZAdd:
    case ReqKind::kCount:
      break;
  }
  return {};
}

namespace {

// "$<len>\r\n<v>\r\n" for an integer v.
char* WriteIntBulk(char* p, int64_t v) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), v);
  const size_t n = static_cast<size_t>(end - digits);
  *p++ = '$';
  if (n >= 10) *p++ = static_cast<char>('0' + n / 10);
  *p++ = static_cast<char>('0' + n % 10);
  *p++ = '\r';
  *p++ = '\n';
  memcpy(p, digits, n);
  p += n;
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

}  // namespace

char* RequestSet::WriteSemaphorePair(char* p, uint32_t key, std::string_view prefix,
                                     int64_t clock, std::string_view token) const {
  static constexpr char kInf[] = "$4\r\n-inf\r\n";
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string& trim = head_[static_cast<size_t>(ReqKind::kZTrim)];
  memcpy(p, trim.data(), trim.size());
  p += trim.size();
  p = WriteKey(p, key, prefix);
  memcpy(p, kInf, sizeof(kInf) - 1);
  p += sizeof(kInf) - 1;
  p = WriteIntBulk(p, clock - ttl_ms_);
  const std::string& add = head_[static_cast<size_t>(ReqKind::kZAdd)];
  memcpy(p, add.data(), add.size());
  p += add.size();
  p = WriteKey(p, key, prefix);
  p = WriteIntBulk(p, clock);
  *p++ = '$';
  *p++ = '3';
  *p++ = '6';
  *p++ = '\r';
  *p++ = '\n';
  memcpy(p, token.data(), kTokenLen - 3);
  p += kTokenLen - 3;
  const auto n = static_cast<uint64_t>(clock);
  *p++ = kHex[(n >> 8) & 15];
  *p++ = kHex[(n >> 4) & 15];
  *p++ = kHex[n & 15];
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

size_t RequestSet::MaxRequestSize() const {
  const std::string token(kTokenLen, 'x');
  size_t longest = 0;
  for (const std::string& p : prefixes_) longest = std::max(longest, p.size());
  const size_t key = 1 + 20 + 2 + longest + 10 + 2;
  size_t most = 0;
  for (size_t k = 0; k < static_cast<size_t>(ReqKind::kCount); ++k) {
    const size_t keyed = key + Suffix(static_cast<ReqKind>(k), token).size();
    most = std::max(most, head_[k].size() + (two_keys_[k] ? 2 : 1) * keyed);
  }
  // The semaphore's pair: two heads, two keys, "-inf", three numbers and a token.
  size_t pair = head_[static_cast<size_t>(ReqKind::kZTrim)].size() +
                head_[static_cast<size_t>(ReqKind::kZAdd)].size() + 2 * key + 10 + 3 * 27 +
                (5 + kTokenLen + 2);
  return std::max(most, pair);
}

}  // namespace deadbolt::lockload
