#include "server/base/config.h"

#include <absl/strings/ascii.h>
#include <absl/strings/numbers.h>

#include <cstdio>
#include <cstring>
#include <functional>

#include "server/base/str_util.h"
#include "shard/base/glob.h"

namespace deadbolt::server {
namespace {

struct Setting {
  const char* name;
  bool mutable_at_runtime;
  std::function<std::optional<std::string>(Config&, std::string_view)> set;
  std::function<std::string(const Config&)> get;
};

std::optional<std::string> SetInt(int64_t* dst, std::string_view v, int64_t lo, int64_t hi,
                                  bool memory) {
  std::optional<int64_t> n;
  if (memory) {
    n = ParseMemory(v);
  } else {
    int64_t x;
    if (ParseNumber(v, &x)) n = x;
  }
  if (!n) return std::string("argument couldn't be parsed into an integer");
  if (*n < lo || *n > hi)
    return std::string("argument must be between ") + std::to_string(lo) + " and " +
           std::to_string(hi) + " inclusive";
  *dst = *n;
  return std::nullopt;
}

template <typename T>
std::function<std::optional<std::string>(Config&, std::string_view)> IntSetter(
    T Config::*field, int64_t lo, int64_t hi, bool memory = false) {
  return [=](Config& c, std::string_view v) -> std::optional<std::string> {
    int64_t x = 0;
    if (auto err = SetInt(&x, v, lo, hi, memory)) return err;
    c.*field = static_cast<T>(x);
    return std::nullopt;
  };
}

template <typename T>
std::function<std::string(const Config&)> IntGetter(T Config::*field) {
  return [=](const Config& c) { return std::to_string(c.*field); };
}

std::function<std::optional<std::string>(Config&, std::string_view)> BoolSetter(
    bool Config::*field) {
  return [=](Config& c, std::string_view v) -> std::optional<std::string> {
    std::string l = AsciiLower(v);
    if (l != "yes" && l != "no") return std::string("argument must be 'yes' or 'no'");
    c.*field = l == "yes";
    return std::nullopt;
  };
}

std::function<std::string(const Config&)> BoolGetter(bool Config::*field) {
  return [=](const Config& c) { return std::string(c.*field ? "yes" : "no"); };
}

std::function<std::optional<std::string>(Config&, std::string_view)> StringSetter(
    std::string Config::*field) {
  return [=](Config& c, std::string_view v) -> std::optional<std::string> {
    c.*field = std::string(v);
    return std::nullopt;
  };
}

std::function<std::string(const Config&)> StringGetter(std::string Config::*field) {
  return [=](const Config& c) { return c.*field; };
}

// A setting's value named in CONFIG and on the command line, and the enum value it stands for.
template <typename E>
struct Named {
  const char* name;
  E value;
};

// In the order Redis's "must be one of the following" error lists them.
constexpr Named<Config::PipelineOrder> kPipelineOrders[] = {{"sent", Config::PipelineOrder::kSent},
                                                            {"key", Config::PipelineOrder::kKey}};
constexpr Named<Config::Pin> kPins[] = {
    {"auto", Config::Pin::kAuto}, {"yes", Config::Pin::kYes}, {"no", Config::Pin::kNo}};
constexpr Named<Config::Fsync> kFsyncs[] = {{"everysec", Config::Fsync::kEverySec},
                                            {"always", Config::Fsync::kAlways},
                                            {"no", Config::Fsync::kNo}};
// In Redis's order (its error lists them so), without the LFU policies.
constexpr Named<Config::MaxmemoryPolicy> kMaxmemoryPolicies[] = {
    {"volatile-lru", Config::MaxmemoryPolicy::kVolatileLru},
    {"volatile-random", Config::MaxmemoryPolicy::kVolatileRandom},
    {"volatile-ttl", Config::MaxmemoryPolicy::kVolatileTtl},
    {"allkeys-lru", Config::MaxmemoryPolicy::kAllkeysLru},
    {"allkeys-random", Config::MaxmemoryPolicy::kAllkeysRandom},
    {"noeviction", Config::MaxmemoryPolicy::kNoEviction}};
// Settings kept as their (lower-case) name.
constexpr const char* kLoglevels[] = {"debug", "verbose", "notice", "warning", "nothing"};
constexpr const char* kDebugCommandModes[] = {"no", "yes", "local"};
constexpr const char* kTlsAuthClients[] = {"no", "yes", "optional"};

const char* NameOf(const char* n) { return n; }
template <typename E>
const char* NameOf(const Named<E>& n) {
  return n.name;
}

template <typename T, size_t N>
std::string OneOfError(const T (&names)[N]) {
  std::string out = "argument(s) must be one of the following: ";
  for (size_t i = 0; i < N; i++) {
    if (i > 0) out += ", ";
    out += NameOf(names[i]);
  }
  return out;
}

template <typename E, size_t N>
std::function<std::optional<std::string>(Config&, std::string_view)> EnumSetter(
    E Config::*field, const Named<E> (&names)[N]) {
  return [field, &names](Config& c, std::string_view v) -> std::optional<std::string> {
    for (const auto& n : names) {
      if (EqualsIgnoreCase(n.name, v)) {
        c.*field = n.value;
        return std::nullopt;
      }
    }
    return OneOfError(names);
  };
}

template <typename E, size_t N>
const char* EnumName(const Named<E> (&names)[N], E value) {
  for (const auto& n : names) {
    if (n.value == value) return n.name;
  }
  return names[0].name;
}

template <typename E, size_t N>
std::function<std::string(const Config&)> EnumGetter(E Config::*field, const Named<E> (&names)[N]) {
  return [field, &names](const Config& c) { return std::string(EnumName(names, c.*field)); };
}

template <size_t N>
std::function<std::optional<std::string>(Config&, std::string_view)> ChoiceSetter(
    std::string Config::*field, const char* const (&names)[N]) {
  return [field, &names](Config& c, std::string_view v) -> std::optional<std::string> {
    for (const char* n : names) {
      if (EqualsIgnoreCase(n, v)) {
        c.*field = n;
        return std::nullopt;
      }
    }
    return OneOfError(names);
  };
}

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> kSettings = {
      {"port", false, IntSetter(&Config::port, 0, 65535), IntGetter(&Config::port)},
      {"bind", false, StringSetter(&Config::bind), StringGetter(&Config::bind)},
      {"threads", false, IntSetter(&Config::threads, 0, 256), IntGetter(&Config::threads)},
      {"requirepass", true, StringSetter(&Config::requirepass), StringGetter(&Config::requirepass)},
      {"aclfile", false, StringSetter(&Config::aclfile), StringGetter(&Config::aclfile)},
      {"protected-mode", true, BoolSetter(&Config::protected_mode),
       BoolGetter(&Config::protected_mode)},
      {"databases", false, IntSetter(&Config::databases, 1, 1024), IntGetter(&Config::databases)},
      {"proto-max-bulk-len", true,
       IntSetter(&Config::proto_max_bulk_len, 1024 * 1024, INT64_MAX, true),
       IntGetter(&Config::proto_max_bulk_len)},
      {"max-multibulk-len", true, IntSetter(&Config::max_multibulk_len, 1, INT32_MAX),
       IntGetter(&Config::max_multibulk_len)},
      {"client-query-buffer-limit", true,
       IntSetter(&Config::client_query_buffer_limit, 1024 * 1024, INT64_MAX, true),
       IntGetter(&Config::client_query_buffer_limit)},
      {"maxclients", true, IntSetter(&Config::maxclients, 1, INT32_MAX),
       IntGetter(&Config::maxclients)},
      {"hz", true, IntSetter(&Config::hz, 1, 500), IntGetter(&Config::hz)},
      {"pipeline-order", false, EnumSetter(&Config::pipeline_order, kPipelineOrders),
       EnumGetter(&Config::pipeline_order, kPipelineOrders)},
      {"pin", false, EnumSetter(&Config::pin, kPins), EnumGetter(&Config::pin, kPins)},
      {"move-connections", true, BoolSetter(&Config::move_connections),
       BoolGetter(&Config::move_connections)},
      {"spin-us", true, IntSetter(&Config::spin_us, 0, 1000), IntGetter(&Config::spin_us)},
      {"tracking-table-max-keys", true, IntSetter(&Config::tracking_table_max_keys, 0, INT64_MAX),
       IntGetter(&Config::tracking_table_max_keys)},
      {"timeout", true, IntSetter(&Config::timeout, 0, INT32_MAX), IntGetter(&Config::timeout)},
      {"busy-reply-threshold", true, IntSetter(&Config::busy_reply_threshold_ms, 0, INT64_MAX),
       IntGetter(&Config::busy_reply_threshold_ms)},
      {"lua-time-limit", true, IntSetter(&Config::busy_reply_threshold_ms, 0, INT64_MAX),
       IntGetter(&Config::busy_reply_threshold_ms)},
      {"lua-memory-limit", true, IntSetter(&Config::lua_memory_limit, 0, INT64_MAX, true),
       IntGetter(&Config::lua_memory_limit)},
      {"loglevel", true, ChoiceSetter(&Config::loglevel, kLoglevels),
       StringGetter(&Config::loglevel)},
      {"appendonly", false, BoolSetter(&Config::appendonly), BoolGetter(&Config::appendonly)},
      {"appendfsync", true, EnumSetter(&Config::appendfsync, kFsyncs),
       EnumGetter(&Config::appendfsync, kFsyncs)},
      {"dir", false,
       [](Config& c, std::string_view v) -> std::optional<std::string> {
         if (v.empty()) return std::string("the directory name cannot be empty");
         c.dir = std::string(v);
         return std::nullopt;
       },
       [](const Config& c) { return c.dir; }},
      {"auto-aof-rewrite-percentage", true,
       IntSetter(&Config::auto_aof_rewrite_percentage, 0, INT32_MAX),
       IntGetter(&Config::auto_aof_rewrite_percentage)},
      {"auto-aof-rewrite-min-size", true,
       IntSetter(&Config::auto_aof_rewrite_min_size, 0, INT64_MAX, true),
       IntGetter(&Config::auto_aof_rewrite_min_size)},
      {"aof-load-truncated", true, BoolSetter(&Config::aof_load_truncated),
       BoolGetter(&Config::aof_load_truncated)},
      {"aof-load-damaged", true, BoolSetter(&Config::aof_load_damaged),
       BoolGetter(&Config::aof_load_damaged)},
      {"client-output-buffer-limit", true,
       [](Config& c, std::string_view v) { return c.client_output_buffer_limit.Parse(v); },
       [](const Config& c) { return c.client_output_buffer_limit.Format(); }},
      {"maxmemory", true, IntSetter(&Config::maxmemory, 0, INT64_MAX, true),
       IntGetter(&Config::maxmemory)},
      {"maxmemory-clients", true,
       [](Config& c, std::string_view v) -> std::optional<std::string> {
         if (!v.empty() && v.back() == '%') {
           int64_t pct;
           if (!ParseNumber(v.substr(0, v.size() - 1), &pct) || pct < 0) {
             return std::string("argument must be a memory or percent value");
           }
           if (pct > 100) return std::string("percentage argument must be less or equal to 100");
           c.maxmemory_clients = -pct;
           return std::nullopt;
         }
         std::optional<int64_t> n = ParseMemory(v);
         if (!n) return std::string("argument must be a memory or percent value");
         c.maxmemory_clients = *n;
         return std::nullopt;
       },
       [](const Config& c) {
         return c.maxmemory_clients < 0 ? std::to_string(-c.maxmemory_clients) + "%"
                                        : std::to_string(c.maxmemory_clients);
       }},
      // noeviction, the lock-safe default (no lock is dropped to make room), and
      // volatile-ttl (keys with a TTL go, soonest-to-expire first).
      {"maxmemory-policy", true, EnumSetter(&Config::maxmemory_policy, kMaxmemoryPolicies),
       EnumGetter(&Config::maxmemory_policy, kMaxmemoryPolicies)},
      {"maxmemory-samples", true, IntSetter(&Config::maxmemory_samples, 1, 64),
       IntGetter(&Config::maxmemory_samples)},
      {"slowlog-log-slower-than", true, IntSetter(&Config::slowlog_log_slower_than, -1, INT64_MAX),
       IntGetter(&Config::slowlog_log_slower_than)},
      {"slowlog-max-len", true, IntSetter(&Config::slowlog_max_len, 0, INT64_MAX),
       IntGetter(&Config::slowlog_max_len)},
      {"latency-tracking", true, BoolSetter(&Config::latency_tracking),
       BoolGetter(&Config::latency_tracking)},
      {"latency-tracking-info-percentiles", true,
       [](Config& c, std::string_view v) -> std::optional<std::string> {
         std::vector<double> out;
         std::string words(v);
         for (char *save = nullptr, *w = strtok_r(words.data(), " ", &save); w;
              w = strtok_r(nullptr, " ", &save)) {
           char* end = nullptr;
           double d = strtod(w, &end);
           if (*end != '\0' || !(d >= 0 && d <= 100)) {
             return std::string(
                 "latency-tracking-info-percentiles parameter should be "
                 "between 0.0 and 100.0");
           }
           out.push_back(d);
         }
         c.latency_tracking_info_percentiles = std::move(out);
         return std::nullopt;
       },
       [](const Config& c) {
         std::string out;
         for (double d : c.latency_tracking_info_percentiles) {
           if (!out.empty()) out += ' ';
           char buf[32];
           snprintf(buf, sizeof(buf), "%g", d);
           out += buf;
         }
         return out;
       }},
      {"latency-monitor-threshold", true,
       IntSetter(&Config::latency_monitor_threshold, 0, INT64_MAX),
       IntGetter(&Config::latency_monitor_threshold)},
      {"enable-debug-command", false,
       ChoiceSetter(&Config::enable_debug_command, kDebugCommandModes),
       StringGetter(&Config::enable_debug_command)},
      // TLS. The port is fixed at start (Redis moves its listener; deadbolt's is reactor 0's
      // and stays). CONFIG SET of the others builds a new context (ConfigSet, cmd_server.cc).
      {"tls-port", false, IntSetter(&Config::tls_port, 0, 65535), IntGetter(&Config::tls_port)},
      {"tls-cert-file", true, StringSetter(&Config::tls_cert_file),
       StringGetter(&Config::tls_cert_file)},
      {"tls-key-file", true, StringSetter(&Config::tls_key_file),
       StringGetter(&Config::tls_key_file)},
      {"tls-ca-cert-file", true, StringSetter(&Config::tls_ca_cert_file),
       StringGetter(&Config::tls_ca_cert_file)},
      {"tls-auth-clients", true, ChoiceSetter(&Config::tls_auth_clients, kTlsAuthClients),
       StringGetter(&Config::tls_auth_clients)},
      {"tls-protocols", true, StringSetter(&Config::tls_protocols),
       StringGetter(&Config::tls_protocols)},
      {"tls-ciphersuites", true, StringSetter(&Config::tls_ciphersuites),
       StringGetter(&Config::tls_ciphersuites)},
      {"tls-ciphers", true, StringSetter(&Config::tls_ciphers), StringGetter(&Config::tls_ciphers)},
      // Fixed at start: the delay counts from then.
      {"restart-delay", false, IntSetter(&Config::restart_delay_ms, 0, INT32_MAX),
       IntGetter(&Config::restart_delay_ms)},
  };
  return kSettings;
}

const Setting* Find(std::string_view name) {
  for (const auto& s : Settings()) {
    if (EqualsIgnoreCase(s.name, name)) return &s;
  }
  return nullptr;
}

// A parameter of NoEffectParams, or null.
const std::pair<const char*, const char*>* FindNoEffect(std::string_view name) {
  for (const auto& p : NoEffectParams()) {
    if (EqualsIgnoreCase(p.first, name)) return &p;
  }
  return nullptr;
}

// Checks a value for a no-effect parameter as loosely as its default allows: yes/no stays
// yes/no, a number stays a number (with Redis's memory units); anything else is taken as is.
std::optional<std::string> SetNoEffect(Config& c, const char* name, const char* def,
                                       std::string_view v) {
  std::string d = def;
  if (d == "yes" || d == "no") {
    std::string l = AsciiLower(v);
    if (l != "yes" && l != "no") return std::string("argument must be 'yes' or 'no'");
    c.no_effect[name] = l;
    return std::nullopt;
  }
  if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) {
    int64_t n;
    if (!ParseNumber(v, &n) && !ParseMemory(v)) {
      return std::string("argument couldn't be parsed into an integer");
    }
  }
  c.no_effect[name] = std::string(v);
  return std::nullopt;
}

}  // namespace

