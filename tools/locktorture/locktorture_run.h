#pragma once
// locktorture: one method's run - probing the server for the method, the client threads that
// contend for the locks, and the result.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tools/lockload/lockload_histogram.h"
#include "tools/locktorture/locktorture_checker.h"
#include "tools/locktorture/locktorture_options.h"

namespace deadbolt::locktorture {

// Redisson 4.x's reentrant lock scripts (/work/shared/lock-clients.md), called by SHA1 only.
inline constexpr const char* kRedissonAcquireSha = "149c5a8bf18676fd99e9e6e24923bd64d9b62f94";
inline constexpr const char* kRedissonReleaseSha = "6866459238a13a701d42f4971f12d9f3a50e2442";

// Everything one method's run found. Built and owned by the main thread; the client threads
// only write the parts they are handed (their own counters, the shared checker), and the main
// thread reads it all after joining them.
struct MethodResult {
  Method method = Method::kSetNx;
  bool skipped = false;
  std::string skip_reason;  // why, when skipped
  std::vector<std::string> keys;
  std::vector<int> key_shards;
  int clients = 0;
  double seconds = 0;  // from the start signal until the last client finished
  uint64_t acquisitions = 0;
  uint64_t attempts = 0;       // acquire requests sent (setnx/redisson retries included)
  uint64_t extends = 0;        // setnx, native: renewals that succeeded
  uint64_t reentries = 0;      // redisson, native: nested acquire + release pairs
  uint64_t releases = 0;       // releases that the server confirmed
  uint64_t wait_timeouts = 0;  // native: WAIT ran out (nil)
  uint64_t errors = 0;         // error replies, unexpected replies, timeouts, lost connections
  std::string first_error;
  uint64_t out_of_order = 0;
  uint64_t dropped_grants = 0;
  int64_t max_stall_ns = 0;    // native: the longest late wake-up of the stall monitors
  int server_pid = 0;          // native: the server's pid, when its schedstat could be read
  int64_t server_wait_ns = 0;  // native: its threads' run-queue wait during the run, in all
  std::unique_ptr<lockload::LatencyHistogram> latency =
      std::make_unique<lockload::LatencyHistogram>();  // acquire latency, ns
  ViolationLog violations;

  explicit MethodResult(size_t show) : violations(show) {}
  bool failed() const { return errors > 0 || violations.total() > 0; }
};

// Runs one method against the server: probes it (a skip when the server lacks it), starts
// opts.clients client threads that contend for opts.locks keys until opts.seconds have passed
// or `stop` is set, joins them and checks the grant order. Main thread.
std::unique_ptr<MethodResult> RunMethod(const Options& opts, Method method, uint64_t seed,
                                        const std::string& prefix, const std::atomic<bool>* stop);

// Prints a result: a header line, counts, latency, and the first violations and warnings.
void PrintResult(const Options& opts, const MethodResult& r, FILE* out);

}  // namespace deadbolt::locktorture
