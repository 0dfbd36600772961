"""Report of bench/compare.py: medians, ratios and verdicts against the issue's targets, to
stdout, bench/RESULTS.md and the pipeline plot, from the measurements (fresh or a results.json).

Python 3 standard library only (the plot uses Debian's gnuplot when installed).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVERS = ("deadbolt", "redis")
# A third kind in the cycle runs: deadbolt releasing with the same EVALSHA as Redis gets (it runs
# the catalogued compare-and-delete script natively), beside its built-in DELIFEQ.
DEADBOLT_EVALSHA = "deadbolt evalsha"
# A third kind in the acquire runs at P1/P16/P64: bench/null_responder, which answers every
# request without doing anything, so its CPU per op is the floor under any server here.
NULL = "null responder"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def report(data, cfg):
    """Medians to stdout; RESULTS.md and the plot from `data` (fresh, or --from-json)."""
    meta = data["meta"]
    depths, rates = meta["depths"], meta["rates"]
    summary = summarize(data)
    print(render_text(summary))
    notes = list(data["notes"])
    if cfg.png != "-" and any(f"acquire P{d}" in data["runs"] for d in depths):
        png_note = plot(data, depths, cfg.png)
        if png_note:
            notes.append(png_note)
    if cfg.out != "-":
        # Only the main suite's own part is rewritten: the other suites' sections and the
        # hand-written ones (measured by other scripts) stay as they are.
        body = render_markdown(summary, data, cfg.png, notes).rstrip("\n")
        splice_section(cfg.out, MAIN_BEGIN + "\n" + body + "\n" + MAIN_END, MAIN_BEGIN, MAIN_END,
                       at_start=True)
        log(f"wrote {cfg.out}")


def summarize(data):
    s = {"runs": {}, "memory": {}, "reactors": {}}
    for name, by in data["runs"].items():
        s["runs"][name] = {}
        for kind, rs in by.items():
            if not rs:
                continue
            s["runs"][name][kind] = {k: median([r[k] for r in rs]) for k in (
                "ops_per_sec", "p50_us", "p99_us", "p999_us", "server_cpu_us_per_op",
                "server_cpu_util", "lockload_cpu_util", "background_cores", "acquired_share")}
            s["runs"][name][kind]["errors"] = sum(r["errors"] for r in rs)
            s["runs"][name][kind]["ops_range"] = (min(r["ops_per_sec"] for r in rs),
                                                  max(r["ops_per_sec"] for r in rs))
    for kind, ms in data["memory"].items():
        if ms:
            s["memory"][kind] = {k: median([m[k] for m in ms]) for k in (
                "rss_bytes_per_key", "used_memory_bytes_per_key", "rss_bytes_per_key_warm",
                "used_memory_bytes_per_key_warm", "rss_empty", "rss_warm")}
    for mode, rs in data["reactors"].items():
        s["reactors"][mode] = {k: median([r[k] for r in rs]) for k in rs[0]}
    return s


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ops(v):
    if v is None:
        return "–"
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.0f}k"


def fmt(v, d=2):
    return "–" if v is None else f"{v:.{d}f}"


def fmt_ratio(v):
    return "–" if v is None else f"{v:.2f}×"


def round_ratios(pairs):
    """(median, 'median (lo–hi)') of the per-round ratios deadbolt ÷ redis: each round ran the
    two back to back, so a run disturbed by other load on one side spoils one round's ratio,
    not the comparison."""
    rs = [ratio(a, b) for a, b in pairs if a is not None and b]
    if not rs:
        return None, ""
    med = statistics.median(rs)
    if len(rs) == 1:
        return med, f"{med:.3f}×"
    return med, f"{med:.3f}× ({min(rs):.2f}–{max(rs):.2f})"


def target_rows(s, data, rates):
    """(metric, deadbolt, redis, ratio, per-round ratios, target, verdict) rows."""
    rows = []
    R = s["runs"]

    def get(name, kind, key):
        return R.get(name, {}).get(kind, {}).get(key)

    def row(metric, name, key, fmt_v, target=None, check=None, unit="", kind="deadbolt"):
        a, b = get(name, kind, key), get(name, "redis", key)
        if a is None or b is None:
            return
        rt = ratio(a, b)
        raw = data["runs"].get(name, {})
        med, per_round = round_ratios(zip([r[key] for r in raw.get(kind, [])],
                                          [r[key] for r in raw.get("redis", [])]))
        verdict = ""
        if check is not None and med is not None:
            verdict = check(a, b, med)
            if isinstance(verdict, bool):
                verdict = "met" if verdict else "**missed**"
        rows.append((metric, fmt_v(a) + unit, fmt_v(b) + unit, fmt_ratio(rt), per_round,
                     target or "", verdict))

    def p64_check(a, b, rt):
        parts = [("met" if a >= 3e6 else "**missed**") + " ≥ 3M",
                 ("met" if rt >= 3 else "**missed**") + " ≥ 3×"]
        return ", ".join(parts)

    for name, cpu_target, lim in (("acquire P1", "≤ 0.85×", 0.85), ("acquire P16", "≤ 0.4×", 0.4),
                                  ("acquire P16 free", "≤ 0.4×", 0.4),
                                  ("cycle P16", "≤ 0.3×", 0.3)):
        if name not in R:
            continue
        row(f"{name}: throughput", name, "ops_per_sec", fmt_ops, unit=" ops/s")
        row(f"{name}: p99 latency", name, "p99_us", lambda v: fmt(v, 0), unit=" µs")
        row(f"{name}: server CPU per op", name, "server_cpu_us_per_op", lambda v: fmt(v, 3),
            cpu_target, lambda a, b, rt, lim=lim: rt <= lim, unit=" µs")
        row(f"{name}: *floor* — the null responder's CPU per op (in the deadbolt column)", name,
            "server_cpu_us_per_op", lambda v: fmt(v, 3), f"(for {cpu_target})",
            lambda a, b, rt, lim=lim: "" if rt <= lim else "the target is below the floor",
            unit=" µs", kind=NULL)
    for name in ("acquire P64", "acquire P64 free"):
        if name not in R:
            continue
        row(f"{name}: throughput", name, "ops_per_sec", fmt_ops,
            "≥ 3M ops/s and ≥ 3×", p64_check, unit=" ops/s")
        row(f"{name}: p99 latency", name, "p99_us", lambda v: fmt(v, 0), unit=" µs")
        row(f"{name}: server CPU per op", name, "server_cpu_us_per_op",
            lambda v: fmt(v, 3), unit=" µs")
    m = s["memory"]
    if m.get("deadbolt") and m.get("redis"):
        for key, label, tgt in (("rss_bytes_per_key", "memory per lock key (RSS)", "≤ 0.6×"),
                                ("used_memory_bytes_per_key", "memory per lock key (INFO used_memory)", "")):
            a, b = m["deadbolt"][key], m["redis"][key]
            rt = ratio(a, b)
            med, per_round = round_ratios(zip([r[key] for r in data["memory"]["deadbolt"]],
                                              [r[key] for r in data["memory"]["redis"]]))
            verdict = ("met" if med <= 0.6 else "**missed**") if tgt and med is not None else ""
            rows.append((label, f"{a:.1f} B", f"{b:.1f} B", fmt_ratio(rt), per_round, tgt,
                         verdict))
    for r_ in rates:
        name = f"open {r_:g}/s"
        if name not in R:
            continue
        row(f"acquire, open loop {fmt_ops(r_)}/s offered: p99", name, "p99_us",
            lambda v: fmt(v, 0), "no worse (≤ 1×)", lambda a, b, rt: rt <= 1.0, unit=" µs")
        row(f"acquire, open loop {fmt_ops(r_)}/s offered: server CPU per op", name,
            "server_cpu_us_per_op", lambda v: fmt(v, 3), unit=" µs")
    return rows


def render_text(s):
    lines = ["", "medians (deadbolt / redis, ratio deadbolt÷redis):"]
    for name, by in s["runs"].items():
        a, b = by.get("deadbolt"), by.get("redis")
        if not a or not b:
            continue
        n = by.get(NULL)
        if n:
            lines.append(f"  {name + ' floor':14s} cpu/op null responder {n['server_cpu_us_per_op']:6.3f}"
                         f" µs = {fmt_ratio(ratio(n['server_cpu_us_per_op'], b['server_cpu_us_per_op']))}"
                         " of redis")
        lines.append(
            f"  {name:14s} ops/s {fmt_ops(a['ops_per_sec']):>7} / {fmt_ops(b['ops_per_sec']):>7} "
            f"= {fmt_ratio(ratio(a['ops_per_sec'], b['ops_per_sec'])):>6}   "
            f"p99 {a['p99_us']:8.0f} / {b['p99_us']:8.0f} µs = "
            f"{fmt_ratio(ratio(a['p99_us'], b['p99_us'])):>6}   "
            f"cpu/op {a['server_cpu_us_per_op']:6.3f} / {b['server_cpu_us_per_op']:6.3f} µs = "
            f"{fmt_ratio(ratio(a['server_cpu_us_per_op'], b['server_cpu_us_per_op'])):>6}")
        e = by.get(DEADBOLT_EVALSHA)
        if e:
            lines.append(
                f"  {name + ' EVALSHA':14s} ops/s {fmt_ops(e['ops_per_sec']):>7} / "
                f"{fmt_ops(b['ops_per_sec']):>7} = "
                f"{fmt_ratio(ratio(e['ops_per_sec'], b['ops_per_sec'])):>6}   "
                f"p99 {e['p99_us']:8.0f} / {b['p99_us']:8.0f} µs = "
                f"{fmt_ratio(ratio(e['p99_us'], b['p99_us'])):>6}   "
                f"cpu/op {e['server_cpu_us_per_op']:6.3f} / {b['server_cpu_us_per_op']:6.3f} µs = "
                f"{fmt_ratio(ratio(e['server_cpu_us_per_op'], b['server_cpu_us_per_op'])):>6}")
    m = s["memory"]
    if m.get("deadbolt") and m.get("redis"):
        for key in ("rss_bytes_per_key", "used_memory_bytes_per_key"):
            a, b = m["deadbolt"][key], m["redis"][key]
            lines.append(f"  memory {key:26s} {a:7.1f} / {b:7.1f} B = {fmt_ratio(ratio(a, b))}")
    for mode, r in s["reactors"].items():
        lines.append(f"  deadbolt 2 reactors, {mode:6s}: {fmt_ops(r['ops_per_sec'])} ops/s, "
                     f"{r['cross_shard_messages_per_op']:.2f} cross-shard msgs/op, "
                     f"{r['server_cpu_us_per_op']:.3f} µs CPU/op")
    return "\n".join(lines)


def render_markdown(s, data, png, notes):
    meta = data["meta"]
    depths, rates = meta["depths"], meta["rates"]
    out = []
    w = out.append
    w("# deadbolt vs redis-server\n")
    w("Generated by `bench/compare.py`"
      + (" **--quick** (smoke test, not a result)" if meta["quick"] else "")
      + ". How it measures and how to read this: [README.md](README.md); where deadbolt's time "
      "goes where a target is missed: [PROFILE.md](PROFILE.md). Raw numbers of every run: "
      "`results.json`.\n")
    dirty = (" (uncommitted changes in: " + ", ".join(f"`{d}`" for d in meta["dirty"]) + ")"
             if meta["dirty"] else "")
    w("| | |\n|---|---|")
    w(f"| date | {meta['date']} |")
    w(f"| commit | `{meta['commit']}`{dirty}; binary `{meta['deadbolt_binary']}` built "
      f"{meta['deadbolt_mtime']} (sha256 `{meta['deadbolt_sha256']}`) |")
    w(f"| machine | {meta['nproc']} × {meta['cpu']}, kernel {meta['kernel']} |")
    w(f"| redis | {meta['redis']} |")
    w(f"| method | {meta['rounds']} rounds, deadbolt and redis alternating (order flipped each "
      f"round); each run a fresh server (deadbolt `--threads 1 --no-pin`, redis `--save '' "
      f"--appendonly no`, both `taskset -c 1`), lockload `taskset -c 0`, {meta['connections']} "
      f"connections, {meta['warmup']:g} s warm-up + {meta['duration']:g} s measured; "
      + (f"servers and lockload at `nice -n {meta['nice']}`; " if meta['nice'] else "")
      + "the table shows medians"
      + (f"; the open-loop runs, whose p99 moves with every hiccup of the machine, ran "
         f"{meta['open_rounds']} rounds" if meta.get("open_rounds", meta["rounds"]) != meta["rounds"]
         else "") + " |")
    w(f"| keys | `acquire`: `SET lock:<n> <36-char token> NX PX 30000`, n uniform over "
      f"{meta['keyspace']:,} keys (lockload's default): after the first {meta['keyspace']:,} "
      f"nearly every acquire finds its lock held and gets `nil` — the contended path, a steady "
      f"state. `acquire … free`: n over {meta['free_keyspace']:,} keys, so nearly every "
      f"acquire takes a free lock and the table grows all through the run. `cycle`: acquire, "
      f"then release each lock taken — deadbolt `{meta['release'].upper()}`, redis `EVALSHA` "
      f"of the compare-and-delete script"
      + (" (deadbolt with that `EVALSHA` too: *Releasing a lock* below)"
         if any(DEADBOLT_EVALSHA in by for by in data["runs"].values()) else "")
      + ". The *acquired* column says what share of acquires got `OK` |")
    bg = [r["background_cores"] for by in data["runs"].values() for rs in by.values()
          for r in rs]
    if bg:
        w(f"| other load | CPU used by other processes during the measured windows: median "
          f"{statistics.median(bg):.2f}, max {max(bg):.2f} cores (of {meta['nproc']}); load "
          f"average at the end {' '.join(meta['loadavg'])} |")
    w(f"| took | {meta['elapsed_s']:.0f} s |\n")

    w("## Against the issue's targets\n")
    w("Ratio = deadbolt ÷ redis (for CPU, memory and latency lower is better; for throughput "
      "higher is). CPU per op is the server process's own user+system time (`/proc/<pid>/stat`) "
      "over the measured window divided by the requests lockload counted in it. Each round ran "
      "the two servers back to back, so the verdict goes by the **median of the rounds' own "
      "ratios** (a run that other load disturbed spoils one round, not the comparison); its "
      "range shows how far the verdict can be trusted — one that straddles the target is within "
      "the noise.\n")
    w("| metric | deadbolt | redis | ratio of medians | per-round ratio: median (range) "
      "| target | |")
    w("|---|---:|---:|---:|---:|---|---|")
    for r in target_rows(s, data, rates):
        w("| " + " | ".join(r) + " |")
    w("")

    w("## Every closed- and open-loop run (medians)\n")
    w("| run | deadbolt ops/s (min–max) | redis ops/s (min–max) | ratio | p50 µs d / r | "
      "p99 µs d / r | p99.9 µs d / r | server CPU µs/op d / r | ratio | server core busy d / r "
      "| lockload core busy d / r | acquired d / r |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, by in s["runs"].items():
        a, b = by.get("deadbolt"), by.get("redis")
        if not a or not b:
            continue
        w(f"| {name} | {fmt_ops(a['ops_per_sec'])} ({fmt_ops(a['ops_range'][0])}–"
          f"{fmt_ops(a['ops_range'][1])}) | {fmt_ops(b['ops_per_sec'])} "
          f"({fmt_ops(b['ops_range'][0])}–{fmt_ops(b['ops_range'][1])}) | "
          f"{fmt_ratio(ratio(a['ops_per_sec'], b['ops_per_sec']))} | "
          f"{a['p50_us']:.0f} / {b['p50_us']:.0f} | {a['p99_us']:.0f} / {b['p99_us']:.0f} | "
          f"{a['p999_us']:.0f} / {b['p999_us']:.0f} | "
          f"{a['server_cpu_us_per_op']:.3f} / {b['server_cpu_us_per_op']:.3f} | "
          f"{fmt_ratio(ratio(a['server_cpu_us_per_op'], b['server_cpu_us_per_op']))} | "
          f"{a['server_cpu_util'] * 100:.0f}% / {b['server_cpu_util'] * 100:.0f}% | "
          f"{a['lockload_cpu_util'] * 100:.0f}% / {b['lockload_cpu_util'] * 100:.0f}% | "
          f"{a['acquired_share'] * 100:.0f}% / {b['acquired_share'] * 100:.0f}% |")
    errs = sum(by[k]["errors"] for by in s["runs"].values() for k in by)
    w(f"\nError replies over all runs: {errs}.")
    for name, by in data["runs"].items():
        for kind, rs in by.items():
            for r in rs:
                if r.get("errors"):
                    w(f"* {name}, {kind}: {r['errors']} errors, first: `{r.get('first_error')}`")
                    break
    w("")

    floors = [(name, by) for name, by in s["runs"].items()
              if by.get(NULL) and by.get("deadbolt") and by.get("redis")]
    if floors:
        w("## The floor: a responder that does nothing\n")
        w("`bench/null_responder` does with the network what deadbolt's reactor does (one "
          "thread, io_uring with SINGLE_ISSUER + DEFER_TASKRUN, multishot receive into provided "
          "buffers, one send per connection per loop turn) and nothing else: it splits the input "
          "into commands and answers each `$-1`, the reply a contended acquire gets. It ran in "
          "every round beside the two servers, pinned and loaded the same way. Its CPU per op is "
          "what the kernel's loopback TCP path and io_uring cost here; deadbolt − floor is "
          "deadbolt's own work per request (parse, lookup, `SET`, reply).\n")
        w("| run | floor µs/op | deadbolt µs/op | redis µs/op | floor ÷ redis | deadbolt ÷ redis "
          "| deadbolt − floor µs/op | floor ops/s |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        cpu = "server_cpu_us_per_op"
        for name, by in floors:
            n, a, b = by[NULL], by["deadbolt"], by["redis"]
            w(f"| {name} | {n[cpu]:.3f} | {a[cpu]:.3f} | {b[cpu]:.3f} | "
              f"{fmt_ratio(ratio(n[cpu], b[cpu]))} | {fmt_ratio(ratio(a[cpu], b[cpu]))} | "
              f"{a[cpu] - n[cpu]:.3f} | {fmt_ops(n['ops_per_sec'])} |")
        w("")

    cycles = [(name, by) for name, by in s["runs"].items()
              if by.get(DEADBOLT_EVALSHA) and by.get("deadbolt") and by.get("redis")]
    if cycles:
        rel = meta["release"].upper()
        w("## Releasing a lock: built-in command vs the script\n")
        w(f"The `cycle` runs (acquire with `SET NX PX`, then release each lock taken) with three "
          f"releases: deadbolt's built-in `{rel} key token`; on deadbolt, `EVALSHA` of the classic "
          f"compare-and-delete script (`if redis.call(\"get\",KEYS[1]) == ARGV[1] then return "
          f"redis.call(\"del\",KEYS[1]) else return 0 end`, loaded with `SCRIPT LOAD`), which "
          f"deadbolt knows by its SHA1 and runs natively; and that same `EVALSHA` on redis-server, "
          f"which runs it in Lua. The three alternate within each round like the other runs. "
          f"Ratios are of the medians, ÷ redis.\n")
        w(f"| run | deadbolt `{rel}` ops/s | deadbolt `EVALSHA` ops/s | redis `EVALSHA` ops/s "
          f"| `{rel}` ÷ redis | `EVALSHA` ÷ redis | server CPU µs/op `{rel}` / `EVALSHA` / redis "
          f"| CPU ÷ redis `{rel}` / `EVALSHA` | p99 µs `{rel}` / `EVALSHA` / redis |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, by in cycles:
            a, e, b = by["deadbolt"], by[DEADBOLT_EVALSHA], by["redis"]
            cpu = "server_cpu_us_per_op"
            w(f"| {name} | {fmt_ops(a['ops_per_sec'])} | {fmt_ops(e['ops_per_sec'])} | "
              f"{fmt_ops(b['ops_per_sec'])} | "
              f"{fmt_ratio(ratio(a['ops_per_sec'], b['ops_per_sec']))} | "
              f"{fmt_ratio(ratio(e['ops_per_sec'], b['ops_per_sec']))} | "
              f"{a[cpu]:.3f} / {e[cpu]:.3f} / {b[cpu]:.3f} | "
              f"{fmt_ratio(ratio(a[cpu], b[cpu]))} / {fmt_ratio(ratio(e[cpu], b[cpu]))} | "
              f"{a['p99_us']:.0f} / {e['p99_us']:.0f} / {b['p99_us']:.0f} |")
        w("")

    if s["memory"]:
        w("## Memory per lock key\n")
        w(f"{meta['memory_keys']:,} keys `lock:<n>`, each `SET` (`NX PX 600000`) to its own "
          "36-character uuid4, loaded with pipelined SETs (10,000 per batch) into a fresh "
          "server; (after − empty) ÷ keys. The issue's measure is the first row (RSS against the "
          "fresh server). The *warmed-up* rows take the empty server's memory after it has "
          "served 100,000 such SETs on one key (then deleted), so that I/O buffers the load "
          "touches once are not charged to the keys: "
          + ", ".join(f"{k} {s['memory'][k]['rss_empty'] / 1e6:.1f} MB fresh → "
                      f"{s['memory'][k]['rss_warm'] / 1e6:.1f} MB warmed up"
                      for k in SERVERS if k in s["memory"]) + " (RSS).\n")
        w("| | deadbolt | redis | ratio |\n|---|---:|---:|---:|")
        for key, label in (("rss_bytes_per_key", "RSS (`/proc/<pid>/statm`) − fresh server's"),
                           ("used_memory_bytes_per_key", "`INFO memory` used_memory − fresh server's"),
                           ("rss_bytes_per_key_warm", "RSS − warmed-up empty server's"),
                           ("used_memory_bytes_per_key_warm", "used_memory − warmed-up empty server's")):
            a = s["memory"].get("deadbolt", {}).get(key)
            b = s["memory"].get("redis", {}).get(key)
            w(f"| {label} | {fmt(a, 1)} B | {fmt(b, 1)} B | {fmt_ratio(ratio(a, b))} |")
        w("")

    if s["reactors"]:
        w("## deadbolt with two reactors: keys local to the connection's reactor vs remote\n")
        w(f"deadbolt `--threads 2` (reactor i pinned to core i by deadbolt), "
          f"{meta['two_reactor_procs']} single-connection lockloads (`acquire -P 16`, "
          f"{meta['keyspace']:,} keys each, unpinned, so they share both cores with the server). "
          "deadbolt gives accepted connections to reactors round-robin, so the harness starts "
          "the lockloads one at a time (padding with an idle connection when needed) so that "
          "connection j sits on reactor j mod 2, and gives each keys with one hash tag "
          "`{tag}lock:<n>` whose slot is on that reactor's shard (*local*) or on the other one "
          "(*remote*); *split*: half of the connections local, half remote; *mixed*: untagged "
          "keys, so every connection's pipeline interleaves local and remote keys. Throughput "
          "and CPU come from the server's own counters (`total_commands_processed`, "
          "`cross_shard_messages`, `/proc`).\n")
        w("| keys | ops/s | cross-shard messages per op | server CPU µs/op | server cores busy |")
        w("|---|---:|---:|---:|---:|")
        for mode, r in s["reactors"].items():
            w(f"| {mode} | {fmt_ops(r['ops_per_sec'])} | {r['cross_shard_messages_per_op']:.2f} "
              f"| {r['server_cpu_us_per_op']:.3f} | {r['server_cpu_util']:.2f} |")
        if "local" in s["reactors"] and "remote" in s["reactors"]:
            rt = ratio(s["reactors"]["remote"]["ops_per_sec"],
                       s["reactors"]["local"]["ops_per_sec"])
            w(f"\nremote ÷ local throughput: {fmt_ratio(rt)}.")
        w("")

    if "acquire P1" in s["runs"] and png != "-":
        w("## Pipeline depth\n")
        w(f"![throughput and p99 vs pipeline depth]({os.path.basename(png)})\n")
        w("| depth | deadbolt ops/s | redis ops/s | ratio | deadbolt p99 µs | redis p99 µs |")
        w("|---:|---:|---:|---:|---:|---:|")
        for d in depths:
            by = s["runs"].get(f"acquire P{d}")
            if not by:
                continue
            a, b = by["deadbolt"], by["redis"]
            w(f"| {d} | {fmt_ops(a['ops_per_sec'])} | {fmt_ops(b['ops_per_sec'])} | "
              f"{fmt_ratio(ratio(a['ops_per_sec'], b['ops_per_sec']))} | {a['p99_us']:.0f} | "
              f"{b['p99_us']:.0f} |")
        w("")

    w("## Notes\n")
    if data["memtier"]:
        for kind, r in data["memtier"].items():
            w(f"* memtier_benchmark SET -c 50 --pipeline=16, {kind}: {r['ops_per_sec']} ops/s, "
              f"p99 {r['p99_ms']} ms.")
    for n in notes:
        w(f"* {n}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# Plot.


def plot(data, depths, png):
    rows = []
    for d in depths:
        by = data["runs"].get(f"acquire P{d}")
        if not by or not by["deadbolt"] or not by["redis"]:
            continue
        rows.append((d, median([r["ops_per_sec"] for r in by["deadbolt"]]),
                     median([r["ops_per_sec"] for r in by["redis"]]),
                     median([r["p99_us"] for r in by["deadbolt"]]),
                     median([r["p99_us"] for r in by["redis"]])))
    dat = os.path.splitext(png)[0] + ".dat"
    with open(dat, "w") as f:
        f.write("# depth deadbolt_ops_per_sec redis_ops_per_sec deadbolt_p99_us redis_p99_us\n")
        for r in rows:
            f.write("%d %.1f %.1f %.1f %.1f\n" % r)
    gp = shutil.which("gnuplot")
    if gp is None:
        return f"gnuplot is not installed: wrote {dat} but no {png}."
    script = os.path.join(REPO, "bench", "pipeline.gnuplot")
    meta = data.get("meta", {})
    title = (f"{meta.get('connections', 50)} connections, each server on one core, medians of "
             f"{meta.get('rounds', 1)} round(s); {meta.get('date', '')}, commit "
             f"{meta.get('commit', '')}")
    keys = f"{meta.get('keyspace', 10000):,}"
    p = subprocess.run([gp, "-e", f"datafile='{dat}'; outfile='{png}'; subtitle='{title}'; "
                        f"keys='{keys}'", script], capture_output=True, text=True)
    if p.returncode != 0:
        return f"gnuplot failed: {p.stderr.strip()[-300:]}"
    log(f"wrote {png}")
    return None



# ---------------------------------------------------------------------------------------------
# --suite cross-shard: "Cores that pay" (issue 12), its own section of RESULTS.md.

XS_BEGIN = "<!-- cores-that-pay: written by compare.py --suite cross-shard -->"
XS_END = "<!-- /cores-that-pay -->"
# The configurations of the suite (compare.py's cross_shard_suite), keys of its results.
XS_DEFAULT, XS_TAGGED, XS_ONE, XS_REDIS = "default", "default tagged local", "threads 1", "redis"
XS_CONFIGS = (XS_DEFAULT, XS_TAGGED, XS_ONE, XS_REDIS)


# The main suite's part of RESULTS.md (report()), from the top of the file.
MAIN_BEGIN = "<!-- main: written by compare.py (the main suite) -->"
MAIN_END = "<!-- /main -->"


def splice_section(path, section, begin=XS_BEGIN, end=XS_END, at_start=False):
    """Puts `section` (markers included) into `path` in place of the text between the markers
    `begin` and `end`; without them, at the end of the file (at its start if `at_start`).
    Everything else in the file stays."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        text = ""
    i, j = text.find(begin), text.find(end)
    if 0 <= i < j:
        text = text[:i] + section + text[j + len(end):]
    elif at_start:
        text = section + "\n" + ("\n" + text.lstrip("\n") if text.strip() else "")
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section + "\n"
    with open(path, "w") as f:
        f.write(text)