std::vector<int> ReactorCpus(Config::Pin pin, int threads, const std::vector<int>& allowed) {
  std::vector<int> cpus(threads > 0 ? threads : 0, -1);
  if (allowed.empty() || pin == Config::Pin::kNo) return cpus;
  if (pin == Config::Pin::kAuto && cpus.size() >= allowed.size()) return cpus;
  for (size_t i = 0; i < cpus.size(); i++) cpus[i] = allowed[i % allowed.size()];
  return cpus;
}

bool IsTlsContextSetting(std::string_view name) {
  static constexpr const char* kNames[] = {"tls-cert-file",    "tls-key-file",
                                           "tls-ca-cert-file", "tls-auth-clients",
                                           "tls-protocols",    "tls-ciphersuites",
                                           "tls-ciphers"};
  for (const char* n : kNames) {
    if (EqualsIgnoreCase(n, name)) return true;
  }
  return false;
}

const char* MaxmemoryPolicyName(Config::MaxmemoryPolicy p) {
  return EnumName(kMaxmemoryPolicies, p);
}

const char* FsyncName(Config::Fsync f) { return EnumName(kFsyncs, f); }

std::optional<int64_t> ParseMemory(std::string_view s) {
  std::string l = AsciiLower(s);
  int64_t mul = 1;
  auto strip = [&](std::string_view suffix, int64_t m) {
    if (l.size() > suffix.size() &&
        l.compare(l.size() - suffix.size(), suffix.size(), suffix.data()) == 0) {
      l.resize(l.size() - suffix.size());
      mul = m;
      return true;
    }
    return false;
  };
  strip("gb", 1024LL * 1024 * 1024) || strip("mb", 1024LL * 1024) || strip("kb", 1024) ||
      strip("g", 1000LL * 1000 * 1000) || strip("m", 1000LL * 1000) || strip("k", 1000) ||
      strip("b", 1);
  int64_t n;
  if (!ParseNumber(l, &n) || n < 0) return std::nullopt;
  if (n > INT64_MAX / mul) return std::nullopt;
  return n * mul;
}

