#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "tools/common/cli_arg.h"
#include "tools/lockcrash/lockcrash_run.h"

namespace deadbolt::lockcrash {
namespace {

bool ParseInt(std::string_view s, int64_t lo, int64_t hi, int64_t* out) {
  std::string str(s);
  if (str.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = strtoll(str.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace

const char* Usage() {
  return R"(usage: lockcrash --server PATH [options] [-- extra server arguments]
Crash test of deadbolt-server's journal. Many connections take and release locks (each on keys
of its own, pipelined); the server is killed with SIGKILL at a random moment, restarted on the
same --dir, and every key is read back: a lock whose acquire was acknowledged (and not
released) must be held by the same owner with the lease it had left, a released one must be free,
fencing tokens must keep growing. An operation in flight at the kill may or may not have happened.
With appendfsync always nothing may be lost; with everysec or no, losses are counted and must be
of writes acknowledged within --loss-window-ms of the kill. A last round ends with SIGTERM, after
which nothing may be lost whatever the policy.

server
  --server PATH         deadbolt-server binary ($DEADBOLT_SERVER)
  --dir D               journal directory (a fresh /tmp/lockcrash-XXXXXX, removed after a pass)
  --keep-dir            do not remove the directory
  -p, --port N          port (a free one)
  --appendfsync P       always | everysec | no (always)
  --threads LIST        --threads of each start, in turn, comma-separated (2,2,1,3): the first
                        start uses the first, the restart after round r uses element r
  --rewrite-min-size S  --auto-aof-rewrite-min-size, so rewrites run during the load (1mb)
  --rewrite-before-kill PCT
                        in PCT% of the rounds, BGREWRITEAOF 0-8 ms before the kill, so that
                        kills land in the middle of rewrites (50)
  --kill-start PCT      in PCT% of the rounds, the restart is itself killed at a random moment
                        while it replays and rewrites the journals (with a different --threads),
                        then started again (25)
  --start-timeout MS    for the server to answer PING after a start (60000)
  --power-cut           the journal directory is a powercutfs mount (FUSE, needs /dev/fuse),
                        and after every kill (and the SIGTERM) every write the server had not
                        fsynced is dropped, as a power cut would: this tests the fsyncs
  --powercutfs PATH     the powercutfs binary (beside lockcrash)
  -- ARGS              anything after -- is passed to the server
rounds
  -r, --rounds N        SIGKILL rounds (3)
  --no-graceful         no final SIGTERM round
  --kill-min MS         the signal comes after a random time in [min, max] of load (500)
  --kill-max MS         (3000)
load
  -c, --conns N         connections (64)
  -P, --pipeline N      operations in flight per connection (16)
  --keys-per-conn N     keys each connection owns (48; more than --pipeline)
  --native-every N      every Nth key uses LOCK.ACQUIRE/EXTEND/RELEASE (4; 0: none), the others
                        SET NX PX / SET IFEQ PX / DELIFEQ
  --extend-every N      1 in N visits of a held key extends its lease (8; 0: never)
  --multi-every N       every Nth connection takes and releases its plain keys two at a time,
                        in one MULTI/EXEC (8; 0: none); after a crash a transaction in flight
                        must have taken effect on both keys or on neither
  --lease-min MS        each acquire or extend asks for a random lease in [min, max] (20000)
  --lease-max MS        (60000)
checks
  --slack MS            tolerance of lease comparisons (50)
  --loss-window MS      everysec/no: a lost write acknowledged longer than this before the kill
                        fails the run (2000)
  --io-timeout MS       any one reply while reading the keys back (10000)
self-tests (the run must fail)
  --fault no-journal    start the server with --appendonly no: every held lock comes back free
  --fault inflight-acked
                        count operations in flight at the kill as acknowledged (with appendfsync
                        always, many of them were not yet on disk)
output
  --show N              problems of each kind printed per round (5)
  -v, --verbose         also print the allowed losses
  --seed N              random seed (from the clock)
  --help                this text
exit: 0 pass; 1 a loss the policy does not allow, a violation or an error; 2 could not run
)";
}

std::string ParseOptions(int argc, char** argv, Options* o, bool* help) {
  *help = false;
  if (const char* env = getenv("DEADBOLT_SERVER"); env && *env) o->server = env;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) o->server_args.emplace_back(argv[i]);
      break;
    }
    const tools::CliArg a = tools::SplitCliArg(arg, /*short_inline=*/false);
    const std::string_view name = a.name;
    const bool has_value = a.has_value;
    std::string_view v;
    auto need = [&]() -> bool { return tools::CliValue(a, argc, argv, &i, &v); };
    auto int_opt = [&](int64_t lo, int64_t hi, auto* field) -> std::string {
      if (!need()) return "missing value for " + std::string(name);
      int64_t n = 0;
      if (!ParseInt(v, lo, hi, &n)) {
        return "bad value for " + std::string(name) + ": " + std::string(v) +
               " (want an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ")";
      }
      *field = static_cast<std::remove_pointer_t<decltype(field)>>(n);
      return {};
    };
    auto str_opt = [&](std::string* field) -> std::string {
      if (!need()) return "missing value for " + std::string(name);
      *field = std::string(v);
      return {};
    };
    std::string err;
    if (name == "--help") {
      *help = true;
      return {};
    } else if (name == "--server") {
      err = str_opt(&o->server);
    } else if (name == "--dir") {
      err = str_opt(&o->dir);
    } else if (name == "--keep-dir" && !has_value) {
      o->keep_dir = true;
    } else if (name == "-p" || name == "--port") {
      err = int_opt(1, 65535, &o->port);
    } else if (name == "--appendfsync") {
      err = str_opt(&o->appendfsync);
      if (err.empty() && o->appendfsync != "always" && o->appendfsync != "everysec" &&
          o->appendfsync != "no") {
        return "--appendfsync: always, everysec or no";
      }
    } else if (name == "--threads") {
      if (!need()) return "missing value for --threads";
      o->threads.clear();
      while (!v.empty()) {
        size_t comma = v.find(',');
        int64_t n = 0;
        if (!ParseInt(v.substr(0, comma), 1, 256, &n)) return "bad --threads list";
        o->threads.push_back(static_cast<int>(n));
        v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
      }
      if (o->threads.empty()) return "bad --threads list";
    } else if (name == "--rewrite-min-size") {
      err = str_opt(&o->rewrite_min_size);
    } else if (name == "--power-cut" && !has_value) {
      o->power_cut = true;
    } else if (name == "--powercutfs") {
      err = str_opt(&o->powercutfs);
    } else if (name == "--kill-start") {
      err = int_opt(0, 100, &o->kill_start_pct);
    } else if (name == "--rewrite-before-kill") {
      err = int_opt(0, 100, &o->rewrite_before_kill_pct);
    } else if (name == "--start-timeout") {
      err = int_opt(100, 3'600'000, &o->start_timeout_ms);
    } else if (name == "-r" || name == "--rounds") {
      err = int_opt(1, 1'000'000, &o->rounds);
    } else if (name == "--no-graceful" && !has_value) {
      o->graceful_round = false;
    } else if (name == "--kill-min") {
      err = int_opt(0, 3'600'000, &o->kill_min_ms);
    } else if (name == "--kill-max") {
      err = int_opt(0, 3'600'000, &o->kill_max_ms);
    } else if (name == "-c" || name == "--conns") {
      err = int_opt(1, 4096, &o->conns);
    } else if (name == "-P" || name == "--pipeline") {
      err = int_opt(1, 4096, &o->pipeline);
    } else if (name == "--keys-per-conn") {
      err = int_opt(2, 1'000'000, &o->keys_per_conn);
    } else if (name == "--native-every") {
      err = int_opt(0, 1'000'000, &o->native_every);
    } else if (name == "--extend-every") {
      err = int_opt(0, 1'000'000, &o->extend_every);
    } else if (name == "--multi-every") {
      err = int_opt(0, 1'000'000, &o->multi_every);
    } else if (name == "--lease-min") {
      err = int_opt(1000, 86'400'000, &o->lease_min_ms);
    } else if (name == "--lease-max") {
      err = int_opt(1000, 86'400'000, &o->lease_max_ms);
    } else if (name == "--slack") {
      err = int_opt(0, 60'000, &o->slack_ms);
    } else if (name == "--loss-window") {
      err = int_opt(0, 3'600'000, &o->loss_window_ms);
    } else if (name == "--io-timeout") {
      err = int_opt(1, 3'600'000, &o->io_timeout_ms);
    } else if (name == "--fault") {
      if (!need()) return "missing value for --fault";
      if (v == "no-journal") {
        o->fault = Fault::kNoJournal;
      } else if (v == "inflight-acked") {
        o->fault = Fault::kInflightAcked;
      } else {
        return "--fault: no-journal or inflight-acked";
      }
    } else if (name == "--show") {
      err = int_opt(0, 1'000'000, &o->show);
    } else if ((name == "-v" || name == "--verbose") && !has_value) {
      o->verbose = true;
    } else if (name == "--seed") {
      if (!need()) return "missing value for --seed";
      char* end = nullptr;
      std::string s(v);
      o->seed = strtoull(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0') return "bad --seed";
    } else {
      return "unknown option " + std::string(arg) + " (try --help)";
    }
    if (!err.empty()) return err;
  }
  if (o->server.empty()) return "--server is required (or set DEADBOLT_SERVER)";
  if (o->keys_per_conn <= o->pipeline) return "--keys-per-conn must exceed --pipeline";
  if (o->kill_max_ms < o->kill_min_ms) return "--kill-max is below --kill-min";
  if (o->lease_max_ms < o->lease_min_ms) return "--lease-max is below --lease-min";
  return {};
}

}  // namespace deadbolt::lockcrash