def xs_criteria(data):
    """The done-when rows: (label, load, a, b, key, target text, limit, sense). The verdict goes
    by the median of the per-round ratios a÷b (each round ran both back to back)."""
    rows = []
    depths = data["meta"]["depths"]
    for d in depths:
        rows.append((f"untagged ÷ tagged-local CPU/op, lockload P{d}", f"lockload P{d}",
                     XS_DEFAULT, XS_TAGGED, "server_cpu_us_per_op", "≤ 1.25", 1.25, "le"))
    for tool in ("lockload", "redis-benchmark"):
        for d in depths:
            load = f"{tool} P{d}"
            tgt = {16: ("≥ 1.0", 1.0), 1: ("≥ 0.9", 0.9)}.get(d, ("", None))
            rows.append((f"default ÷ redis throughput, {load}", load, XS_DEFAULT, XS_REDIS,
                         "ops_per_sec", tgt[0], tgt[1], "ge"))
            cpu = ("≤ 0.8", 0.8) if d == 16 else ("", None)
            rows.append((f"default ÷ redis CPU/op, {load}", load, XS_DEFAULT, XS_REDIS,
                         "server_cpu_us_per_op", cpu[0], cpu[1], "le"))
    for tool in ("lockload", "redis-benchmark"):
        for d in depths:
            load = f"{tool} P{d}"
            rows.append((f"(reference) --threads 1 ÷ redis throughput, {load}", load, XS_ONE,
                         XS_REDIS, "ops_per_sec", "", None, "ge"))
            rows.append((f"(reference) --threads 1 ÷ redis CPU/op, {load}", load, XS_ONE,
                         XS_REDIS, "server_cpu_us_per_op", "", None, "le"))
    return rows