std::string Config::Usage() {
  return "Usage: deadbolt-server [--port N] [--bind ADDR] [--threads N] [--requirepass PASS]\n"
         "                       [--aclfile PATH] [--protected-mode yes|no] [--maxmemory BYTES]\n"
         "                       [--maxmemory-policy noeviction|volatile-ttl|volatile-lru|\n"
         "                       allkeys-lru|volatile-random|allkeys-random]\n"
         "                       [--maxmemory-samples N] [--maxmemory-clients BYTES|PCT%]\n"
         "                       [--client-output-buffer-limit \"CLASS HARD SOFT SECS ...\"]\n"
         "                       [--databases N] [--proto-max-bulk-len BYTES] [--maxclients N]\n"
         "                       [--max-multibulk-len N] [--tracking-table-max-keys N]\n"
         "                       [--client-query-buffer-limit BYTES] [--hz N] [--timeout SECS]\n"
         "                       [--loglevel LEVEL] [--pin auto|yes|no] [--spin-us US]\n"
         "                       [--busy-reply-threshold MS] [--lua-time-limit MS]\n"
         "                       [--lua-memory-limit BYTES]\n"
         "                       [--pipeline-order sent|key] [--move-connections yes|no]\n"
         "                       [--appendonly yes|no] [--appendfsync always|everysec|no]\n"
         "                       [--dir PATH] [--auto-aof-rewrite-percentage N]\n"
         "                       [--auto-aof-rewrite-min-size BYTES]\n"
         "                       [--aof-load-truncated yes|no] [--aof-load-damaged yes|no]\n"
         "                       [--slowlog-log-slower-than US] [--slowlog-max-len N]\n"
         "                       [--latency-tracking yes|no]\n"
         "                       [--latency-tracking-info-percentiles \"P ...\"]\n"
         "                       [--latency-monitor-threshold MS]\n"
         "                       [--enable-debug-command no|local|yes]\n"
         "                       [--tls-port N] [--tls-cert-file PEM] [--tls-key-file PEM]\n"
         "                       [--tls-ca-cert-file PEM] [--tls-auth-clients yes|no|optional]\n"
         "                       [--tls-protocols \"TLSv1.2 TLSv1.3\"] [--tls-ciphersuites S]\n"
         "                       [--tls-ciphers S]\n"
         "Defaults: --port 6379 --bind 127.0.0.1 --threads <cores> --databases 16 --pin auto\n"
         "          --appendonly no --appendfsync everysec --dir .\n"
         "With --appendonly yes every shard keeps a journal in --dir "
         "(deadbolt-journal-<shard>-of-<n>.aof)\n"
         "and replays it at start-up. --appendfsync always acknowledges a write only once it is\n"
         "on disk (one fsync per reactor turn covers every write of that turn).\n"
         "  --restart-delay MS   for MS milliseconds after start, refuse every command that\n"
         "                       could take a lock (SET, SETNX, LOCK.ACQUIRE, acquire scripts,\n"
         "                       ...) with a TRYAGAIN error; releases, extensions and reads\n"
         "                       still work. For running without persistence: set it to your\n"
         "                       longest lock lease, so no lock granted before a restart is\n"
         "                       granted again while it may still be held (default 0: off;\n"
         "                       see docs/LOCKS.md)\n"
         "Every other Redis 7.0 parameter (--io-threads 4, --save \"\", ...) is accepted too, and\n"
         "has no effect (README.md lists them).\n";
}

