#!/usr/bin/env python3
"""Memory per small sorted set (issue 13), deadbolt against redis-server, and the throughput of a
semaphore's acquire path (ZREMRANGEBYSCORE then ZADD on one key).

Memory, as compare.py measures memory per lock key: a fresh server (--threads 1 for deadbolt,
pinned like compare.py's servers); RSS (/proc/<pid>/statm) and INFO used_memory read empty; N keys
`sem:<n>` loaded, each a 10-member sorted set as redis-semaphore keeps one (members are
36-character UUIDs, scores millisecond timestamps), pipelined 1,000 keys at a time; RSS and
used_memory read again; (loaded - empty) / keys.

Throughput: one connection pipelining P pairs of `ZREMRANGEBYSCORE sem -inf <now-10000>` and
`ZADD sem <now> <uuid>` on keys spread over 1,000 semaphores, for a fixed number of pairs;
pairs per second.

  /usr/bin/python3 bench/zset_memory.py --deadbolt build/release/server/deadbolt-server
"""

import argparse
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import Resp, Server, proc_rss  # noqa: E402


def load(port, keys, members):
    c = Resp(port, timeout=120)
    now = 1_700_000_000_000
    batch = 1000
    for start in range(0, keys, batch):
        end = min(keys, start + batch)
        parts = []
        for k in range(start, end):
            args = ["ZADD", "sem:%d" % k]
            for m in range(members):
                args += [str(now + m), str(uuid.uuid4())]
            parts.append(Resp.encode(*args))
        c.sock.sendall(b"".join(parts))
        for _ in range(end - start):
            r = c.read()
            if r != members:
                raise RuntimeError("ZADD replied %r" % (r,))
    c.close()


def measure_memory(cfg, kind, keys, members):
    with Server(kind, cfg) as s:
        c = Resp(s.port)
        time.sleep(0.3)
        rss0 = proc_rss(s.pid)
        used0 = int(c.info("memory")["used_memory"])
        load(s.port, keys, members)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deadbolt", default="build/release/server/deadbolt-server")
    ap.add_argument("--redis", default="/usr/bin/redis-server")
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=200_000)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--json", help="write the results here too")
    cfg = ap.parse_args()
    cfg.null_responder = None
    cfg.nice = 0
    out = {}
    for kind in ("deadbolt", "redis"):
        out[kind] = measure_memory(cfg, kind, cfg.keys, cfg.members)
        out[kind].update(measure_semaphore(cfg, kind, cfg.pairs, cfg.pipeline))
    d, r = out["deadbolt"], out["redis"]
    print("memory per %d-member sorted set (%d keys):" % (cfg.members, cfg.keys))
    for kind in ("deadbolt", "redis"):
        m = out[kind]
        print("  %-8s rss %7.1f B/key  used_memory %7.1f B/key  semaphore path %9.0f pairs/s"
              % (kind, m["rss_bytes_per_key"], m["used_memory_bytes_per_key"],
                 m["pairs_per_second"]))
    print("  deadbolt/redis: rss %.2fx  used_memory %.2fx  semaphore path %.2fx"
          % (d["rss_bytes_per_key"] / r["rss_bytes_per_key"],
             d["used_memory_bytes_per_key"] / r["used_memory_bytes_per_key"],
             d["pairs_per_second"] / r["pairs_per_second"]))
    if cfg.json:
        with open(cfg.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