# A line's round trip between the two CPUs under this many ns: the vCPUs sat close together.
XS_NEAR_NS = 250


def xs_rounds_by_line(data):
    """Per lockload depth, each round's untagged ÷ tagged-local CPU per op beside the cache-line
    round trip measured just before each of the two runs (core_pingpong), and the median ratio
    of the rounds where both were near (under XS_NEAR_NS) and of the rest. None without probes."""
    out = {}
    for d in data["meta"]["depths"]:
        by = data["runs"].get(f"lockload P{d}", {})
        rows = []
        for u, t in zip(by.get(XS_DEFAULT, []), by.get(XS_TAGGED, [])):
            if not u or not t or not t["server_cpu_us_per_op"]:
                rows.append(None)
                continue
            rows.append({"untagged_line_ns": u.get("line_round_trip_ns"),
                         "tagged_line_ns": t.get("line_round_trip_ns"),
                         "untagged_us": u["server_cpu_us_per_op"],
                         "tagged_us": t["server_cpu_us_per_op"],
                         "ratio": u["server_cpu_us_per_op"] / t["server_cpu_us_per_op"]})
        probed = [r for r in rows if r and r["untagged_line_ns"] and r["tagged_line_ns"]]
        if not probed:
            continue
        near = [r["ratio"] for r in probed
                if max(r["untagged_line_ns"], r["tagged_line_ns"]) < XS_NEAR_NS]
        far = [r["ratio"] for r in probed
               if max(r["untagged_line_ns"], r["tagged_line_ns"]) >= XS_NEAR_NS]
        out[f"lockload P{d}"] = {
            "rounds": rows,
            "near": {"n": len(near), "median_ratio": statistics.median(near) if near else None},
            "far": {"n": len(far), "median_ratio": statistics.median(far) if far else None}}
    return out or None


