#pragma once
// lockcrash: the rounds of a crash test. Each round: load the server with lock traffic, kill it
// at a random moment, restart it on the same --dir, and judge every key (lockcrash_model.h).

#include <cstdint>
#include <string>
#include <vector>

namespace deadbolt::lockcrash {

enum class Fault : uint8_t {
  kNone,
  kNoJournal,      // start the server with --appendonly no: every lock must be reported lost
  kInflightAcked,  // count operations in flight at the kill as acknowledged: losses must be seen
};

struct Options {
  std::string server;                    // deadbolt-server binary
  std::vector<std::string> server_args;  // extra arguments (after --)
  std::string dir;                       // journal directory; default: a fresh temporary one
  bool keep_dir = false;
  std::string host = "127.0.0.1";
  int port = 0;                          // 0: a free one
  std::string appendfsync = "always";    // always | everysec | no
  std::vector<int> threads = {2, 2, 1, 3};  // start i uses threads[i % size]
  int rounds = 3;                        // SIGKILL rounds
  bool graceful_round = true;            // then one more round ended by SIGTERM
  int64_t kill_min_ms = 500;             // the kill comes after a random time in [min, max]
  int64_t kill_max_ms = 3000;
  int conns = 64;
  int pipeline = 16;                     // operations in flight per connection
  int keys_per_conn = 48;                // must exceed pipeline
  int native_every = 4;                  // every Nth key uses LOCK.*; 0: none
  int extend_every = 8;                  // 1 in N visits of a held key extends it; 0: never
  int multi_every = 8;                   // every Nth connection takes and releases its plain
                                         // keys two at a time in MULTI/EXEC; 0: none
  int64_t lease_min_ms = 20000;
  int64_t lease_max_ms = 60000;
  int64_t slack_ms = 50;                 // lease comparisons
  int64_t loss_window_ms = 2000;         // everysec / no: a loss older than this fails
  std::string rewrite_min_size = "1mb";  // --auto-aof-rewrite-min-size: rewrites during the load
  int kill_start_pct = 25;               // restarts killed while they load (then restarted)
  int rewrite_before_kill_pct = 50;      // rounds that send BGREWRITEAOF 0-8 ms before the kill
  bool power_cut = false;                // journal on a powercutfs mount, cut after each kill
  std::string powercutfs;                // its binary; default: beside lockcrash
  Fault fault = Fault::kNone;
  int64_t start_timeout_ms = 60000;      // for the server to answer PING after a start
  int64_t io_timeout_ms = 10000;         // any one reply during the checks
  int show = 5;                          // problems of each kind printed per round
  uint64_t seed = 0;                     // 0: from the clock
  bool verbose = false;
};

// Parses argv. Returns "" or the error; *help set for -h/--help.
std::string ParseOptions(int argc, char** argv, Options* o, bool* help);
const char* Usage();

// Runs every round and prints the report. Returns the exit code: 0 clean, 1 a loss that the
// policy does not allow or a violation or an error, 2 could not run.
int Run(const Options& o);

}  // namespace deadbolt::lockcrash
