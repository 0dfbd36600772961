#!/usr/bin/env python3
"""Changes to large collections with the journal on, deadbolt beside redis-server (its AOF), in
one run: the commands a queue or a big hash sends, each against a collection of N elements.

deadbolt journals a change to a collection of 32 elements or more as an edit record (the
elements pushed, the fields set; docs/DURABILITY.md, "Edits of large collections"); before
that it wrote the whole collection per change. This measures what that costs next to Redis,
which appends the command to its AOF.

Per round, for each server in turn (the order flips each round), a fresh server on a fresh
--dir with `--appendonly yes --appendfsync F`:
  deadbolt  its defaults otherwise (one reactor per core, unpinned);
  redis     `redis-server --save ''`, pinned to core 1, as bench/compare.py runs it;
then a list, a hash, a sorted set and a stream of N elements each, and for each command below
`redis-benchmark -c C -n R` (pinned to core 0, P1): ops/s, and the journal's growth per
command (the --dir's bytes after less before, over R).

  /usr/bin/python3 bench/journal_collections.py --deadbolt build/release/server/deadbolt-server
  /usr/bin/python3 bench/journal_collections.py --fsync always --rounds 3
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rb_helpers import bench, call, free_port  # noqa: E402
from rb_helpers import running  # noqa: E402

COMMANDS = [
    ("RPUSH", ["rpush", "big:list", "x"]),
    ("LPOP", ["lpop", "big:list"]),
    ("HSET", ["hset", "big:hash", "f__rand_int__", "v"]),
    ("ZADD", ["zadd", "big:zset", "__rand_int__", "m__rand_int__"]),
    ("ZINCRBY", ["zincrby", "big:zset", "1", "m__rand_int__"]),
    ("XADD", ["xadd", "big:stream", "*", "f", "v"]),
]


def dir_bytes(d):
    total = 0
    for root, _dirs, files in os.walk(d):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def server_argv(kind, binary, fsync, d, port):
    if kind == "redis":
        argv = ["taskset", "-c", "1", binary, "--port", str(port), "--save", "",
                "--appendonly", "yes", "--appendfsync", fsync, "--dir", d, "--loglevel", "warning"]
    else:
        argv = [binary, "--port", str(port), "--appendonly", "yes", "--appendfsync", fsync,
                "--dir", d]
    return argv


def load(port, n):
    lines = []
    for i in range(0, n, 1000):
        r = range(i, min(n, i + 1000))
        lines.append("RPUSH big:list " + " ".join(str(j) for j in r))
        lines.append("HSET big:hash " + " ".join("f%d v" % j for j in r))
        lines.append("ZADD big:zset " + " ".join("%d m%d" % (j, j) for j in r))
    for i in range(1, n + 1):
        lines.append("XADD big:stream %d-1 f v" % i)
    subprocess.run(["redis-cli", "-p", str(port)], input="\n".join(lines) + "\n", text=True,
                   stdout=subprocess.DEVNULL, check=True)
    if call(port, "LLEN", "big:list") != str(n):
        sys.exit("loading failed")


def run_server(kind, binary, a):
    d = tempfile.mkdtemp(prefix="journal-collections-")
    port = free_port()
    with running(server_argv(kind, binary, a.fsync, d, port), port, kind, d):
        load(port, a.elements)
        time.sleep(1.5)  # past everysec's fsync and any rewrite the load started
        results = {}
        for name, args in COMMANDS:
            before = dir_bytes(d)
            ops = bench(port, args, a.clients, a.requests, a.elements)
            results[name] = (ops, (dir_bytes(d) - before) / a.requests)
        return results


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--deadbolt", default="build/release/server/deadbolt-server")
    p.add_argument("--redis", default=shutil.which("redis-server") or "redis-server")
    p.add_argument("--fsync", default="everysec", choices=["always", "everysec", "no"])
    p.add_argument("--elements", type=int, default=100000)
    p.add_argument("--requests", type=int, default=40000)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    runs = {"deadbolt": [], "redis": []}
    for r in range(a.rounds):
        order = ["deadbolt", "redis"] if r % 2 == 0 else ["redis", "deadbolt"]
        for kind in order:
            runs[kind].append(run_server(kind, a.deadbolt if kind == "deadbolt" else a.redis, a))
    print("Collections of %d elements, --appendfsync %s, %d connections, P1, %d round(s); "
          "medians." % (a.elements, a.fsync, a.clients, a.rounds))
    print()
    print("| command | deadbolt ops/s | redis ops/s | ratio | deadbolt journal B/op "
          "| redis AOF B/op |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, _args in COMMANDS:
        d = statistics.median(x[name][0] for x in runs["deadbolt"])
        r = statistics.median(x[name][0] for x in runs["redis"])
        ratios = [x[name][0] / y[name][0] for x, y in zip(runs["deadbolt"], runs["redis"])]
        db = statistics.median(x[name][1] for x in runs["deadbolt"])
        rb = statistics.median(x[name][1] for x in runs["redis"])
        print("| %s | %.0fk | %.0fk | %.2f× | %.0f | %.0f |"
              % (name, d / 1000, r / 1000, statistics.median(ratios), db, rb))


if __name__ == "__main__":
    main()
