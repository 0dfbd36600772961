#pragma once
// lockload: what to send - the fixed parts of each command rendered once, keys rendered in place,
// key choice, tokens - and which replies each command may get.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tools/lockload/lockload_options.h"
#include "tools/lockload/lockload_resp.h"

namespace deadbolt::lockload {

// The commands lockload sends.
// kZTrim and kZAdd are the semaphore's pair (RequestSet::WriteSemaphorePair), always sent
// together, kZTrim first.
enum class ReqKind : uint8_t {
  kAcquire,
  kRelease,
  kExtend,
  kGet,
  kSet,
  kPing,
  kMset,
  kZTrim,
  kZAdd,
  kCount
};
const char* ReqKindName(ReqKind k);

// Redis Cluster's slot of `key` (CRC16/XMODEM of the key, or of its {hash tag}, mod 16384): how
// deadbolt places keys on shards (mset's --mset needs to know).
uint16_t KeySlot(std::string_view key);

inline constexpr size_t kTokenLen = 36;

// wyrand: a few ns per number, good enough for picking keys and making tokens. Each connection
// owns one, used only by its worker thread.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t Next() {
    s_ += 0xa0761d6478bd642fULL;
    __uint128_t m = static_cast<__uint128_t>(s_) * (s_ ^ 0xe7037ed1a0b428dbULL);
    return static_cast<uint64_t>(m >> 64) ^ static_cast<uint64_t>(m);
  }
  // Uniform in [0, n), by multiply-high (bias below 2^-32 for n < 2^32).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<__uint128_t>(Next()) * n) >> 64);
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_;
};

// A random "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" token.
std::string MakeToken(Rng* rng);

// Shared read-only by every worker thread once built on the main thread: rendered command parts,
// the zipf constants, and the replies each kind of request may get.
class RequestSet {
 public:
  // `evalsha` is the sha1 SCRIPT LOAD returned (release by evalsha only).
  RequestSet(const Options& opts, std::string_view evalsha);

  // The kind of the workload's first request (the acquire in a cycle).
  ReqKind primary() const { return primary_; }
  bool cycle() const { return cycle_; }

  // Not empty if the options cannot make the requests (mset: no two shards to cross).
  const std::string& error() const { return error_; }

  // Picks a key index in [0, keyspace) by the key distribution (mset: of a random shard).
  uint32_t PickKey(Rng* rng) const;
  // Whether `kind` takes two keys (mset), the second from PickPartner.
  bool two_keys(ReqKind kind) const { return two_keys_[static_cast<size_t>(kind)]; }
  // mset: a second key for `first`, on another shard than its (--mset cross) or on the same one.
  uint32_t PickPartner(uint32_t first, Rng* rng) const;
  // Which of --shards shards key <prefix><n> lives on.
  int ShardOf(uint32_t n) const;

  // The part of `kind` after the key; it holds the connection's token, so each connection keeps
  // its own copy, rendered once.
  std::string Suffix(ReqKind kind, std::string_view token) const;
  // Bytes the longest request may take (for buffer sizing).
  size_t MaxRequestSize() const;

  // Prefixes of the connections (Options::conn_prefixes, or just --prefix): connection i's keys
  // are <prefix(i)><n>.
  size_t num_prefixes() const { return prefixes_.size(); }
  const std::string& prefix(size_t conn) const { return prefixes_[conn % prefixes_.size()]; }

