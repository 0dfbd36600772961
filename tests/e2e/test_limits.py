"""Limits a client can reach without a password: descriptors, huge multi-key commands, memory
kept after FLUSHALL (issue 17, items 5, 7 and 9).

Descriptors. A server started under `ulimit -n 256` (through prlimit) fits maxclients to the
limit at start (CONFIG GET shows the lowered value), answers the clients over it with
`-ERR max number of clients reached`, keeps serving the others and stays idle: little CPU over
a window and a short log. Before, it left maxclients at 10000, ran out of descriptors and spun
on `accept failed: Too many open files` (a core and megabytes of log a second), answering no
one. When descriptors run out anyway (maxclients raised past the limit by CONFIG SET),
accepting pauses instead of spinning, the warning is rate-limited, and the waiting connections
are served once descriptors are free again (deadbolt-only).

Huge multi-key commands. A 1M-key EXISTS (and TOUCH, DEL) answers correctly, and its peak
memory (VmHWM) stays within a bound that the per-key lock names and transaction parts used to
exceed. (That other clients are served while it runs is measured, not asserted, by
bench/multikey.py: see bench/MULTIKEY.md.)

FLUSHALL. After filling the server and flushing it, used_memory and the RSS come back near
where they started, not near the filled size.

Against redis-server (DEADBOLT_AGAINST_REDIS=1) the Redis behaviours pass too; the
deadbolt-only parts skip."""

import contextlib
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import PONG, encode_command  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS
MAX_CLIENTS_REPLY = b"-ERR max number of clients reached\r\n"
NOFILE = 256
CLK_TCK = os.sysconf("SC_CLK_TCK")


def setUpModule():
    harness.server_command(0)  # DEADBOLT_SERVER or DEADBOLT_AGAINST_REDIS must say what to run


@contextlib.contextmanager
def limited_nofile(n):
    """Servers started inside run under RLIMIT_NOFILE n:n (prlimit execs the server, so the pid
    and session stay the server's)."""
    orig = harness.server_command
    harness.server_command = lambda port: ["prlimit", "--nofile=%d:%d" % (n, n), "--"] + orig(port)
    try:
        yield
    finally:
        harness.server_command = orig


def cpu_ticks(pid):
    """utime + stime of a process, in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def proc_status(pid, field):
    """A kB field of /proc/<pid>/status (VmRSS, VmHWM), in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


def config_int(c, name):
    reply = c.call("CONFIG", "GET", name)
    return int(reply[1])


def info_field(c, field):
    text = c.call("INFO", "memory").decode()
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    raise AssertionError("no %s in INFO memory" % field)


def measures_memory(c):
    """Memory bounds are about the allocators servers run with (deadbolt's mimalloc, Redis's
    jemalloc): a sanitizer build (libc malloc under ASan, with its quarantine of freed memory)
    is checked for correctness only."""
    allocator = info_field(c, "mem_allocator")
    return allocator.startswith("mimalloc") or allocator.startswith("jemalloc")


def info_int(c, field):
    text = c.call("INFO", "memory").decode()
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    raise AssertionError("no %s in INFO memory" % field)


class ServerTest(unittest.TestCase):
    """Each test starts its own server (self.server) and stops it at the end."""

    def start(self, extra_args=(), nofile=None):
        self.server = harness.ServerProcess(extra_args)
        if nofile:
            with limited_nofile(nofile):
                self.server.start()
        else:
            self.server.start()
        self.addCleanup(self.stop)
        self.conns = []
        return self.server

    def stop(self):
        for c in self.conns:
            c.close()
        problem = self.server.stop()
        self.assertIsNone(problem, problem)

    def connect(self, timeout=harness.IO_TIMEOUT):
        c = harness.RespConn(self.server.port, timeout=timeout)
        self.conns.append(c)
        return c

    def assert_idle(self, window=1.0, max_share=0.25):
        """The server used less than max_share of a core over `window` seconds."""
        pid = self.server.proc.pid
        before = cpu_ticks(pid)
        time.sleep(window)
        used = (cpu_ticks(pid) - before) / CLK_TCK
        self.assertLess(used, max_share * window,
                        "server used %.2fs of CPU in %.1fs while idle" % (used, window))

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result else 0
        super().run(result)
        if result and len(result.failures) + len(result.errors) > before and \
                getattr(self, "server", None) is not None:
            sys.stderr.write("\n--- server log (tail) ---\n%s\n" % self.server.log_tail())