def _by_line_text(load, b):
    def part(name, x):
        if not x["n"]:
            return f"no round {name}"
        return f"{x['median_ratio']:.2f}× over {x['n']} round{'s' if x['n'] > 1 else ''} {name}"
    return (f"untagged ÷ tagged-local CPU/op, {load}, by the cache-line round trip before the "
            f"runs: {part(f'under {XS_NEAR_NS} ns', b['near'])}; "
            f"{part(f'at {XS_NEAR_NS} ns or more', b['far'])}")


def cross_shard_summary(data):
    """Medians per load and configuration, and the criteria with their per-round ratios."""
    med = {}
    for load, by in data["runs"].items():
        med[load] = {}
        for config, rs in by.items():
            rs = [r for r in rs if r]
            if not rs:
                continue
            med[load][config] = {k: median([r.get(k) for r in rs]) for k in (
                "ops_per_sec", "server_cpu_us_per_op", "server_cpu_util",
                "cross_shard_messages_per_op", "p99_us")}
            med[load][config]["runs"] = len(rs)
    crit = []
    for label, load, a, b, key, tgt, lim, sense in xs_criteria(data):
        ra = data["runs"].get(load, {}).get(a, [])
        rb = data["runs"].get(load, {}).get(b, [])
        per = [x[key] / y[key] for x, y in zip(ra, rb) if x and y and y[key]]
        m = statistics.median(per) if per else None
        verdict = ""
        if lim is not None and m is not None:
            ok = m <= lim if sense == "le" else m >= lim
            verdict = "met" if ok else "not met"
        crit.append({"criterion": label, "load": load, "a": a, "b": b, "key": key,
                     "target": tgt, "median_ratio": m,
                     "range": [min(per), max(per)] if per else None, "per_round": per,
                     "verdict": verdict})
    return {"medians": med, "criteria": crit, "by_line": xs_rounds_by_line(data)}