  // Writes request `kind` on key `key` at `p` (which has MaxRequestSize() bytes of room) and
  // returns the end. `suffix` is Suffix(kind, token); a kind with two keys repeats key and
  // suffix with `key2`. `prefix` is the connection's, prefix(i). Three copies and a short itoa;
  // no formatting library, no allocation.
  char* Write(char* p, ReqKind kind, uint32_t key, std::string_view suffix, uint32_t key2,
              std::string_view prefix) const {
    const std::string& head = head_[static_cast<size_t>(kind)];
    memcpy(p, head.data(), head.size());
    p += head.size();
    if (has_key_[static_cast<size_t>(kind)]) p = WriteKey(p, key, prefix);
    memcpy(p, suffix.data(), suffix.size());
    p += suffix.size();
    if (two_keys_[static_cast<size_t>(kind)]) {
      p = WriteKey(p, key2, prefix);
      memcpy(p, suffix.data(), suffix.size());
      p += suffix.size();
    }
    return p;
  }
  char* Write(char* p, ReqKind kind, uint32_t key, std::string_view suffix,
              uint32_t key2 = 0) const {
    return Write(p, kind, key, suffix, key2, prefixes_[0]);
  }
  // "$<len>\r\n<prefix><n>\r\n"
  static char* WriteKey(char* p, uint32_t n, std::string_view prefix) {
    char digits[10];
    int nd = 0;
    do {
      digits[nd++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    size_t len = prefix.size() + static_cast<size_t>(nd);
    *p++ = '$';
    if (len >= 100) {
      p += snprintf(p, 24, "%zu", len);  // long prefixes only
    } else {
      if (len >= 10) *p++ = static_cast<char>('0' + len / 10);
      *p++ = static_cast<char>('0' + len % 10);
    }
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, prefix.data(), prefix.size());
    p += prefix.size();
    while (nd > 0) *p++ = digits[--nd];
    *p++ = '\r';
    *p++ = '\n';
    return p;
  }

  // semaphore: whether the primary request is the pair kZTrim + kZAdd (WriteSemaphorePair, not
  // Write), two requests and two replies.
  bool pairs() const { return primary_ == ReqKind::kZTrim; }
  // semaphore: writes the pair on key `key` at `p` (MaxRequestSize() bytes of room):
  // ZREMRANGEBYSCORE <key> -inf <clock - ttl>, then ZADD <key> <clock> <member>, where member
  // is `token` with its last three characters replaced by `clock` mod 4096 in hex (still a
  // version-4 UUID, as redis-semaphore's members are). Returns the end.
  char* WriteSemaphorePair(char* p, uint32_t key, std::string_view prefix, int64_t clock,
                           std::string_view token) const;

  // Whether reply type `t` is a valid answer to `kind` (errors never are).
  bool Expected(ReqKind kind, ReplyType t) const {
    return (expected_[static_cast<size_t>(kind)] >> static_cast<unsigned>(t)) & 1;
  }

 private:
  std::string prefix_;
  std::vector<std::string> prefixes_;  // never empty
  uint64_t keyspace_;
  KeyDist dist_;
  ReqKind primary_;
  bool cycle_;
  std::string ttl_;
  int64_t ttl_ms_;
  std::string head_[static_cast<size_t>(ReqKind::kCount)];  // "*6\r\n$3\r\nSET\r\n"
  bool has_key_[static_cast<size_t>(ReqKind::kCount)] = {};
  bool two_keys_[static_cast<size_t>(ReqKind::kCount)] = {};
  uint32_t expected_[static_cast<size_t>(ReqKind::kCount)] = {};
  ReleaseMode release_;
  ExtendMode extend_;
  // mset: the key indices of each shard that holds any (a shard without keys has no pool), and
  // each shard's pool (-1: none). The slot of <prefix><n> is fixed_slot_ if the prefix holds a
  // {hash tag}, else the CRC16 of the digits continued from prefix_crc_.
  MsetKeys mset_;
  int shards_;
  std::vector<std::vector<uint32_t>> pools_;
  std::vector<int> pool_of_shard_;
  int fixed_slot_ = -1;
  uint16_t prefix_crc_ = 0;
  std::string error_;
  // Zipf by Gray et al., "Quickly Generating Billion-Record Synthetic Databases" (SIGMOD '94).
  double theta_ = 0, zetan_ = 0, alpha_ = 0, eta_ = 0, half_pow_theta_ = 0;
};

}  // namespace deadbolt::lockload
