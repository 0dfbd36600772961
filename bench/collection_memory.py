#!/usr/bin/env python3
"""Memory per small sorted set, list and set (issue 13), deadbolt against redis-server, and the
throughput of a semaphore's acquire path (ZREMRANGEBYSCORE then ZADD on one key).

Memory, as compare.py measures memory per lock key: a fresh server (--threads 1 for deadbolt,
pinned like compare.py's servers), warmed with 24 MB of requests that store nothing (see warm());
RSS (/proc/<pid>/statm) and INFO used_memory read empty; N keys
loaded, each a 10-member value, pipelined 1,000 keys at a time; RSS and used_memory read again;
(loaded - empty) / keys. The values, as lock clients keep them:
  zset      `sem:<n>`, as redis-semaphore's: members 36-character UUIDs, scores ms timestamps;
  list      `queue:<n>`, as Redisson's fair lock queue: RPUSH of UUID strings;
  set       `set:<n>`: SADD of UUID strings;
  intset    `iset:<n>`: SADD of short integers (0..99999), which Redis keeps as an intset.

Throughput (the semaphore's path, as redis-semaphore's acquire sends it): lockload's
`semaphore` workload (tools/lockload), pinned as compare.py pins it (server on core 1, lockload
on core 0): C connections, each pipelining P pairs of `ZREMRANGEBYSCORE sem:<k> -inf <t-W>` and
`ZADD sem:<k> <t> <uuid>` over 1,000 keys (t: a clock of the connection's, +1 ms per pair, so
each key keeps about W / 1,000 members per connection: a small, packed sorted set, with one
member trimmed for one added). Pairs per second and server CPU per pair, the median of R rounds
in which deadbolt and redis alternate.

  /usr/bin/python3 bench/collection_memory.py --deadbolt build/release/server/deadbolt-server
  /usr/bin/python3 bench/collection_memory.py --types list,set,intset --semaphore-rounds 0
  /usr/bin/python3 bench/collection_memory.py --types zset --keys 1000 --semaphore-rounds 5
"""

import argparse
import json
import os
import random
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import Resp, Server, proc_rss, run_lockload  # noqa: E402


def command(kind, k, members, now, rng):
    """The command that loads key number k of `kind` with `members` members."""
    if kind == "zset":
        args = ["ZADD", "sem:%d" % k]
        for m in range(members):
            args += [str(now + m), str(uuid.uuid4())]
    elif kind == "list":
        args = ["RPUSH", "queue:%d" % k] + [str(uuid.uuid4()) for _ in range(members)]
    elif kind == "set":
        args = ["SADD", "set:%d" % k] + [str(uuid.uuid4()) for _ in range(members)]
    else:  # intset
        args = ["SADD", "iset:%d" % k] + [str(n) for n in rng.sample(range(100_000), members)]
    return Resp.encode(*args)


def load(port, kind, keys, members):
    c = Resp(port, timeout=120)
    now = 1_700_000_000_000
    rng = random.Random(13)
    batch = 1000
    for start in range(0, keys, batch):
        end = min(keys, start + batch)
        c.sock.sendall(b"".join(command(kind, k, members, now, rng) for k in range(start, end)))
        for _ in range(end - start):
            r = c.read()
            if r != members:
                raise RuntimeError("%s load replied %r" % (kind, r))
    c.close()


