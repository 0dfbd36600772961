#!/usr/bin/env python3
"""Compare-and-delete by EVALSHA: deadbolt's Lua, deadbolt's native catalogue, redis-server.

Issue 14's measure: an unknown compare-and-delete (the classic one with one space more, so the
catalogue does not know it and deadbolt runs it in its embedded Lua) by EVALSHA, against
redis-server running the same script, and the catalogued classic script run natively. For each
server and script, redis-benchmark sends EVALSHA sha 1 <key> <token> (the keys never hold the
token, so every call reads and deletes nothing: the script's cost, not the keyspace's) and this
script reads the server's CPU time (utime + stime from /proc) before and after:

    CPU per op = server CPU seconds / requests;  goal: deadbolt Lua <= 0.8 x redis-server.

It builds nothing: --deadbolt points at a release binary (scripts/build.sh release). The machine
is shared, so keep -n small when trying it; RESULTS.md numbers come from a quiet machine with
the defaults. Usage:

    bench/lua_cad.py --deadbolt build/release/server/deadbolt-server [-n 200000] [-c 50] [-P 16]
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

CLASSIC = ('if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) '
           'else return 0 end')
UNKNOWN = CLASSIC + " "  # one space more: not in deadbolt's catalogue


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server on port %d did not start" % port)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port)] + list(args), check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def measure(name, proc, port, script, args):
    sha = cli(port, "SCRIPT", "LOAD", script)
    before = cpu_seconds(proc.pid)
    t0 = time.monotonic()
    subprocess.run(["redis-benchmark", "-p", str(port), "-q", "-n", str(args.n), "-c",
                    str(args.c), "-P", str(args.P), "-r", "100000", "EVALSHA", sha, "1",
                    "lock:__rand_int__", "token"], check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    cpu = cpu_seconds(proc.pid) - before
    print("%-28s %10.0f req/s  %8.2f us CPU/op" % (name, args.n / wall, cpu / args.n * 1e6))
    return cpu / args.n


def start(argv):
    work = tempfile.mkdtemp(prefix="lua-cad-")
    proc = subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, work


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deadbolt", required=True)
    ap.add_argument("--redis", default="/usr/bin/redis-server")
    ap.add_argument("--threads", type=int, default=1, help="deadbolt --threads (default 1)")
    ap.add_argument("-n", type=int, default=200000)
    ap.add_argument("-c", type=int, default=50)
    ap.add_argument("-P", type=int, default=16)
    args = ap.parse_args()
    for tool in ("redis-benchmark", "redis-cli"):
        if not shutil.which(tool):
            sys.exit("needs %s (Debian redis-tools)" % tool)
    results = {}
    servers = [
        ("redis-server", [args.redis, "--save", "", "--appendonly", "no"]),
        ("deadbolt", [os.path.abspath(args.deadbolt), "--threads", str(args.threads)]),
    ]
    for name, argv in servers:
        port = free_port()
        proc, work = start(argv + ["--port", str(port)])
        try:
            wait_port(port)
            results[(name, "lua")] = measure(name + " unknown CAD", proc, port, UNKNOWN, args)
            if name == "deadbolt":
                results[(name, "native")] = measure(name + " native CAD", proc, port, CLASSIC,
                                                    args)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            shutil.rmtree(work, ignore_errors=True)
    ratio = results[("deadbolt", "lua")] / results[("redis-server", "lua")]
    print("deadbolt Lua / redis-server CPU per op: %.2fx (goal <= 0.80x)" % ratio)


if __name__ == "__main__":
    main()
