#!/usr/bin/env python3
"""Huge multi-key commands (issue 17, item 7): deadbolt against redis-server, same machine.

For each server, a fresh process on a free port (deadbolt with --threads 2):
  1. `one`: one EXISTS (or the command given) with N keys (N/2 of them set first): seconds from
     the first byte sent to the whole reply;
  2. `eight`: eight such commands at once on eight connections: seconds until the last reply,
     the server's peak RSS (VmHWM) during them, and the longest a PING on a ninth connection,
     sent over and over meanwhile, waited for its answer (a stall of other clients).

Usage: /usr/bin/python3 bench/multikey.py [--deadbolt PATH] [--redis PATH] [--keys N]
       [--command EXISTS|DEL|MGET|TOUCH|UNLINK] [--port-base P]
Prints a Markdown table.
"""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from harness import encode_command, free_port, reply_end, IncompleteReply, wait_port  # noqa: E402


def status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def read_reply(sock, buf):
    while True:
        try:
            end = reply_end(buf, 0)
            return bytes(buf[:end]), buf[end:]
        except IncompleteReply:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk


def call(sock, payload):
    sock.sendall(payload)
    reply, _ = read_reply(sock, bytearray())
    return reply


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=120)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def measure(argv, port, keys, command):
    workdir = tempfile.mkdtemp(prefix="multikey-bench-")
    proc = subprocess.Popen(argv, cwd=workdir, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_port(port)
        names = ["key:%07d" % i for i in range(keys)]
        c = connect(port)
        # Half of the keys exist.
        for i in range(0, keys // 2, 10000):
            batch = names[i:min(i + 10000, keys // 2)]
            args = ["MSET"]
            for k in batch:
                args += [k, "v"]
            call(c, encode_command(*args))
        payload = encode_command(command, *names)
        t0 = time.perf_counter()
        reply = call(c, payload)
        one = time.perf_counter() - t0
        base_hwm = status_kb(proc.pid, "VmHWM")
        base_rss = status_kb(proc.pid, "VmRSS")

        stalls = []
        stop = threading.Event()

        def pinger():
            p = connect(port)
            while not stop.is_set():
                t = time.perf_counter()
                call(p, b"*1\r\n$4\r\nPING\r\n")
                stalls.append(time.perf_counter() - t)
                time.sleep(0.002)
            p.close()

        conns = [connect(port) for _ in range(8)]
        pt = threading.Thread(target=pinger)
        pt.start()
        time.sleep(0.05)
        done = []

        def run(s):
            done.append(call(s, payload))

        t0 = time.perf_counter()
        threads = [threading.Thread(target=run, args=(s,)) for s in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        eight = time.perf_counter() - t0
        stop.set()
        pt.join()
        hwm = status_kb(proc.pid, "VmHWM")
        for s in conns:
            s.close()
        c.close()
        return {
            "reply": reply[:40],
            "one_s": one,
            "eight_s": eight,
            "peak_rss_mb": max(hwm, base_hwm) / 1024.0,
            "rss_before_mb": base_rss / 1024.0,
            "max_ping_ms": max(stalls) * 1000 if stalls else float("nan"),
            "pings": len(stalls),
        }
    finally:
        proc.kill()
        proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deadbolt", default=os.path.join(ROOT, "build/release/server/deadbolt-server"))
    ap.add_argument("--baseline", default="", help="another deadbolt binary to compare (old build)")
    ap.add_argument("--redis", default="/usr/bin/redis-server")
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--command", default="EXISTS")
    ap.add_argument("--port-base", type=int, default=0)
    a = ap.parse_args()
    servers = []
    if a.baseline:
        servers.append(("deadbolt (baseline)", lambda p: [a.baseline, "--port", str(p),
                                                         "--threads", "2", "--no-pin"]))
    servers.append(("deadbolt", lambda p: [a.deadbolt, "--port", str(p), "--threads", "2",
                                          "--no-pin"]))
    servers.append(("redis-server", lambda p: [a.redis, "--port", str(p), "--save", "",
                                               "--appendonly", "no"]))
    print("%s with %d keys (half of them set); 8 at once on 8 connections, PING meanwhile"
          % (a.command, a.keys))
    print()
    print("| server | one: s | eight: s | peak RSS MB (VmHWM) | longest PING wait ms | reply |")
    print("|---|---|---|---|---|---|")
    for i, (name, argv) in enumerate(servers):
        port = a.port_base + i if a.port_base else free_port()
        r = measure(argv(port), port, a.keys, a.command)
        print("| %s | %.3f | %.3f | %.0f | %.1f | `%s` |" % (
            name, r["one_s"], r["eight_s"], r["peak_rss_mb"], r["max_ping_ms"],
            r["reply"].decode("ascii", "replace").strip()[:20]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