def _range(c):
    if c["median_ratio"] is None:
        return "–"
    if len(c["per_round"]) == 1:
        return f"{c['median_ratio']:.2f}×"
    return f"{c['median_ratio']:.2f}× ({c['range'][0]:.2f}–{c['range'][1]:.2f})"


def cross_shard_report(data, cfg):
    s = cross_shard_summary(data)
    data["summary"] = s
    meta = data["meta"]
    lines = ["", "Cores that pay (medians; ops/s · server CPU µs/op · cross-shard msgs/op):"]
    for load, by in s["medians"].items():
        for config in XS_CONFIGS:
            r = by.get(config)
            if not r:
                continue
            x = r["cross_shard_messages_per_op"]
            lines.append(f"  {load:19s} {config:21s} {fmt_ops(r['ops_per_sec']):>7} ops/s  "
                         f"{fmt(r['server_cpu_us_per_op'], 3):>6} µs/op"
                         + (f"  {x:.2f} xshard/op" if x is not None and config != XS_REDIS
                            else ""))
    lines.append("")
    for c in s["criteria"]:
        lines.append(f"  {c['criterion']:64s} {_range(c):22s} {c['target']:6s} {c['verdict']}")
    for load, b in (s["by_line"] or {}).items():
        lines.append("  " + _by_line_text(load, b))
    for f in data.get("failures", []):
        lines.append(f"  FAILED: {f}")
    print("\n".join(lines))
    if getattr(cfg, "json_out", "-") not in (None, "-") and not getattr(cfg, "from_json", None):
        with open(cfg.json_out, "w") as f:
            json.dump(data, f, indent=1)
        log(f"wrote {cfg.json_out}")
    if cfg.out != "-":
        splice_section(cfg.out, render_cross_shard_markdown(data, s), XS_BEGIN, XS_END)
        log(f"wrote the 'Cores that pay' section of {cfg.out}")


