// locktorture: proves (or disproves) a server's lock safety under contention. Many clients fight
// over a few lock keys with each method in turn; every holder checks in and out of a shared
// record, and overlapping holders, fencing tokens that fail to grow, locks lost while held and
// waiters served out of order are violations. See tools/README.md.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "tools/common/cli_main.h"
#include "tools/locktorture/locktorture_conn.h"
#include "tools/locktorture/locktorture_options.h"
#include "tools/locktorture/locktorture_run.h"

namespace deadbolt::locktorture {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true, std::memory_order_relaxed); }

int Main(int argc, char** argv) {
  Options opts;
  if (auto rc = tools::ParseCommandLine("locktorture", argc, argv, ParseOptions, Usage, &opts)) {
    return *rc;
  }
  uint64_t seed = opts.seed;
  if (seed == 0) seed = std::random_device{}() ^ static_cast<uint64_t>(NowNs());
  std::string prefix = opts.prefix;
  if (prefix.empty()) {
    char buf[32];
    snprintf(buf, sizeof(buf), "locktorture:%08llx:",
             static_cast<unsigned long long>(std::mt19937_64(seed)() & 0xffffffffu));
    prefix = buf;
  }

  {
    Conn c;
    std::string err =
        c.Connect(opts.host, opts.port, NowNs() + opts.connect_timeout_ms * 1'000'000);
    std::string reply;
    if (err.empty()) {
      err = c.Call({"PING"}, &reply, NowNs() + opts.io_timeout_ms * 1'000'000);
    }
    if (err.empty() && reply != "+PONG\r\n") err = "PING replied " + Printable(reply);
    if (!err.empty()) {
      fprintf(stderr, "locktorture: %s\n", err.c_str());
      return 2;
    }
  }

  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  if (!opts.quiet) {
    printf(
        "locktorture: %s:%d, %d clients, %d locks over %d shards, lease %lld ms, hold 0-%lld "
        "us, seed %llu\n",
        opts.host.c_str(), opts.port, opts.clients, opts.locks, opts.shards,
        static_cast<long long>(opts.lease_ms), static_cast<long long>(opts.hold_us),
        static_cast<unsigned long long>(seed));
    fflush(stdout);
  }

  uint64_t violations = 0, errors = 0;
  std::vector<std::string> ran, skipped;
  for (size_t i = 0; i < opts.methods.size() && !g_stop.load(); ++i) {
    const Method m = opts.methods[i];
    auto r = RunMethod(opts, m, seed + i, prefix, &g_stop);
    PrintResult(opts, *r, stdout);
    fflush(stdout);
    violations += r->violations.total();
    errors += r->errors;
    (r->skipped ? skipped : ran).push_back(MethodName(m));
  }

  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  const bool skip_fails = opts.require_all && !skipped.empty();
  printf("locktorture: %llu violations, %llu errors; ran: %s; skipped: %s%s\n",
         static_cast<unsigned long long>(violations), static_cast<unsigned long long>(errors),
         join(ran).c_str(), join(skipped).c_str(),
         skip_fails ? " (--require-all: a skip is a failure)" : "");
  const bool interrupted = g_stop.load();
  if (interrupted) printf("locktorture: interrupted (the run is incomplete)\n");
  return violations > 0 || errors > 0 || skip_fails || interrupted ? 1 : 0;
}

}  // namespace
}  // namespace deadbolt::locktorture

int main(int argc, char** argv) { return deadbolt::locktorture::Main(argc, argv); }