class DescriptorLimitTest(ServerTest):

    def test_maxclients_fits_the_descriptor_limit(self):
        self.start(nofile=NOFILE)
        first = self.connect()
        maxclients = config_int(first, "maxclients")
        # Lowered to fit, with room for the server's own descriptors (Redis keeps 32).
        self.assertGreater(maxclients, NOFILE // 2)
        self.assertLessEqual(maxclients, NOFILE - 32)
        # More connections than fit, one at a time: the first maxclients are served, every
        # later one is told why and closed.
        served, refused = [first], 0
        for _ in range(maxclients + 60 - 1):
            c = self.connect(timeout=5.0)
            c.send(encode_command("PING"))
            reply = c.read_reply()
            if reply == PONG:
                served.append(c)
            else:
                self.assertEqual(reply, MAX_CLIENTS_REPLY)
                self.assertEqual(c.read_until_closed(5.0), b"")
                refused += 1
                c.close()
        self.assertEqual(len(served), maxclients)
        self.assertEqual(refused, 60)
        # Those served still are.
        for c in served:
            c.send(encode_command("PING"))
        for c in served:
            self.assertEqual(c.read_reply(), PONG)
        # Idle afterwards, with a short log.
        self.assert_idle()
        self.assertLess(len(self.server.log_text()), 20000, self.server.log_tail())
        # A client gone makes room for one more.
        served.pop().close()
        deadline = time.monotonic() + 10
        while True:
            c = self.connect(timeout=5.0)
            reply = c.cmd("PING")
            if reply == PONG:
                break
            self.assertEqual(reply, MAX_CLIENTS_REPLY)
            c.close()
            self.assertLess(time.monotonic(), deadline, "no room after a client left")
            time.sleep(0.05)

    @unittest.skipIf(AGAINST_REDIS, "deadbolt-only: Redis refuses CONFIG SET maxclients over "
                     "the descriptor limit")
    def test_out_of_descriptors_pauses_accept(self):
        self.start(nofile=NOFILE)
        admin = self.connect()
        self.assertEqual(admin.cmd("CONFIG", "SET", "maxclients", "10000"), harness.OK)
        # Far more connections than descriptors: the kernel completes them (the backlog), the
        # server cannot accept them all.
        extra = []
        for _ in range(400):
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5.0)
            extra.append(s)
        for s in extra:
            s.sendall(encode_command("PING"))
        try:
            # Out of descriptors, it neither spins nor floods its log, and still serves.
            time.sleep(0.3)
            self.assert_idle()
            self.assertEqual(admin.cmd("PING"), PONG)
            log = self.server.log_text()
            self.assertLess(len(log), 20000, self.server.log_tail())
            self.assertIn("Too many open files", log)
        finally:
            # Descriptors freed: every connection still open is served in the end.
            answered = 0
            for s in extra[:200]:
                s.close()
            for s in extra[200:]:
                s.settimeout(10.0)
                buf = b""
                while not buf.endswith(b"\r\n"):
                    chunk = s.recv(100)
                    if not chunk:
                        break
                    buf += chunk
                if buf == PONG:
                    answered += 1
                s.close()
        self.assertEqual(answered, 200)


HUGE_KEYS = 1000000


def send_set_pipeline(c, commands, batch=5000):
    for i in range(0, len(commands), batch):
        chunk = commands[i:i + batch]
        c.send(b"".join(encode_command(*cmd) for cmd in chunk))
        for reply in c.read_replies(len(chunk)):
            if reply != harness.OK:
                raise AssertionError("unexpected reply %r" % reply)


