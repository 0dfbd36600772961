#!/usr/bin/env python3
"""What cross-shard atomicity costs (issue 3), measured with redis-benchmark.

Starts deadbolt with --threads 2 (each reactor owns half of the slots) and measures:
  1. multi-key throughput (MSET, MGET of 4 keys) with all keys on one shard ({tag} keys)
     versus keys spread over both shards (every command is then a locked transaction);
  2. single-key GET throughput alone, and while other clients run cross-shard MSETs.
Same machine, same run; the ratios are what matter. Also runs redis-server for reference
(one thread: there every command is trivially atomic).

Usage: /usr/bin/python3 bench/atomicity.py [--deadbolt PATH] [--requests N] [--out bench/ATOMICITY.md]
"""

import argparse
import datetime
import os
import re
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def crc16(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def slot(key):
    b = key.encode()
    s = b.find(b"{")
    if s >= 0:
        e = b.find(b"}", s + 1)
        if e > s + 1:
            b = b[s + 1:e]
    return crc16(b) % 16384


def on_shard(shard, name):
    for n in range(10000):
        k = "%s:%d" % (name, n)
        if (0 if slot(k) < 8192 else 1) == shard:
            return k
    raise RuntimeError("no key")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start on %d" % port)


def bench(port, args, n, clients=50, pipeline=1, keyspace=0):
    """requests per second reported by redis-benchmark for one command."""
    cmd = ["redis-benchmark", "-p", str(port), "-q", "-n", str(n), "-c", str(clients),
           "-P", str(pipeline)] + (["-r", str(keyspace)] if keyspace else []) + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
    m = re.findall(r"([\d.]+) requests per second", out)
    if not m:
        raise RuntimeError("redis-benchmark said: %r" % out[-300:])
    return float(m[-1])


def measure(port, n, label):
    tag = "{t}"
    same = ["%s:%d" % (tag, i) for i in range(4)]
    spread = [on_shard(i % 2, "s%d" % i) for i in range(4)]
    assert len({0 if slot(k) < 8192 else 1 for k in same}) == 1
    assert len({0 if slot(k) < 8192 else 1 for k in spread}) == 2
    r = {}
    for name, keys in (("one shard", same), ("two shards", spread)):
        mset = ["MSET"] + [x for k in keys for x in (k, "v")]
        r["MSET 4 keys, " + name + " (all clients, same keys)"] = bench(port, mset, n)
        r["MGET 4 keys, " + name + " (all clients, same keys)"] = bench(port, ["MGET"] + keys, n)
    # Uncontended: every command draws its own random keys (almost always on both shards).
    rnd = ["r%d:__rand_int__" % i for i in range(4)]
    r["MSET 4 random keys (uncontended)"] = bench(
        port, ["MSET"] + [x for k in rnd for x in (k, "v")], n, keyspace=1000000)
    r["MGET 4 random keys (uncontended)"] = bench(port, ["MGET"] + rnd, n, keyspace=1000000)
    get_key = on_shard(0, "g")
    subprocess.run(["redis-cli", "-p", str(port), "SET", get_key, "v"], capture_output=True)
    r["GET alone"] = bench(port, ["GET", get_key], n)
    # GET again while 20 other clients keep running cross-shard MSETs on other keys.
    stop = threading.Event()

    def background():
        mset = ["MSET"] + [x for k in spread for x in (k, "w")]
        while not stop.is_set():
            bench(port, mset, max(n // 10, 1000), clients=20)

    t = threading.Thread(target=background, daemon=True)
    t.start()
    time.sleep(0.5)
    r["GET during cross-shard MSETs"] = bench(port, ["GET", get_key], n)
    stop.set()
    t.join()
    return r


def start(cmd, port):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deadbolt", default=os.path.join(ROOT, "build/release/server/deadbolt-server"))
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/ATOMICITY.md"))
    a = ap.parse_args()
    results = {}
    for name, make in (
            ("deadbolt --threads 2", lambda p: [a.deadbolt, "--port", str(p), "--threads", "2"]),
            ("redis-server", lambda p: ["redis-server", "--port", str(p), "--save", "",
                                        "--appendonly", "no"])):
        port = free_port()
        proc = start(make(port), port)
        try:
            results[name] = measure(port, a.requests, name)
        finally:
            proc.terminate()
            proc.wait(10)
    rows = list(next(iter(results.values())).keys())
    names = list(results.keys())
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    lines = ["# What cross-shard atomicity costs", "",
             "Generated by `bench/atomicity.py` on %s, commit %s, %d cores. redis-benchmark, "
             "50 clients, pipeline 1, %d requests per figure; requests per second."
             % (datetime.date.today(), head, os.cpu_count(), a.requests), "",
             "| workload | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for row in rows:
        lines.append("| %s | %s |" % (row, " | ".join("%.0f" % results[n][row] for n in names)))
    d = results[names[0]]
    lines += ["", "deadbolt ratios: MSET two shards / one shard = %.2f; MGET two / one = %.2f; "
              "GET during cross-shard MSETs / GET alone = %.2f."
              % (d["MSET 4 keys, two shards (all clients, same keys)"]
                 / d["MSET 4 keys, one shard (all clients, same keys)"],
                 d["MGET 4 keys, two shards (all clients, same keys)"]
                 / d["MGET 4 keys, one shard (all clients, same keys)"],
                 d["GET during cross-shard MSETs"] / d["GET alone"]), "",
              "redis-benchmark shares the machine's two cores with the servers, so absolute "
              "numbers are low and noisy; compare rows within a column."]
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