def warm(port, megabytes=24):
    """Streams `megabytes` of requests that store nothing (EXISTS of a 4 KB key name, pipelined
    500 at a time) through a fresh server, so that the empty reading is of a server that has
    already received data: deadbolt reads into a ring of 512 16-KB io_uring buffers per reactor
    (server/core/reactor.cc), 8 MiB that a load touches as it streams in whatever it stores, and
    that would otherwise count against the keys (~80 B per key at 100,000 keys)."""
    c = Resp(port, timeout=120)
    name = "w" * 4096
    batch = 500
    for _ in range(megabytes * 1024 * 1024 // (4096 * batch)):
        c.sock.sendall(Resp.encode("EXISTS", name) * batch)
        for _ in range(batch):
            if c.read() != 0:
                raise RuntimeError("warm-up EXISTS found a key")
    c.close()


def measure_memory(cfg, kind, value_kind, keys, members):
    with Server(kind, cfg) as s:
        c = Resp(s.port)
        warm(s.port)
        time.sleep(0.3)
        rss0 = proc_rss(s.pid)
        used0 = int(c.info("memory")["used_memory"])
        load(s.port, value_kind, keys, members)
        time.sleep(0.5)
        if c.call("DBSIZE") != keys:
            raise RuntimeError("%s: DBSIZE is not %d" % (kind, keys))
        rss1 = proc_rss(s.pid)
        used1 = int(c.info("memory")["used_memory"])
        c.close()
    return {"rss_bytes_per_key": (rss1 - rss0) / keys,
            "used_memory_bytes_per_key": (used1 - used0) / keys}


def measure_semaphore(cfg, kind):
    """One run of lockload's semaphore workload against a fresh server, as compare.py measures
    locks: the server pinned to core 1 (deadbolt --threads 1), lockload to core 0."""
    args = ["-w", "semaphore", "-c", str(cfg.sem_connections), "-P", str(cfg.pipeline),
            "--keyspace", str(cfg.sem_keys), "--prefix", "sem:", "--ttl", str(cfg.sem_window)]
    with Server(kind, cfg) as s:
        res = run_lockload(cfg, s, args, cfg.sem_warmup, cfg.sem_duration)
    if res["errors"]:
        raise RuntimeError("%s: semaphore run had errors: %s" % (kind, res["first_error"]))
    # Each pair is two requests.
    return {"pairs_per_second": res["ops_per_sec"] / 2,
            "server_cpu_us_per_pair": res["server_cpu_us_per_op"] * 2,
            "background_cores": res["background_cores"]}


KINDS = ("zset", "list", "set", "intset")
NAMES = {"zset": "sorted set (UUID members)", "list": "list (UUID elements)",
         "set": "set (UUID members)", "intset": "set (short integers)"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deadbolt", default="build/release/server/deadbolt-server")
    ap.add_argument("--redis", default="/usr/bin/redis-server")
    ap.add_argument("--types", default=",".join(KINDS), help="of " + ",".join(KINDS))
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--lockload", default="build/release/tools/lockload")
    ap.add_argument("--semaphore-rounds", dest="sem_rounds", type=int, default=3,
                    help="rounds of the semaphore throughput run; 0: skip it")
    ap.add_argument("--semaphore-duration", dest="sem_duration", type=float, default=3.0,
                    help="seconds measured per run")
    ap.add_argument("--semaphore-warmup", dest="sem_warmup", type=float, default=1.0)
    ap.add_argument("--semaphore-connections", dest="sem_connections", type=int, default=8)
    ap.add_argument("--semaphore-keys", dest="sem_keys", type=int, default=1000)
    ap.add_argument("--semaphore-window", dest="sem_window", type=int, default=10_000,
                    help="ms of the trim window (members older than t - W are removed)")
    ap.add_argument("--pipeline", type=int, default=16, help="semaphore pairs per pipeline")
    ap.add_argument("--json", help="write the results here too")
    cfg = ap.parse_args()
    cfg.null_responder = None
    cfg.nice = 0
    out = {}
    for vk in filter(None, cfg.types.split(",")):
        if vk not in KINDS:
            ap.error("unknown type %r" % vk)
        out[vk] = {kind: measure_memory(cfg, kind, vk, cfg.keys, cfg.members)
                   for kind in ("deadbolt", "redis")}
    print("memory per %d-member value (%d keys), bytes per key:" % (cfg.members, cfg.keys))
    print("  %-28s %9s %9s %6s   %9s %9s %6s" % ("", "RSS", "redis", "ratio", "used_mem",
                                                  "redis", "ratio"))
    for vk, m in out.items():
        d, r = m["deadbolt"], m["redis"]
        print("  %-28s %9.1f %9.1f %5.2fx   %9.1f %9.1f %5.2fx"
              % (NAMES[vk], d["rss_bytes_per_key"], r["rss_bytes_per_key"],
                 d["rss_bytes_per_key"] / r["rss_bytes_per_key"],
                 d["used_memory_bytes_per_key"], r["used_memory_bytes_per_key"],
                 d["used_memory_bytes_per_key"] / r["used_memory_bytes_per_key"]))
    if cfg.sem_rounds > 0:
        runs = {"deadbolt": [], "redis": []}
        for r in range(cfg.sem_rounds):
            order = ("deadbolt", "redis") if r % 2 == 0 else ("redis", "deadbolt")
            for kind in order:
                runs[kind].append(measure_semaphore(cfg, kind))
        sem = {}
        for kind, rs in runs.items():
            med = sorted(rs, key=lambda x: x["pairs_per_second"])[len(rs) // 2]
            sem[kind] = dict(med, runs=rs)
        out["semaphore"] = sem
        d, r = sem["deadbolt"], sem["redis"]
        print("semaphore path (ZREMRANGEBYSCORE + ZADD; %d connections, %d pairs pipelined, "
              "median of %d): deadbolt %.0f pairs/s (%.2f us server CPU/pair), redis %.0f "
              "(%.2f us): %.2fx throughput, %.2fx CPU per pair; background %.2f / %.2f cores"
              % (cfg.sem_connections, cfg.pipeline, cfg.sem_rounds, d["pairs_per_second"],
                 d["server_cpu_us_per_pair"], r["pairs_per_second"], r["server_cpu_us_per_pair"],
                 d["pairs_per_second"] / r["pairs_per_second"],
                 d["server_cpu_us_per_pair"] / r["server_cpu_us_per_pair"],
                 d["background_cores"], r["background_cores"]))
    if cfg.json:
        with open(cfg.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