std::optional<std::string> Config::ParseArgs(int argc, char** argv, Config* out) {
  for (int i = 1; i < argc; i++) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") return Usage();
    if (a == "--no-pin") {
      out->pin = Config::Pin::kNo;
      continue;
    }
    if (a.substr(0, 2) != "--") return "unknown argument '" + std::string(a) + "'\n" + Usage();
    a.remove_prefix(2);
    std::string name, value;
    if (auto eq = a.find('='); eq != std::string_view::npos) {
      name = std::string(a.substr(0, eq));
      value = std::string(a.substr(eq + 1));
    } else {
      if (i + 1 >= argc) return "missing value for --" + std::string(a);
      name = std::string(a);
      value = argv[++i];
    }
    const Setting* s = Find(name);
    if (!s) {
      if (const auto* p = FindNoEffect(name)) {
        if (auto err = SetNoEffect(*out, p->first, p->second, value)) {
          return "--" + name + ": " + *err;
        }
        continue;
      }
    }
    if (!s || !s->set) return "unknown option --" + name + "\n" + Usage();
    if (auto err = s->set(*out, value)) return "--" + name + ": " + *err;
  }
  return std::nullopt;
}

std::optional<std::string> Config::Set(std::string_view name, std::string_view value) {
  const Setting* s = Find(name);
  if (!s) {
    if (const auto* p = FindNoEffect(name)) {
      if (auto err = SetNoEffect(*this, p->first, p->second, value)) {
        return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) +
               "') - " + *err;
      }
      return std::nullopt;
    }
    return "ERR Unknown option or number of arguments for CONFIG SET - '" + std::string(name) + "'";
  }
  if (!s->mutable_at_runtime || !s->set) {
    return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) +
           "') - can't set immutable config";
  }
  if (auto err = s->set(*this, value)) {
    return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) + "') - " +
           *err;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> Config::Get(std::string_view pattern) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& s : Settings()) {
    if (shard::GlobMatch(pattern, s.name, true)) out.emplace_back(s.name, s.get(*this));
  }
  for (const auto& [name, def] : NoEffectParams()) {
    if (!shard::GlobMatch(pattern, name, true)) continue;
    auto it = no_effect.find(name);
    out.emplace_back(name, it == no_effect.end() ? std::string(def) : it->second);
  }
  return out;
}

}  // namespace deadbolt::server
