#pragma once
// locktorture: command-line options.

#include <cstdint>
#include <string>
#include <vector>

namespace deadbolt::locktorture {

// How the clients take and give back a lock.
enum class Method : uint8_t {
  kSetNx,     // SET k tok NX PX lease / SET k tok IFEQ tok PX lease / DELIFEQ k tok
  kRedisson,  // Redisson's reentrant hash lock scripts by EVALSHA
  kNative,    // LOCK.ACQUIRE k owner lease WAIT ms -> fencing token / LOCK.RELEASE k owner
};
const char* MethodName(Method m);

// Parsed once on the main thread, then read-only and shared by every thread.
struct Options {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::vector<Method> methods = {Method::kSetNx, Method::kRedisson, Method::kNative};
  double seconds = 2;  // per method
  int clients = 16;    // threads, each with one connection
  int locks = 3;       // contended lock keys, placed round-robin over `shards`
  int shards = 2;      // the server's reactor count, to spread the keys (slot * shards / 16384)
  int64_t lease_ms = 2000;
  int64_t hold_us = 200;         // each critical section lasts a random 0..hold_us
  int64_t backoff_us = 200;      // setnx/redisson: a refused acquire retries after 0..backoff_us
  int64_t wait_ms = 1000;        // native: LOCK.ACQUIRE ... WAIT wait_ms
  int64_t fifo_slack_us = 2000;  // native: see CheckGrantOrder
  int extend_every = 4;          // 1 of N holds extends or re-enters the lock (0: never)
  int64_t connect_timeout_ms = 2000;
  int64_t io_timeout_ms = 5000;  // any one reply (on top of WAIT)
  bool fault = false;            // break the protocol on purpose: the checker must see overlaps
  bool fault_order = false;      // native: jump the queue on purpose: must see out-of-order grants
  bool require_all = false;      // a method the server lacks fails instead of being skipped
  int show = 5;                  // violations of each kind printed
  std::string prefix;            // key prefix; default "locktorture:<random>:"
  uint64_t seed = 0;             // 0 = from the clock
  bool quiet = false;
};

// Parses argv into *opts. Returns "" or a message for the user. Sets *help for --help.
std::string ParseOptions(int argc, char** argv, Options* opts, bool* help);
const char* Usage();

}  // namespace deadbolt::locktorture