class HugeMultiKeyTest(ServerTest):
    """One EXISTS with a million keys (12 MB), half of which exist."""

    def setUp(self):
        self.start()
        self.c = self.connect(timeout=120.0)
        self.names = ["key:%07d" % i for i in range(HUGE_KEYS)]
        for i in range(0, HUGE_KEYS // 2, 10000):
            args = ["MSET"]
            for k in self.names[i:min(i + 10000, HUGE_KEYS // 2)]:
                args += [k, "v"]
            self.assertEqual(self.c.cmd(*args), harness.OK)

    def test_huge_exists_is_right_and_cheap_in_memory(self):
        pid = self.server.proc.pid
        before = max(proc_status(pid, "VmHWM"), proc_status(pid, "VmRSS"))
        payload = encode_command("EXISTS", *self.names)
        self.c.send(payload)
        self.assertEqual(self.c.read_reply(), harness.integer(HUGE_KEYS // 2))
        growth = proc_status(pid, "VmHWM") - before
        if not measures_memory(self.c):
            growth = 0  # a sanitizer build: see measures_memory
        # The request is 18 MB; its arguments, parsed and copied for the shards, take a few
        # times their 12 MB of keys (deadbolt now: about 80 MB; Redis: about 45 MB). With a
        # lock name, a transaction part and a lock-table entry per key it was 190-210 MB.
        self.assertLess(growth, 6 * len(payload),
                        "peak RSS grew by %d MB for one %d-key EXISTS"
                        % (growth >> 20, HUGE_KEYS))
        # And the other multi-key commands over the same keys agree.
        self.assertEqual(self.c.cmd("TOUCH", *self.names), harness.integer(HUGE_KEYS // 2))
        reply = harness.decode(self.c.cmd("MGET", *self.names[HUGE_KEYS // 2 - 5:
                                                               HUGE_KEYS // 2 + 5]))
        self.assertEqual(reply, [b"v"] * 5 + [None] * 5)
        self.assertEqual(self.c.cmd("DEL", *self.names), harness.integer(HUGE_KEYS // 2))
        self.assertEqual(self.c.cmd("DBSIZE"), harness.integer(0))


class FlushMemoryTest(ServerTest):
    """After FLUSHALL (and FLUSHDB) memory comes back near where it started."""

    def fill(self, c):
        small = "x" * 100
        send_set_pipeline(c, [("SET", "k:%d" % i, small) for i in range(300000)])
        big = "y" * (256 * 1024)
        send_set_pipeline(c, [("SET", "big:%d" % i, big) for i in range(200)], batch=20)

    def check_drop(self, c, flush):
        pid = self.server.proc.pid
        base_used, base_rss = info_int(c, "used_memory"), proc_status(pid, "VmRSS")
        self.fill(c)
        full_used, full_rss = info_int(c, "used_memory"), proc_status(pid, "VmRSS")
        if measures_memory(c):
            self.assertGreater(full_used - base_used, 80 << 20)
        self.assertEqual(c.cmd(*flush), harness.OK)
        self.assertEqual(c.cmd("DBSIZE"), harness.integer(0))
        if harness.AGAINST_REDIS:
            # jemalloc hands freed pages back over seconds (its decay), so Redis's RSS right
            # after a flush depends on timing; MEMORY PURGE does it at once. deadbolt must give
            # the memory back by itself.
            c.cmd("MEMORY", "PURGE")
        used, rss = info_int(c, "used_memory"), proc_status(pid, "VmRSS")
        if not measures_memory(c):
            return  # a sanitizer build: see measures_memory
        # Within a quarter of what the data took (Redis and deadbolt now: a few percent;
        # deadbolt before: 80-95%, the allocator kept it all).
        self.assertLess(used - base_used, (full_used - base_used) // 4,
                        "used_memory %d MB -> %d MB full -> %d MB after %s"
                        % (base_used >> 20, full_used >> 20, used >> 20, flush[0]))
        self.assertLess(rss - base_rss, (full_rss - base_rss) // 4,
                        "RSS %d MB -> %d MB full -> %d MB after %s"
                        % (base_rss >> 20, full_rss >> 20, rss >> 20, flush[0]))

    def test_flushall_returns_memory(self):
        self.start()
        self.check_drop(self.connect(timeout=60.0), ("FLUSHALL",))

    def test_flushdb_returns_memory(self):
        self.start()
        self.check_drop(self.connect(timeout=60.0), ("FLUSHDB",))


if __name__ == "__main__":
    harness.main()
