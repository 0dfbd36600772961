#!/usr/bin/env python3
"""Two-key commands whose keys live on different shards, deadbolt beside redis-server in one run:
LMOVE and SMOVE (the moves a reliable queue or a set of jobs makes) and MSET, each with one
connection (the round trips one command costs) and with 50 on the same two keys (how fast a
crowd on them drains: each command holds both keys' locks while it runs).

deadbolt runs with its defaults (one reactor per core, unpinned), its two keys on different
shards; a row on one shard ({tag} keys) is the reference. redis-server runs pinned to core 1,
redis-benchmark on core 0, as bench/compare.py does. Rounds alternate the servers' order.

  /usr/bin/python3 bench/cross_shard_moves.py
  /usr/bin/python3 bench/cross_shard_moves.py --baseline /path/to/older/deadbolt-server
  /usr/bin/python3 bench/cross_shard_moves.py --fsync everysec     # both with their journal
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from rb_helpers import bench, free_port  # noqa: E402
from rb_helpers import running  # noqa: E402
from slots import on_shard  # noqa: E402

A, B = on_shard(0, "q"), on_shard(1, "q")  # shard 0 and shard 1 with two reactors
SA, SB = on_shard(0, "s"), on_shard(1, "s")
MEMBERS = 100000


def rows():
    """(name, redis-benchmark arguments): each command in both shard orders."""
    return [
        ("LMOVE shard 0 -> 1", ["lmove", A, B, "left", "right"]),
        ("LMOVE shard 1 -> 0", ["lmove", B, A, "left", "right"]),
        ("LMOVE one shard", ["lmove", "{t}a", "{t}b", "left", "right"]),
        ("SMOVE shard 0 -> 1", ["smove", SA, SB, "__rand_int__"]),
        ("SMOVE shard 1 -> 0", ["smove", SB, SA, "__rand_int__"]),
        ("MSET two shards", ["mset", A + ":m", "v", B + ":m", "v"]),
    ]


def server_argv(kind, binary, fsync, d, port):
    """`fsync`: None for no journal, else both servers journal to `d` with that appendfsync."""
    journal = ["--appendonly", "no"] if not fsync else [
        "--appendonly", "yes", "--appendfsync", fsync, "--dir", d]
    if kind == "redis":
        argv = ["taskset", "-c", "1", binary, "--port", str(port), "--save", "", "--loglevel",
                "warning"] + journal
    else:
        argv = [binary, "--port", str(port)] + journal
    return argv


def load(port, elements):
    """Lists long enough that every LMOVE moves an element; sets of MEMBERS members each (in
    redis-benchmark's __rand_int__ form), so that most SMOVEs move one."""
    lines = []
    for key in (A, B, "{t}a", "{t}b"):
        for i in range(0, elements, 1000):
            lines.append("RPUSH %s " % key + " ".join("e%d" % j for j in range(i, min(elements,
                                                                                     i + 1000))))
    for key in (SA, SB):
        for i in range(0, MEMBERS, 1000):
            lines.append("SADD %s " % key + " ".join("%012d" % j for j in range(i, i + 1000)))
    subprocess.run(["redis-cli", "-p", str(port)], input="\n".join(lines) + "\n", text=True,
                   stdout=subprocess.DEVNULL, check=True)


def run_server(kind, binary, a):
    d = tempfile.mkdtemp(prefix="cross-shard-moves-")
    port = free_port()
    with running(server_argv(kind, binary, a.fsync, d, port), port, binary, d):
        load(port, a.requests_one + a.requests_crowd + 1000)
        return {(name, c): bench(port, args, c, a.requests_one if c == 1 else a.requests_crowd,
                                 MEMBERS)
                for name, args in rows() for c in (1, a.crowd)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--deadbolt", default="build/release/server/deadbolt-server")
    p.add_argument("--baseline", help="an older deadbolt-server, run beside the others")
    p.add_argument("--redis", default=shutil.which("redis-server") or "redis-server")
    p.add_argument("--crowd", type=int, default=50)
    p.add_argument("--requests-one", type=int, default=5000)
    p.add_argument("--requests-crowd", type=int, default=50000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--fsync", choices=["always", "everysec", "no"],
                   help="both servers with their journal on, this appendfsync (default: off)")
    a = p.parse_args()
    servers = [("deadbolt", a.deadbolt)] + ([("baseline", a.baseline)] if a.baseline else []) + [
        ("redis", a.redis)]
    runs = {name: [] for name, _ in servers}
    for r in range(a.rounds):
        for name, binary in (servers if r % 2 == 0 else servers[::-1]):
            runs[name].append(run_server("redis" if name == "redis" else "deadbolt", binary, a))
    names = [n for n, _ in servers]
    print("ops/s, medians of %d round(s); deadbolt with its defaults (%d reactors), keys on the "
          "shards named; journal %s; ratio: deadbolt ÷ redis per round, median."
          % (a.rounds, os.cpu_count(), "appendfsync " + a.fsync if a.fsync else "off"))
    print()
    print("| command | connections | " + " | ".join(names) + " | deadbolt ÷ redis |")
    print("|---|---:|" + "---:|" * len(names) + "---:|")
    for name, _args in rows():
        for c in (1, a.crowd):
            med = [statistics.median(x[(name, c)] for x in runs[n]) for n in names]
            ratio = statistics.median(x[(name, c)] / y[(name, c)]
                                      for x, y in zip(runs["deadbolt"], runs["redis"]))
            print("| %s | %d | " % (name, c) + " | ".join("%.1fk" % (m / 1000) for m in med)
                  + " | %.2f× |" % ratio)


if __name__ == "__main__":
    main()
