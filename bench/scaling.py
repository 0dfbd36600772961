#!/usr/bin/env python3
"""The many-core picture (bench/SCALING.md): CPU per op and throughput of the default server
at 4, 16 and 64 reactors, modelled from what one run of `compare.py --suite cross-shard` measured
on this machine with 1 and 2 reactors.

The model (docs/ARCHITECTURE.md, "Pipelines across shards"): a command costs what a local one
costs, plus the messages it causes times what a message costs.

- c_local(P): server CPU per op of the default server when every connection's keys are on its
  own reactor (tagged local), at pipeline depth P.
- c_msg(P): (CPU/op untagged - CPU/op tagged local) / cross-shard messages per op, both measured
  with 2 reactors: what one message costs in the sending, the running and the waking.
- m(N, P): cross-shard messages per op with N reactors and keys uniform over all shards.
  P1: a remote command goes and its reply comes back: 2 (N-1)/N.
  P > 1 (--pipeline-order sent): the pipeline runs inline up to its first remote command; from
  there one relay carries the rest (server/core/relay.cc) by the route of fewer messages:
  in order (a message at each change of shard, plus the trip home), or visiting each of its
  shards once in ascending order (a message per shard, the trip home, and one per shard other
  than the origin that releases the keys of commands run ahead there). The expectation over
  uniform keys is computed by drawing 20,000 pipelines (fixed seed). With N = 2 and P = 16
  that is 0.15 per op (in order alone: 0.53); the run measures it, and the table shows both.
- CPU/op(N, P) = c_local(P) + c_msg(P) m(N, P); throughput(N) = N / CPU/op, the server alone on
  N cores with its clients elsewhere (an upper bound: here the load shares the cores).

What the model leaves out, so the large-N rows are optimistic: with N targets a reactor's
messages of one turn are split over N-1 chains, so fewer share a wake-up (c_msg grows toward the
unbatched cost that bench/message_bench measures), and memory traffic between sockets.

Usage: scaling.py [cross_shard.json] [--svg scaling.svg]  (standard library only)
"""

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORES = (1, 2, 4, 16, 64)


def relay_messages(origin, shards):
    """Messages of the cheaper route for a relay of commands on `shards` from `origin`."""
    in_order, prev = 0, origin
    for s in shards:
        in_order += s != prev
        prev = s
    in_order += prev != origin
    visited = sorted(set(shards))
    ahead, top = set(), -1
    for s in shards:
        if top > s:
            ahead.add(s)
        top = max(top, s)
    ascending = (len(visited) + 1 - (visited[0] == origin) - (visited[-1] == origin)
                 + len(ahead - {origin}))
    return min(in_order, ascending)


def messages_per_op(n, p, draws=20000):
    if n == 1:
        return 0.0
    if p == 1:
        return 2 * (n - 1) / n
    rnd = random.Random(12)
    total = 0
    for _ in range(draws):
        shards = [rnd.randrange(n) for _ in range(p)]
        first_remote = next((i for i, s in enumerate(shards) if s != 0), None)
        if first_remote is not None:
            total += relay_messages(0, shards[first_remote:])
    return total / draws / p


def model(summary, load, p):
    m = summary["medians"]["lockload P%d" % p]
    local = m["default tagged local"]["server_cpu_us_per_op"]
    untagged = m["default"]["server_cpu_us_per_op"]
    msgs = m["default"]["cross_shard_messages_per_op"]
    c_msg = (untagged - local) / msgs
    rows = []
    for n in CORES:
        mm = messages_per_op(n, p)
        cpu = local + c_msg * mm
        rows.append((n, mm, cpu, n / cpu * 1e6))
    measured = {1: m["threads 1"], 2: m["default"]}
    return local, c_msg, msgs, rows, measured


def svg(series, path):
    """A log-log plot of modelled throughput against reactors, one line per depth."""
    w, h, pad = 560, 360, 50
    xs = [__import__("math").log2(n) for n in CORES]
    ys_all = [__import__("math").log10(t) for _, rows, _ in series for (_, _, _, t) in rows]
    y0, y1 = min(ys_all) - 0.1, max(ys_all) + 0.1
    def px(x): return pad + (x - xs[0]) / (xs[-1] - xs[0]) * (w - 2 * pad)
    def py(y): return h - pad - (y - y0) / (y1 - y0) * (h - 2 * pad)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="12">' % (w, h), '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="20">deadbolt default server, uniform keys: modelled ops/s (log) vs '
           'reactors (log)</text>' % pad]
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (pad, h - pad, w - pad, h - pad))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (pad, pad, pad, h - pad))
    for n, x in zip(CORES, xs):
        out.append('<text x="%.0f" y="%d" text-anchor="middle">%d</text>' % (px(x), h - pad + 16, n))
    import math
    for e in range(int(math.floor(y0)), int(math.ceil(y1)) + 1):
        for mant in (1, 3):
            y = e + math.log10(mant)
            if y0 <= y <= y1:
                out.append('<text x="%d" y="%.0f" text-anchor="end">%s</text>'
                           % (pad - 4, py(y) + 4, "%gM" % (10 ** y / 1e6) if 10 ** y >= 1e6 else "%gk" % (10 ** y / 1e3)))
    colors = ["#1f77b4", "#d62728"]
    for (label, rows, measured), color, k in zip(series, colors, range(len(series))):
        pts = " ".join("%.1f,%.1f" % (px(x), py(math.log10(t))) for x, (_, _, _, t) in zip(xs, rows))
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>' % (pts, color))
        for n, r in measured.items():
            # what the run measured with the load on the same two cores
            x = math.log2(n)
            out.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>'
                       % (px(x), py(math.log10(r["ops_per_sec"])), color))
        out.append('<text x="%d" y="%d" fill="%s">%s (dots: measured here, load on the same cores)</text>'
                   % (pad + 10, pad + 14 + 16 * k, color, label))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main(argv):
    src = os.path.join(HERE, "cross_shard.json")
    svg_path = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--svg":
            svg_path = args.pop(0)
        else:
            src = a
    summary = json.load(open(src))["summary"]
    series = []
    for p in (1, 16):
        local, c_msg, msgs, rows, measured = model(summary, "lockload", p)
        print("P%d: c_local %.3f us/op, c_msg %.3f us/message (2 reactors measured %.2f messages/op, "
              "model %.2f)" % (p, local, c_msg, msgs, messages_per_op(2, p)))
        print("| reactors | messages/op | CPU µs/op | ops/s (N cores, server alone) |")
        print("|---:|---:|---:|---:|")
        for n, mm, cpu, t in rows:
            print("| %d | %.2f | %.2f | %s |" % (n, mm, cpu, "%.2fM" % (t / 1e6)))
        for n, r in sorted(measured.items()):
            print("measured here, %d reactor%s: %.2f us/op, %.0fk ops/s (load on the same cores)"
                  % (n, "s" if n > 1 else "", r["server_cpu_us_per_op"], r["ops_per_sec"] / 1e3))
        print()
        series.append(("P%d" % p, rows, measured))
    if svg_path:
        svg(series, svg_path)
        print("wrote", svg_path)


if __name__ == "__main__":
    main(sys.argv[1:])
