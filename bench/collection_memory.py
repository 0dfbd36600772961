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

Throughput: one connection pipelining P pairs of `ZREMRANGEBYSCORE sem -inf <now-10000>` and
`ZADD sem <now> <uuid>` on keys spread over 1,000 semaphores, for a fixed number of pairs;
pairs per second.

  /usr/bin/python3 bench/collection_memory.py --deadbolt build/release/server/deadbolt-server
  /usr/bin/python3 bench/collection_memory.py --types list,set,intset --pairs 0
"""

import argparse
import json
import os
import random
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import Resp, Server, proc_rss  # noqa: E402


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


def measure_semaphore(cfg, kind, pairs, pipeline):
    with Server(kind, cfg) as s:
        c = Resp(s.port, timeout=120)
        ids = [str(uuid.uuid4()) for _ in range(4096)]
        now = 1_700_000_000_000
        t = time.monotonic()
        done = 0
        while done < pairs:
            n = min(pipeline, pairs - done)
            parts = []
            for i in range(done, done + n):
                key = "sem:%d" % (i % 1000)
                ts = now + i
                parts.append(Resp.encode("ZREMRANGEBYSCORE", key, "-inf", ts - 10_000))
                parts.append(Resp.encode("ZADD", key, ts, ids[i % len(ids)]))
            c.sock.sendall(b"".join(parts))
            for _ in range(2 * n):
                r = c.read()
                if isinstance(r, Exception):
                    raise r
            done += n
        elapsed = time.monotonic() - t
        c.close()
    return {"pairs_per_second": pairs / elapsed}


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
    ap.add_argument("--pairs", type=int, default=200_000, help="semaphore pairs; 0: skip")
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--json", help="write the results here too")
    cfg = ap.parse_args()
    cfg.null_responder = None
    cfg.nice = 0
    out = {}
    for vk in cfg.types.split(","):
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
    if cfg.pairs > 0:
        sem = {kind: measure_semaphore(cfg, kind, cfg.pairs, cfg.pipeline)
               for kind in ("deadbolt", "redis")}
        out["semaphore"] = sem
        print("semaphore path (ZREMRANGEBYSCORE + ZADD): deadbolt %.0f pairs/s, redis %.0f: "
              "%.2fx" % (sem["deadbolt"]["pairs_per_second"], sem["redis"]["pairs_per_second"],
                         sem["deadbolt"]["pairs_per_second"] / sem["redis"]["pairs_per_second"]))
    if cfg.json:
        with open(cfg.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
