#!/usr/bin/python3
"""Side-by-side comparison of deadbolt-server and Debian's redis-server under lock workloads.

    /usr/bin/python3 bench/compare.py            # full run, a few minutes
    /usr/bin/python3 bench/compare.py --quick    # one short round, for smoke-testing

It builds nothing: point --deadbolt and --lockload at binaries you built (scripts/build.sh
release). Each measurement starts a fresh server pinned to core 1 (`taskset -c 1`), drives it with
lockload pinned to core 0, and stops it. deadbolt and redis alternate within every round (the
order flips each round), so a machine that gets busier or quieter during the run hits both.
Medians over the rounds and the ratio deadbolt/redis go to stdout and to bench/RESULTS.md, the
pipeline sweep to bench/pipeline.png (via gnuplot and bench/pipeline.gnuplot), every raw number
to bench/results.json. See bench/README.md for how to read them.

Python 3 standard library only.
"""

import argparse
import atexit
import ctypes
import datetime
import hashlib
import json
import os
import platform
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from compare_report import (DEADBOLT_EVALSHA, NULL, REPO, SERVERS, XS_CONFIGS,  # noqa: E402
                            XS_DEFAULT, XS_ONE, XS_REDIS, XS_TAGGED, cross_shard_report, log,
                            report)
from slots import crc16  # noqa: E402
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SERVER_CORE = "1"
LOAD_CORE = "0"
ALL_CORES = "0-%d" % ((os.cpu_count() or 1) - 1)

# Every process we start, so that nothing outlives us whatever way we leave.
_children = []


def _kill_children():
    for p in _children:
        if p.poll() is None:
            try:
                p.kill()
            except OSError:
                pass
    for p in _children:
        try:
            p.wait(timeout=5)
        except Exception:
            pass


atexit.register(_kill_children)


def _on_signal(signum, _frame):
    raise SystemExit(128 + signum)


def _die_with_parent():
    # Runs in the child between fork and exec: SIGKILL it if this script dies (even by SIGKILL).
    # taskset execs the real program in the same process, so the setting carries over.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def spawn(argv, **kw):
    """Starts argv; if it starts with `nice -n N` (N < 0, see --nice), in a session of its own
    whose autogroup gets niceness N too: with the kernel's autogroup scheduling, a process's
    nice value counts only against processes of its own session, so without this a busy
    machine's other sessions would still take an equal share of the measured cores."""
    boost = argv[:2] == ["nice", "-n"] and int(argv[2]) < 0
    p = subprocess.Popen(argv, preexec_fn=_die_with_parent, start_new_session=boost, **kw)
    _children.append(p)
    if boost:
        try:
            with open(f"/proc/{p.pid}/autogroup", "w") as f:
                f.write(argv[2])
        except OSError:
            pass  # no autogroup scheduling in this kernel, or not allowed: nice alone
    return p


def stop(p, grace=2.0):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in _children:
        _children.remove(p)


# ---------------------------------------------------------------------------------------------
# A minimal RESP client (for readiness, INFO, DBSIZE, and loading keys).


