#pragma once
// lockcrash: the processes it runs besides itself - deadbolt-server (start, wait until ready,
// signal, reap) and, with --power-cut, the powercutfs mount its journal lives on - and what it
// reads from the server's log. Nothing here knows about keys or rounds (lockcrash_tester.h).
//
// Threads: both classes belong to the main thread. The one exception is
// ServerProcess::Signal, which the load phase's killer thread calls while the main thread runs
// the load loop and does not touch the ServerProcess (lockcrash_load.cc).

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "tools/lockcrash/lockcrash_run.h"

namespace deadbolt::lockcrash {

// One deadbolt-server process at a time, started with the options lockcrash owns (port, bind,
// threads, journal settings, --dir) and o.server_args; its stdout and stderr go to a log file.
// The destructor SIGKILLs a server still running.
class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts the server and waits until it answers PING (and says it is this process).
  // A killed server's listening socket can outlive it for a moment (its io_uring, which holds a
  // multishot accept on it, is torn down after the process is gone): a start that cannot bind
  // is tried again for up to 5 s.
  std::string Start(const Options& o, int port, int threads, const std::string& log_path);
  // How many starts were tried again because the port was still bound.
  int bind_retries() const { return bind_retries_; }

  // Starts the server without waiting for it.
  std::string Spawn(const Options& o, int port, int threads, const std::string& log_path);
  // Waits until the spawned server answers PING on `port` and INFO names its pid. Returns "" or
  // why not (the server exited, another process answers, or o.start_timeout_ms went by).
  std::string WaitReady(const Options& o, int port);

  // Sends `sig` to the server, if one is running. Safe from another thread while the owner
  // leaves the object alone.
  void Signal(int sig);

  // Waits for the process to end. Returns false on timeout (then kills it).
  bool Wait(int64_t deadline_ns, int* status);

  bool running() const { return pid_ > 0; }
  const std::string& log_path() const { return log_path_; }

  // "exit code N", "killed by <signal>" or "status N", for a waitpid status.
  static std::string DescribeStatus(int status);

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  int bind_retries_ = 0;
};

// --power-cut: a powercutfs mount of <dir>/backing at <dir>/mnt (log: <dir>/powercutfs.log) that
// forgets every write not fsynced when told to. The destructor unmounts it.
class PowerCutFs {
 public:
  PowerCutFs() = default;
  ~PowerCutFs() { Unmount(); }
  PowerCutFs(const PowerCutFs&) = delete;
  PowerCutFs& operator=(const PowerCutFs&) = delete;

  // Starts `binary` (empty: powercutfs beside this executable) and waits up to 5 s for the
  // mount. Returns "" or why not.
  std::string Mount(const std::string& binary, const std::string& dir);
  // Unmounts and waits for powercutfs to exit (SIGKILL after 5 s). Nothing if not mounted.
  void Unmount();
  // Once the dead server on `port` has let go of it, drops every unsynced write and counts it in
  // *cuts. Returns the file system's account of what it undid, or why the cut failed.
  std::string Cut(int port, int* cuts);

  const std::string& mount_point() const { return mnt_; }

 private:
  pid_t pid_ = -1;
  std::string dir_;
  std::string mnt_;
};

// A TCP port free on the loopback address now, or -1.
int FreePort(const std::string& host);

// The last `max_bytes` of a file (a log), or "(no log: <path>)".
std::string Tail(const std::string& path, size_t max_bytes);

// How many times `what` occurs in `text`.
int CountOccurrences(const std::string& text, std::string_view what);

// From a server's log: rewrites finished, and shards whose last rewrite had started and not
// ended when the log stops.
void CountRewrites(const std::string& log, int* done, int* unfinished);

}  // namespace deadbolt::lockcrash
