#!/usr/bin/python3
"""Runs the JavaScript client tests (tests/js/*.test.js, node's built-in test runner) against a
server it starts on a free port, exactly as tests/e2e does:

  DEADBOLT_SERVER=build/release/server/deadbolt-server /usr/bin/python3 tests/js/run.py
  DEADBOLT_AGAINST_REDIS=1 /usr/bin/python3 tests/js/run.py      # the reference

Installs the npm packages first (`npm ci`, from package-lock.json) when node_modules is missing
or older than the lock file. The tests read the port from DEADBOLT_PORT, and the ports of all
the servers from DEADBOLT_PORTS: three servers run, for the clients that spread one lock over
several (RedlockSemaphore). Exits with node's status, or 1 if a server crashed or would not
stop."""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import harness  # noqa: E402

TEST_FILES = ["redlock.test.js", "semaphore.test.js", "client_cache.test.js"]
SERVERS = 3
TIMEOUT = float(os.environ.get("DEADBOLT_JS_TIMEOUT", "300"))


def ensure_packages(npm):
    lock = os.path.join(HERE, "package-lock.json")
    stamp = os.path.join(HERE, "node_modules", ".package-lock.json")
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(lock):
        return
    print("run.py: npm ci in %s" % HERE, flush=True)
    subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True, timeout=TIMEOUT)


def main():
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        print("run.py: node and npm must be on PATH (scripts/deps.sh --test installs them)")
        return 1
    ensure_packages(npm)
    servers = []
    code = 1
    try:
        for _ in range(SERVERS):
            servers.append(harness.ServerProcess().start())
        server = servers[0]
        env = dict(os.environ, DEADBOLT_PORT=str(server.port),
                   DEADBOLT_PORTS=",".join(str(s.port) for s in servers))
        cmd = [node, "--test", "--test-reporter=spec"] + TEST_FILES
        try:
            code = subprocess.run(cmd, cwd=HERE, env=env, timeout=TIMEOUT).returncode
        except subprocess.TimeoutExpired:
            print("run.py: the JS tests did not finish within %.0fs" % TIMEOUT)
            code = 1
    finally:
        problems = [(s, s.stop()) for s in servers]
    for s, problem in problems:
        if problem:
            print("run.py: %s\n--- server output ---\n%s" % (problem, s.log_tail()))
            return 1
    if code != 0:
        for s in servers:
            print("--- server output (port %d) ---\n%s" % (s.port, s.log_tail(3000)))
    return code


if __name__ == "__main__":
    sys.exit(main())
