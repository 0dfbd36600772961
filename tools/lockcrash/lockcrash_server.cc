// lockcrash: starting, signalling and reaping deadbolt-server; the powercutfs mount of
// --power-cut; reading the server's log. See lockcrash_server.h (all on the main thread, but
// ServerProcess::Signal, which the load phase's killer thread calls).

#include "tools/lockcrash/lockcrash_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "tools/locktorture/locktorture_conn.h"

extern char** environ;

namespace deadbolt::lockcrash {
namespace {

using locktorture::Conn;
using locktorture::NowNs;
using locktorture::Printable;

constexpr int64_t kMs = 1'000'000;

// Starts args[0] with stdin from /dev/null and stdout and stderr appended to `log`. Returns
// posix_spawn's error number (0: started, *pid set).
int SpawnLogged(std::vector<std::string> args, const std::string& log, pid_t* pid) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  int rc = posix_spawn(pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc;
}

// Waits (up to 5 s) until `port` can be bound on the loopback address again.
void WaitPortFree(int port) {
  const int64_t deadline = NowNs() + 5000 * kMs;
  while (NowNs() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) return;
    usleep(2000);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The server process.

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string ServerProcess::Start(const Options& o, int port, int threads,
                                 const std::string& log_path) {
  for (int attempt = 0;; attempt++) {
    std::string err = Spawn(o, port, threads, log_path);
    if (!err.empty()) return err;
    err = WaitReady(o, port);
    if (err.empty() || attempt >= 50 || err.find("Address already in use") == std::string::npos ||
        pid_ > 0) {
      return err;
    }
    bind_retries_++;
    usleep(100'000);
  }
}

std::string ServerProcess::Spawn(const Options& o, int port, int threads,
                                 const std::string& log_path) {
  std::vector<std::string> args = {o.server,
                                   "--port",
                                   std::to_string(port),
                                   "--bind",
                                   o.host,
                                   "--threads",
                                   std::to_string(threads),
                                   "--appendonly",
                                   o.fault == Fault::kNoJournal ? "no" : "yes",
                                   "--appendfsync",
                                   o.appendfsync,
                                   "--dir",
                                   o.dir,
                                   "--auto-aof-rewrite-min-size",
                                   o.rewrite_min_size};
  for (const std::string& a : o.server_args) args.push_back(a);
  log_path_ = log_path;
  int rc = SpawnLogged(std::move(args), log_path, &pid_);
  if (rc != 0) {
    pid_ = -1;
    return "cannot start " + o.server + ": " + strerror(rc);
  }
  return {};
}

std::string ServerProcess::WaitReady(const Options& o, int port) {
  const std::string& log_path = log_path_;
  const int64_t deadline = NowNs() + o.start_timeout_ms * kMs;
  std::string last_err;
  while (NowNs() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return "the server exited during start-up (" + DescribeStatus(status) + "); log " + log_path +
             ":\n" + Tail(log_path, 3000);
    }
    Conn c;
    std::string reply;
    last_err = c.Connect(o.host, port, NowNs() + 500 * kMs);
    if (last_err.empty()) last_err = c.Call({"PING"}, &reply, NowNs() + 2000 * kMs);
    if (last_err.empty() && reply != "+PONG\r\n") last_err = "PING replied " + Printable(reply);
    if (last_err.empty()) {
      last_err = c.Call({"INFO", "server"}, &reply, NowNs() + 2000 * kMs);
      if (last_err.empty()) {
        std::string want = "process_id:" + std::to_string(pid_) + "\r\n";
        if (reply.find(want) == std::string::npos) {
          return "another process answers on port " + std::to_string(port);
        }
        return {};
      }
    }
    usleep(20000);
  }
  return "the server did not answer PING within " + std::to_string(o.start_timeout_ms) + " ms (" +
         last_err + "); log " + log_path + ":\n" + Tail(log_path, 3000);
}

void ServerProcess::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

bool ServerProcess::Wait(int64_t deadline_ns, int* status) {
  if (pid_ <= 0) return true;
  while (true) {
    pid_t r = waitpid(pid_, status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return true;
    }
    if (NowNs() > deadline_ns) {
      kill(pid_, SIGKILL);
      waitpid(pid_, status, 0);
      pid_ = -1;
      return false;
    }
    usleep(2000);
  }
}

std::string ServerProcess::DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// ---------------------------------------------------------------------------------------------
// The powercutfs mount.

std::string PowerCutFs::Mount(const std::string& binary, const std::string& dir) {
  dir_ = dir;
  const std::string backing = dir_ + "/backing";
  mnt_ = dir_ + "/mnt";
  mkdir(backing.c_str(), 0755);
  mkdir(mnt_.c_str(), 0755);
  std::string fs = binary;
  if (fs.empty()) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    std::string exe_dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : "lockcrash";
    fs = exe_dir.substr(0, exe_dir.rfind('/') + 1) + "powercutfs";
  }
  const std::string log = dir_ + "/powercutfs.log";
  int rc = SpawnLogged({fs, backing, mnt_, "-f"}, log, &pid_);
  if (rc != 0) {
    pid_ = -1;
    return "cannot start " + fs + ": " + strerror(rc) + " (build it: it needs libfuse3-dev)";
  }
  const int64_t deadline = NowNs() + 5000 * kMs;
  while (NowNs() < deadline) {
    struct statfs st {};
    if (statfs(mnt_.c_str(), &st) == 0 && st.f_type == 0x65735546) {  // FUSE_SUPER_MAGIC
      return {};
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return fs + " exited (" + ServerProcess::DescribeStatus(status) +
             "); is /dev/fuse there? log:\n" + Tail(log, 2000);
    }
    usleep(10000);
  }
  return fs + " did not mount " + mnt_ + " within 5 s";
}

void PowerCutFs::Unmount() {
  if (pid_ <= 0) return;
  pid_t p = -1;
  std::vector<std::string> args = {"fusermount3", "-u", mnt_};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawnp(&p, "fusermount3", nullptr, nullptr, argv.data(), environ) == 0) {
    waitpid(p, nullptr, 0);
  }
  int status = 0;
  const int64_t deadline = NowNs() + 5000 * kMs;
  while (waitpid(pid_, &status, WNOHANG) != pid_) {
    if (NowNs() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    usleep(10000);
  }
  pid_ = -1;
}

std::string PowerCutFs::Cut(int port, int* cuts) {
  // The dead server's io_uring lets go of its files (and its listening socket) only once its
  // last operations are over: a write landing after the cut would outlive the power cut.
  WaitPortFree(port);
  usleep(20000);
  int fd = open((mnt_ + "/.powercut").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "1", 1) != 1) {
    std::string err = std::string("power cut failed: ") + strerror(errno);
    if (fd >= 0) close(fd);
    return err;
  }
  close(fd);
  (*cuts)++;
  std::string log = Tail(dir_ + "/powercutfs.log", 4096);
  size_t at = log.rfind("power cut ");
  if (at == std::string::npos) return "power cut";
  size_t colon = log.find(": ", at);
  size_t eol = log.find('\n', at);
  return "power cut: " + log.substr(colon + 2, eol - colon - 2);
}

// ---------------------------------------------------------------------------------------------
// Ports and logs.

int FreePort(const std::string& host) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  int port = -1;
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string Tail(const std::string& path, size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "(no log: " + path + ")";
  struct stat st {};
  fstat(fd, &st);
  off_t from = st.st_size > static_cast<off_t>(max_bytes) ? st.st_size - max_bytes : 0;
  std::string out(static_cast<size_t>(st.st_size - from), '\0');
  ssize_t n = pread(fd, out.data(), out.size(), from);
  close(fd);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

int CountOccurrences(const std::string& text, std::string_view what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) n++;
  return n;
}

void CountRewrites(const std::string& log, int* done, int* unfinished) {
  std::vector<int> open;  // per shard: 1 while a rewrite runs
  *done = 0;
  size_t pos = 0;
  while ((pos = log.find("shard ", pos)) != std::string::npos) {
    int shard = atoi(log.c_str() + pos + 6);
    size_t eol = log.find('\n', pos);
    std::string_view line(log.data() + pos, (eol == std::string::npos ? log.size() : eol) - pos);
    pos += 6;
    if (shard < 0 || shard > 4096) continue;
    if (open.size() <= static_cast<size_t>(shard)) open.resize(static_cast<size_t>(shard) + 1);
    if (line.find("journal rewrite started") != std::string_view::npos) {
      open[static_cast<size_t>(shard)] = 1;
    } else if (line.find("journal rewrite done") != std::string_view::npos) {
      open[static_cast<size_t>(shard)] = 0;
      (*done)++;
    } else if (line.find("journal rewrite failed") != std::string_view::npos) {
      open[static_cast<size_t>(shard)] = 0;
    }
  }
  *unfinished = 0;
  for (int o : open) *unfinished += o;
}

}  // namespace deadbolt::lockcrash
