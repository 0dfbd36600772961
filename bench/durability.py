#!/usr/bin/python3
"""What the journal costs: deadbolt with no journal, `--appendfsync everysec` and `always`,
beside redis-server with `--appendonly no`, `--appendfsync everysec` and `always`, alternating
over rounds. Two measurements, each a table in bench/DURABILITY.md:

* cycle: acquire + release cycles, the same commands on both (SET NX PX, then EVALSHA of the
  compare-and-delete script); each server single-threaded on one pinned core, and deadbolt
  also with its defaults (a reactor per core, unpinned), as scripts/run.sh starts it.
* xshard: MSET of two keys (lockload -w mset) against deadbolt with two reactors (`--threads 2`,
  pinning its own), once with the keys on different shards (a cross-shard transaction, whose
  reply with `always` waits for both shards' fsyncs) and once with both on one shard; and against
  redis-server (one thread, one pinned core) with the same keys as the cross-shard run.

  scripts/build.sh release
  /usr/bin/python3 bench/durability.py                  # ~7 minutes on 2 cores
  /usr/bin/python3 bench/durability.py --skip xshard    # the cycle table only (~4 minutes)
  /usr/bin/python3 bench/durability.py --quick          # one short round of each

Journals go to a temporary directory on the same file system as this checkout (not /tmp if that
is a tmpfs, where fsync costs nothing). The servers, load generator and process accounting are
compare.py's.
"""

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the harness's servers, lockload runs and accounting)
from compare_report import median  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODES = ["off", "everysec", "always"]
PARTS = ["cycle", "xshard"]
# The cross-shard runs: (server, where the two keys of each MSET live).
XSHARD = [("deadbolt", "cross"), ("deadbolt", "same"), ("redis", "cross")]
XSHARD_THREADS = 2  # deadbolt's reactors (= shards) in the cross-shard runs
# The cycle runs: deadbolt --threads 1 pinned, deadbolt with its defaults, redis-server.
CYCLE_KINDS = ("deadbolt", "default", "redis")


class DurableServer(compare.Server):
    """compare.Server with persistence flags and a data directory of its own."""

    def __init__(self, kind, cfg, mode, workdir, threads=1):
        super().__init__(kind, cfg, threads=threads)
        self.mode = mode
        self.dir = tempfile.mkdtemp(prefix=f"{kind}-{mode}-", dir=workdir)

    def argv(self, port):
        argv = super().argv(port)
        if self.kind == "redis":
            # compare.Server passes --appendonly no: later arguments win in redis-server.
            if self.mode != "off":
                argv += ["--appendonly", "yes", "--appendfsync", self.mode, "--dir", self.dir,
                         "--auto-aof-rewrite-min-size", "64mb"]
        elif self.mode != "off":
            argv += ["--appendonly", "yes", "--appendfsync", self.mode, "--dir", self.dir]
        return argv

    def stop(self):
        super().stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deadbolt", default=os.path.join(ROOT, "build/release/server/deadbolt-server"))
    ap.add_argument("--lockload", default=os.path.join(ROOT, "build/release/tools/lockload"))
    ap.add_argument("--redis", default="redis-server")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--depths", default="1,16")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--xshard-depths", default="1,16")
    ap.add_argument("--xshard-duration", type=float, default=2.5)
    ap.add_argument("--xshard-warmup", type=float, default=0.5)
    ap.add_argument("--nice", type=int, default=-20 if os.geteuid() == 0 else 0)
    ap.add_argument("--skip", default="", help="comma-separated: cycle, xshard")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/DURABILITY.md"))
    cfg = ap.parse_args()
    if cfg.quick:
        cfg.rounds, cfg.duration, cfg.warmup = 1, 1, 0.3
        cfg.xshard_duration, cfg.xshard_warmup = 1, 0.3
    skip = {p for p in cfg.skip.split(",") if p}
    if skip - set(PARTS):
        sys.exit(f"--skip: unknown part(s) {','.join(sorted(skip - set(PARTS)))}; "
                 f"known: {','.join(PARTS)}")
    parts = [p for p in PARTS if p not in skip]
    for path in (cfg.deadbolt, cfg.lockload):
        if not os.access(path, os.X_OK):
            sys.exit(f"{path} missing: run scripts/build.sh release first")
    # A rebuild during the run must not change what is measured.
    tmp = tempfile.mkdtemp(prefix="durability-bin-")
    cfg.deadbolt = shutil.copy(cfg.deadbolt, tmp)
    cfg.lockload = shutil.copy(cfg.lockload, tmp)
    workdir = tempfile.mkdtemp(prefix="durability-", dir=os.path.join(ROOT, "build"))
    depths = [int(d) for d in cfg.depths.split(",")]
    xdepths = [int(d) for d in cfg.xshard_depths.split(",")]

    results = {}  # (kind, mode, depth) -> [run, ...]
    xresults = {}  # (kind, keys, mode, depth) -> [run, ...]
    try:
        for rnd in range(cfg.rounds if "cycle" in parts else 0):
            for depth in depths:
                for mode in MODES:
                    for kind in CYCLE_KINDS:
                        # "default": deadbolt as a user starts it (a reactor per core, left to
                        # the scheduler), the load unpinned too.
                        default = kind == "default"
                        with DurableServer("redis" if kind == "redis" else "deadbolt", cfg, mode,
                                           workdir, threads=0 if default else 1) as srv:
                            args = ["-w", "cycle", "--release", "evalsha", "-P", str(depth),
                                    "-c", str(cfg.connections)]
                            r = compare.run_lockload(
                                cfg, srv, args, cfg.warmup, cfg.duration,
                                cores=compare.ALL_CORES if default else compare.LOAD_CORE)
                        results.setdefault((kind, mode, depth), []).append(r)
                        compare.log(f"round {rnd + 1} P{depth} {kind:8} {mode:8} "
                                    f"{r['ops_per_sec']:>12,.0f} ops/s  p99 {r['p99_us']:>9.0f} us"
                                    f"  cpu {r['server_cpu_us_per_op']:.2f} us/op")
        if "xshard" in parts:
            run_xshard(cfg, workdir, xdepths, xresults)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    write_report(cfg, results, depths, xresults, xdepths)


