#include "server/core/server.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "server/base/fd_limit.h"
#include "server/base/log.h"
#include "server/cmdtable/command.h"
#include "server/core/journal.h"
#include "server/core/reactor.h"
#include "server/tls/tls.h"

namespace deadbolt::server {

Server::Server(const Config& config) : config_(config) {
  // The CPUs this process may use (taskset, a container's cpuset), not every CPU online.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; c++) {
      if (CPU_ISSET(c, &set)) allowed_cpus_.push_back(c);
    }
  }
  if (config_.threads <= 0) {
    long n = allowed_cpus_.empty() ? sysconf(_SC_NPROCESSORS_ONLN)
                                   : static_cast<long>(allowed_cpus_.size());
    config_.threads = n > 0 ? static_cast<int>(n) : 1;
  }
  single_shard_ = config_.threads == 1;
  journal_health_ = std::make_unique<JournalHealth>(config_.threads);
  // Slots are split into contiguous ranges, one per shard, as a cluster splits them over nodes
  // (OwnerOfSlot).
  shards_ = config_.threads;
  last_save_s_ = std::make_unique<std::atomic<int64_t>[]>(shards_);
  std::random_device rd;
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 40; i++) run_id_ += kHex[rd() % 16];
  CommandTable::Get();  // built before any reactor runs
  TickClock::TicksPerUsec();  // measured once, here, not on a reactor
}

Server::~Server() = default;

int64_t Server::LastSave() const {
  int64_t oldest = INT64_MAX;
  for (int i = 0; i < shards_; i++) {
    oldest = std::min(oldest, last_save_s_[i].load(std::memory_order_relaxed));
  }
  return oldest;
}

std::optional<std::string> Server::Start() {
  start_time_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  for (int i = 0; i < shards_; i++) NoteSaved(i, start_time_ms_ / 1000);
  // Every client needs a descriptor: fit maxclients to RLIMIT_NOFILE before anyone connects,
  // so that a client over the limit is told so instead of the server failing to accept.
  FdFit fit = FitMaxClients(config_.maxclients, config_.threads, FdLimitOps::Real());
  for (const std::string& line : fit.log) {
    if (fit.maxclients == config_.maxclients && !fit.fatal) {
      LogNotice("%s", line.c_str());
    } else {
      LogWarning("%s", line.c_str());
    }
  }
  if (fit.fatal) return fit.log.back();
  config_.maxclients = fit.maxclients;
  if (config_.tls_port != 0) {
    auto ctx = TlsContext::Create(config_);
    if (auto* err = std::get_if<std::string>(&ctx)) return *err;
    tls_context_ = std::move(std::get<std::unique_ptr<TlsContext>>(ctx));
    // Records are encrypted in user space (OpenSSL over memory BIOs) either way for now; the
    // kernel's tls ULP is probed so the log says whether offload could be had here.
    if (auto why = KernelTlsUnavailable()) {
      LogNotice("TLS on port %d: records in user space (kernel TLS unavailable: TCP_ULP tls: %s)",
                config_.tls_port, why->c_str());
    } else {
      LogNotice("TLS on port %d: records in user space (the kernel has the tls ULP, but "
                "deadbolt does not offload to it yet)", config_.tls_port);
    }
  }
  if (auto err = LoadUsers()) return err;
  std::vector<int> cpus = ReactorCpus(config_.pin, config_.threads, allowed_cpus_);
  std::string placed;
  for (int i = 0; i < config_.threads; i++) {
    reactors_.push_back(std::make_unique<Reactor>(this, i, config_));
    reactors_.back()->set_cpu(cpus[i]);
    if (cpus[i] >= 0) placed += (placed.empty() ? "" : ",") + std::to_string(cpus[i]);
  }
  if (!placed.empty()) {
    LogNotice("reactors: %d, pinned to CPUs %s", config_.threads, placed.c_str());
  } else {
    LogNotice("reactors: %d on %zu CPUs, not pinned%s", config_.threads, allowed_cpus_.size(),
              config_.pin == Config::Pin::kAuto
                  ? " (--pin auto: every CPU has a reactor, so other busy processes share their "
                    "cores; --pin yes pins them)"
                  : "");
  }
  std::vector<shard::Shard*> shards;
  for (auto& r : reactors_) shards.push_back(&r->shard());
  if (auto err = LoadJournals(config_, shards)) return err;
  // The --restart-delay counts from here, when the reactors start serving: keep this right
  // before they start, after anything that makes start-up take longer. Set before the threads
  // exist, so they read it without synchronisation.
  restart_delay_.since_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();  // CLOCK_REALTIME, the reactors' clock
  restart_delay_.delay_ms = config_.restart_delay_ms;
  for (auto& r : reactors_) r->Start();
  return std::nullopt;
}

std::optional<std::string> Server::LoadUsers() {
  initial_users_ = acl::Users::WithDefault(config_.requirepass);
  if (config_.aclfile.empty()) return std::nullopt;
  // As Redis: an aclfile that cannot be read or has a bad line stops the start.
  std::ifstream in(config_.aclfile, std::ios::binary);
  if (!in) {
    return "Error loading ACLs: opening the ACL file " + config_.aclfile + ": " +
           std::strerror(errno);
  }
  std::stringstream text;
  text << in.rdbuf();
  acl::Users users;
  if (auto err = acl::Users::Parse(text.str(), config_.aclfile, &users)) {
    return "Aborting start-up because of ACL errors: " + *err;  // as Redis says it
  }
  initial_users_ = std::move(users);
  return std::nullopt;
}

void Server::Wait() {
  for (auto& r : reactors_) r->Join();
}

void Server::RequestShutdown() {
  for (auto& r : reactors_) r->RequestStop();
}

}  // namespace deadbolt::server
