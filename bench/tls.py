#!/usr/bin/python3
"""Server CPU per op over TLS: deadbolt's --tls-port against redis-server's own TLS, at P1 and P16,
with the plain port of each beside it for the cost of TLS itself.

The load is redis-benchmark (Debian's has --tls): 50 connections sending the lock acquire
`SET lock:<n> <token> NX PX 30000`, n uniform over 10,000 keys (mostly the contended path, as
lockload's default). CPU per op is the server process's user+system time (/proc/<pid>/stat)
over the run divided by the requests sent. Each run is a fresh server: deadbolt
`--threads 1 --no-pin`, redis `--save '' --appendonly no`, both pinned to core 1, the load to
core 0 (as bench/compare.py). A throwaway CA and server certificate are made with `openssl`.

  /usr/bin/python3 bench/tls.py [--server build/release/server/deadbolt-server]
                                [--requests 200000] [--rounds 3]

Prints one Markdown table (medians over the rounds) for bench/RESULTS.md.
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import harness  # noqa: E402  (free_port)
import test_tls  # noqa: E402  (make_certs)

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def wait_port(port, proc):
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited: %s" % proc.args)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


def start(kind, binary, certs):
    port, tls_port = harness.free_port(), harness.free_port()
    tls = ["--tls-port", str(tls_port), "--tls-cert-file", certs["server.crt"],
           "--tls-key-file", certs["server.key"], "--tls-ca-cert-file", certs["ca.crt"],
           "--tls-auth-clients", "no"]
    if kind == "deadbolt":
        argv = [binary, "--port", str(port), "--threads", "1", "--no-pin"] + tls
    else:
        argv = ["/usr/bin/redis-server", "--port", str(port), "--save", "", "--appendonly", "no"]
        argv += tls
    proc = subprocess.Popen(["taskset", "-c", "1"] + argv, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    wait_port(port, proc)
    return proc, port, tls_port


def run_load(port, tls, pipeline, requests, certs):
    argv = ["taskset", "-c", "0", "redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
            "-c", "50", "-n", str(requests), "-P", str(pipeline), "-r", "10000", "-q"]
    if tls:
        argv += ["--tls", "--cacert", certs["ca.crt"]]
    argv += ["SET", "lock:__rand_int__", "0123456789abcdef0123456789abcdef0123", "NX", "PX",
             "30000"]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    text = p.stdout.decode("utf-8", "replace")
    m = re.findall(r"([\d.]+) requests per second", text)
    if p.returncode != 0 or not m:
        raise RuntimeError("redis-benchmark failed:\n" + text)
    return float(m[-1])


def measure(kind, binary, certs, tls, pipeline, requests):
    proc, port, tls_port = start(kind, binary, certs)
    try:
        run_load(tls_port if tls else port, tls, pipeline, min(requests, 20000), certs)  # warm-up
        before = cpu_seconds(proc.pid)
        ops = run_load(tls_port if tls else port, tls, pipeline, requests, certs)
        cpu = cpu_seconds(proc.pid) - before
    finally:
        proc.terminate()
        proc.wait(10)
    return ops, cpu / requests * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(ROOT, "build/release/server/deadbolt-server"))
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not shutil.which("redis-benchmark"):
        sys.exit("redis-benchmark is missing (Debian redis-tools)")
    certs = test_tls.make_certs()
    rows = []
    try:
        for pipeline in (1, 16):
            requests = args.requests if pipeline > 1 else args.requests // 4
            for tls in (True, False):
                got = {"deadbolt": [], "redis": []}
                for rnd in range(args.rounds):
                    order = ("deadbolt", "redis") if rnd % 2 == 0 else ("redis", "deadbolt")
                    for kind in order:
                        got[kind].append(measure(kind, args.server, certs, tls, pipeline,
                                                 requests))
                d_ops = statistics.median(o for o, _ in got["deadbolt"])
                r_ops = statistics.median(o for o, _ in got["redis"])
                d_cpu = statistics.median(c for _, c in got["deadbolt"])
                r_cpu = statistics.median(c for _, c in got["redis"])
                ratios = [d[1] / r[1] for d, r in zip(got["deadbolt"], got["redis"])]
                rows.append("| %s P%d | %.0fk | %.0fk | %.2f | %.2f | %.2f× (%.2f–%.2f) |" % (
                    "TLS" if tls else "plain", pipeline, d_ops / 1000, r_ops / 1000, d_cpu,
                    r_cpu, statistics.median(ratios), min(ratios), max(ratios)))
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(certs["dir"], ignore_errors=True)
    print()
    print("| run | deadbolt ops/s | redis ops/s | deadbolt CPU µs/op | redis CPU µs/op |"
          " CPU ratio: median (range) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