def run_xshard(cfg, workdir, depths, results):
    """MSET of two keys, on two shards or one, against deadbolt --threads 2 and redis-server.
    Each round runs every cell once, the three servers back to back, in an order that flips from
    one round to the next."""
    all_cores = "0-%d" % (os.cpu_count() - 1)
    for rnd in range(cfg.rounds):
        for depth in depths:
            for mode in MODES:
                for kind, keys in XSHARD if rnd % 2 == 0 else XSHARD[::-1]:
                    threads = XSHARD_THREADS if kind == "deadbolt" else 1
                    args = ["-w", "mset", "--mset", keys, "--shards", str(XSHARD_THREADS),
                            "-P", str(depth), "-c", str(cfg.connections)]
                    with DurableServer(kind, cfg, mode, workdir, threads=threads) as srv:
                        # deadbolt's reactors are on both cores: lockload goes where the
                        # scheduler puts it, as in compare.py's two-reactor runs; redis keeps
                        # its core to itself, lockload on the other.
                        cores = all_cores if threads > 1 else compare.LOAD_CORE
                        r = compare.run_lockload(cfg, srv, args, cfg.xshard_warmup,
                                                 cfg.xshard_duration, cores=cores)
                        if kind == "deadbolt":
                            # Where the keys were: messages between reactors per command, over
                            # the whole run (0 all local, ~1 one shard, ~7 two shards).
                            c = compare.Resp(srv.port)
                            st = c.info("stats")
                            c.close()
                            r["messages_per_op"] = int(st["cross_shard_messages"]) / max(
                                1, int(st["total_commands_processed"]))
                    results.setdefault((kind, keys, mode, depth), []).append(r)
                    note = f"  msgs/op {r['messages_per_op']:.2f}" if "messages_per_op" in r else ""
                    errors = f"  ERRORS {r['errors']}: {r['first_error']}" if r["errors"] else ""
                    compare.log(f"round {rnd + 1} mset P{depth} {kind:8} {keys:5} {mode:8} "
                                f"{r['ops_per_sec']:>12,.0f} ops/s  p99 {r['p99_us']:>9.0f} us"
                                f"  cpu {r['server_cpu_us_per_op']:.2f} us/op  other load "
                                f"{r['background_cores']:.2f}{note}{errors}")


def med(runs, key):
    return median([r[key] for r in runs])


MODE_LABEL = {"off": "off (`appendonly no`)", "everysec": "`appendfsync everysec`",
              "always": "`appendfsync always`"}


