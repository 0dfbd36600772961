#include "tools/locktorture/locktorture_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "tools/common/cli_arg.h"

namespace deadbolt::locktorture {
namespace {

bool ParseNumber(std::string_view s, double lo, double hi, double* out) {
  std::string str(s);
  if (str.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = strtod(str.c_str(), &end);
  if (errno != 0 || end == str.c_str() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) {
    return false;
  }
  *out = v;
  return true;
}

bool ParseInt(std::string_view s, int64_t lo, int64_t hi, int64_t* out) {
  double v = 0;
  if (!ParseNumber(s, static_cast<double>(lo), static_cast<double>(hi), &v) || v != std::floor(v)) {
    return false;
  }
  *out = static_cast<int64_t>(v);
  return true;
}

bool MethodNamed(std::string_view s, Method* m) {
  if (s == "setnx") {
    *m = Method::kSetNx;
  } else if (s == "redisson") {
    *m = Method::kRedisson;
  } else if (s == "native") {
    *m = Method::kNative;
  } else {
    return false;
  }
  return true;
}

}  // namespace

const char* MethodName(Method m) {
  switch (m) {
    case Method::kSetNx:
      return "setnx";
    case Method::kRedisson:
      return "redisson";
    case Method::kNative:
      return "native";
  }
  return "?";
}

const char* Usage() {
  return R"(usage: locktorture [options]
Many clients fight over a few lock keys; every holder checks in and out of a shared record, and
any two holders inside one lock at once, a fencing token that did not grow, a lock lost while
held, or a wait queue served out of order is a violation (exit 1).

connection
  -h, --host H          server address (127.0.0.1)
  -p, --port N          server port (6379)
  --connect-timeout MS  per connection (2000)
  --io-timeout MS       per reply, on top of a native WAIT (5000)
run
  -m, --method M        setnx | redisson | native | all, or a comma list (all, in that order)
                          setnx:    SET k tok NX PX lease; SET k tok IFEQ tok PX lease; DELIFEQ k tok
                          redisson: EVALSHA of Redisson's reentrant lock acquire/release scripts
                          native:   LOCK.ACQUIRE k owner lease WAIT ms; LOCK.RELEASE k owner
                        a method the server lacks (unknown command, NOSCRIPT) is skipped
  -s, --seconds S       run each method S seconds (2)
  -c, --clients N       client threads, one connection each (16)
  --locks N             contended lock keys (3), spread round-robin over --shards
  --shards N            the server's reactors, to place the keys (2)
  --lease MS            lease asked for by every acquire (2000); no hold comes near it
  --hold US             a critical section lasts a random 0..US microseconds (200)
  --backoff US          setnx/redisson: retry a refused acquire after 0..US microseconds (200)
  --wait MS             native: WAIT timeout of each acquire (1000)
  --fifo-slack US       native: a waiter counts as served out of order only if the one served
                        first began sending more than US after it had finished sending (2000)
  --extend-every N      1 of N holds renews the lock (4; 0 never): setnx extends, redisson
                        re-enters and leaves once, native does either
  --prefix P            key prefix (locktorture:<random>:)
  --seed N              random seed (from the clock)
self-tests (the run must fail)
  --fault               break the protocol: setnx acquires without NX and releases with DEL;
                        redisson and native release before leaving the critical section
  --fault-order         native: acquire by polling without WAIT, claiming the first attempt's
                        send time as the queue entry (out-of-order grants expected)
output
  --require-all         a method the server lacks is a failure, not a skip
  --show N              violations of each kind printed (5)
  -q, --quiet           only the summary lines
  --help                this text
exit: 0 no violation and no error; 1 violations, errors or interrupted; 2 bad options or no server
)";
}

std::string ParseOptions(int argc, char** argv, Options* o, bool* help) {
  *help = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    const tools::CliArg a = tools::SplitCliArg(arg, /*short_inline=*/false);
    const std::string_view name = a.name;
    const bool has_value = a.has_value;
    auto need = [&](std::string_view* v) -> bool { return tools::CliValue(a, argc, argv, &i, v); };
    auto bad = [&](std::string_view what) {
      return std::string("bad value for ") + std::string(name) + ": " + std::string(what);
    };
    std::string_view v;
    int64_t n = 0;
    auto int_opt = [&](int64_t lo, int64_t hi, auto* field) -> std::string {
      if (!need(&v)) return std::string("missing value for ") + std::string(name);
      if (!ParseInt(v, lo, hi, &n)) {
        return bad(std::string(v) + " (want an integer in " + std::to_string(lo) + ".." +
                   std::to_string(hi) + ")");
      }
      *field = static_cast<std::remove_pointer_t<decltype(field)>>(n);
      return {};
    };
    std::string err;
    if (name == "--help") {
      *help = true;
      return {};
    } else if (name == "-h" || name == "--host") {
      if (!need(&v)) return "missing value for --host";
      o->host = std::string(v);
    } else if (name == "-p" || name == "--port") {
      err = int_opt(1, 65535, &o->port);
    } else if (name == "--connect-timeout") {
      err = int_opt(1, 600'000, &o->connect_timeout_ms);
    } else if (name == "--io-timeout") {
      err = int_opt(1, 600'000, &o->io_timeout_ms);
    } else if (name == "-m" || name == "--method") {
      if (!need(&v)) return "missing value for --method";
      o->methods.clear();
      if (v == "all") {
        o->methods = {Method::kSetNx, Method::kRedisson, Method::kNative};
      } else {
        while (!v.empty()) {
          size_t comma = v.find(',');
          std::string_view one = v.substr(0, comma);
          Method m;
          if (!MethodNamed(one, &m)) return bad(std::string(one));
          o->methods.push_back(m);
          v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
        }
        if (o->methods.empty()) return bad("empty");
      }
    } else if (name == "-s" || name == "--seconds") {
      if (!need(&v)) return "missing value for --seconds";
      if (!ParseNumber(v, 0.001, 86400, &o->seconds)) return bad(std::string(v));
    } else if (name == "-c" || name == "--clients") {
      err = int_opt(1, 1024, &o->clients);
    } else if (name == "--locks") {
      err = int_opt(1, 1000, &o->locks);
    } else if (name == "--shards") {
      err = int_opt(1, 1024, &o->shards);
    } else if (name == "--lease") {
      err = int_opt(100, 3'600'000, &o->lease_ms);
    } else if (name == "--hold") {
      err = int_opt(0, 10'000'000, &o->hold_us);
    } else if (name == "--backoff") {
      err = int_opt(0, 10'000'000, &o->backoff_us);
    } else if (name == "--wait") {
      err = int_opt(1, 3'600'000, &o->wait_ms);
    } else if (name == "--fifo-slack") {
      err = int_opt(0, 60'000'000, &o->fifo_slack_us);
    } else if (name == "--extend-every") {
      err = int_opt(0, 1'000'000, &o->extend_every);
    } else if (name == "--prefix") {
      if (!need(&v)) return "missing value for --prefix";
      if (v.find_first_of("{}") != std::string_view::npos) {
        return bad("braces would put Redisson's channel and latch keys in another slot");
      }
      o->prefix = std::string(v);
    } else if (name == "--seed") {
      if (!need(&v)) return "missing value for --seed";
      double d = 0;
      if (!ParseNumber(v, 0, 1.8e19, &d)) return bad(std::string(v));
      o->seed = static_cast<uint64_t>(d);
    } else if (name == "--fault" && !has_value) {
      o->fault = true;
    } else if (name == "--fault-order" && !has_value) {
      o->fault_order = true;
    } else if (name == "--require-all" && !has_value) {
      o->require_all = true;
    } else if (name == "--show") {
      err = int_opt(0, 1000, &o->show);
    } else if ((name == "-q" || name == "--quiet") && !has_value) {
      o->quiet = true;
    } else {
      return "unknown option " + std::string(arg) + " (try --help)";
    }
    if (!err.empty()) return err;
  }
  if (o->hold_us * 1000 * 4 > o->lease_ms * 1'000'000) {
    return "--hold must stay well below --lease (at most a quarter of it)";
  }
  return {};
}

}  // namespace deadbolt::locktorture
