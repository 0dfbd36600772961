#!/usr/bin/python3
"""What the journal costs: deadbolt with no journal, `--appendfsync everysec` and `always`,
beside redis-server with `--appendonly no`, `--appendfsync everysec` and `always`, on the same
load (acquire + release cycles, the same commands on both: SET NX PX, then EVALSHA of the
compare-and-delete script), same pinned cores, alternating over rounds. Writes
bench/DURABILITY.md.

  scripts/build.sh release
  /usr/bin/python3 bench/durability.py            # ~3 minutes on 2 cores
  /usr/bin/python3 bench/durability.py --quick    # one short round

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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODES = ["off", "everysec", "always"]


class DurableServer(compare.Server):
    """compare.Server with persistence flags and a data directory of its own."""

    def __init__(self, kind, cfg, mode, workdir):
        super().__init__(kind, cfg, threads=1)
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
    ap.add_argument("--nice", type=int, default=-20 if os.geteuid() == 0 else 0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/DURABILITY.md"))
    cfg = ap.parse_args()
    if cfg.quick:
        cfg.rounds, cfg.duration, cfg.warmup = 1, 1, 0.3
    for path in (cfg.deadbolt, cfg.lockload):
        if not os.access(path, os.X_OK):
            sys.exit(f"{path} missing: run scripts/build.sh release first")
    # A rebuild during the run must not change what is measured.
    tmp = tempfile.mkdtemp(prefix="durability-bin-")
    shutil.copy(cfg.deadbolt, tmp)
    cfg.deadbolt = os.path.join(tmp, os.path.basename(cfg.deadbolt))
    workdir = tempfile.mkdtemp(prefix="durability-", dir=os.path.join(ROOT, "build"))
    depths = [int(d) for d in cfg.depths.split(",")]

    results = {}  # (kind, mode, depth) -> [run, ...]
    try:
        for rnd in range(cfg.rounds):
            for depth in depths:
                for mode in MODES:
                    for kind in ("deadbolt", "redis"):
                        with DurableServer(kind, cfg, mode, workdir) as srv:
                            args = ["-w", "cycle", "--release", "evalsha", "-P", str(depth),
                                    "-c", str(cfg.connections)]
                            r = compare.run_lockload(cfg, srv, args, cfg.warmup, cfg.duration)
                        results.setdefault((kind, mode, depth), []).append(r)
                        compare.log(f"round {rnd + 1} P{depth} {kind:8} {mode:8} "
                                    f"{r['ops_per_sec']:>12,.0f} ops/s  p99 {r['p99_us']:>9.0f} us"
                                    f"  cpu {r['server_cpu_us_per_op']:.2f} us/op")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    write_report(cfg, results, depths)


def med(runs, key):
    return compare.median([r[key] for r in runs])


def write_report(cfg, results, depths):
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [
        "# What the journal costs",
        "",
        f"Generated by `bench/durability.py` on {datetime.date.today()} at commit `{commit}`, "
        f"{platform.machine()}, {os.cpu_count()} cores, kernel {platform.release()}. "
        f"{cfg.rounds} round(s) of {cfg.duration:g} s (after {cfg.warmup:g} s warm-up) per cell, "
        f"{cfg.connections} connections; medians over rounds. Each server runs on one pinned "
        "core with one thread, the load generator (tools/lockload) on the other. The load is "
        "acquire + release cycles with the same commands on both servers (`SET k tok NX PX`, "
        "then `EVALSHA` of the compare-and-delete script), so every request writes. Journals sit "
        "on the checkout's own file system (ext4 on a virtual disk here), where fsync is real.",
        "",
        "| pipeline | journal | deadbolt ops/s | redis ops/s | deadbolt / redis | "
        "deadbolt p99 µs | redis p99 µs | deadbolt CPU µs/op | redis CPU µs/op |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for depth in depths:
        for mode in MODES:
            d = results.get(("deadbolt", mode, depth))
            r = results.get(("redis", mode, depth))
            if not d or not r:
                continue
            dops, rops = med(d, "ops_per_sec"), med(r, "ops_per_sec")
            label = {"off": "off (`appendonly no`)", "everysec": "`appendfsync everysec`",
                     "always": "`appendfsync always`"}[mode]
            lines.append(
                f"| {depth} | {label} | {dops:,.0f} | {rops:,.0f} | {dops / rops:.2f}× | "
                f"{med(d, 'p99_us'):,.0f} | {med(r, 'p99_us'):,.0f} | "
                f"{med(d, 'server_cpu_us_per_op'):.2f} | {med(r, 'server_cpu_us_per_op'):.2f} |")
    lines += ["", "Each server against itself (throughput with the journal / without):", "",
              "| pipeline | journal | deadbolt | redis |", "|---|---|---|---|"]
    for depth in depths:
        for mode in ("everysec", "always"):
            try:
                dd = med(results[("deadbolt", mode, depth)], "ops_per_sec") / med(
                    results[("deadbolt", "off", depth)], "ops_per_sec")
                rr = med(results[("redis", mode, depth)], "ops_per_sec") / med(
                    results[("redis", "off", depth)], "ops_per_sec")
            except KeyError:
                continue
            lines.append(f"| {depth} | {mode} | {dd:.2f} | {rr:.2f} |")
    lines += [
        "",
        "How to read it: with `always` both servers acknowledge a write only after an fsync. "
        "Redis writes and fsyncs in its event loop before replying to the clients of that loop "
        "iteration; deadbolt gathers a reactor turn's writes into one frame and links its write "
        "to an fdatasync through io_uring, holding those replies (and only those) until it "
        "completes, while the next turn's requests are already being served. So both amortise "
        "one fsync over many clients, and throughput is bounded by fsync latency times the "
        "clients that can wait on one fsync. See docs/DURABILITY.md.",
        "",
    ]
    with open(cfg.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