def write_report(cfg, results, depths, xresults, xdepths):
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [
        "# What the journal costs",
        "",
        f"Generated by `bench/durability.py` on {datetime.date.today()} at commit `{commit}`, "
        f"{platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}. Journals "
        "sit on the checkout's own file system (ext4 on a virtual disk here), where fsync is real.",
        "",
    ]
    lines += cycle_report(cfg, results, depths) + xshard_report(cfg, xresults, xdepths)
    with open(cfg.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


def cycle_report(cfg, results, depths):
    lines = ["## Acquire + release cycles", ""]
    if not results:
        return lines + ["Not measured in this run (`--skip cycle`).", ""]
    lines += [
        f"{cfg.rounds} round(s) of {cfg.duration:g} s (after {cfg.warmup:g} s warm-up) per cell, "
        f"{cfg.connections} connections; medians over rounds. *deadbolt* and redis each run "
        "on one pinned core with one thread, the load generator (tools/lockload) on the other; "
        "*default* is deadbolt as `scripts/run.sh` starts it (a reactor per core, left to the "
        "scheduler, keys of either shard), the load unpinned. The load is acquire + release "
        "cycles with the same commands on every server (`SET k tok NX PX`, then `EVALSHA` of "
        "the compare-and-delete script), so every request writes.",
        "",
        "| pipeline | journal | deadbolt ops/s | default ops/s | redis ops/s | deadbolt / redis | "
        "default / redis | p99 µs: deadbolt · default · redis | CPU µs/op: deadbolt · default · "
        "redis |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for depth in depths:
        for mode in MODES:
            d = results.get(("deadbolt", mode, depth))
            f = results.get(("default", mode, depth))
            r = results.get(("redis", mode, depth))
            if not d or not f or not r:
                continue
            dops, fops, rops = med(d, "ops_per_sec"), med(f, "ops_per_sec"), med(r, "ops_per_sec")
            label = MODE_LABEL[mode]
            lines.append(
                f"| {depth} | {label} | {dops:,.0f} | {fops:,.0f} | {rops:,.0f} | "
                f"{dops / rops:.2f}× | {fops / rops:.2f}× | "
                f"{med(d, 'p99_us'):,.0f} · {med(f, 'p99_us'):,.0f} · {med(r, 'p99_us'):,.0f} | "
                f"{med(d, 'server_cpu_us_per_op'):.2f} · {med(f, 'server_cpu_us_per_op'):.2f} · "
                f"{med(r, 'server_cpu_us_per_op'):.2f} |")
    lines += ["", "Each server against itself (throughput with the journal / without):", "",
              "| pipeline | journal | deadbolt | default | redis |", "|---|---|---|---|---|"]
    for depth in depths:
        for mode in ("everysec", "always"):
            try:
                own = [med(results[(k, mode, depth)], "ops_per_sec") /
                       med(results[(k, "off", depth)], "ops_per_sec") for k in CYCLE_KINDS]
            except KeyError:
                continue
            lines.append(f"| {depth} | {mode} | " + " | ".join(f"{x:.2f}" for x in own) + " |")
    lines += [
        "",
        "How to read it: with `always` both servers acknowledge a write only after an fsync. "
        "Redis writes and fsyncs in its event loop before replying to the clients of that loop "
        "iteration; deadbolt gathers a reactor turn's writes into one frame and links its write "
        "to an fdatasync through io_uring, holding those replies (and only those) until it "
        "completes, while the next turn's requests are already being served. So both amortise "
        "one fsync over many clients, and throughput is bounded by fsync latency times the "
        "clients that can wait on one fsync. See docs/DURABILITY.md. *default* splits the keys "
        "over two shards: with `always` a pipeline's relay visits each shard once and "
        "journals its commands as one transaction, a part on each shard, written at once, and "
        "replies once every part is on disk (so that a crash keeps the whole pipeline or none "
        "of it): a pipeline of writes over both shards waits for two fsyncs side by side. Its "
        "locks are held until then, so pipelines that meet on a key wait for each other, and "
        "around such keys an origin sends its relays in order for a while (docs/ARCHITECTURE.md, "
        "*Under `appendfsync always`*); lockload's 10,000 keys at 50 connections and P16 meet "
        "often.",
        "",
    ]
    return lines


def xshard_report(cfg, results, depths):
    lines = ["## Writes across shards", ""]
    if not results:
        return lines + ["Not measured in this run (`--skip xshard`).", ""]
    runs = [r for rs in results.values() for r in rs]
    errors = sum(r["errors"] for r in runs)
    other = sorted(r["background_cores"] for r in runs)

    def msgs(keys):
        v = [r["messages_per_op"] for (k, kk, _, _), rs in results.items()
             if k == "deadbolt" and kk == keys for r in rs]
        return median(v) if v else float("nan")

    lines += [
        f"{cfg.rounds} round(s) of {cfg.xshard_duration:g} s (after {cfg.xshard_warmup:g} s "
        f"warm-up) per cell, {cfg.connections} connections; medians over rounds. Each request is "
        "one `MSET k1 v k2 v` (tools/lockload `-w mset`: two keys `lock:<n>` of 10,000, 36-byte "
        "values), so one op writes two keys. deadbolt runs with two reactors "
        f"(`--threads {XSHARD_THREADS}`, `--pin yes`: each pinned to its core by deadbolt itself) and the "
        "load generator on either core, where the scheduler puts it; connections alternate "
        "between the reactors. *2 shards*: the two keys of every MSET sit on different shards "
        "(`--mset cross`), so each one is a cross-shard transaction; *1 shard*: both keys on the "
        "same shard, a random one each time (`--mset same`), so a command whose shard is the "
        "connection's own reactor runs there outright and one on the other reactor's shard is "
        "forwarded there and back. deadbolt counted a median of "
        f"{msgs('cross'):.1f} messages between reactors per MSET across 2 shards and "
        f"{msgs('same'):.1f} on 1 shard. redis-server runs as in the table above (one thread, "
        "one pinned core, the load generator on the other core) and gets the 2-shard run's "
        "keys; shards mean nothing to it.",
        "",
        "| pipeline | journal | deadbolt 2 shards ops/s | deadbolt 1 shard ops/s | redis ops/s "
        "| 2 shards / 1 shard | 2 shards / redis | p99 µs: 2 shards · 1 shard · redis "
        "| CPU µs/op: 2 shards · 1 shard · redis |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for depth in depths:
        for mode in MODES:
            x = results.get(("deadbolt", "cross", mode, depth))
            o = results.get(("deadbolt", "same", mode, depth))
            r = results.get(("redis", "cross", mode, depth))
            if not x or not o or not r:
                continue
            xo, oo, ro = (med(v, "ops_per_sec") for v in (x, o, r))
            p99 = " · ".join(f"{med(v, 'p99_us'):,.0f}" for v in (x, o, r))
            cpu = " · ".join(f"{med(v, 'server_cpu_us_per_op'):.2f}" for v in (x, o, r))
            lines.append(f"| {depth} | {MODE_LABEL[mode]} | {xo:,.0f} | {oo:,.0f} | {ro:,.0f} | "
                         f"{xo / oo:.2f}× | {xo / ro:.2f}× | {p99} | {cpu} |")
    lines += ["", "Each against itself (throughput with the journal / without):", "",
              "| pipeline | journal | deadbolt 2 shards | deadbolt 1 shard | redis |",
              "|---|---|---|---|---|"]
    for depth in depths:
        for mode in ("everysec", "always"):
            cells = []
            for kind, keys in XSHARD:
                on = results.get((kind, keys, mode, depth))
                off = results.get((kind, keys, "off", depth))
                if not on or not off:
                    break
                cells.append(f"{med(on, 'ops_per_sec') / med(off, 'ops_per_sec'):.2f}")
            else:
                lines.append(f"| {depth} | {mode} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "How to read it: an MSET across shards takes a lock on both shards, writes a part on each, "
        "and with `always` replies only once both parts are fsynced and the locks are released "
        "(docs/DURABILITY.md, *Transactions across shards*); each part rides in its shard's next "
        "group commit with whatever else that shard gathered. A connection has at most one "
        "cross-shard command in flight (docs/ARCHITECTURE.md, *Order within one connection*), so a "
        "pipeline of them runs one after another, each waiting out its messages between reactors "
        "and, with `always`, its fsyncs: a deeper pipeline barely helps the 2-shard column, and "
        "with `always` its throughput is about the connections divided by that wait. *2 shards / 1 "
        "shard* is what the cross-shard transaction costs against the same write on one shard of "
        "the same server: the `off` row shows the coordination alone, the journal rows what the "
        "journal adds on top. *2 shards / redis* compares with a server for which the same MSET is "
        "one command in one thread with one fsync. Two reactors and the load generator share this "
        "machine's two cores, so deadbolt's numbers here are not comparable with the one-thread "
        "table above (bench/PROFILE.md, *The default `--threads`*); the ratios within this table "
        "are the point. CPU µs/op counts both reactors.",
        "",
        f"Other load on the machine during the measured windows: median {median(other):.2f}"
        f" cores, at most {other[-1]:.2f}."
        + (f" **{errors} error replies** (see the run log)." if errors else " No error replies."),
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