def render_cross_shard_markdown(data, s):
    meta = data["meta"]
    out = [XS_BEGIN, ""]
    w = out.append
    w("## Cores that pay: a remote key against a local one, the default server against redis\n")
    dirty = (" (uncommitted changes in: " + ", ".join(f"`{d}`" for d in meta["dirty"]) + ")"
             if meta["dirty"] else "")
    w("Issue 12's done-when, measured in one run by `bench/compare.py --suite cross-shard`"
      + (" **--quick** (smoke test, not a result)" if meta["quick"] else "")
      + f" on {meta['date']}, commit `{meta['commit']}`{dirty}, binary "
      f"`{meta['deadbolt_binary']}` built {meta['deadbolt_mtime']} (sha256 "
      f"`{meta['deadbolt_sha256']}`); {meta['nproc']} × {meta['cpu']}; load average at the "
      f"end {' '.join(meta['loadavg'])}. Raw numbers: `cross_shard.json`.\n")
    w(f"{meta['rounds']} rounds, configurations in turn (order flipped each round), a fresh "
      f"server per run. Load: `SET lock:<n> tok NX PX 30000`, n uniform over "
      f"{meta['keyspace']:,} keys, {meta['connections']} connections: lockload (`-w acquire`, "
      f"one thread, {meta['warmup']:g} s warm-up + {meta['duration']:g} s measured) and "
      f"redis-benchmark (`-c {meta['connections']} -r {meta['keyspace']} -P d`, about "
      f"{meta['duration']:g} s of requests). *default*: `deadbolt-server` with no flags (one "
      "reactor per core, left to the scheduler by `--pin auto`), load unpinned; *default tagged local*: the "
      "same, each lockload connection's keys `{tag}lock:<n>` with a tag on the shard of the "
      "reactor the connection landed on (`--conn-prefixes`, from deadbolt's round-robin "
      "placement; the cross-shard column checks it), n over the keys ÷ reactors, so that the "
      "server holds as many keys as untagged; *threads 1*: `--threads 1 --no-pin` and "
      "*redis*: `redis-server --save '' --appendonly no`, both `taskset -c 1`, load `taskset -c "
      "0`. Server CPU from `/proc` over the measured window, per command the server counted "
      "(redis-benchmark: over its whole run); cross-shard messages per op from `INFO stats`.\n")
    bg = [r["background_cores"] for by in data["runs"].values() for rs in by.values()
          for r in rs if r and r.get("background_cores") is not None]
    if bg:
        w(f"Other load (CPU used by other processes during the measured windows): median "
          f"{statistics.median(bg):.2f}, max {max(bg):.2f} cores of {meta['nproc']}"
          + (f"; before each run the harness waited up to {meta['quiet_wait']:g} s for it to "
             "drop under 0.3 cores" if meta.get("quiet_wait") else "") + ".\n")
    w("| load | server | ops/s | server CPU µs/op | server cores busy | cross-shard msgs/op |")
    w("|---|---|---:|---:|---:|---:|")
    for load, by in s["medians"].items():
        for config in XS_CONFIGS:
            r = by.get(config)
            if not r:
                continue
            x = r["cross_shard_messages_per_op"]
            w(f"| {load} | {config} | {fmt_ops(r['ops_per_sec'])} | "
              f"{fmt(r['server_cpu_us_per_op'], 3)} | {fmt(r['server_cpu_util'], 2)} | "
              + (f"{x:.2f}" if x is not None and config != XS_REDIS else "–") + " |")
    w("")
    w("| criterion | median of per-round ratios (range) | target | verdict |")
    w("|---|---:|---|---|")
    for c in s["criteria"]:
        v = c["verdict"]
        w(f"| {c['criterion']} | {_range(c)} | {c['target']} | "
          f"{'**not met**' if v == 'not met' else v} |")
    if s.get("by_line"):
        w("")
        w("What a cache line's round trip between the two CPUs cost just before each run "
          "(`bench/core_pingpong`): the hypervisor moves this VM's vCPUs, and a relay's lines and "
          "wake-ups cross between them. Per round:")
        w("")
        w("| load | round | line before untagged (ns) | untagged µs/op | line before tagged (ns) "
          "| tagged µs/op | ratio |")
        w("|---|---:|---:|---:|---:|---:|---:|")
        for load, b in s["by_line"].items():
            for i, r in enumerate(b["rounds"]):
                if r:
                    w(f"| {load} | {i + 1} | {fmt(r['untagged_line_ns'], 0)} | "
                      f"{r['untagged_us']:.3f} | {fmt(r['tagged_line_ns'], 0)} | "
                      f"{r['tagged_us']:.3f} | {r['ratio']:.2f}× |")
        w("")
        for load, b in s["by_line"].items():
            w(f"* {_by_line_text(load, b)}.")
    notes = list(data.get("notes", [])) + [f"failed: {f}" for f in data.get("failures", [])]
    if notes:
        w("")
        for n in notes:
            w(f"* {n}")
    w("")
    w(XS_END)
    return "\n".join(out)