class Resp:
    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.sock.close()

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode(errors="replace")
        if t == b"-":
            return RuntimeError(rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode(errors="replace")
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        return self.read()

    def info(self, section):
        text = self.call("INFO", section)
        out = {}
        for line in str(text).splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v
        return out


# ---------------------------------------------------------------------------------------------
# Process accounting.


def proc_cpu(pid):
    """utime+stime of the whole process (all threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)


def proc_rss(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def children_cpu():
    """utime+stime of this script's waited-for children, seconds."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def machine_busy():
    """Busy seconds of all CPUs together, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return (sum(v[:8]) - idle) / CLK_TCK


def wait_quiet(limit_s, threshold=0.3):
    """Wait (at most limit_s) until other processes use under `threshold` cores; seconds waited."""
    t0 = time.monotonic()
    while True:
        a = machine_busy()
        time.sleep(0.5)
        if (machine_busy() - a) / 0.5 < threshold or time.monotonic() - t0 >= limit_s:
            return time.monotonic() - t0


def prio(cfg):
    """`nice -n N` in front of the servers and load generators (see --nice)."""
    n = getattr(cfg, "nice", 0)
    return ["nice", "-n", str(n)] if n else []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------------------------------------
# Servers.


class Server:
    def __init__(self, kind, cfg, threads=1):
        self.kind, self.cfg, self.threads = kind, cfg, threads
        self.proc = None
        self.port = None

    def argv(self, port):
        if self.kind == "null":
            cmd = ["taskset", "-c", SERVER_CORE, self.cfg.null_responder, "--port", str(port)]
        elif self.kind == "redis":
            cmd = ["taskset", "-c", SERVER_CORE, self.cfg.redis, "--port", str(port),
                   "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                   "--daemonize", "no", "--loglevel", "warning"]
        elif self.threads == 0:
            # Its defaults: one reactor per core, left to the scheduler (--pin auto). The
            # taskset only undoes this script's own pinning, which children inherit.
            cmd = ["taskset", "-c", ALL_CORES, self.cfg.deadbolt, "--port", str(port)]
        elif self.threads == 1:
            cmd = ["taskset", "-c", SERVER_CORE, self.cfg.deadbolt, "--port", str(port),
                   "--threads", "1", "--no-pin"]
        else:
            # Several reactors: deadbolt pins reactor i to core i itself (--pin yes, as these
            # runs always did; with a reactor per core --pin auto would not pin).
            cmd = ["taskset", "-c", "0-%d" % (os.cpu_count() - 1), self.cfg.deadbolt,
                   "--port", str(port), "--threads", str(self.threads), "--pin", "yes"]
        return prio(self.cfg) + cmd

    def start(self):
        last = ""
        for _attempt in range(5):
            port = free_port()
            err = tempfile.TemporaryFile()
            proc = spawn(self.argv(port), stdout=subprocess.DEVNULL, stderr=err)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    c = Resp(port, timeout=2)
                    ok = c.call("PING") == "PONG"
                    c.close()
                    if ok:
                        self.proc, self.port = proc, port
                        return self
                except OSError:
                    pass
                time.sleep(0.02)
            stop(proc)
            err.seek(0)
            last = err.read().decode(errors="replace")[-2000:]
        raise RuntimeError(f"{self.kind} did not start: {last}")

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc is not None:
            stop(self.proc)
            self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# ---------------------------------------------------------------------------------------------
# One lockload run with the server's CPU sampled from /proc over (nearly) the same window.


def server_counters(ctl):
    """(total_commands_processed, cross_shard_messages) from INFO stats (0 where absent)."""
    st = ctl.info("stats")
    return int(st.get("total_commands_processed", 0)), int(st.get("cross_shard_messages", 0))


def run_lockload(cfg, server, args, warmup, duration, cores=LOAD_CORE, ctl=None):
    """`cores`: where lockload may run (taskset -c); by default the core the server is not on.
    `ctl`: a Resp connection to the server: INFO stats is then read at the window's edges too
    (commands and cross-shard messages per op)."""
    argv = prio(cfg) + [
        "taskset", "-c", cores, cfg.lockload, "-p", str(server.port), "-q", "--json",
        "--cpu", "--server-cpu", "--allow-errors", "--warmup", str(warmup), "-d",
        str(duration)] + args
    t0 = time.monotonic()
    proc = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # lockload starts measuring about `warmup` seconds after it starts; sample /proc a little
    # inside its window on both ends (the rate over that span, times the window, is the cost).
    margin = min(0.1, duration / 10)
    time.sleep(max(0.0, t0 + warmup + margin - time.monotonic()))
    a_t, a_cpu, a_busy = time.monotonic(), proc_cpu(server.pid), machine_busy()
    a_st = server_counters(ctl) if ctl else None
    time.sleep(max(0.0, t0 + warmup + duration - margin - time.monotonic()))
    b_t, b_cpu, b_busy = time.monotonic(), proc_cpu(server.pid), machine_busy()
    b_st = server_counters(ctl) if ctl else None
    try:
        out, err = proc.communicate(timeout=duration + warmup + 60)
    except subprocess.TimeoutExpired:
        stop(proc, grace=1.0)
        raise RuntimeError("lockload did not finish: " + " ".join(argv))
    _children.remove(proc)
    if proc.returncode != 0:
        raise RuntimeError("lockload failed (%d): %s %s\n%s" % (
            proc.returncode, " ".join(argv), err.decode(errors="replace")[-2000:],
            out.decode(errors="replace")[-2000:]))
    d = json.loads(out)
    span = b_t - a_t
    util = (b_cpu - a_cpu) / span
    ops = d["ops_per_sec"]
    rep = d["replies_by_type"]
    res = {
        "ops_per_sec": ops,
        "acquired_share": rep.get("ok", 0) / max(1, rep.get("ok", 0) + rep.get("null", 0)),
        "p50_us": d["p50_us"],
        "p99_us": d["p99_us"],
        "p999_us": d["p999_us"],
        "errors": d["errors"],
        "first_error": d.get("first_error"),
        "replies": d["replies_by_type"],
        "server_cpu_util": util,
        # µs of server CPU per request (= CPU-seconds per million requests)
        "server_cpu_us_per_op": util / ops * 1e6 if ops > 0 else float("nan"),
        "server_cpu_us_per_op_info": d.get("server_cpu_s_per_million"),
        "lockload_cpu_us_per_op": d.get("cpu_s_per_million"),
        "lockload_cpu_util": d.get("cpu_core_fraction"),
    }
    # Everything else the machine did meanwhile (other jobs), in cores: a noise indicator.
    ll = res["lockload_cpu_util"] or 0.0
    res["background_cores"] = max(0.0, (b_busy - a_busy) / span - util - ll)
    if a_st and b_st:
        cmds = max(1, b_st[0] - a_st[0] - 1)  # less the INFO in the window
        res["server_commands_per_sec"] = cmds / span
        res["cross_shard_messages_per_op"] = (b_st[1] - a_st[1]) / cmds
    return res


# ---------------------------------------------------------------------------------------------
# Memory per lock key.


def make_values(n):
    return [str(uuid.uuid4()).encode() for _ in range(n)]


def load_keys(port, values, ttl_ms=600000, batch=10000):
    c = Resp(port, timeout=60)
    ttl = str(ttl_ms).encode()
    tail = b"$2\r\nNX\r\n$2\r\nPX\r\n$%d\r\n%s\r\n" % (len(ttl), ttl)
    n = len(values)
    for start in range(0, n, batch):
        end = min(n, start + batch)
        parts = []
        for i in range(start, end):
            k = b"lock:%d" % i
            parts.append(b"*6\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$36\r\n%s\r\n%s" % (
                len(k), k, values[i], tail))
        c.sock.sendall(b"".join(parts))
        want = end - start
        got = 0
        while True:
            got = c.buf.count(b"\r\n")
            if got >= want:
                break
            c._fill()
        if not c.buf.startswith(b"+OK") or c.buf.count(b"+OK\r\n") != want:
            raise RuntimeError("SET NX PX did not answer +OK to every key: %r" % c.buf[:200])
        c.buf = b""
    c.close()


def measure_memory(cfg, kind, values):
    with Server(kind, cfg) as s:
        c = Resp(s.port)
        time.sleep(0.3)
        rss0 = proc_rss(s.pid)
        used0 = int(c.info("memory")["used_memory"])
        # The same traffic on one key, deleted after: the I/O buffers the load will touch (for
        # deadbolt its provided-buffer ring) are then resident in the "warm" baseline too.
        w = Resp(s.port, timeout=60)
        cmd = Resp.encode("SET", "warm:0", values[0], "PX", "600000") * 10000
        for _ in range(10):
            w.sock.sendall(cmd)
            while w.buf.count(b"\r\n") < 10000:
                w._fill()
            w.buf = b""
        w.call("DEL", "warm:0")
        w.close()
        time.sleep(0.3)
        rss0w = proc_rss(s.pid)
        used0w = int(c.info("memory")["used_memory"])
        t = time.monotonic()
        load_keys(s.port, values)
        load_s = time.monotonic() - t
        time.sleep(0.5)
        n = c.call("DBSIZE")
        if n != len(values):
            raise RuntimeError(f"{kind}: DBSIZE {n}, expected {len(values)}")
        rss1 = proc_rss(s.pid)
        used1 = int(c.info("memory")["used_memory"])
        c.close()
    return {
        "rss_bytes_per_key": (rss1 - rss0) / len(values),
        "used_memory_bytes_per_key": (used1 - used0) / len(values),
        "rss_bytes_per_key_warm": (rss1 - rss0w) / len(values),
        "used_memory_bytes_per_key_warm": (used1 - used0w) / len(values),
        "rss_warm": rss0w, "used_memory_warm": used0w,
        "rss_empty": rss0, "rss_loaded": rss1, "used_memory_empty": used0,
        "used_memory_loaded": used1, "load_seconds": load_s,
    }


# ---------------------------------------------------------------------------------------------
# deadbolt with two reactors: keys local to the connection's reactor vs all on the other one.


def tags_by_shard(count, shards=2):
    """`count` distinct hash tags per shard (slot ranges split evenly, as deadbolt does)."""
    out = {s: [] for s in range(shards)}
    i = 0
    while any(len(v) < count for v in out.values()):
        tag = "t%d" % i
        shard = (crc16(tag.encode()) % 16384) * shards // 16384
        if len(out[shard]) < count:
            out[shard].append(tag)
        i += 1
    return out


def run_two_reactors(cfg, mode, procs, pipeline, duration, settle=0.5):
    """mode: local | remote | mixed | split. Throughput from the server's own counters."""
    with Server("deadbolt", cfg, threads=2) as s:
        ctl = Resp(s.port)

        def counters():
            st = ctl.info("stats")
            return (int(st["total_connections_received"]), int(st["total_commands_processed"]),
                    int(st.get("cross_shard_messages", 0)))

        def wait_accepts(n):
            deadline = time.monotonic() + 10
            while counters()[0] < n:
                if time.monotonic() > deadline:
                    raise RuntimeError("lockload connections were not accepted")
                time.sleep(0.005)

        base = prio(cfg) + [
            "taskset", "-c", "0-%d" % (os.cpu_count() - 1), cfg.lockload, "-p", str(s.port),
            "-q", "--json", "-w", "acquire", "--keyspace", str(cfg.keyspace), "-P",
            str(pipeline), "-d", "3600"]
        loads, dummies = [], []
        tags = tags_by_shard(procs)
        # deadbolt hands accepted connections to reactors round-robin (accept i -> reactor
        # i % 2). A lockload process opens a setup connection and then its worker; start one
        # single-connection lockload at a time, padding with an idle connection when needed so
        # that worker j lands on reactor j % 2, with keys of one hash tag whose slot is on that
        # reactor's shard (local) or on the other one (remote), or untagged keys (mixed: half
        # of them remote). `split`: even workers local, odd ones remote.
        for j in range(procs):
            reactor = j % 2
            accepted = counters()[0]
            if (accepted + 1) % 2 != reactor:
                dummies.append(Resp(s.port))
                accepted += 1
                wait_accepts(accepted)
            extra = []
            if mode != "mixed":
                local = mode == "local" or (mode == "split" and j % 4 < 2)
                shard = reactor if local else 1 - reactor
                extra = ["--prefix", "{%s}lock:" % tags[shard][j // 2]]
            loads.append(spawn(base + ["-c", "1"] + extra, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL))
            wait_accepts(accepted + 2)
        time.sleep(settle)
        a = counters()
        a_t, a_cpu = time.monotonic(), proc_cpu(s.pid)
        time.sleep(duration)
        b = counters()
        b_t, b_cpu = time.monotonic(), proc_cpu(s.pid)
        dead = [p.returncode for p in loads if p.poll() is not None]
        for p in loads:
            stop(p, grace=1.0)
        for d in dummies:
            d.close()
        ctl.close()
        if dead:
            raise RuntimeError(f"lockload exited early in two-reactor {mode} run: {dead}")
    ops = (b[1] - a[1] - 1) / (b_t - a_t)  # less the INFO in the window
    return {
        "ops_per_sec": ops,
        "cross_shard_messages_per_op": (b[2] - a[2]) / max(1, b[1] - a[1]),
        "server_cpu_util": (b_cpu - a_cpu) / (b_t - a_t),
        "server_cpu_us_per_op": (b_cpu - a_cpu) / max(1, b[1] - a[1]) * 1e6,
    }


# ---------------------------------------------------------------------------------------------
# memtier_benchmark, when present (not packaged in Debian 12).


def run_memtier(cfg, server, pipeline, duration):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        argv = prio(cfg) + [
            "taskset", "-c", LOAD_CORE, "memtier_benchmark", "-s", "127.0.0.1", "-p",
            str(server.port), "--protocol=redis", "-t", "1", "-c", "50",
                f"--pipeline={pipeline}", "--ratio=1:0", f"--test-time={duration}",
                "--key-pattern=R:R", f"--key-maximum={cfg.keyspace}", "-d", "36",
                "--hide-histogram", f"--json-out-file={f.name}"]
        p = spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = p.communicate(timeout=duration + 60)
        _children.remove(p)
        if p.returncode != 0:
            raise RuntimeError("memtier_benchmark failed: " + err.decode(errors="replace")[-500:])
        d = json.load(open(f.name))
    totals = d["ALL STATS"]["Totals"]
    p99 = None
    for k, v in totals.items():
        if k.lower().startswith("percentile latencies") and isinstance(v, dict):
            p99 = v.get("p99.00")
    return {"ops_per_sec": totals.get("Ops/sec"), "p99_ms": p99}



# ---------------------------------------------------------------------------------------------
# --suite cross-shard: issue 12's done-when in one run ("Cores that pay", bench/README.md).

# The suite's server configurations are compare_report.XS_CONFIGS: deadbolt with its defaults
# and untagged keys, the same with each connection's keys on its own reactor's shard, deadbolt
# --threads 1 on one pinned core (the reference), redis-server on one pinned core.
XS_COMMAND = ("SET", "lock:__rand_int__", "tok", "NX", "PX", "30000")


def xs_server(cfg, config):
    if config in (XS_DEFAULT, XS_TAGGED):
        return Server("deadbolt", cfg, threads=0)
    if config == XS_ONE:
        return Server("deadbolt", cfg, threads=1)
    return Server("redis", cfg)


def local_conn_prefixes(ctl):
    """--conn-prefixes for one single-threaded lockload started next, so that each of its
    connections gets keys {tag}lock:<n> whose slot is on the shard of the reactor the connection
    lands on. deadbolt hands accepted connections round-robin (accept i -> reactor i mod R, i
    counted from the server's start, = total_connections_received so far); lockload opens its
    setup connection first, then its worker's connections one after another."""
    st, srv = ctl.info("stats"), ctl.info("server")
    reactors = int(srv.get("reactor_threads", os.cpu_count()))
    accepted = int(st["total_connections_received"])
    tags = tags_by_shard(1, reactors)
    first = accepted + 1  # after lockload's setup connection
    return reactors, ",".join("{%s}lock:" % tags[(first + j) % reactors][0]
                              for j in range(reactors))


def run_redis_benchmark(cfg, server, pipeline, requests, cores):
    """redis-benchmark SET lock:__rand_int__ tok NX PX 30000 (-r keyspace): its own throughput,
    the server's CPU over the whole run from /proc divided by the commands the server counted."""
    ctl = Resp(server.port)
    try:
        a_cmds, a_x = server_counters(ctl)
        argv = prio(cfg) + ["taskset", "-c", cores, cfg.redis_benchmark, "-p", str(server.port),
                            "-c", str(cfg.connections), "-P", str(pipeline), "-r",
                            str(cfg.keyspace), "-n", str(int(requests)), "--csv"] + list(XS_COMMAND)
        a_cpu, a_busy, a_t = proc_cpu(server.pid), machine_busy(), time.monotonic()
        a_kids = children_cpu()
        proc = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = proc.communicate(timeout=cfg.rb_timeout)
        except subprocess.TimeoutExpired:
            stop(proc, grace=1.0)
            raise RuntimeError(f"redis-benchmark took over {cfg.rb_timeout:g} s: " + " ".join(argv))
        _children.remove(proc)
        b_cpu, b_busy, b_t = proc_cpu(server.pid), machine_busy(), time.monotonic()
        rb_cpu = children_cpu() - a_kids  # redis-benchmark's own, now that it was waited for
        b_cmds, b_x = server_counters(ctl)
    finally:
        ctl.close()
    if proc.returncode != 0:
        raise RuntimeError("redis-benchmark failed (%d): %s" % (
            proc.returncode, err.decode(errors="replace")[-1000:]))
    rps = None
    for line in out.decode(errors="replace").splitlines():
        cols = [c.strip('"') for c in line.split('","')]
        if len(cols) >= 2 and cols[0].startswith("SET "):
            rps = float(cols[1])
            p99 = float(cols[6]) * 1000 if len(cols) > 6 else None
    if rps is None:
        raise RuntimeError("no result in redis-benchmark's output: %r" % out[-500:])
    cmds = max(1, b_cmds - a_cmds - 1)
    span = b_t - a_t
    cpu = b_cpu - a_cpu
    return {
        "ops_per_sec": rps, "p99_us": p99, "requests": int(requests),
        "server_cpu_us_per_op": cpu / cmds * 1e6,
        "server_cpu_util": cpu / span,
        "cross_shard_messages_per_op": (b_x - a_x) / cmds,
        "load_cpu_util": rb_cpu / span,
        "background_cores": max(0.0, (b_busy - a_busy - cpu - rb_cpu) / span),
    }


def line_round_trip_ns(cfg):
    """What a cache line's round trip between CPUs 0 and 1 costs now (bench/programs/core_pingpong.cc),
    or None."""
    if not cfg.pingpong or (os.cpu_count() or 1) < 2:
        return None
    try:
        out = subprocess.run([cfg.pingpong, "0", "1", "20000"], capture_output=True, text=True,
                             timeout=5).stdout.split()
        return float(out[1]) if len(out) == 2 and out[0] == "round_trip_ns" else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def cross_shard_suite(cfg):
    """Issue 12's side-by-side: returns the data for compare_report.cross_shard_report."""
    depths = [int(x) for x in cfg.xs_depths.split(",") if x]
    loads = [f"lockload P{d}" for d in depths] + [f"redis-benchmark P{d}" for d in depths]
    data = {"suite": "cross-shard", "runs": {n: {c: [] for c in XS_CONFIGS} for n in loads},
            "failures": [], "notes": []}
    if not cfg.redis_benchmark:
        data["notes"].append("redis-benchmark is not installed: its rows are missing.")
    common = ["-w", "acquire", "-c", str(cfg.connections), "-t", "1", "--keyspace",
              str(cfg.keyspace)]
    started = time.monotonic()
    for rnd in range(cfg.rounds):
        # deadbolt default, --threads 1 and redis alternate; the order flips every round (and
        # tagged/untagged with it), so a machine growing busier or quieter hits all of them.
        order = (XS_DEFAULT, XS_TAGGED, XS_ONE, XS_REDIS)
        if rnd % 2:
            order = tuple(reversed(order))
        for d in depths:
            for config in order:
                unpinned = config in (XS_DEFAULT, XS_TAGGED)
                cores = ALL_CORES if unpinned else LOAD_CORE
                jobs = [("lockload", f"lockload P{d}")]
                if cfg.redis_benchmark and config != XS_TAGGED:
                    jobs.append(("redis-benchmark", f"redis-benchmark P{d}"))
                for tool, name in jobs:
                    if cfg.quiet_wait > 0:
                        wait_quiet(cfg.quiet_wait)
                    probe = line_round_trip_ns(cfg)
                    try:
                        with xs_server(cfg, config) as srv:
                            ctl = Resp(srv.port)
                            try:
                                if tool == "lockload":
                                    args = common + ["-P", str(d)]
                                    if config == XS_TAGGED:
                                        reactors, prefixes = local_conn_prefixes(ctl)
                                        # Each prefix is a keyspace of its own: together as many
                                        # keys as the untagged run's (a bigger table costs more
                                        # per lookup, which would flatter the ratio).
                                        ks = common.index("--keyspace") + 1
                                        args[ks] = str(max(1, cfg.keyspace // reactors))
                                        args += ["--conn-prefixes", prefixes]
                                    res = run_lockload(cfg, srv, args, cfg.warmup, cfg.duration,
                                                       cores=cores,
                                                       ctl=ctl if config != XS_REDIS else None)
                                else:
                                    # Enough requests for about --duration s at the rate
                                    # lockload got from this server at this depth this round.
                                    got = data["runs"][f"lockload P{d}"][config]
                                    rate = got[-1]["ops_per_sec"] if got and got[-1] else (
                                        100_000 if d == 1 else 500_000)
                                    res = run_redis_benchmark(
                                        cfg, srv, d, max(10_000, rate * cfg.duration), cores)
                            finally:
                                ctl.close()
                    except (RuntimeError, OSError, ValueError, KeyError) as e:
                        res = None
                        msg = f"round {rnd + 1} {name} {config}: {e}"
                        data["failures"].append(msg)
                        log("FAILED " + msg)
                    if res:
                        res["line_round_trip_ns"] = probe
                    data["runs"][name][config].append(res)
                    if res:
                        x = res.get("cross_shard_messages_per_op")
                        log(f"round {rnd + 1}/{cfg.rounds} {name:19s} {config:20s} "
                            f"{res['ops_per_sec']:>11,.0f} ops/s  cpu "
                            f"{res['server_cpu_us_per_op']:6.3f} us/op "
                            f"({res['server_cpu_util'] * 100:3.0f}% of a core)"
                            + (f"  xshard {x:.2f}/op" if x is not None and config != XS_REDIS
                               else "")
                            + (f"  line {probe:.0f} ns" if probe else ""))
    elapsed = time.monotonic() - started
    log(f"measured in {elapsed:.0f} s")
    data["meta"] = collect_meta(cfg, None, elapsed, depths, [])
    data["meta"]["redis_benchmark"] = cfg.redis_benchmark
    return data


# ---------------------------------------------------------------------------------------------
# The plan.


def supports(cfg, command_args):
    with Server("deadbolt", cfg) as s:
        c = Resp(s.port)
        r = c.call(*command_args)
        c.close()
    return not isinstance(r, Exception), r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deadbolt", default="build/release/server/deadbolt-server")
    ap.add_argument("--lockload", default="build/release/tools/lockload")
    ap.add_argument("--redis", default="redis-server")
    ap.add_argument("--pingpong", default="build/release/bench/core_pingpong",
                    help="cross-shard suite: the cache-line round trip probe run before each "
                         "run ('' to leave it out)")
    ap.add_argument("--null-responder", default="build/release/bench/null_responder",
                    help="the do-nothing responder run beside both servers at P1/P16/P64, the "
                         "floor under any server's CPU per op here ('' to leave it out)")
    ap.add_argument("--quick", action="store_true", help="one short round (smoke test)")
    ap.add_argument("--rounds", type=int, help="rounds (3; 1 with --quick)")
    ap.add_argument("--duration", type=float, help="seconds measured per run (3; 1 with --quick)")
    ap.add_argument("--warmup", type=float, help="unmeasured seconds first (1; 0.3 with --quick)")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--suite", choices=("main", "cross-shard"), default="main",
                    help="main: the comparison of RESULTS.md's main sections (default); "
                         "cross-shard: issue 12's 'Cores that pay' — deadbolt with its defaults "
                         "(untagged and reactor-local keys), --threads 1 and redis, lockload and "
                         "redis-benchmark at --xs-depths (its own JSON, bench/cross_shard.json, "
                         "and its own section of RESULTS.md)")
    ap.add_argument("--keyspace", type=int,
                    help="keys lock:0..K-1 of every run (10000, lockload's default; 100000 with "
                         "--suite cross-shard, as the issue's load): after the first K acquires "
                         "nearly every acquire finds its lock held")
    ap.add_argument("--free-keyspace", type=int, default=100_000_000,
                    help="keys of the 'free locks' acquire runs (100000000): nearly every "
                         "acquire takes a free lock and the table grows all through the run")
    ap.add_argument("--free-depths", default="16,64",
                    help="pipeline depths of the 'free locks' runs ('' for none)")
    ap.add_argument("--rates", default="20000,100000",
                    help="open-loop offered loads, requests/s, comma-separated")
    ap.add_argument("--open-rounds", type=int,
                    help="rounds of the open-loop runs (7; 1 with --quick): their p99 moves "
                         "with every hiccup of the machine, so they get more rounds than the rest")
    ap.add_argument("--depths", default="1,4,16,64,256", help="pipeline depths of the sweep")
    ap.add_argument("--memory-keys", type=int, default=1_000_000,
                    help="keys loaded for memory per key (1000000)")
    ap.add_argument("--two-reactor-procs", type=int, default=8,
                    help="single-connection lockloads in the two-reactor runs (8)")
    ap.add_argument("--nice", type=int, default=-20 if os.geteuid() == 0 else 0,
                    help="niceness of servers and load generators, and of the autogroups they "
                         "run in (-20 as root, else 0): on a machine busy with other work they "
                         "then keep their cores; 0 to leave the scheduler alone")
    ap.add_argument("--quiet-wait", type=float, default=0.0,
                    help="before each run, wait up to this many seconds for the machine's other "
                         "load to drop under 0.3 cores (0: do not wait)")
    ap.add_argument("--out", default="bench/RESULTS.md", help="'-' to write no report")
    ap.add_argument("--png", default="bench/pipeline.png")
    ap.add_argument("--json", dest="json_out",
                    help="bench/results.json (bench/cross_shard.json with --suite cross-shard)")
    ap.add_argument("--redis-benchmark", default="redis-benchmark",
                    help="cross-shard suite: the redis-benchmark binary ('' to leave it out)")
    ap.add_argument("--xs-depths", default="1,16",
                    help="cross-shard suite: pipeline depths (1,16)")
    ap.add_argument("--rb-timeout", type=float, default=120.0,
                    help="cross-shard suite: longest a redis-benchmark run may take, s (120)")
    ap.add_argument("--note", action="append", default=[],
                    help="a sentence for the report's notes (repeatable), e.g. what the binary is")
    ap.add_argument("--from-json", metavar="PATH",
                    help="measure nothing: redo the report and plot from a results.json")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: sweep, cycle, "
                    "open, memory, reactors, memtier")
    cfg = ap.parse_args()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)

    os.chdir(REPO)
    xs = cfg.suite == "cross-shard"
    cfg.keyspace = cfg.keyspace or (100_000 if xs else 10_000)
    cfg.json_out = cfg.json_out or ("bench/cross_shard.json" if xs else "bench/results.json")
    if cfg.from_json:
        with open(cfg.from_json) as f:
            data = json.load(f)
        if data.get("suite") == "cross-shard":
            cross_shard_report(data, cfg)
        else:
            report(data, cfg)
        return
    q = cfg.quick
    cfg.rounds = cfg.rounds or (1 if q else 3)
    cfg.open_rounds = cfg.open_rounds or (1 if q else max(7, cfg.rounds))
    cfg.duration = cfg.duration or ((1.5 if xs else 1.0) if q else 3.0)
    cfg.warmup = cfg.warmup if cfg.warmup is not None else (0.5 if xs else 0.3) if q else 1.0
    cfg.memory_keys = cfg.memory_keys or 1_000_000
    rates = [float(x) for x in cfg.rates.split(",") if x]
    depths = [int(x) for x in cfg.depths.split(",") if x]
    skip = set(x for x in cfg.skip.split(",") if x)
    for path, what in ((cfg.deadbolt, "--deadbolt"), (cfg.lockload, "--lockload")):
        if not os.access(path, os.X_OK):
            sys.exit(f"compare.py: {what} {path} is not an executable (build it first: "
                     "scripts/build.sh release)")
    if shutil.which(cfg.redis) is None:
        sys.exit(f"compare.py: {cfg.redis} not found (apt-get install redis-server)")
    cfg.redis = shutil.which(cfg.redis)
    notes = list(cfg.note)
    # Others may rebuild the binaries while this runs: use private copies for the whole run.
    tmp = tempfile.mkdtemp(prefix="deadbolt-compare-")
    atexit.register(shutil.rmtree, tmp, True)
    cfg.deadbolt_path = os.path.relpath(os.path.abspath(cfg.deadbolt), REPO)
    cfg.deadbolt_mtime = datetime.datetime.fromtimestamp(os.path.getmtime(cfg.deadbolt)) \
        .astimezone().strftime("%Y-%m-%d %H:%M %Z")
    with open(cfg.deadbolt, "rb") as f:
        cfg.deadbolt_sha = hashlib.sha256(f.read()).hexdigest()[:12]
    cfg.deadbolt = shutil.copy2(cfg.deadbolt, os.path.join(tmp, "deadbolt-server"))
    cfg.lockload = shutil.copy2(cfg.lockload, os.path.join(tmp, "lockload"))
    if cfg.null_responder and os.access(cfg.null_responder, os.X_OK):
        cfg.null_responder = shutil.copy2(cfg.null_responder, os.path.join(tmp, "null_responder"))
    else:
        if cfg.null_responder:
            notes.append(f"{cfg.null_responder} is not built: no floor measured.")
        cfg.null_responder = None
    if cfg.pingpong and os.access(cfg.pingpong, os.X_OK):
        cfg.pingpong = shutil.copy2(cfg.pingpong, os.path.join(tmp, "core_pingpong"))
    else:
        if cfg.pingpong and xs:
            notes.append(f"{cfg.pingpong} is not built: no cache-line round trips measured.")
        cfg.pingpong = None
    os.sched_setaffinity(0, {int(LOAD_CORE)})  # keep this script off the server's core

    if xs:
        cfg.redis_benchmark = shutil.which(cfg.redis_benchmark) if cfg.redis_benchmark else None
        data = cross_shard_suite(cfg)
        data["notes"] = notes + data["notes"]
        cross_shard_report(data, cfg)  # writes --json too
        return

    has_delifeq, r = supports(cfg, ("DELIFEQ", "compare:probe", "x"))
    release = "delifeq" if has_delifeq else "evalsha"
    if not has_delifeq:
        has_evalsha, _ = supports(cfg, ("SCRIPT", "LOAD", "return 1"))
        notes.append(f"deadbolt answered DELIFEQ with `{r}`: its cycle used "
                     + ("EVALSHA like Redis." if has_evalsha else "EVALSHA, which it lacks too."))

    common = ["-c", str(cfg.connections), "--keyspace", str(cfg.keyspace)]
    runs = []  # (name, lockload args per server)
    for d in depths if "sweep" not in skip else (1, 16, 64):
        # The floor beside the targets' depths: the null responder under the same load.
        kinds = SERVERS + ((NULL,) if cfg.null_responder and d in (1, 16, 64) else ())
        runs.append((f"acquire P{d}", {k: ["-w", "acquire", "-P", str(d)] + common
                                       for k in kinds}))
    for d in [int(x) for x in cfg.free_depths.split(",") if x]:
        runs.append((f"acquire P{d} free", {
            k: ["-w", "acquire", "-P", str(d), "-c", str(cfg.connections), "--keyspace",
                str(cfg.free_keyspace)] for k in SERVERS}))
    if "cycle" not in skip:
        for d in (1, 16):
            cycle = ["-w", "cycle", "-P", str(d)] + common
            by = {"deadbolt": cycle + ["--release", release]}
            if release != "evalsha":
                by[DEADBOLT_EVALSHA] = cycle + ["--release", "evalsha"]
            by["redis"] = cycle + ["--release", "evalsha"]
            runs.append((f"cycle P{d}", by))
    if "open" not in skip:
        for r_ in rates:
            runs.append((f"open {r_:g}/s", {k: ["-w", "acquire", "--rate", str(int(r_))] + common
                                            for k in SERVERS}))

    data = {"runs": {}, "memory": {"deadbolt": [], "redis": []}, "reactors": {}, "memtier": {}}
    for name, args in runs:
        data["runs"][name] = {k: [] for k in args}
    values = make_values(cfg.memory_keys) if "memory" not in skip else None
    started = time.monotonic()
    open_runs = {name for name, _ in runs if name.startswith("open ")}
    for rnd in range(max(cfg.rounds, cfg.open_rounds if open_runs else 0)):
        order = SERVERS if rnd % 2 == 0 else tuple(reversed(SERVERS))
        extra = rnd >= cfg.rounds  # a round of the open-loop runs only
        for name, args in runs:
            if (name in open_runs and rnd >= cfg.open_rounds) or (extra and name not in open_runs):
                continue
            for kind in (tuple(args) if rnd % 2 == 0 else tuple(reversed(args))):
                if cfg.quiet_wait > 0:
                    wait_quiet(cfg.quiet_wait)
                with Server(kind.split()[0], cfg) as s:
                    res = run_lockload(cfg, s, args[kind], cfg.warmup, cfg.duration)
                data["runs"][name][kind].append(res)
                log(f"round {rnd + 1}/{cfg.rounds if not extra else cfg.open_rounds} "
                    f"{name:14s} {kind:16s} "
                    f"{res['ops_per_sec']:>11,.0f} ops/s  p99 {res['p99_us']:>9.1f} us  "
                    f"cpu {res['server_cpu_us_per_op']:6.3f} us/op "
                    f"({res['server_cpu_util'] * 100:3.0f}% of a core)  "
                    f"bg {res['background_cores']:.2f} cores  err {res['errors']}")
        if "memory" not in skip and not extra:
            for kind in order:
                m = measure_memory(cfg, kind, values)
                data["memory"][kind].append(m)
                log(f"round {rnd + 1}/{cfg.rounds} memory {kind:8s} "
                    f"rss {m['rss_bytes_per_key']:.1f} B/key  used_memory "
                    f"{m['used_memory_bytes_per_key']:.1f} B/key  (loaded in {m['load_seconds']:.1f} s)")
        if "reactors" not in skip and not extra:
            for mode in ("local", "remote", "split", "mixed"):
                if cfg.quiet_wait > 0:
                    wait_quiet(cfg.quiet_wait)
                r2 = run_two_reactors(cfg, mode, cfg.two_reactor_procs, 16, cfg.duration)
                data["reactors"].setdefault(mode, []).append(r2)
                log(f"round {rnd + 1}/{cfg.rounds} 2 reactors {mode:6s} "
                    f"{r2['ops_per_sec']:>11,.0f} ops/s  cross-shard msgs/op "
                    f"{r2['cross_shard_messages_per_op']:.2f}  cpu {r2['server_cpu_us_per_op']:.3f} us/op")
    if "memtier" not in skip:
        if shutil.which("memtier_benchmark"):
            for kind in SERVERS:
                with Server(kind, cfg) as s:
                    data["memtier"][kind] = run_memtier(cfg, s, 16, int(max(1, cfg.duration)))
        else:
            notes.append("memtier_benchmark is not on PATH (Debian 12 does not package it): "
                         "skipped.")
    elapsed = time.monotonic() - started
    log(f"measured in {elapsed:.0f} s")

    data["meta"] = collect_meta(cfg, release, elapsed, depths, rates)
    data["notes"] = notes
    if cfg.json_out != "-":
        with open(cfg.json_out, "w") as f:
            json.dump(data, f, indent=1)
    report(data, cfg)


def collect_meta(cfg, release, elapsed, depths, rates):
    def sh(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, cwd=REPO,
                                  timeout=10).stdout.strip()
        except Exception:
            return ""
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    try:
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, cwd=REPO, timeout=10).stdout
    except Exception:
        dirty = ""
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "commit": sh("git", "rev-parse", "--short", "HEAD"),
        "dirty": [l[3:] for l in dirty.splitlines()],
        "nproc": os.cpu_count(),
        "cpu": model,
        "kernel": platform.release(),
        "redis": sh(cfg.redis, "--version"),
        "deadbolt_binary": cfg.deadbolt_path,
        "deadbolt_mtime": cfg.deadbolt_mtime,
        "deadbolt_sha256": cfg.deadbolt_sha,
        "release": release,
        "suite": getattr(cfg, "suite", "main"),
        "quiet_wait": cfg.quiet_wait,
        "rounds": cfg.rounds, "open_rounds": cfg.open_rounds, "duration": cfg.duration,
        "warmup": cfg.warmup,
        "connections": cfg.connections, "keyspace": cfg.keyspace, "nice": cfg.nice,
        "free_keyspace": cfg.free_keyspace,
        "memory_keys": cfg.memory_keys, "elapsed_s": elapsed, "quick": cfg.quick,
        "depths": depths, "rates": rates, "two_reactor_procs": cfg.two_reactor_procs,
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }


# ---------------------------------------------------------------------------------------------
# Summaries.


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        main()
    finally:
        _kill_children()
