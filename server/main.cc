// deadbolt-server: the entry point. Parses flags, starts the reactors, waits for a signal.

#include <signal.h>

#include <cstdio>
#include <cstring>

#include "server/base/config.h"
#include "server/base/log.h"
#include "server/core/reactor.h"
#include "server/core/server.h"

namespace {
deadbolt::server::Server* g_server = nullptr;

void OnSignal(int) {
  if (g_server) g_server->RequestShutdown();
}
}  // namespace

int main(int argc, char** argv) {
  using deadbolt::server::Config;
  Config config;
  if (auto err = Config::ParseArgs(argc, argv, &config)) {
    bool help = err->rfind("Usage:", 0) == 0;
    fprintf(help ? stdout : stderr, "%s%s", help ? "" : "deadbolt: ", err->c_str());
    if (!err->empty() && err->back() != '\n') fputc('\n', help ? stdout : stderr);
    return help ? 0 : 2;
  }
  signal(SIGPIPE, SIG_IGN);
  deadbolt::server::Server server(config);
  g_server = &server;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  if (auto err = server.Start()) {
    fprintf(stderr, "deadbolt: %s\n", err->c_str());
    return 1;
  }
  deadbolt::server::LogNotice(
      "deadbolt %s (redis %s protocol) ready: %d threads, io_uring %s, listening on %s:%d",
      deadbolt::server::kDeadboltVersion, deadbolt::server::kVersion, server.num_shards(),
      server.reactor(0).ring_mode(), config.bind.c_str(), config.port);
  if (config.tls_port != 0) {
    deadbolt::server::LogNotice("TLS clients on %s:%d", config.bind.c_str(), config.tls_port);
  }
  if (config.restart_delay_ms > 0) {
    deadbolt::server::LogNotice(
        "--restart-delay: lock acquisitions are refused for the next %lld ms",
        static_cast<long long>(config.restart_delay_ms));
  }
  server.Wait();
  deadbolt::server::LogNotice("deadbolt is now ready to exit, bye bye...");
  g_server = nullptr;
  return 0;
}
