#pragma once
// lockload: command-line options.

#include <cstdint>
#include <string>
#include <vector>

namespace deadbolt::lockload {

enum class Workload : uint8_t { kAcquire, kCycle, kExtend, kGet, kSet, kPing, kMset, kSemaphore };
enum class ReleaseMode : uint8_t { kDelIfEq, kDelEx, kEvalSha };
enum class ExtendMode : uint8_t { kPexpire, kSetXX };
enum class KeyDist : uint8_t { kUniform, kZipf, kHot };
// mset: where its two keys live, by Redis Cluster slot split over --shards.
enum class MsetKeys : uint8_t { kCross, kSame };
// io_uring setup, leanest first: DEFER_TASKRUN, COOP_TASKRUN, neither.
enum class RingMode : uint8_t { kDefer, kCoop, kPlain };

const char* WorkloadName(Workload w);
const char* ReleaseModeName(ReleaseMode r);
const char* ExtendModeName(ExtendMode e);
const char* KeyDistName(KeyDist k);
const char* MsetKeysName(MsetKeys m);

// Parsed once on the main thread, then read-only and shared by every thread.
struct Options {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;  // AUTH (or HELLO 3 AUTH default) on every connection when set
  int connections = 50;
  int pipeline = 1;  // closed loop: requests per batch on each connection
  int threads = 1;
  double duration_s = 0;  // 0 with requests == 0 means 10 s
  uint64_t requests = 0;  // run until this many measured replies (instead of a duration)
  double warmup_s = 0;
  double rate = 0;          // open loop: requests/s over all connections; 0 = closed loop
  int max_inflight = 1024;  // open loop: most requests in flight on one connection
  Workload workload = Workload::kAcquire;
  ReleaseMode release = ReleaseMode::kDelIfEq;
  ExtendMode extend = ExtendMode::kPexpire;
  MsetKeys mset = MsetKeys::kCross;
  int shards = 2;  // mset: the 16384 slots split evenly over this many shards (deadbolt --threads)
  KeyDist keys = KeyDist::kUniform;
  uint64_t keyspace = 10000;
  double zipf_theta = 0.99;
  std::string prefix = "lock:";
  // Per-connection prefixes (--conn-prefixes): connection i, counted over all threads in the
  // order the threads' shares are laid out (worker 0's first), uses conn_prefixes[i % size].
  // Empty: every connection uses `prefix`.
  std::vector<std::string> conn_prefixes;
  int64_t ttl_ms = 30000;
  bool preload = true;  // get/extend: SET every key first so that reads and extends hit
  bool resp3 = false;
  bool json = false;
  bool cpu = false;
  bool server_cpu = false;
  bool allow_errors = false;
  bool quiet = false;
  uint64_t seed = 0;  // 0 = from the clock
  RingMode ring_mode = RingMode::kDefer;

  bool open_loop() const { return rate > 0; }
  bool count_mode() const { return requests > 0; }
};

// Parses argv into *opts. Returns an empty string, or a message for the user. Sets *help when
// --help was given (the caller prints Usage()).
std::string ParseOptions(int argc, char** argv, Options* opts, bool* help);
const char* Usage();

}  // namespace deadbolt::lockload
