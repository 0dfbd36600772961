#include "tools/lockload/lockload_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tools/common/cli_arg.h"

namespace deadbolt::lockload {
namespace {

// "20000", "20k", "1.5m", "2g" -> 20000, 20000, 1500000, 2e9.
bool ParseScaled(std::string_view s, double* out) {
  if (s.empty()) return false;
  double mult = 1;
  char last = s.back();
  if (last == 'k' || last == 'K') mult = 1e3;
  if (last == 'm' || last == 'M') mult = 1e6;
  if (last == 'g' || last == 'G') mult = 1e9;
  if (mult != 1) s.remove_suffix(1);
  std::string str(s);
  char* end = nullptr;
  errno = 0;
  double v = strtod(str.c_str(), &end);
  if (errno != 0 || end == str.c_str() || *end != '\0' || !std::isfinite(v) || v < 0) return false;
  *out = v * mult;
  return true;
}

bool ParseInt(std::string_view s, int64_t lo, int64_t hi, int64_t* out) {
  double v = 0;
  if (!ParseScaled(s, &v) || v != std::floor(v) || v < static_cast<double>(lo) ||
      v > static_cast<double>(hi)) {
    return false;
  }
  *out = static_cast<int64_t>(v);
  return true;
}

}  // namespace

const char* WorkloadName(Workload w) {
  switch (w) {
    case Workload::kAcquire:
      return "acquire";
    case Workload::kCycle:
      return "cycle";
    case Workload::kExtend:
      return "extend";
    case Workload::kGet:
      return "get";
    case Workload::kSet:
      return "set";
    case Workload::kPing:
      return "ping";
    case Workload::kMset:
      return "mset";
    case Workload::kSemaphore:
      return "semaphore";
  }
  return "?";
}

const char* ReleaseModeName(ReleaseMode r) {
  switch (r) {
    case ReleaseMode::kDelIfEq:
      return "delifeq";
    case ReleaseMode::kDelEx:
      return "delex";
    case ReleaseMode::kEvalSha:
      return "evalsha";
  }
  return "?";
}

const char* ExtendModeName(ExtendMode e) { return e == ExtendMode::kPexpire ? "pexpire" : "set"; }

const char* KeyDistName(KeyDist k) {
  switch (k) {
    case KeyDist::kUniform:
      return "uniform";
    case KeyDist::kZipf:
      return "zipf";
    case KeyDist::kHot:
      return "hot";
  }
  return "?";
}

const char* MsetKeysName(MsetKeys m) { return m == MsetKeys::kCross ? "cross" : "same"; }

const char* Usage() {
  return R"(usage: lockload [options]
Load generator for lock workloads over RESP. Closed loop by default; open loop with --rate.

connection
  -h, --host H        server address (127.0.0.1)
  -p, --port N        server port (6379)
  -a, --password P    AUTH on every connection
  --resp3             send HELLO 3 on every connection first
load
  -c, --connections N connections over all threads (50)
  -P, --pipeline N    closed loop: requests per batch per connection (1)
  -t, --threads N     threads, each with its own io_uring (1)
  --rate R            open loop: R requests/s in total, latency from the intended send time
                      (k/m suffixes work: 20k, 1.5m); for cycle, acquires run at R/2
  --max-inflight N    open loop: most requests in flight per connection (1024)
  -d, --duration S    measure for S seconds (10 unless -n)
  -n, --requests N    measure N requests instead of a duration
  --warmup S          run S seconds unmeasured first (0)
workload
  -w, --workload W    acquire | cycle | extend | get | set | ping | mset | semaphore (acquire)
                        acquire: SET key tok NX PX ttl
                        cycle:   acquire, then release the keys it got
                        extend:  --extend pexpire (PEXPIRE key ttl) | set (SET key tok XX PX ttl)
                        mset:    MSET key1 tok key2 tok, the two keys placed by --mset
                        semaphore: redis-semaphore's acquire path, a pair of requests on one
                                 key: ZREMRANGEBYSCORE key -inf t-ttl, ZADD key t member; t is
                                 a clock of the connection's own, +1 per pair, and member its
                                 token with the pair number (mod 4096) in the last 3 digits;
                                 2 requests in the results (-P, --rate and -n count pairs)
  --release R         cycle release: delifeq (DELIFEQ key tok) | delex (DELEX key IFEQ tok)
                      | evalsha (SCRIPT LOAD the compare-and-delete script, EVALSHA it) (delifeq)
  --extend E          pexpire | set (pexpire)
  --mset M            mset: cross (the two keys on different shards) | same (both on one
                      shard, a random one each time) (cross)
  --shards N          mset: shards, as deadbolt --threads N splits the 16384 Redis Cluster
                      slots (2)
  --keys D            uniform | zipf | hot (uniform); hot puts everything on <prefix>0
  --keyspace K        keys <prefix>0 .. <prefix>K-1 (10000)
  --zipf-theta T      zipf skew, 0 < T < 1 (0.99)
  --prefix S          key name prefix (lock:)
  --conn-prefixes L   comma-separated prefixes, one per connection in turn: connection i uses
                      the (i mod n)-th instead of --prefix (with one thread, connections open
                      one after another in that order; e.g. {a}lock:,{b}lock: to put each
                      connection's keys on a chosen shard)
  --ttl MS            lock time-to-live in ms (30000)
  --no-preload        get/extend: do not SET the keys before the run
  --seed N            random seed (from the clock)
  --ring M            io_uring setup: defer (DEFER_TASKRUN) | coop (COOP_TASKRUN) | plain;
                      falls back along that order if the kernel refuses (defer)
output
  --json              print the result as JSON on stdout
  --cpu               report lockload's own CPU per million requests
  --server-cpu        also read the server's CPU (INFO cpu) before and after
  --allow-errors      exit 0 even if error or unexpected replies were seen
  -q, --quiet         no progress line on stderr
  --help              this text
)";
}

std::string ParseOptions(int argc, char** argv, Options* o, bool* help) {
  *help = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    const tools::CliArg a = tools::SplitCliArg(arg, /*short_inline=*/true);  // -c50 too
    const std::string_view name = a.name;
    const bool has_value = a.has_value;
    // Flags without a value.
    struct Flag {
      const char* name;
      bool* field;
      bool set_to;
    };
    const Flag flags[] = {
        {"--resp3", &o->resp3, true},
        {"--json", &o->json, true},
        {"--cpu", &o->cpu, true},
        {"--server-cpu", &o->server_cpu, true},
        {"--quiet", &o->quiet, true},
        {"-q", &o->quiet, true},
        {"--no-preload", &o->preload, false},
        {"--allow-errors", &o->allow_errors, true},
    };
    bool matched = false;
    for (const Flag& f : flags) {
      if (name == f.name) {
        if (has_value) return std::string(name) + " takes no value";
        *f.field = f.set_to;
        matched = true;
      }
    }
    if (matched) continue;
    if (name == "--help") {
      *help = true;
      return {};
    }
    // Options that take a value, each between spaces.
    static constexpr std::string_view kTakesValue =
        " --host -h --port -p --password -a --connections -c --pipeline -P --threads -t --rate"
        " --max-inflight --duration -d --requests -n --warmup --workload -w --release --extend"
        " --keys --keyspace --zipf-theta --prefix --ttl --seed --ring --mset --shards"
        " --conn-prefixes ";
    if (name.size() < 2 || kTakesValue.find(" " + std::string(name) + " ") == std::string::npos) {
      return "unknown option " + std::string(arg) + " (see --help)";
    }
    std::string_view value;
    if (!tools::CliValue(a, argc, argv, &i, &value)) return std::string(name) + " needs a value";
    auto bad = [&]() { return "bad value for " + std::string(name) + ": " + std::string(value); };
    int64_t n = 0;
    double d = 0;
    if (name == "--host" || name == "-h") {
      o->host = std::string(value);
    } else if (name == "--port" || name == "-p") {
      if (!ParseInt(value, 1, 65535, &n)) return bad();
      o->port = static_cast<int>(n);
    } else if (name == "--password" || name == "-a") {
      o->password = std::string(value);
    } else if (name == "--connections" || name == "-c") {
      if (!ParseInt(value, 1, 1000000, &n)) return bad();
      o->connections = static_cast<int>(n);
    } else if (name == "--pipeline" || name == "-P") {
      if (!ParseInt(value, 1, 1000000, &n)) return bad();
      o->pipeline = static_cast<int>(n);
    } else if (name == "--threads" || name == "-t") {
      if (!ParseInt(value, 1, 1024, &n)) return bad();
      o->threads = static_cast<int>(n);
    } else if (name == "--rate") {
      if (!ParseScaled(value, &d) || d <= 0) return bad();
      o->rate = d;
    } else if (name == "--max-inflight") {
      if (!ParseInt(value, 1, 1 << 20, &n)) return bad();
      o->max_inflight = static_cast<int>(n);
    } else if (name == "--duration" || name == "-d") {
      if (!ParseScaled(value, &d) || d <= 0) return bad();
      o->duration_s = d;
    } else if (name == "--requests" || name == "-n") {
      if (!ParseInt(value, 1, INT64_MAX / 2, &n)) return bad();
      o->requests = static_cast<uint64_t>(n);
    } else if (name == "--warmup") {
      if (!ParseScaled(value, &d)) return bad();
      o->warmup_s = d;
    } else if (name == "--workload" || name == "-w") {
      if (value == "acquire") {
        o->workload = Workload::kAcquire;
      } else if (value == "cycle") {
        o->workload = Workload::kCycle;
      } else if (value == "extend") {
        o->workload = Workload::kExtend;
      } else if (value == "get") {
        o->workload = Workload::kGet;
      } else if (value == "set") {
        o->workload = Workload::kSet;
      } else if (value == "ping") {
        o->workload = Workload::kPing;
      } else if (value == "mset") {
        o->workload = Workload::kMset;
      } else if (value == "semaphore") {
        o->workload = Workload::kSemaphore;
      } else {
        return bad();
      }
    } else if (name == "--release") {
      if (value == "delifeq") {
        o->release = ReleaseMode::kDelIfEq;
      } else if (value == "delex") {
        o->release = ReleaseMode::kDelEx;
      } else if (value == "evalsha") {
        o->release = ReleaseMode::kEvalSha;
      } else {
        return bad();
      }
    } else if (name == "--extend") {
      if (value == "pexpire") {
        o->extend = ExtendMode::kPexpire;
      } else if (value == "set") {
        o->extend = ExtendMode::kSetXX;
      } else {
        return bad();
      }
    } else if (name == "--mset") {
      if (value == "cross") {
        o->mset = MsetKeys::kCross;
      } else if (value == "same") {
        o->mset = MsetKeys::kSame;
      } else {
        return bad();
      }
    } else if (name == "--shards") {
      if (!ParseInt(value, 1, 16384, &n)) return bad();
      o->shards = static_cast<int>(n);
    } else if (name == "--keys") {
      if (value == "uniform") {
        o->keys = KeyDist::kUniform;
      } else if (value == "zipf") {
        o->keys = KeyDist::kZipf;
      } else if (value == "hot") {
        o->keys = KeyDist::kHot;
      } else {
        return bad();
      }
    } else if (name == "--keyspace") {
      if (!ParseInt(value, 1, uint64_t{1} << 32, &n)) return bad();
      o->keyspace = static_cast<uint64_t>(n);
    } else if (name == "--zipf-theta") {
      if (!ParseScaled(value, &d) || d <= 0 || d >= 1) return bad();
      o->zipf_theta = d;
    } else if (name == "--prefix") {
      o->prefix = std::string(value);
    } else if (name == "--conn-prefixes") {
      o->conn_prefixes.clear();
      for (size_t start = 0;;) {
        const size_t comma = value.find(',', start);
        const std::string_view one = value.substr(start, comma - start);
        if (one.empty()) return bad();
        o->conn_prefixes.emplace_back(one);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
    } else if (name == "--ttl") {
      if (!ParseInt(value, 1, INT64_MAX / 2, &n)) return bad();
      o->ttl_ms = n;
    } else if (name == "--ring") {
      if (value == "defer") {
        o->ring_mode = RingMode::kDefer;
      } else if (value == "coop") {
        o->ring_mode = RingMode::kCoop;
      } else if (value == "plain") {
        o->ring_mode = RingMode::kPlain;
      } else {
        return bad();
      }
    } else if (name == "--seed") {
      if (!ParseInt(value, 0, INT64_MAX, &n)) return bad();
      o->seed = static_cast<uint64_t>(n);
    }
  }
  if (o->duration_s > 0 && o->requests > 0) return "give -d or -n, not both";
  if (o->duration_s == 0 && o->requests == 0) o->duration_s = 10;
  if (o->threads > o->connections) o->threads = o->connections;
  if (o->workload == Workload::kMset && o->keys != KeyDist::kUniform) {
    return "mset picks its keys uniformly: --keys must be uniform";
  }
  if (o->workload == Workload::kMset && !o->conn_prefixes.empty()) {
    return "mset places its keys by --prefix: --conn-prefixes does not apply";
  }
  return {};
}

}  // namespace deadbolt::lockload
