// lockload: a load generator for lock workloads that costs far less CPU per request than the
// server it measures. See tools/README.md.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tools/common/cli_main.h"
#include "tools/lockload/lockload_histogram.h"
#include "tools/lockload/lockload_options.h"
#include "tools/lockload/lockload_request.h"
#include "tools/lockload/lockload_resp.h"
#include "tools/lockload/lockload_worker.h"

namespace deadbolt::lockload {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true, std::memory_order_relaxed); }

// This process's CPU time so far (all threads), user and system.
struct CpuTime {
  double user = -1;
  double sys = -1;
  bool valid() const { return user >= 0; }
};

CpuTime CpuNow() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return {sec(ru.ru_utime), sec(ru.ru_stime)};
}

void SleepUntil(int64_t t_ns) {
  for (;;) {
    int64_t now = NowNs();
    if (now >= t_ns || g_stop.load(std::memory_order_relaxed)) return;
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(std::min<int64_t>(t_ns - now, 50'000'000)));
  }
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char b[8];
      snprintf(b, sizeof(b), "\\u%04x", ch);
      out += b;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// 1234567 -> "1,234,567"
std::string Grouped(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// Owned by the main thread: its own connection for the greeting, SCRIPT LOAD and preload before
// the run, and INFO cpu at the measurement's edges.
class Setup {
 public:
  explicit Setup(const Options& opts) : opts_(opts) {}

  std::string Open() {
    std::string err = client_.Connect(opts_.host, opts_.port);
    if (!err.empty()) return err;
    std::string reply;
    if (opts_.resp3) {
      err = opts_.password.empty()
                ? client_.Call({"HELLO", "3"}, &reply)
                : client_.Call({"HELLO", "3", "AUTH", "default", opts_.password}, &reply);
    } else if (!opts_.password.empty()) {
      err = client_.Call({"AUTH", opts_.password}, &reply);
    }
    if (err.empty() && ClassifyReply(reply) == ReplyType::kError) err = std::string(reply);
    return err;
  }

  // SCRIPT LOAD of the compare-and-delete script; *sha gets the digest the server returns.
  std::string LoadReleaseScript(std::string* sha) {
    static constexpr char kScript[] =
        "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else "
        "return 0 end";
    std::string reply;
    std::string err = client_.Call({"SCRIPT", "LOAD", kScript}, &reply);
    if (!err.empty()) return err;
    std::string_view payload = ReplyPayload(reply);
    if (ClassifyReply(reply) != ReplyType::kBulk || payload.size() != 40) {
      return "SCRIPT LOAD failed: " + std::string(payload.empty() ? reply : payload);
    }
    *sha = std::string(payload);
    return {};
  }

  // SET every key (without expiry), under each connection prefix, so that GET and extend find
  // them.
  std::string Preload(uint64_t keys) {
    const std::vector<std::string> prefixes =
        opts_.conn_prefixes.empty() ? std::vector<std::string>{opts_.prefix} : opts_.conn_prefixes;
    Rng rng(12345);
    const std::string value = MakeToken(&rng);
    constexpr uint64_t kChunk = 1000;
    std::string batch, reply;
    for (uint64_t first = 0; first < keys; first += kChunk) {
      const uint64_t n = std::min(kChunk, keys - first);
      batch.clear();
      for (const std::string& prefix : prefixes) {
        for (uint64_t i = first; i < first + n; ++i) {
          AppendCommand(&batch, {"SET", prefix + std::to_string(i), value});
        }
      }
      std::string err = client_.SendAll(batch);
      for (uint64_t i = 0; i < n * prefixes.size() && err.empty(); ++i) {
        err = client_.ReadReply(&reply);
        if (err.empty() && ClassifyReply(reply) != ReplyType::kOk) err = "preload SET: " + reply;
      }
      if (!err.empty()) return err;
    }
    return {};
  }

  // used_cpu_sys + used_cpu_user from INFO cpu, or -1.
  double ServerCpu() {
    std::string reply;
    if (!client_.Call({"INFO", "cpu"}, &reply).empty()) return -1;
    double total = 0;
    int found = 0;
    for (const char* field : {"used_cpu_sys:", "used_cpu_user:"}) {
      size_t at = reply.find(field);
      if (at == std::string::npos) continue;
      total += strtod(reply.c_str() + at + strlen(field), nullptr);
      ++found;
    }
    return found == 2 ? total : -1;
  }

 private:
  const Options& opts_;
  SyncClient client_;
};

struct Totals {
  uint64_t ops = 0;
  uint64_t errors = 0;
  uint64_t sent = 0;
  std::string first_error;
  std::array<uint64_t, static_cast<size_t>(ReplyType::kCount)> by_type{};
};

void PrintProgress(const std::vector<std::unique_ptr<Worker>>& workers, LatencyHistogram* scratch,
                   double elapsed_s, bool warming, uint64_t ops_delta, double interval_s) {
  scratch->Reset();
  uint64_t errors = 0;
  for (const auto& w : workers) {
    scratch->Merge(w->histogram());
    errors += w->errors();
  }
  const bool tty = isatty(STDERR_FILENO);
  if (warming) {
    fprintf(stderr, "%s[%6.1fs] warming up%s", tty ? "\r" : "", elapsed_s, tty ? "\033[K" : "\n");
  } else {
    fprintf(stderr, "%s[%6.1fs] %12s ops/s   p99 %8.1f us   errors %s%s", tty ? "\r" : "",
            elapsed_s, Grouped(static_cast<uint64_t>(ops_delta / interval_s)).c_str(),
            scratch->ValueAtQuantile(0.99) / 1e3, Grouped(errors).c_str(), tty ? "\033[K" : "\n");
  }
  fflush(stderr);
}

int Main(int argc, char** argv) {
  Options opts;
  if (auto rc = tools::ParseCommandLine("lockload", argc, argv, ParseOptions, Usage, &opts)) {
    return *rc;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);

  Setup setup(opts);
  std::string err = setup.Open();
  std::string sha;
  if (err.empty() && opts.workload == Workload::kCycle && opts.release == ReleaseMode::kEvalSha) {
    err = setup.LoadReleaseScript(&sha);
  }
  if (err.empty() && opts.preload &&
      (opts.workload == Workload::kGet || opts.workload == Workload::kExtend)) {
    const uint64_t keys = opts.keys == KeyDist::kHot ? 1 : opts.keyspace;
    if (!opts.quiet) fprintf(stderr, "lockload: preloading %s keys\n", Grouped(keys).c_str());
    err = setup.Preload(keys);
  }
  if (!err.empty()) {
    fprintf(stderr, "lockload: %s:%d: %s\n", opts.host.c_str(), opts.port, err.c_str());
    return 2;
  }

  const RequestSet reqs(opts, sha);
  if (!reqs.error().empty()) {
    fprintf(stderr, "lockload: %s\n", reqs.error().c_str());
    return 2;
  }
  const uint64_t seed = opts.seed != 0 ? opts.seed : static_cast<uint64_t>(NowNs());
  // For a cycle, --rate counts acquires and releases together: acquires are scheduled at half.
  const double schedule_rate = opts.workload == Workload::kCycle ? opts.rate / 2 : opts.rate;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < opts.threads; ++i) {
    const int conns = opts.connections / opts.threads + (i < opts.connections % opts.threads);
    const uint64_t t = static_cast<uint64_t>(opts.threads);
    const uint64_t budget = opts.requests / t + (static_cast<uint64_t>(i) < opts.requests % t);
    workers.push_back(std::make_unique<Worker>(i, opts, reqs, conns, budget,
                                               schedule_rate / opts.threads, seed + i));
  }
  RunPlan plan;
  std::latch ready(opts.threads);
  std::latch go(1);
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    threads.emplace_back(
        [&plan, &ready, &go, w = w.get()] { w->Run(&ready, &go, &plan, &g_stop); });
  }
  ready.wait();
  for (const auto& w : workers) {
    if (!w->setup_error().empty()) {
      fprintf(stderr, "lockload: %s:%d: %s\n", opts.host.c_str(), opts.port,
              w->setup_error().c_str());
      plan.abort = true;
      go.count_down();
      for (auto& th : threads) th.join();
      return 2;
    }
  }
  plan.start_ns = NowNs();
  plan.measure_ns = plan.start_ns + static_cast<int64_t>(opts.warmup_s * 1e9);
  if (!opts.count_mode()) {
    plan.end_ns = plan.measure_ns + static_cast<int64_t>(opts.duration_s * 1e9);
  }
  go.count_down();

  // Watch: progress once a second, CPU snapshots at the measurement's edges.
  LatencyHistogram scratch;
  CpuTime cpu_start, cpu_end;
  double server_start = -1, server_end = -1;
  int64_t measure_end_ns = 0;
  auto all_done = [&] {
    return std::all_of(workers.begin(), workers.end(), [](const auto& w) { return w->done(); });
  };
  int64_t next_report = plan.start_ns + 1'000'000'000;
  int64_t last_report = plan.start_ns;
  uint64_t last_ops = 0;
  for (;;) {
    int64_t now = NowNs();
    if (!cpu_start.valid() && now >= plan.measure_ns) {
      cpu_start = CpuNow();
      if (opts.server_cpu) server_start = setup.ServerCpu();
    }
    const bool finished = all_done();
    const bool window_over = now >= plan.end_ns || g_stop.load(std::memory_order_relaxed);
    if (!cpu_end.valid() && cpu_start.valid() && (finished || window_over)) {
      cpu_end = CpuNow();
      if (opts.server_cpu) server_end = setup.ServerCpu();
      measure_end_ns = std::min(now, plan.end_ns);
    }
    if (finished) break;
    if (now >= next_report) {
      uint64_t ops = 0;
      for (const auto& w : workers) ops += w->ops();
      if (!opts.quiet && !window_over) {
        PrintProgress(workers, &scratch, (now - plan.start_ns) / 1e9, now < plan.measure_ns,
                      ops - last_ops, (now - last_report) / 1e9);
      }
      last_ops = ops;
      last_report = now;
      next_report += 1'000'000'000;
    }
    int64_t wake = std::min(next_report, now + 10'000'000);
    if (!cpu_start.valid()) wake = std::min(wake, plan.measure_ns);
    if (!cpu_end.valid()) wake = std::min(wake, plan.end_ns);
    SleepUntil(wake);
  }
  for (auto& th : threads) th.join();
  if (!opts.quiet && isatty(STDERR_FILENO)) fputs("\n", stderr);

  // Totals.
  Totals tot;
  LatencyHistogram hist;
  int64_t first_error_ns = INT64_MAX;
  int64_t last_measured = 0;
  for (const auto& w : workers) {
    hist.Merge(w->histogram());
    tot.ops += w->ops();
    tot.errors += w->errors();
    tot.sent += w->sent();
    for (size_t t = 0; t < tot.by_type.size(); ++t)
      tot.by_type[t] += w->replies_of(static_cast<ReplyType>(t));
    if (!w->first_error().empty() && w->first_error_ns() < first_error_ns) {
      first_error_ns = w->first_error_ns();
      tot.first_error = w->first_error();
    }
    last_measured = std::max(last_measured, w->last_measured_ns());
  }
  if (opts.count_mode() && last_measured > 0) measure_end_ns = last_measured;
  if (measure_end_ns == 0) measure_end_ns = NowNs();
  const double seconds = std::max(1e-9, (measure_end_ns - plan.measure_ns) / 1e9);
  const double ops_per_sec = tot.ops / seconds;
  const bool have_cpu = cpu_start.valid() && cpu_end.valid();
  const double cpu_user = have_cpu ? cpu_end.user - cpu_start.user : 0;
  const double cpu_sys = have_cpu ? cpu_end.sys - cpu_start.sys : 0;
  const double cpu = cpu_user + cpu_sys;
  const double cpu_per_m = tot.ops > 0 ? cpu / (tot.ops / 1e6) : 0;
  const double server_cpu = server_start >= 0 && server_end >= 0 ? server_end - server_start : -1;
  const double server_per_m = tot.ops > 0 && server_cpu >= 0 ? server_cpu / (tot.ops / 1e6) : -1;
  auto us = [&](double q) { return hist.ValueAtQuantile(q) / 1e3; };
  const char* mode = opts.open_loop() ? "open" : "closed";

  if (opts.json) {
    std::string j = "{";
    char b[512];
    auto add = [&](const char* fmt, auto... args) {
      snprintf(b, sizeof(b), fmt, args...);
      j += b;
    };
    add("\"ops\":%" PRIu64 ",\"seconds\":%.6f,\"ops_per_sec\":%.1f,", tot.ops, seconds,
        ops_per_sec);
    add("\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,",
        us(0.5), us(0.9), us(0.99), us(0.999), hist.max() / 1e3);
    add("\"mean_us\":%.1f,\"min_us\":%.1f,", hist.mean() / 1e3, hist.min() / 1e3);
    add("\"errors\":%" PRIu64 ",\"first_error\":", tot.errors);
    j += tot.first_error.empty() ? "null" : JsonString(tot.first_error);
    j += ",\"replies_by_type\":{";
    bool first = true;
    for (size_t t = 0; t < tot.by_type.size(); ++t) {
      if (tot.by_type[t] == 0) continue;
      add("%s\"%s\":%" PRIu64 "", first ? "" : ",", ReplyTypeName(static_cast<ReplyType>(t)),
          tot.by_type[t]);
      first = false;
    }
    add("},\"requests_sent\":%" PRIu64 ",", tot.sent);
    add("\"cpu_user_s\":%.4f,\"cpu_sys_s\":%.4f,", cpu_user, cpu_sys);
    add("\"cpu_s\":%.4f,\"cpu_s_per_million\":%.4f,\"cpu_core_fraction\":%.3f,", cpu, cpu_per_m,
        cpu / seconds);
    if (server_cpu >= 0) {
      add("\"server_cpu_s\":%.4f,\"server_cpu_s_per_million\":%.4f,", server_cpu, server_per_m);
    }
    add("\"workload\":\"%s\",\"mode\":\"%s\",", WorkloadName(opts.workload), mode);
    if (opts.workload == Workload::kCycle) {
      add("\"release\":\"%s\",", ReleaseModeName(opts.release));
    }
    if (opts.workload == Workload::kExtend) add("\"extend\":\"%s\",", ExtendModeName(opts.extend));
    if (opts.workload == Workload::kMset) {
      add("\"mset\":\"%s\",\"shards\":%d,", MsetKeysName(opts.mset), opts.shards);
    }
    add("\"host\":%s,\"port\":%d,", JsonString(opts.host).c_str(), opts.port);
    add("\"connections\":%d,\"pipeline\":%d,\"threads\":%d,\"rate\":%.1f,", opts.connections,
        opts.pipeline, opts.threads, opts.rate);
    add("\"duration_s\":%.3f,\"requests\":%" PRIu64 ",\"warmup_s\":%.3f,", opts.duration_s,
        opts.requests, opts.warmup_s);
    add("\"keys\":\"%s\",\"keyspace\":%" PRIu64 ",\"prefix\":%s,\"ttl_ms\":%" PRId64
        ",\"resp3\":%s,",
        KeyDistName(opts.keys), opts.keyspace, JsonString(opts.prefix).c_str(), opts.ttl_ms,
        opts.resp3 ? "true" : "false");
    if (!opts.conn_prefixes.empty()) {
      std::string list;
      for (const std::string& p : opts.conn_prefixes) {
        list += (list.empty() ? "" : ",") + JsonString(p);
      }
      j += "\"conn_prefixes\":[" + list + "],";
    }
    add("\"io_uring\":\"%s\"}\n", workers[0]->ring_mode());
    fputs(j.c_str(), stdout);
  } else {
    printf("lockload %s on %s:%d: %d connections, %s, %d thread%s\n", WorkloadName(opts.workload),
           opts.host.c_str(), opts.port, opts.connections,
           opts.open_loop()
               ? ("open loop at " + Grouped(static_cast<uint64_t>(opts.rate)) + " req/s").c_str()
               : ("closed loop, pipeline " + std::to_string(opts.pipeline)).c_str(),
           opts.threads, opts.threads == 1 ? "" : "s");
    printf("  ops          %s in %.2f s = %s ops/s\n", Grouped(tot.ops).c_str(), seconds,
           Grouped(static_cast<uint64_t>(ops_per_sec)).c_str());
    printf("  latency us   p50 %.1f   p99 %.1f   p99.9 %.1f   max %.1f   (mean %.1f)\n", us(0.5),
           us(0.99), us(0.999), hist.max() / 1e3, hist.mean() / 1e3);
    printf("  replies     ");
    for (size_t t = 0; t < tot.by_type.size(); ++t) {
      if (tot.by_type[t] == 0) continue;
      printf(" %s %s", ReplyTypeName(static_cast<ReplyType>(t)), Grouped(tot.by_type[t]).c_str());
    }
    printf("\n  errors       %s\n", Grouped(tot.errors).c_str());
    if (opts.cpu) {
      printf(
          "  cpu          lockload %.3f s = %.3f cpu-s per 1M requests (%.0f%% of a core; "
          "user %.3f s, sys %.3f s)\n",
          cpu, cpu_per_m, 100 * cpu / seconds, cpu_user, cpu_sys);
      if (server_cpu >= 0) {
        printf("               server   %.3f s = %.3f cpu-s per 1M requests (%.0f%% of a core)\n",
               server_cpu, server_per_m, 100 * server_cpu / seconds);
      }
    }
  }
  fflush(stdout);
  if (!tot.first_error.empty()) {
    fprintf(stderr, "lockload: %s error%s; first: %s\n", Grouped(tot.errors).c_str(),
            tot.errors == 1 ? "" : "s", tot.first_error.c_str());
  }
  return tot.errors > 0 && !opts.allow_errors ? 1 : 0;
}

}  // namespace
}  // namespace deadbolt::lockload

int main(int argc, char** argv) { return deadbolt::lockload::Main(argc, argv); }
