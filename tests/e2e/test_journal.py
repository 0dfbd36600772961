"""The journal (--appendonly yes, server/core/journal.h): what comes back after a restart.

Every test starts its own servers with a temporary --dir and stops, kills (SIGKILL) and
restarts them: state of every kind survives a clean SHUTDOWN and a SIGKILL with
--appendfsync always (strings, TTLs that are not extended, hashes, several databases,
deletions, expiry, FLUSHDB/FLUSHALL, native locks with their owner, token and holds, fencing
tokens that keep growing); a change of --threads keeps every key; a journal cut at every byte of
its last frame loads with a warning (or is refused with --aof-load-truncated no); damage in the
middle is refused with the file and offset named (or loaded up to it with --aof-load-damaged
yes); BGREWRITEAOF and automatic rewrites shrink the file and lose nothing, even when the server
is killed in the middle; INFO persistence, CONFIG and WAITAOF.

The journal is deadbolt's, so with DEADBOLT_AGAINST_REDIS=1 only the classes that check what
Redis does too run (WAITAOF replies and errors, BGREWRITEAOF's error, INFO persistence field
names, CONFIG GET), against redis-server --appendonly yes; WAITAOF is skipped on a Redis older
than 7.2.

Journal files are <dir>/deadbolt-journal-<shard>-of-<n>.aof, a sequence of frames
[u32 len][u32 len ^ 0x5a17db0c][u32 checksum][payload] (shard/journal_format/journal_format.h)."""

import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from slots import on_shard  # noqa: E402
from harness import NIL, OK, bulk, decode, encode_command, integer  # noqa: E402

AGAINST_REDIS = harness.AGAINST_REDIS

FRAME_CHECK = 0x5a17db0c
FRAME_HEADER = 12

# Generous bounds: the suite also runs under ASan on a busy 2-core machine.
SLACK = 10.0


def setUpModule():
    harness.server_command(0)  # DEADBOLT_SERVER or DEADBOLT_AGAINST_REDIS must say what to run


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

def journal_path(d, shard, n):
    return os.path.join(d, "deadbolt-journal-%d-of-%d.aof" % (shard, n))


def frames(data):
    """[(offset, length including the header)] of a journal's bytes; every byte must belong to
    a whole frame."""
    out = []
    off = 0
    while off < len(data):
        assert len(data) - off >= FRAME_HEADER, "incomplete frame header at %d" % off
        n, check, _sum = struct.unpack_from("<III", data, off)
        assert n ^ FRAME_CHECK == check, "bad frame header at %d" % off
        assert off + FRAME_HEADER + n <= len(data), "frame at %d runs past the end" % off
        out.append((off, FRAME_HEADER + n))
        off += FRAME_HEADER + n
    return out


def frame_with(data, needle):
    """The (offset, length) of the one frame whose payload contains `needle`."""
    hits = [(o, n) for o, n in frames(data) if needle in data[o + FRAME_HEADER:o + n]]
    assert len(hits) == 1, "%r is in %d frames" % (needle, len(hits))
    return hits[0]


def parse_info(raw):
    fields = {}
    for line in raw.decode().split("\r\n"):
        if line and not line.startswith("#") and ":" in line:
            k, v = line.split(":", 1)
            fields[k] = v
    return fields


def lock_info(c, key):
    r = c.call("LOCK.INFO", key)
    if isinstance(r, list):
        r = dict(zip(r[0::2], r[1::2]))
    return r


def to_int(raw):
    assert raw[:1] == b":", raw
    return int(raw[1:-2])


def token(raw):
    assert re.match(rb"^:[1-9][0-9]*\r\n$", raw), raw
    return int(raw[1:-2])


def list_dir(d):
    return sorted(os.listdir(d))


class JournalCase(unittest.TestCase):
    """Base: a temporary --dir, servers started on it with start(), stopped with shutdown()
    (SHUTDOWN, must exit 0), stop() (SIGTERM) or kill() (SIGKILL). The output of every server
    the test started is printed when it fails."""

    maxDiff = 4000
    redis_too = False  # True: the class also runs against redis-server (DEADBOLT_AGAINST_REDIS=1)

    def setUp(self):
        if AGAINST_REDIS and not self.redis_too:
            self.skipTest("the journal is deadbolt's; redis-server has its own AOF")
        self.dir = tempfile.mkdtemp(prefix="deadbolt-journal-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.server = None
        self.logs = []  # (argv, output) of servers that have gone
        self._conns = []
        self.addCleanup(self._cleanup)

    def _cleanup(self):
        self._close_conns()
        if self.server is not None:
            self.server.kill()
            self.server = None

    def _close_conns(self):
        for c in self._conns:
            c.close()
        self._conns = []

    def args(self, threads=2, fsync="always", appendonly=True, extra=()):
        if AGAINST_REDIS:
            a = ["--appendonly", "yes" if appendonly else "no", "--dir", self.dir]
            if appendonly:
                a += ["--appendfsync", fsync]
            return a
        a = ["--threads", str(threads)]
        if appendonly:
            a += ["--appendonly", "yes", "--dir", self.dir, "--appendfsync", fsync]
        return a + list(extra)

    def start(self, threads=2, fsync="always", appendonly=True, extra=()):
        """Starts a server on self.dir; returns a connection to it."""
        self.assertIsNone(self.server, "a server is already running")
        self.server = harness.ServerProcess(
            extra_args=self.args(threads, fsync, appendonly, extra)).start()
        return self.conn()

    def conn(self):
        c = harness.RespConn(self.server.port)
        self._conns.append(c)
        return c

    def _gone(self):
        self.logs.append((self.server.argv, self.server.log_text()))
        self.server = None
        self.assert_no_sanitizer_report(self.logs[-1][1])

    def assert_no_sanitizer_report(self, out):
        for marker in ("Sanitizer", "runtime error:"):
            self.assertNotIn(marker, out, "the server's output has a sanitizer report:\n%s"
                             % out[-3000:])

    def shutdown(self):
        """SHUTDOWN; the server must exit 0."""
        self._close_conns()
        with harness.RespConn(self.server.port) as c:
            c.send(encode_command("SHUTDOWN"))
            c.read_until_closed(SLACK)
        code = self.server.wait_exit(SLACK)
        self._gone()
        self.assertEqual(code, 0, "exit code after SHUTDOWN:\n%s" % self.logs[-1][1][-3000:])

    def stop(self):
        """SIGTERM; the server must exit cleanly."""
        self._close_conns()
        problem = self.server.stop()
        self._gone()
        self.assertIsNone(problem, "%s\n%s" % (problem, self.logs[-1][1][-3000:]))

    def kill(self):
        """SIGKILL: a crash."""
        self._close_conns()
        self.server.kill()
        self._gone()

    def kill_while(self, threads, stop):
        """Starts the writer threads, SIGKILLs the server 0.2-0.5 s later, stops them."""
        for t in threads:
            t.start()
        time.sleep(0.2 + random.random() * 0.3)
        self.kill()
        stop.set()
        for t in threads:
            t.join(SLACK)

    def log(self):
        """The running server's output so far."""
        return self.server.log_text()

    def refuse(self, extra=(), threads=1):
        """Starts a server that must refuse to start: returns its output."""
        code, out = harness.run_server_to_exit(self.args(threads=threads, extra=extra), SLACK * 2)
        self.logs.append((["(refused)"] + self.args(threads=threads, extra=extra), out))
        self.assert_no_sanitizer_report(out)
        self.assertNotEqual(code, 0, "the server exited 0; output:\n%s" % out)
        self.assertGreater(code, 0, "killed by signal %d, not a clean refusal:\n%s" % (-code, out))
        return out

    def journal_files(self):
        return [n for n in list_dir(self.dir) if n.startswith("deadbolt-journal-")]

    def assert_layout(self, n):
        """Exactly the files of n shards are in --dir, nothing else of the journal's."""
        self.assertEqual(self.journal_files(),
                         sorted("deadbolt-journal-%d-of-%d.aof" % (i, n) for i in range(n)))

    def journal_size(self):
        return sum(os.path.getsize(os.path.join(self.dir, n)) for n in self.journal_files())

    def info(self, c, section="persistence"):
        return parse_info(decode(c.cmd("INFO", section)))

    def wait_for(self, what, cond, timeout=SLACK, interval=0.01):
        deadline = time.monotonic() + timeout
        while True:
            v = cond()
            if v:
                return v
            if time.monotonic() > deadline:
                self.fail("timed out waiting for %s" % what)
            time.sleep(interval)

    def wait_rewrites(self, c, at_least):
        """Waits until INFO persistence says at least `at_least` rewrites are done and none is
        in progress; returns the INFO fields."""
        def done():
            i = self.info(c)
            ok = int(i["aof_rewrites"]) >= at_least and i["aof_rewrite_in_progress"] == "0"
            return i if ok else None
        return self.wait_for("%d journal rewrites" % at_least, done)

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result is not None else 0
        out = super().run(result)
        if result is not None and len(result.failures) + len(result.errors) > before:
            logs = list(self.logs)
            if self.server is not None:
                logs.append((self.server.argv, self.server.log_text()))
            for argv, text in logs[-3:]:
                sys.stderr.write("\n--- server output after failure of %s (%s) ---\n%s\n--- end ---\n"
                                 % (self.id(), " ".join(argv), text[-3000:]))
        return out


# ---------------------------------------------------------------------------------------------
# 1. A restart keeps the state
# ---------------------------------------------------------------------------------------------

class JournalRestartTest(JournalCase):
    """Everything a client could see comes back after a clean SHUTDOWN and after SIGKILL with
    --appendfsync always, and the restart never extends a lease."""

    # What each db holds after populate(): db -> sorted keys.
    EXPECTED_KEYS = {
        0: sorted([b"str:plain", b"str:ttl", b"str:ex", b"str:persist", b"str:extended",
                   b"str:ctr", b"str:app", b"hash:a", b"hash:ttl", b"ms:1", b"ms:2", b"ms:3",
                   b"ren:dst", b"tx:1", b"tx:2", b"same", b"{ft}held", b"overwritten"]),
        1: [b"{ft}held1"],
        3: sorted([b"same", b"db3:only"]),
        7: [b"f:after"],
        15: [b"same"],
    }
    TTL_KEYS = {0: [b"str:ttl", b"str:ex", b"str:extended", b"hash:ttl", b"{ft}held"],
                1: [b"{ft}held1"], 3: [b"db3:only"]}

    def populate(self, c):
        """Writes every kind of change; returns what verify() needs."""
        def ok(*args):
            r = c.cmd(*args)
            self.assertFalse(r.startswith(b"-"), "%r -> %r" % (args, r))
            return r

        # Gone with the FLUSHALL that follows.
        for db, key in ((0, "pre:a"), (2, "pre:b"), (7, "pre:c")):
            ok("SELECT", db)
            ok("SET", key, "x")
        ok("HSET", "pre:h", "f", "v")
        ok("FLUSHALL")
        ok("SELECT", 0)
        ok("SET", "str:plain", "hello")
        ok("SET", "str:ttl", "v", "PX", 60000)
        ok("SET", "str:ex", "v", "EX", 100)
        ok("SET", "str:persist", "v", "EX", 100)
        ok("PERSIST", "str:persist")
        ok("SET", "str:extended", "v", "PX", 1000)
        ok("PEXPIRE", "str:extended", 70000)
        for _ in range(5):
            ok("INCR", "str:ctr")
        ok("APPEND", "str:app", "abc")
        ok("APPEND", "str:app", "def")
        ok("HSET", "hash:a", "f1", "v1", "f2", "v2", "f3", "v3")
        ok("HDEL", "hash:a", "f2")
        ok("HINCRBY", "hash:a", "n", 7)
        ok("HSET", "hash:ttl", "f", "v")
        ok("PEXPIRE", "hash:ttl", 80000)
        ok("SET", "del:1", "x")
        ok("DEL", "del:1")
        ok("SET", "del:2", "x")
        ok("GETDEL", "del:2")
        ok("SET", "del:3", "x")
        ok("UNLINK", "del:3")
        ok("SET", "exp:1", "x", "PX", 40)
        ok("HSET", "exp:h", "f", "v")
        ok("PEXPIRE", "exp:h", 40)
        expiry_set_at = time.monotonic()
        ok("MSET", "ms:1", "a", "ms:2", "b", "ms:3", "c")
        ok("SET", "ren:src", "moved")
        ok("RENAME", "ren:src", "ren:dst")
        self.assertEqual(c.pipeline([("MULTI",), ("SET", "tx:1", "a"), ("SET", "tx:2", "b"),
                                     ("DEL", "nothing"), ("EXEC",)])[-1],
                         b"*3\r\n+OK\r\n+OK\r\n:0\r\n")
        for i in range(50):
            ok("SET", "overwritten", "v%d" % i)
        ok("SELECT", 3)
        ok("SET", "same", "v3")
        ok("SET", "db3:only", "x", "PX", 90000)
        ok("SELECT", 15)
        ok("SET", "same", "v15")
        ok("SELECT", 7)
        ok("SET", "f:1", "a")
        ok("SET", "f:2", "b")
        ok("FLUSHDB")
        ok("SET", "f:after", "c")
        ok("SELECT", 0)
        ok("SET", "same", "v0")
        # Native locks: a reentrant one held twice; many acquired and released after it, so
        # that the fencing counter is well past the held lock's token.
        held = token(ok("LOCK.ACQUIRE", "{ft}held", "owner-a", 60000, "REENTRANT"))
        self.assertEqual(token(ok("LOCK.ACQUIRE", "{ft}held", "owner-a", 60000, "REENTRANT")),
                         held)
        tokens = [held]
        for i in range(20):
            tokens.append(token(ok("LOCK.ACQUIRE", "{ft}tmp:%d" % i, "owner-b", 60000)))
            self.assertEqual(ok("LOCK.RELEASE", "{ft}tmp:%d" % i, "owner-b"), integer(0))
        ok("SELECT", 1)
        tokens1 = []
        for i in range(7):
            tokens1.append(token(ok("LOCK.ACQUIRE", "{ft}tmp1:%d" % i, "owner-b", 60000)))
            ok("DEL", "{ft}tmp1:%d" % i)
        held1 = token(ok("LOCK.ACQUIRE", "{ft}held1", "owner-d", 60000))
        tokens1.append(held1)
        ok("SELECT", 0)
        i = lock_info(c, "{ft}held")
        self.assertEqual((i[b"owner"], i[b"token"], i[b"holds"]), (b"owner-a", held, 2))
        # The keys with a short TTL have expired (nobody has touched them since).
        time.sleep(max(0.0, expiry_set_at + 0.06 - time.monotonic()))
        return {"held": held, "held1": held1, "max0": max(tokens), "max1": max(tokens1),
                "pttl": self.pttls(c)}

    def pttls(self, c):
        out = {}
        for db, keys in self.TTL_KEYS.items():
            c.cmd("SELECT", db)
            for k in keys:
                out[(db, k)] = to_int(c.cmd("PTTL", k))
        c.cmd("SELECT", 0)
        return out

    def verify(self, c, before):
        for db in range(16):
            self.assertEqual(c.cmd("SELECT", db), OK)
            got = sorted(decode(c.cmd("KEYS", "*")))
            self.assertEqual(got, self.EXPECTED_KEYS.get(db, []), "keys of db %d" % db)
            self.assertEqual(to_int(c.cmd("DBSIZE")), len(got))
        c.cmd("SELECT", 0)
        for args, want in [
            (("GET", "str:plain"), bulk("hello")),
            (("GET", "str:ttl"), bulk("v")),
            (("TTL", "str:persist"), integer(-1)),
            (("GET", "str:ctr"), bulk("5")),
            (("GET", "str:app"), bulk("abcdef")),
            (("MGET", "ms:1", "ms:2", "ms:3"), b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"),
            (("GET", "ren:dst"), bulk("moved")),
            (("MGET", "tx:1", "tx:2"), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
            (("GET", "overwritten"), bulk("v49")),
            (("GET", "same"), bulk("v0")),
            (("TTL", "same"), integer(-1)),
            (("TYPE", "hash:ttl"), b"+hash\r\n"),
            (("EXISTS", "exp:1", "exp:h", "del:1", "del:2", "del:3", "ren:src", "pre:a"),
             integer(0)),
        ]:
            self.assertEqual(c.cmd(*args), want, "reply to %r" % (args,))
        h = decode(c.cmd("HGETALL", "hash:a"))
        self.assertEqual(dict(zip(h[0::2], h[1::2])), {b"f1": b"v1", b"f3": b"v3", b"n": b"7"})
        for db, want in ((3, "v3"), (15, "v15")):
            c.cmd("SELECT", db)
            self.assertEqual(c.cmd("GET", "same"), bulk(want), "db %d" % db)
        c.cmd("SELECT", 7)
        self.assertEqual(c.cmd("GET", "f:after"), bulk("c"))
        c.cmd("SELECT", 0)
        # A restart never extends a lease: every remaining TTL is at most what it was before.
        after = self.pttls(c)
        for key, was in before["pttl"].items():
            self.assertTrue(0 < after[key] <= was, "PTTL of %r: %d before, %d after"
                            % (key, was, after[key]))
        i = lock_info(c, "{ft}held")
        self.assertEqual((i[b"owner"], i[b"token"], i[b"holds"], i[b"waiters"]),
                         (b"owner-a", before["held"], 2, 0))
        self.assertTrue(0 < i[b"ttl_ms"] <= before["pttl"][(0, b"{ft}held")], i)
        c.cmd("SELECT", 1)
        i = lock_info(c, "{ft}held1")
        self.assertEqual((i[b"owner"], i[b"token"], i[b"holds"]), (b"owner-d", before["held1"], 1))
        c.cmd("SELECT", 0)

    def check_locks_after_restart(self, c, before):
        """Changes state: new tokens are above every earlier one of their db and shard, and the
        two holds of the reentrant lock are both there."""
        t = token(c.cmd("LOCK.ACQUIRE", "{ft}new", "owner-c", 10000))
        self.assertGreater(t, before["max0"])
        c.cmd("SELECT", 1)
        t1 = token(c.cmd("LOCK.ACQUIRE", "{ft}new1", "owner-c", 10000))
        self.assertGreater(t1, before["max1"])
        c.cmd("SELECT", 0)
        self.assertEqual(c.cmd("LOCK.ACQUIRE", "{ft}held", "owner-x", 10000), NIL)
        self.assertEqual(c.cmd("LOCK.RELEASE", "{ft}held", "owner-a"), integer(1))
        self.assertEqual(c.cmd("LOCK.RELEASE", "{ft}held", "owner-a"), integer(0))
        self.assertEqual(c.cmd("EXISTS", "{ft}held"), integer(0))

    def test_clean_shutdown(self):
        c = self.start(fsync="everysec")
        before = self.populate(c)
        self.shutdown()
        c = self.start(fsync="everysec")
        self.verify(c, before)
        self.assert_layout(2)
        # The file written at start-up is a good journal too.
        self.shutdown()
        c = self.start(fsync="everysec")
        self.verify(c, before)
        self.check_locks_after_restart(c, before)
        self.shutdown()

    def test_sigkill_with_appendfsync_always(self):
        c = self.start(fsync="always")
        before = self.populate(c)
        self.kill()
        c = self.start(fsync="always")
        self.verify(c, before)
        self.kill()
        c = self.start(fsync="always")
        self.verify(c, before)
        self.check_locks_after_restart(c, before)
        self.assertEqual(c.cmd("SET", "after:kill", "1"), OK)
        self.kill()
        c = self.start(fsync="always")
        self.assertEqual(c.cmd("GET", "after:kill"), bulk("1"))
        self.assertEqual(c.cmd("EXISTS", "{ft}held"), integer(0))
        self.stop()

    def test_keys_that_expire_while_the_server_is_down_stay_gone(self):
        c = self.start(fsync="everysec")
        self.assertEqual(c.cmd("SET", "short", "x", "PX", 300), OK)
        self.assertEqual(c.cmd("SET", "long", "x", "PX", 60000), OK)
        self.assertEqual(c.cmd("LOCK.ACQUIRE", "lease", "me", 300)[:1], b":")
        self.shutdown()
        time.sleep(0.4)
        c = self.start(fsync="everysec")
        self.assertEqual(c.cmd("EXISTS", "short", "lease"), integer(0))
        self.assertEqual(c.cmd("EXISTS", "long"), integer(1))
        self.assertEqual(c.cmd("DBSIZE"), integer(1))
        self.stop()


# ---------------------------------------------------------------------------------------------
# 2. A different --threads keeps every key
# ---------------------------------------------------------------------------------------------

class JournalZSetTest(JournalCase):
    """Sorted sets (issue 13) come back whole after SIGKILL with --appendfsync always, after a
    rewrite and across a change of --threads: members, scores, order, TTLs, both forms, and
    what multi-key commands across shards wrote."""

    def populate(self, c):
        def ok(*args):
            r = c.cmd(*args)
            self.assertFalse(r.startswith(b"-"), "%r -> %r" % (args, r))
            return r

        ok("ZADD", "z:small", "1", "a", "2.5", "b", "-inf", "low", "inf", "high", "0.1", "c")
        ok("ZREM", "z:small", "c")
        ok("ZINCRBY", "z:small", "0.25", "a")
        ok("ZADD", "z:ttl", "1", "x")
        ok("PEXPIRE", "z:ttl", 60000)
        args = []
        for i in range(300):
            args += [str(i * 0.5), "m%d" % i]
        ok("ZADD", "z:big", *args)
        ok("ZREMRANGEBYSCORE", "z:big", "(10", "20")
        ok("ZPOPMAX", "z:big", "3")
        ok("ZADD", "z:gone", "1", "a")
        ok("ZPOPMIN", "z:gone")
        ok("ZADD", "z:exp", "1", "a")
        ok("PEXPIRE", "z:exp", 30)
        # Across shards (keys without tags land on both with two threads).
        ok("ZUNIONSTORE", "z:union", "2", "z:small", "z:big", "WEIGHTS", "2", "1")
        ok("ZRANGESTORE", "z:range", "z:big", "0", "9")
        ok("ZADD", "z:src", "3", "q")
        ok("RENAME", "z:src", "z:renamed")
        ok("COPY", "z:small", "z:copy")
        time.sleep(0.1)  # z:exp has expired
        return self.snapshot(c)

    def snapshot(self, c):
        got = {}
        for key in decode(c.cmd("KEYS", "*")):
            self.assertEqual(c.cmd("TYPE", key), b"+zset\r\n", key)
            got[key] = c.cmd("ZRANGE", key, "0", "-1", "WITHSCORES")
        return got

    def verify(self, c, before):
        self.assertEqual(self.snapshot(c), before)
        self.assertEqual(sorted(before), sorted([b"z:small", b"z:ttl", b"z:big", b"z:union",
                                                 b"z:range", b"z:renamed", b"z:copy"]))
        ttl = to_int(c.cmd("PTTL", "z:ttl"))
        self.assertTrue(0 < ttl <= 60000, ttl)
        self.assertEqual(c.cmd("ZSCORE", "z:small", "a"), bulk("1.25"))
        self.assertEqual(c.cmd("ZRANK", "z:big", "m10"), integer(10))

    def test_sigkill_rewrite_and_threads(self):
        c = self.start(fsync="always")
        before = self.populate(c)
        self.kill()
        c = self.start(fsync="always")
        self.verify(c, before)
        self.assertEqual(c.cmd("BGREWRITEAOF"),
                         b"+Background append only file rewriting started\r\n")
        self.wait_rewrites(c, 2)
        self.kill()
        c = self.start(threads=1, fsync="always")
        self.verify(c, before)
        self.shutdown()
        c = self.start(threads=3, fsync="always")
        self.verify(c, before)
        self.stop()

    def test_sigkill_loses_no_acknowledged_zset_write(self):
        """Writers add and remove members (a semaphore's traffic) until the server is killed:
        every acknowledged ZADD is there after the restart, every acknowledged ZREM gone."""
        self.start(fsync="always")
        acked = [dict() for _ in range(6)]  # per writer: member -> present
        stop = threading.Event()

        def writer(n):
            c = self.conn()
            i = 0
            try:
                while not stop.is_set():
                    key = "sem:%d" % (i % 3)
                    member = "w%d:%d" % (n, i)
                    if c.cmd("ZADD", key, str(i), member) != integer(1):
                        return
                    acked[n][(key, member)] = True
                    if i % 2 == 1:
                        prev = "w%d:%d" % (n, i - 1)
                        pkey = "sem:%d" % ((i - 1) % 3)
                        acked[n][(pkey, prev)] = None  # in flight: either way is fine
                        if c.cmd("ZREM", pkey, prev) != integer(1):
                            return
                        acked[n][(pkey, prev)] = False
                    i += 1
            except Exception:  # noqa: BLE001: the kill cuts the connection
                return

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        time.sleep(0.3 + random.random() * 0.3)
        self.kill()
        stop.set()
        for t in threads:
            t.join(10)
        self.assertGreater(sum(len(a) for a in acked), 50)
        c = self.start(fsync="always")
        for a in acked:
            for (key, member), present in a.items():
                score = c.cmd("ZSCORE", key, member)
                if present is None:
                    continue
                if present:
                    self.assertNotEqual(score, NIL, "acknowledged ZADD %s %s lost" % (key, member))
                else:
                    self.assertEqual(score, NIL, "acknowledged ZREM %s %s undone" % (key, member))
        self.stop()


UUID_LOWER = "6f9619ff-8b86-d011-b42d-00c04fc964ff"
UUID_UPPER = "6F9619FF-8B86-D011-B42D-00C04FC964FF"
UUID_MIXED = "6f9619ff-8b86-d011-b42d-00C04FC964FF"


class JournalListSetTest(JournalCase):
    """Lists and sets (issue 13): every acknowledged change survives SIGKILL with --appendfsync
    always, through replay, a rewrite, and a change of --threads, in order and with TTLs."""

    def populate(self, c):
        def ok(*args):
            r = c.cmd(*args)
            self.assertFalse(r.startswith(b"-"), "%r -> %r" % (args, r))
        ok("RPUSH", "l:small", "a", "b", "c", "", "d")
        ok("LPOP", "l:small")
        ok("LSET", "l:small", "0", "B")
        ok("LINSERT", "l:small", "after", "B", "x")
        ok("RPUSH", "l:big", *["v%d" % i for i in range(300)])
        ok("LTRIM", "l:big", "5", "-6")
        ok("RPUSH", "l:ttl", "t")
        ok("PEXPIRE", "l:ttl", "90000")
        ok("RPUSH", "l:gone", "g")
        ok("RPOP", "l:gone")
        # LMOVE between shards (atomic, one frame per shard) and back.
        ok("RPUSH", "{a}src", "1", "2", "3")
        ok("LMOVE", "{a}src", "{b}dst", "LEFT", "RIGHT")
        ok("SADD", "s:ints", "5", "-1", "70000", "3")
        ok("SREM", "s:ints", "3")
        ok("SADD", "s:str", "x", "y", "1")
        ok("SADD", "s:big", *["m%d" % i for i in range(700)])
        ok("SMOVE", "{a}set", "{b}set", "nothing")
        ok("SADD", "{a}set", "p", "q")
        ok("SMOVE", "{a}set", "{b}set", "p")
        ok("SUNIONSTORE", "{b}union", "s:ints", "s:str")
        ok("SADD", "s:ttl", "1")
        ok("PEXPIRE", "s:ttl", "90000")
        # UUIDs, kept packed in 16 bytes when of one case: the same text comes back.
        ok("RPUSH", "l:uuid", UUID_LOWER, UUID_UPPER, UUID_MIXED, "short")
        ok("LSET", "l:uuid", "3", UUID_LOWER.replace("7", "8"))
        ok("SADD", "s:uuid", UUID_LOWER, UUID_UPPER, UUID_MIXED, "1")
        ok("SREM", "s:uuid", "1")
        ok("ZADD", "z:uuid", "1", UUID_LOWER, "1", UUID_UPPER, "0", UUID_MIXED)
        # Integer sets on both sides of the inline limit (127 two-byte members live in the
        # key's entry, shard/types/set_value.h): out past it and back, with a TTL.
        ok("SADD", "s:edge", *[str(i) for i in range(130)])
        ok("PEXPIRE", "s:edge", "90000")
        ok("SREM", "s:edge", *[str(i) for i in range(0, 130, 13)])
        ok("SADD", "s:wide", *[str(i * 1000) for i in range(200)])

    def verify(self, c):
        def members(*args):
            return sorted(decode(c.cmd(*args)))
        self.assertEqual(decode(c.cmd("LRANGE", "l:small", "0", "-1")),
                         [b"B", b"x", b"c", b"", b"d"])
        self.assertEqual(decode(c.cmd("LRANGE", "l:big", "0", "-1")),
                         [("v%d" % i).encode() for i in range(5, 295)])
        self.assertEqual(c.cmd("TYPE", "l:ttl"), b"+list\r\n")
        self.assertTrue(0 < to_int(c.cmd("PTTL", "l:ttl")) <= 90000)
        self.assertEqual(c.cmd("EXISTS", "l:gone"), integer(0))
        self.assertEqual(decode(c.cmd("LRANGE", "{a}src", "0", "-1")), [b"2", b"3"])
        self.assertEqual(decode(c.cmd("LRANGE", "{b}dst", "0", "-1")), [b"1"])
        self.assertEqual(decode(c.cmd("SMEMBERS", "s:ints")), [b"-1", b"5", b"70000"])
        self.assertEqual(members("SMEMBERS", "s:str"), [b"1", b"x", b"y"])
        self.assertEqual(c.cmd("SCARD", "s:big"), integer(700))
        self.assertEqual(c.cmd("SISMEMBER", "s:big", "m699"), integer(1))
        self.assertEqual(members("SMEMBERS", "{a}set"), [b"q"])
        self.assertEqual(members("SMEMBERS", "{b}set"), [b"p"])
        self.assertEqual(members("SMEMBERS", "{b}union"),
                         sorted([b"-1", b"5", b"70000", b"x", b"y", b"1"]))
        self.assertEqual(c.cmd("TYPE", "s:ttl"), b"+set\r\n")
        self.assertTrue(0 < to_int(c.cmd("PTTL", "s:ttl")) <= 90000)
        u = [UUID_LOWER.encode(), UUID_UPPER.encode(), UUID_MIXED.encode()]
        self.assertEqual(decode(c.cmd("LRANGE", "l:uuid", "0", "-1")),
                         u + [UUID_LOWER.replace("7", "8").encode()])
        self.assertEqual(members("SMEMBERS", "s:uuid"), sorted(u))
        self.assertEqual(decode(c.cmd("ZRANGE", "z:uuid", "0", "-1", "WITHSCORES")),
                         [u[2], b"0", u[1], b"1", u[0], b"1"])
        self.assertEqual(decode(c.cmd("SMEMBERS", "s:edge")),
                         [str(i).encode() for i in range(130) if i % 13])
        self.assertTrue(0 < to_int(c.cmd("PTTL", "s:edge")) <= 90000)
        self.assertEqual(decode(c.cmd("SMEMBERS", "s:wide")),
                         [str(i * 1000).encode() for i in range(200)])
        self.assertEqual(c.cmd("OBJECT", "ENCODING", "s:edge"), bulk("intset"))
        self.assertEqual(c.cmd("DBSIZE"), integer(17))

    def test_sigkill_rewrite_and_threads_change(self):
        c = self.start(threads=2, fsync="always")
        self.populate(c)
        self.kill()
        c = self.start(threads=2, fsync="always")
        self.verify(c)
        self.assertEqual(c.cmd("BGREWRITEAOF"),
                         b"+Background append only file rewriting started\r\n")
        self.wait_rewrites(c, 2)
        self.kill()
        c = self.start(threads=1, fsync="always")
        self.verify(c)
        self.kill()
        c = self.start(threads=3, fsync="always")
        self.verify(c)
        self.stop()


class JournalThreadsChangeTest(JournalCase):
    N = 2000

    def check_all(self, c, held):
        for lo in range(0, self.N, 500):
            keys = ["key:%d" % i for i in range(lo, min(self.N, lo + 500))]
            want = [("val:%d" % i).encode() for i in range(lo, min(self.N, lo + 500))]
            self.assertEqual(decode(c.cmd("MGET", *keys)), want)
        # key:* + ttl:* + the held locks
        self.assertEqual(to_int(c.cmd("DBSIZE")), self.N + 100 + len(held))
        for i in range(0, 100, 7):
            self.assertTrue(0 < to_int(c.cmd("PTTL", "ttl:%d" % i)) <= 600000)
        c.cmd("SELECT", 2)
        self.assertEqual(to_int(c.cmd("DBSIZE")), 200)
        for i in range(0, 200, 13):
            self.assertEqual(c.cmd("HGET", "h:%d" % i, "f"), bulk(str(i)))
        c.cmd("SELECT", 0)
        for key, (owner, tok) in held.items():
            i = lock_info(c, key)
            self.assertEqual((i[b"owner"], i[b"token"]), (owner, tok), key)

    def take_locks(self, c, tag, held, count=40):
        """Acquires `count` locks on keys spread over the slots, keeps every fourth; returns
        the tokens."""
        tokens = []
        for i in range(count):
            key = "lk:%s:%d" % (tag, i)
            t = token(c.cmd("LOCK.ACQUIRE", key, "o-%s" % tag, 600000))
            tokens.append(t)
            if i % 4 == 0:
                held[key] = (("o-%s" % tag).encode(), t)
            else:
                self.assertEqual(c.cmd("LOCK.RELEASE", key, "o-%s" % tag), integer(0))
        return tokens

    def test_threads_2_1_3_2(self):
        c = self.start(threads=2, fsync="always")
        cmds = [("SET", "key:%d" % i, "val:%d" % i) for i in range(self.N)]
        cmds += [("SET", "ttl:%d" % i, "x", "PX", 600000) for i in range(100)]
        self.assertEqual(set(c.pipeline(cmds)), {OK})
        c.cmd("SELECT", 2)
        self.assertEqual(set(c.pipeline([("HSET", "h:%d" % i, "f", i) for i in range(200)])),
                         {integer(1)})
        c.cmd("SELECT", 0)
        held = {}
        top = max(self.take_locks(c, "start", held))
        self.check_all(c, held)
        for n, how in ((1, "shutdown"), (3, "kill"), (2, "stop")):
            getattr(self, how)()
            c = self.start(threads=n, fsync="always")
            self.assert_layout(n)
            self.check_all(c, held)
            # Every new token is above every token handed out before, on any shard.
            tokens = self.take_locks(c, "after%d" % n, held)
            self.assertGreater(min(tokens), top, "threads %d" % n)
            top = max(tokens)
        self.stop()


class JournalLeftoversTest(JournalCase):
    def populate(self, c):
        self.assertEqual(set(c.pipeline([("SET", "k%d" % i, i) for i in range(300)])), {OK})

    def check(self, c):
        self.assertEqual(decode(c.cmd("MGET", *["k%d" % i for i in range(300)])),
                         [str(i).encode() for i in range(300)])
        self.assertEqual(c.cmd("DBSIZE"), integer(300))

    def test_unfinished_rewrite_and_startup_copies_are_removed(self):
        self.populate(self.start(threads=2))
        self.shutdown()
        for name in ("deadbolt-journal-0-of-2.aof.rewrite", "deadbolt-journal-1-of-2.aof.tmp",
                     "notes.txt"):
            with open(os.path.join(self.dir, name), "wb") as f:
                f.write(b"\x01garbage" * 10)
        self.check(self.start(threads=2))
        self.assert_layout(2)
        self.assertIn("notes.txt", list_dir(self.dir))  # not the journal's: left alone
        self.stop()

    def test_layout_change_interrupted_before_the_old_files_went(self):
        # A crash after the new layout's files were written but before the old ones were
        # removed leaves both, holding the same keys.
        self.populate(self.start(threads=2))
        self.shutdown()
        old = {}
        for name in self.journal_files():
            with open(os.path.join(self.dir, name), "rb") as f:
                old[name] = f.read()
        self.check(self.start(threads=3))
        self.assert_layout(3)
        self.kill()
        for name, data in old.items():
            with open(os.path.join(self.dir, name), "wb") as f:
                f.write(data)
        for n in (3, 1):
            c = self.start(threads=n)
            self.check(c)
            self.assert_layout(n)
            self.shutdown()


KNOWN_BUGS = os.environ.get("DEADBOLT_E2E_KNOWN_BUGS") == "1"


class JournalDatabasesTest(JournalCase):
    def test_fewer_databases_refuse_to_start_instead_of_dropping_keys(self):
        c = self.start(threads=2)
        self.assertEqual(c.cmd("SELECT", "15"), OK)
        self.assertEqual(c.cmd("SET", "in-db-15", "v"), OK)
        self.shutdown()
        out = self.refuse(extra=["--databases", "4"], threads=2)
        self.assertIn("database 15", out)
        self.assertIn("--databases 16", out)
        # Nothing was lost by the refused start.
        c = self.start(threads=2)
        self.assertEqual(c.cmd("SELECT", "15"), OK)
        self.assertEqual(c.cmd("GET", "in-db-15"), bulk("v"))
        self.stop()


class JournalLaggingPowerCutTest(JournalCase):
    """With --appendfsync always a write over two shards is acknowledged only once every shard's
    part is on disk, though the parts are written at once: here the journal sits on powercutfs
    (tools/lockcrash/powercutfs.cc), whose fsyncs of shard 1's file start 15 ms late, and after
    each SIGKILL every write not fsynced is dropped before the restart, as a power cut would."""

    ROUNDS = 6
    WRITERS = 4

    def setUp(self):
        super().setUp()
        if AGAINST_REDIS:
            return
        server = os.environ.get("DEADBOLT_SERVER", "")
        build = os.path.dirname(os.path.dirname(os.path.abspath(server)))
        fs = os.path.join(build, "tools", "powercutfs")
        if not os.access(fs, os.X_OK):
            self.skipTest("%s is not built (it needs libfuse3-dev)" % fs)
        if not os.path.exists("/dev/fuse"):
            self.skipTest("no /dev/fuse")
        backing, self.mnt = os.path.join(self.dir, "backing"), os.path.join(self.dir, "mnt")
        os.mkdir(backing)
        os.mkdir(self.mnt)
        self.fs = subprocess.Popen(
            [fs, backing, self.mnt, "-f"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ, POWERCUTFS_SLOW_FSYNC="journal-1-of-:15"))
        self.addCleanup(self.unmount)
        deadline = time.monotonic() + 5
        while not os.path.ismount(self.mnt):
            if self.fs.poll() is not None or time.monotonic() > deadline:
                self.skipTest("powercutfs cannot mount here")
            time.sleep(0.02)
        self.dir = self.mnt  # the servers' --dir (the temporary folder is removed as before)

    def unmount(self):
        self._cleanup()  # the server first
        if self.fs.poll() is None:
            subprocess.run(["fusermount3", "-u", self.mnt], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            try:
                self.fs.wait(5)
            except subprocess.TimeoutExpired:
                self.fs.kill()
                self.fs.wait()

    def power_cut(self):
        with open(os.path.join(self.mnt, ".powercut"), "w") as f:
            f.write("cut\n")

    def test_mset_across_shards_acknowledged_is_on_disk(self):
        keys = [(on_shard(0, "pc%d:a" % w), on_shard(1, "pc%d:b" % w))
                for w in range(self.WRITERS)]
        acked = [0] * self.WRITERS
        broken = []
        for rnd in range(self.ROUNDS + 1):
            c = self.start(threads=2, fsync="always")
            for w, (a, b) in enumerate(keys):
                got = [int(v) if v is not None else 0 for v in decode(c.cmd("MGET", a, b))]
                if got[0] != got[1] or got[0] < acked[w]:
                    broken.append("round %d: MSET %s %s acknowledged at %d came back as %s"
                                  % (rnd, a, b, acked[w], got))
                acked[w] = max(got)
            if rnd == self.ROUNDS:
                break
            stop = threading.Event()

            def mset(w, port=self.server.port):
                a, b = keys[w]
                n = acked[w]
                try:
                    with harness.RespConn(port) as cc:
                        while not stop.is_set():
                            n += 1
                            if cc.cmd("MSET", a, n, b, n) == OK:
                                acked[w] = n
                except (OSError, ConnectionError):
                    pass

            self.kill_while([threading.Thread(target=mset, args=(w,))
                             for w in range(self.WRITERS)], stop)
            self.power_cut()
        self.stop()
        self.assertEqual(broken, [])
        self.assertGreater(sum(acked), 10 * self.WRITERS)


class JournalCrossShardCrashTest(JournalCase):
    """A command whose keys sit on two shards is atomic while the server runs; after a SIGKILL
    (--appendfsync always) it must come back whole or not at all: an MSET over both shards
    all old or all new, a RENAME between shards as exactly one of the two keys."""

    ROUNDS = 10
    WRITERS = 4

    def test_mset_and_rename_across_shards_survive_sigkill_whole(self):
        mset_keys = [[on_shard(i % 2, "m%d:%d" % (w, i)) for i in range(4)]
                     for w in range(self.WRITERS)]
        rename_keys = [(on_shard(0, "r%d:a" % w), on_shard(1, "r%d:b" % w))
                       for w in range(self.WRITERS)]
        broken = []
        for rnd in range(self.ROUNDS + 1):
            c = self.start(threads=2, fsync="always")
            if rnd == 0:
                for a, _b in rename_keys:
                    self.assertEqual(c.cmd("SET", a, "v"), OK)
            for w in range(self.WRITERS):
                vals = decode(c.cmd("MGET", *mset_keys[w]))
                if len(set(vals)) != 1:
                    broken.append("round %d: MSET %s came back as %s" % (rnd, mset_keys[w], vals))
                a, b = rename_keys[w]
                if decode(c.cmd("EXISTS", a, b)) != 1:
                    broken.append("round %d: RENAME between %s and %s came back as %d keys"
                                  % (rnd, a, b, decode(c.cmd("EXISTS", a, b))))
                    c.cmd("DEL", b)
                    c.cmd("SET", a, "v")
            if rnd == self.ROUNDS:
                break
            stop = threading.Event()

            def mset(w, port=self.server.port):
                try:
                    with harness.RespConn(port) as cc:
                        n = 0
                        while not stop.is_set():
                            n += 1
                            args = []
                            for k in mset_keys[w]:
                                args += [k, n]
                            cc.cmd("MSET", *args)
                except (OSError, ConnectionError):
                    pass

            def rename(w, port=self.server.port):
                try:
                    with harness.RespConn(port) as cc:
                        src, dst = rename_keys[w]
                        if decode(cc.cmd("EXISTS", src)) == 0:
                            src, dst = dst, src
                        while not stop.is_set():
                            cc.cmd("RENAME", src, dst)
                            src, dst = dst, src
                except (OSError, ConnectionError):
                    pass

            threads = [threading.Thread(target=f, args=(w,))
                       for w in range(self.WRITERS) for f in (mset, rename)]
            self.kill_while(threads, stop)
        self.stop()
        self.assertEqual(broken, [])

    def test_moves_across_shards_survive_sigkill_whole(self):
        # LMOVE and SMOVE between keys on the two shards, both ways (each direction orders its
        # steps differently: Transaction::LockRunPhases), SIGKILLed mid-stream with `always`,
        # then again with `everysec`: every element is in exactly one of the two keys.
        lists = (on_shard(0, "mvl"), on_shard(1, "mvl"))
        sets = (on_shard(0, "mvs"), on_shard(1, "mvs"))
        items = ["i%d" % i for i in range(16)]
        broken = []
        for rnd in range(self.ROUNDS + 1):
            c = self.start(threads=2, fsync="always" if rnd % 2 == 0 else "everysec")
            if rnd == 0:
                self.assertEqual(decode(c.cmd("RPUSH", lists[0], *items)), len(items))
                self.assertEqual(decode(c.cmd("SADD", sets[0], *items)), len(items))
            got = decode(c.cmd("LRANGE", lists[0], 0, -1)) + decode(c.cmd("LRANGE", lists[1], 0, -1))
            if sorted(x.decode() for x in got) != sorted(items):
                broken.append("round %d: the lists came back as %r" % (rnd, got))
            got = decode(c.cmd("SMEMBERS", sets[0])) + decode(c.cmd("SMEMBERS", sets[1]))
            if sorted(x.decode() for x in got) != sorted(items):
                broken.append("round %d: the sets came back as %r" % (rnd, got))
            if broken or rnd == self.ROUNDS:
                break
            stop = threading.Event()

            def mover(w, port=self.server.port):
                try:
                    with harness.RespConn(port) as cc:
                        src, dst = (0, 1) if w % 2 == 0 else (1, 0)
                        n = 0
                        while not stop.is_set():
                            n += 1
                            cc.cmd("LMOVE", lists[src], lists[dst], "LEFT", "RIGHT")
                            cc.cmd("SMOVE", sets[src], sets[dst], items[n % len(items)])
                except (OSError, ConnectionError):
                    pass

            threads = [threading.Thread(target=mover, args=(w,)) for w in range(self.WRITERS)]
            self.kill_while(threads, stop)
        self.stop()
        self.assertEqual(broken, [])

    @unittest.skipIf(harness.KEY_ORDER,
                     "--pipeline-order key runs a pipeline's commands for the two shards at once")
    def test_pipelines_across_shards_leave_a_prefix_after_sigkill(self):
        # Each writer pipelines INCR on a key of one shard, then INCR on a key of the other (half
        # of them the other way round), waits for both replies and goes again. With `always`, a
        # crash must leave a prefix of each pipeline on disk and lose nothing acknowledged: the
        # first counter equals the second or leads it by one, and neither is below its last
        # acknowledged value. Writers sit on both reactors, so the first command is this
        # reactor's in some pipelines and the other's in the rest (a relay that leaves its
        # origin before running anything there goes without waiting for its journal).
        pairs = []
        for w in range(self.WRITERS):
            a, b = on_shard(0, "pf%d:a" % w), on_shard(1, "pf%d:b" % w)
            pairs.append((a, b) if w % 2 == 0 else (b, a))
        acked = [[0, 0] for _ in pairs]
        broken = []
        for rnd in range(self.ROUNDS + 1):
            c = self.start(threads=2, fsync="always")
            for w, (first, second) in enumerate(pairs):
                x, y = (int(v or 0) for v in decode(c.cmd("MGET", first, second)))
                if not 0 <= x - y <= 1:
                    broken.append("round %d: %s=%d but %s=%d" % (rnd, first, x, second, y))
                if x < acked[w][0] or y < acked[w][1]:
                    broken.append("round %d: %s=%d, %s=%d below acknowledged %r"
                                  % (rnd, first, x, second, y, acked[w]))
                acked[w] = [x, y]
                c.cmd("SET", second, x)  # level again for the next round
                acked[w][1] = x
            if broken or rnd == self.ROUNDS:
                break
            stop = threading.Event()

            def writer(w, port=self.server.port):
                first, second = pairs[w]
                try:
                    with harness.RespConn(port) as cc:
                        while not stop.is_set():
                            r1, r2 = cc.pipeline([("INCR", first), ("INCR", second)])
                            acked[w] = [decode(r1), decode(r2)]
                except (OSError, ConnectionError):
                    pass

            threads = [threading.Thread(target=writer, args=(w,)) for w in range(self.WRITERS)]
            self.kill_while(threads, stop)
        self.stop()
        self.assertEqual(broken, [])

    @unittest.skipIf(harness.KEY_ORDER,
                     "--pipeline-order key runs a pipeline's commands for the two shards at once")
    def test_pipelines_switching_shards_leave_a_prefix_after_sigkill(self):
        self.check_pipeline_prefixes(shards=2, width=6)

    @unittest.skipIf(harness.KEY_ORDER,
                     "--pipeline-order key runs a pipeline's commands for the shards at once")
    def test_pipelines_over_four_shards_leave_a_prefix_after_sigkill(self):
        self.check_pipeline_prefixes(shards=4, width=8)

    def check_pipeline_prefixes(self, shards, width):
        # Each writer pipelines INCR on `width` keys whose shards take turns (each writer
        # starting on another shard): such a relay visits each shard once, running some commands
        # ahead of earlier ones on other shards, and with `always` journals them from the first
        # one run ahead on as one transaction, a part on each shard (server/core/relay.cc,
        # `tagged`). After each SIGKILL the counters must be a prefix of the pipelines: never
        # increasing along a writer's keys, the first at most one ahead of the last, none below
        # its last acknowledged value.
        chains = [[on_shard((w + i) % shards, "pc%d:%d" % (w, i), shards) for i in range(width)]
                  for w in range(self.WRITERS)]
        acked = [0] * len(chains)
        broken = []
        tagged = 0
        for rnd in range(self.ROUNDS + 1):
            c = self.start(threads=shards, fsync="always")
            for w, keys in enumerate(chains):
                vals = [int(v or 0) for v in decode(c.cmd("MGET", *keys))]
                if any(a < b for a, b in zip(vals, vals[1:])) or vals[0] - vals[-1] > 1:
                    broken.append("round %d: %s came back as %s" % (rnd, keys, vals))
                if vals[-1] < acked[w]:
                    broken.append("round %d: %s came back as %s, below acknowledged %d"
                                  % (rnd, keys, vals, acked[w]))
                self.assertEqual(c.cmd("MSET", *[x for k in keys for x in (k, vals[0])]), OK)
                acked[w] = vals[0]
            if broken or rnd == self.ROUNDS:
                break
            stop = threading.Event()

            def writer(w, port=self.server.port):
                try:
                    with harness.RespConn(port) as cc:
                        while not stop.is_set():
                            got = [decode(r) for r in cc.pipeline([("INCR", k) for k in chains[w]])]
                            acked[w] = got[-1]
                except (OSError, ConnectionError):
                    pass

            threads = [threading.Thread(target=writer, args=(w,)) for w in range(self.WRITERS)]
            for t in threads:
                t.start()
            time.sleep(0.2 + random.random() * 0.3)
            tagged += int(harness.info(c, "stats")["pipeline_journal_transactions"])
            self.kill()
            stop.set()
            for t in threads:
                t.join(SLACK)
        self.stop()
        self.assertEqual(broken, [])
        self.assertGreater(tagged, 0, "no relay was journalled as a transaction")

    @unittest.skipIf(harness.KEY_ORDER,
                     "--pipeline-order key runs a pipeline's commands for the two shards at once")
    def test_relays_meeting_on_a_hot_key_go_in_order(self):
        # Every writer's pipeline increments one hot counter among keys of both shards. Tagged,
        # each relay would hold the counter's lock for its fsyncs and the writers would take
        # turns fsync by fsync; the origins notice that most of their relays wait for each
        # other's locks and send them in order for a while (TaggedBackoff). Every increment must
        # still count once.
        c = self.start(threads=2, fsync="always")
        hot = on_shard(0, "hot:counter")
        writers, rounds = 16, 60
        done = []

        def writer(w, port=self.server.port):
            keys = [on_shard(1, "hot:a%d" % w), on_shard(1, "hot:b%d" % w),
                    on_shard(0, "hot:c%d" % w)]
            with harness.RespConn(port) as cc:
                for n in range(rounds):
                    got = cc.pipeline([("SET", keys[0], n), ("INCR", hot), ("SET", keys[1], n),
                                       ("SET", keys[2], n)])
                    if got[0] != OK or got[2] != OK or got[3] != OK:
                        done.append("writer %d, round %d: %r" % (w, n, got))
                        return
            done.append(None)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(SLACK * 4)
        self.assertEqual(done, [None] * writers)
        self.assertEqual(decode(c.cmd("GET", hot)), b"%d" % (writers * rounds))
        self.assertGreater(int(harness.info(c, "stats")["pipeline_journal_in_order"]), 0)
        self.stop()

    def test_part_absorbed_by_a_rewrite_of_one_shard_still_counts(self):
        # An MSET over both shards, then a rewrite of shard 1 only: its new file holds b's value
        # from the scan but not the MSET's tagged frame, which shard 0's file still has. After a
        # SIGKILL the MSET must come back whole (the reverted first version dropped shard 0's
        # part, although the MSET had been acknowledged).
        c = self.start(threads=2, fsync="always",
                       extra=["--auto-aof-rewrite-min-size", "1mb",
                              "--auto-aof-rewrite-percentage", "100"])
        a, b, big = on_shard(0, "abs:a"), on_shard(1, "abs:b"), on_shard(1, "abs:big")
        self.assertEqual(c.cmd("MSET", a, "new", b, "new"), OK)
        self.assertEqual(c.cmd("SET", big, "x" * (3 << 20)), OK)
        i = self.wait_rewrites(c, 1)
        self.assertEqual(i["aof_rewrites"], "1")  # shard 1's only
        self.kill()
        c = self.start(threads=2, fsync="always")
        self.assertEqual(decode(c.cmd("MGET", a, b)), [b"new", b"new"])
        self.stop()

    # A script that keeps its shard busy for about %d milliseconds.
    BUSY = ("local t = redis.call('TIME'); local s = t[1] * 1000000 + t[2] "
            "repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - s >= %d * 1000 "
            "return 1")
    GONE, OTHER = on_shard(1, "scan:gone"), on_shard(0, "scan:other")

    def slow_exec_during_a_rewrite(self, exec_ms):
        """Starts a server, then an EXEC: DEL GONE (shard 1), SET OTHER (shard 0), then exec_ms
        of work on shard 0; once the DEL has run, writes enough to shard 1 to start a rewrite
        there at its next tick (within a second). Returns (connection, EXEC's connection,
        the writers' connections)."""
        c = self.start(threads=2, fsync="always",
                       extra=["--auto-aof-rewrite-min-size", "1mb",
                              "--auto-aof-rewrite-percentage", "100"])
        self.assertEqual(c.cmd("SET", self.GONE, "held"), OK)
        for i in range(100):
            self.assertEqual(c.cmd("SET", on_shard(1, "scan:f%d" % i), "x"), OK)
        # Connections are handed out round-robin: one of these two is on reactor 1, which the
        # script on shard 0 leaves free.
        writers = [self.conn(), self.conn()]
        for w in writers:
            self.assertEqual(w.cmd("PING"), b"+PONG\r\n")
        x = self.conn()
        x.send(encode_command("MULTI") + encode_command("DEL", self.GONE) +
               encode_command("SET", self.OTHER, "new") +
               encode_command("EVAL", self.BUSY % exec_ms, 1, self.OTHER) +
               encode_command("EXEC"))
        time.sleep(0.2)  # the DEL has run; the script runs
        for i, w in enumerate(writers):
            w.send(encode_command("SET", on_shard(1, "scan:big%d" % i), "x" * (3 << 20)))
        return c, x, writers

    def exec_state_after_a_restart(self):
        c = self.start(threads=2, fsync="always")
        state = decode(c.cmd("EXISTS", self.GONE)), decode(c.cmd("GET", self.OTHER))
        self.stop()
        return state

    def test_rewrite_scan_passing_a_key_an_unfinished_exec_deleted(self):
        # An EXEC deletes GONE on shard 1 and is still running (a script on shard 0) when a
        # rewrite of shard 1 scans: the scan cannot see GONE, so the new file has neither its
        # old state nor, until the EXEC commits, its deletion. The first version renamed the new
        # file over the journal at once; a SIGKILL then brought back the DEL without the SET
        # (lockcrash caught it as torn MULTI/EXEC releases).
        _c, x, _writers = self.slow_exec_during_a_rewrite(4000)
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline and "shard 1: journal rewrite done" not in self.log():
            time.sleep(0.01)
        self.assertIn("shard 1: journal rewrite started", self.log(),
                      "no rewrite ran while the EXEC did: the test tested nothing")
        # The EXEC must still be running (its MULTI and QUEUED replies are in, EXEC's is not).
        x.settimeout(0.05)
        self.assertEqual([decode(x.read_reply()) for _ in range(4)], [b"OK"] + [b"QUEUED"] * 3)
        with self.assertRaises(OSError, msg="EXEC ended before the kill: the test tested nothing"):
            x.read_reply()
        self.kill()
        self.assertIn(self.exec_state_after_a_restart(), [(1, None), (0, b"new")],
                      "EXEC came back half done (EXISTS gone, GET other)")

    def test_rewrite_waiting_for_an_exec_finishes_after_it(self):
        # The same, left to finish: the rewrite takes over once the EXEC has committed, and a
        # SIGKILL after it keeps the whole EXEC.
        c, x, writers = self.slow_exec_during_a_rewrite(2000)
        self.assertEqual([decode(x.read_reply()) for _ in range(4)], [b"OK"] + [b"QUEUED"] * 3)
        self.assertEqual(decode(x.read_reply()), [1, b"OK", 1])
        for w in writers:
            self.assertEqual(w.read_reply(), OK)
        self.assertIn("shard 1: journal rewrite started", self.log())
        self.wait_rewrites(c, 1)
        self.kill()
        self.assertEqual(self.exec_state_after_a_restart(), (0, b"new"))


# ---------------------------------------------------------------------------------------------
# 3. A torn last frame
# ---------------------------------------------------------------------------------------------

class JournalTornTailTest(JournalCase):
    def test_cut_at_every_byte_of_the_last_frame(self):
        c = self.start(threads=1, fsync="always")
        for i in range(10):
            self.assertEqual(c.cmd("SET", "k%d" % i, "v%d" % i), OK)
        self.assertEqual(c.cmd("SET", "zlast", "1"), OK)  # the last frame: small
        self.shutdown()
        path = journal_path(self.dir, 0, 1)
        with open(path, "rb") as f:
            data = f.read()
        start, length = frames(data)[-1]
        self.assertEqual(frame_with(data, b"zlast"), (start, length))
        self.assertEqual(start + length, len(data))
        self.assertLess(length, 64)

        def write(cut):
            with open(path, "wb") as f:
                f.write(data[:cut])
            for name in self.journal_files():  # nothing else the start could read
                if name != os.path.basename(path):
                    os.unlink(os.path.join(self.dir, name))

        want = b"*11\r\n" + b"".join(bulk("v%d" % i) for i in range(10)) + NIL
        keys = ["k%d" % i for i in range(10)] + ["zlast"]
        # Cut at the frame's start: a whole journal without the last write, no warning needed.
        for cut in range(start, start + length):
            with self.subTest(cut=cut - start, frame_length=length):
                write(cut)
                c = self.start(threads=1, fsync="always")
                self.assertEqual(c.cmd("MGET", *keys), want)
                self.assertEqual(c.cmd("DBSIZE"), integer(10))
                if cut > start:
                    self.assertRegex(self.log(), r"journal %s at offset %d ends in an incomplete "
                                     r"frame .*dropped %d bytes"
                                     % (re.escape(path), start, cut - start))
                self.kill()
        # Whole: zlast is back.
        write(len(data))
        c = self.start(threads=1, fsync="always")
        self.assertEqual(c.cmd("GET", "zlast"), bulk("1"))
        self.assertNotIn("incomplete frame", self.log())
        self.kill()
        # Zeros after the last frame (the size reached the disk, the data did not): dropped.
        with open(path, "wb") as f:
            f.write(data + bytes(100))
        c = self.start(threads=1, fsync="always")
        self.assertEqual(c.cmd("MGET", *keys), want[:-len(NIL)] + bulk("1"))
        self.assertRegex(self.log(), r"journal %s at offset %d ends in an incomplete frame "
                         r"\(100 zero bytes at the end\): dropped 100 bytes"
                         % (re.escape(path), len(data)))
        self.kill()
        # --aof-load-truncated no: refused, the file named, and left as it was.
        for cut in (start + 1, start + FRAME_HEADER - 1, start + FRAME_HEADER,
                    start + length - 1):
            with self.subTest(refused_cut=cut - start):
                write(cut)
                out = self.refuse(extra=["--aof-load-truncated", "no"])
                self.assertIn(path, out)
                self.assertIn("offset %d" % start, out)
                self.assertIn("--aof-load-truncated yes", out)
                with open(path, "rb") as f:
                    self.assertEqual(f.read(), data[:cut], "the refused file was changed")


# ---------------------------------------------------------------------------------------------
# 4. Damage in the middle
# ---------------------------------------------------------------------------------------------

class JournalDamageTest(JournalCase):
    def test_damaged_middle_frame(self):
        c = self.start(threads=1, fsync="always")
        for i in range(20):
            self.assertEqual(c.cmd("SET", "key:%02d" % i, "value-%d" % i), OK)
        self.shutdown()
        path = journal_path(self.dir, 0, 1)
        with open(path, "rb") as f:
            data = f.read()
        start, length = frame_with(data, b"key:10")
        self.assertLess(start + length, len(data))
        keys = ["key:%02d" % i for i in range(20)]
        want = b"*20\r\n" + b"".join(bulk("value-%d" % i) for i in range(10)) + NIL * 10
        positions = {"length": 0, "length check": 5, "checksum": 9,
                     "payload": FRAME_HEADER + (length - FRAME_HEADER) // 2,
                     "last payload byte": length - 1}
        for what, pos in positions.items():
            with self.subTest(flipped=what):
                bad = bytearray(data)
                bad[start + pos] ^= 0x40
                with open(path, "wb") as f:
                    f.write(bad)
                out = self.refuse()
                self.assertRegex(out, r"journal %s at offset %d is damaged"
                                 % (re.escape(path), start))
                self.assertIn("--aof-load-damaged yes", out)
                with open(path, "rb") as f:
                    self.assertEqual(f.read(), bytes(bad), "the refused file was changed")
                # Asked to, it loads what precedes the damage.
                c = self.start(threads=1, extra=["--aof-load-damaged", "yes"])
                self.assertRegex(self.log(), r"journal %s at offset %d is damaged"
                                 % (re.escape(path), start))
                self.assertEqual(c.cmd("MGET", *keys), want)
                self.assertEqual(c.cmd("DBSIZE"), integer(10))
                self.stop()
                # ... and the journal it wrote then starts without the flag.
                c = self.start(threads=1)
                self.assertEqual(c.cmd("MGET", *keys), want)
                self.kill()

    def test_damage_in_one_of_several_shards_names_that_file(self):
        c = self.start(threads=2, fsync="always")
        for i in range(40):
            self.assertEqual(c.cmd("SET", "k%d" % i, "v"), OK)
        self.shutdown()
        path = journal_path(self.dir, 1, 2)
        with open(path, "rb") as f:
            data = bytearray(f.read())
        fr = frames(bytes(data))
        self.assertGreater(len(fr), 3)
        start, length = fr[len(fr) // 2]
        data[start + length // 2] ^= 1
        with open(path, "wb") as f:
            f.write(data)
        out = self.refuse(threads=2)
        self.assertIn("%s at offset %d" % (path, start), out)
        self.assertNotIn(journal_path(self.dir, 0, 2), out)


# ---------------------------------------------------------------------------------------------
# 5. Rewrite
# ---------------------------------------------------------------------------------------------

class JournalRewriteTest(JournalCase):
    def test_bgrewriteaof_shrinks_and_keeps_every_key(self):
        c = self.start(threads=2, fsync="everysec",
                       extra=["--auto-aof-rewrite-percentage", "0"])
        pad = "p" * 100
        cmds = [("SET", "hot:%d" % k, "%d:%s" % (r, pad)) for r in range(300) for k in range(10)]
        self.assertEqual(set(c.pipeline(cmds)), {OK})
        self.assertEqual(set(c.pipeline([("SET", "cold:%d" % i, i) for i in range(500)])), {OK})
        tokens = []
        for i in range(30):
            tokens.append(token(c.cmd("LOCK.ACQUIRE", "{rw}%d" % i, "o", 60000)))
            self.assertEqual(c.cmd("LOCK.RELEASE", "{rw}%d" % i, "o"), integer(0))
        self.assertEqual(c.cmd("WAITAOF", 1, 0, 0), b"*2\r\n:1\r\n:0\r\n")
        size_before = self.journal_size()
        self.assertEqual(int(self.info(c)["aof_current_size"]), size_before)
        self.assertGreater(size_before, 300 * 10 * 100)
        self.assertEqual(c.cmd("BGREWRITEAOF"), b"+Background append only file rewriting started\r\n")
        # Writes while it runs are in the new file too.
        during = [("SET", "during:%d" % i, i) for i in range(300)]
        during += [("DEL", "cold:%d" % i) for i in range(0, 500, 5)]
        during += [("SET", "hot:%d" % k, "final-%d" % k) for k in range(10)]
        self.assertEqual(len(c.pipeline(during)), len(during))
        i = self.wait_rewrites(c, 2)  # one per shard
        self.assertEqual(i["aof_last_bgrewrite_status"], "ok")
        self.assertEqual(c.cmd("WAITAOF", 1, 0, 0), b"*2\r\n:1\r\n:0\r\n")
        size_after = self.journal_size()
        self.assertLess(size_after, size_before // 5)
        self.assertEqual(int(self.info(c)["aof_current_size"]), size_after)
        self.assert_layout(2)

        def check(c):
            self.assertEqual(decode(c.cmd("MGET", *["hot:%d" % k for k in range(10)])),
                             [("final-%d" % k).encode() for k in range(10)])
            cold = decode(c.cmd("MGET", *["cold:%d" % i for i in range(500)]))
            self.assertEqual(cold, [None if i % 5 == 0 else str(i).encode() for i in range(500)])
            self.assertEqual(decode(c.cmd("MGET", *["during:%d" % i for i in range(300)])),
                             [str(i).encode() for i in range(300)])
            self.assertEqual(c.cmd("DBSIZE"), integer(10 + 400 + 300))
        check(c)
        self.shutdown()
        c = self.start(threads=2, fsync="everysec")
        check(c)
        # The fencing counter was in the rewritten file (no lock was held to carry it).
        self.assertGreater(token(c.cmd("LOCK.ACQUIRE", "{rw}new", "o", 1000)), max(tokens))
        self.stop()

    def test_rewrite_copies_every_database(self):
        # A rewrite steps through the databases; empty ones are passed over within a step and a
        # large one takes several. Every key of every db must be in the rewritten file.
        c = self.start(threads=1, fsync="everysec",
                       extra=["--auto-aof-rewrite-percentage", "0"])
        layout = {0: 3, 1: 1, 7: 1000, 8: 0, 14: 300, 15: 2}  # db -> keys

        def fill(c):
            for db, n in layout.items():
                c.cmd("SELECT", db)
                if n:
                    self.assertEqual(set(c.pipeline([("SET", "k%d" % i, "%d-%d" % (db, i))
                                                     for i in range(n)])), {OK})
            c.cmd("SELECT", 0)

        def check(c):
            for db, n in layout.items():
                self.assertEqual(c.cmd("SELECT", db), OK)
                self.assertEqual(c.cmd("DBSIZE"), integer(n), "db %d" % db)
                if n:
                    self.assertEqual(decode(c.cmd("MGET", *["k%d" % i for i in range(n)])),
                                     [("%d-%d" % (db, i)).encode() for i in range(n)],
                                     "db %d" % db)
            c.cmd("SELECT", 0)
        fill(c)
        self.assertEqual(c.cmd("BGREWRITEAOF"), b"+Background append only file rewriting started\r\n")
        self.assertEqual(self.wait_rewrites(c, 1)["aof_last_bgrewrite_status"], "ok")
        self.shutdown()
        # Only the rewritten file is left: what it holds is what comes back.
        self.assert_layout(1)
        c = self.start(threads=1, fsync="everysec")
        check(c)
        self.stop()

    def test_auto_rewrite_and_sigkill_keep_acknowledged_writes(self):
        c = self.start(threads=2, fsync="always",
                       extra=["--auto-aof-rewrite-min-size", "64kb"])
        writers, keys_each = 4, 3
        acked = {}    # key -> last acknowledged counter
        sent = {}     # key -> last counter sent
        stop = threading.Event()
        errors = []

        def writer(w):
            keys = ["w%d:k%d" % (w, k) for k in range(keys_each)]
            try:
                conn = harness.RespConn(self.server.port)
            except OSError as e:
                errors.append(e)
                return
            try:
                n = 0
                while not stop.is_set():
                    n += 1
                    for key in keys:
                        sent[key] = n
                        r = conn.cmd("SET", key, "%d:%s" % (n, "x" * 300))
                        if r != OK:
                            errors.append((key, r))
                            return
                        acked[key] = n
            except (OSError, ConnectionError):
                pass  # the server was killed under us
            finally:
                conn.close()

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        try:
            self.wait_for("3 automatic rewrites",
                          lambda: int(self.info(c)["aof_rewrites"]) >= 3, timeout=30)
            # Kill it in the middle of a rewrite if one is caught running, else anywhere.
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                if self.info(c)["aof_rewrite_in_progress"] == "1":
                    break
            else:
                time.sleep(random.random() * 0.2)
            self.kill()  # while the writers write
        finally:
            stop.set()
            for t in threads:
                t.join(SLACK)
        self.assertEqual(errors, [])
        self.assertEqual(len(acked), writers * keys_each)
        c = self.start(threads=2, fsync="always")
        self.assert_layout(2)
        for key in sorted(acked):
            v = c.cmd("GET", key)
            self.assertRegex(v, rb"^\$\d+\r\n\d+:x{300}\r\n$", key)
            n = int(decode(v).split(b":")[0])
            self.assertIn(n, (acked[key], sent[key]),
                          "%s: %d on disk, %d acknowledged, %d sent" % (key, n, acked[key],
                                                                       sent[key]))
        self.assertEqual(c.cmd("DBSIZE"), integer(writers * keys_each))
        self.stop()

    def test_bgrewriteaof_with_the_journal_off(self):
        c = self.start(appendonly=False)
        self.assertEqual(c.cmd("BGREWRITEAOF"),
                         b"-ERR the journal is off (start deadbolt with --appendonly yes): "
                         b"nothing to rewrite\r\n")
        self.stop()


class JournalRewriteInProgressTest(JournalCase):
    redis_too = True

    def test_second_bgrewriteaof_while_one_runs(self):
        c = self.start(fsync="everysec")
        self.assertEqual(set(c.pipeline([("SET", "k%d" % i, i) for i in range(1000)])), {OK})
        replies = c.pipeline([("BGREWRITEAOF",), ("BGREWRITEAOF",), ("INFO", "persistence")])
        self.assertEqual(replies[:2], [b"+Background append only file rewriting started\r\n",
                                       b"-ERR Background append only file rewriting already in "
                                       b"progress\r\n"])
        during = parse_info(decode(replies[2]))
        self.assertEqual(during["aof_rewrite_in_progress"], "1")
        self.assertRegex(during["aof_current_rewrite_time_sec"], r"^\d+$")  # not -1: one runs
        i = self.wait_rewrites(c, 1)
        self.assertEqual(i["aof_current_rewrite_time_sec"], "-1")
        self.assertEqual(i["aof_last_bgrewrite_status"], "ok")
        self.assertEqual(c.cmd("DBSIZE"), integer(1000))
        self.stop()


# ---------------------------------------------------------------------------------------------
# 6. INFO persistence and CONFIG
# ---------------------------------------------------------------------------------------------

# The fields of Redis 7's INFO persistence that deadbolt reports too (checked against
# redis-server 7.0); the aof_current_size group only with appendonly yes, as in Redis.
REDIS_FIELDS = ["loading", "async_loading", "rdb_changes_since_last_save",
                "rdb_bgsave_in_progress", "rdb_last_save_time", "rdb_last_bgsave_status",
                "aof_enabled",
                "aof_rewrite_in_progress", "aof_rewrite_scheduled", "aof_last_rewrite_time_sec",
                "aof_current_rewrite_time_sec", "aof_last_bgrewrite_status", "aof_rewrites",
                "aof_last_write_status"]
REDIS_AOF_ON_FIELDS = ["aof_current_size", "aof_base_size", "aof_buffer_length",
                       "aof_pending_bio_fsync", "aof_delayed_fsync"]


class JournalInfoConfigTest(JournalCase):
    redis_too = True

    def config_get(self, c, name):
        r = decode(c.cmd("CONFIG", "GET", name))
        if isinstance(r, list):
            r = dict(zip(r[0::2], r[1::2]))
        return r.get(name.encode())

    def test_journal_off(self):
        c = self.start(appendonly=False)
        i = self.info(c)
        for f in REDIS_FIELDS:
            self.assertIn(f, i)
        self.assertEqual(i["aof_enabled"], "0")
        self.assertEqual(i["aof_last_write_status"], "ok")
        self.assertNotIn("aof_current_size", i)
        self.assertEqual(self.config_get(c, "appendonly"), b"no")
        self.assertEqual(self.journal_files(), [])
        self.stop()

    def test_journal_on(self):
        c = self.start(fsync="everysec")
        i = self.info(c)
        for f in REDIS_FIELDS + REDIS_AOF_ON_FIELDS:
            self.assertIn(f, i)
        self.assertEqual(i["aof_enabled"], "1")
        self.assertEqual(i["aof_rewrite_in_progress"], "0")
        self.assertEqual(i["aof_current_rewrite_time_sec"], "-1")
        self.assertEqual(i["aof_last_write_status"], "ok")
        self.assertEqual(i["aof_last_bgrewrite_status"], "ok")
        if not AGAINST_REDIS:
            self.assertEqual(i["aof_fsync_policy"], "everysec")
            self.assertEqual(i["aof_dir"], self.dir)
        size = int(i["aof_current_size"])
        self.assertEqual(set(c.pipeline([("SET", "k%d" % n, "v" * 50) for n in range(100)])),
                         {OK})
        self.wait_for("aof_current_size to grow by the writes",
                      lambda: int(self.info(c)["aof_current_size"]) >= size + 100 * 50)
        self.assertEqual(self.config_get(c, "appendonly"), b"yes")
        self.assertEqual(self.config_get(c, "appendfsync"), b"everysec")
        self.assertEqual(os.path.realpath(self.config_get(c, "dir").decode()),
                         os.path.realpath(self.dir))
        self.stop()

    def fsyncs(self, c):
        return int(self.info(c)["aof_fsyncs"])

    def test_config_set_appendfsync_takes_effect(self):
        if AGAINST_REDIS:
            self.skipTest("aof_fsyncs is deadbolt's")
        c = self.start(fsync="no")
        self.assertEqual(c.cmd("SET", "a", "1"), OK)
        time.sleep(1.2)  # no everysec fsync either
        self.assertEqual(self.fsyncs(c), 0)
        self.assertEqual(self.info(c)["aof_batches_not_on_disk"], "1")
        # always: a write is acknowledged once it is on disk.
        self.assertEqual(c.cmd("CONFIG", "SET", "appendfsync", "always"), OK)
        self.assertEqual(self.info(c)["aof_fsync_policy"], "always")
        for n in range(10):
            self.assertEqual(c.cmd("SET", "k%d" % n, n), OK)
            i = self.info(c)
            self.assertEqual(i["aof_batches_not_on_disk"], "0", "after SET k%d" % n)
        self.assertGreaterEqual(self.fsyncs(c), 10)
        self.assertEqual(c.cmd("GET", "a"), bulk("1"))
        # no: no more fsyncs (once what always wrote is on disk).
        self.assertEqual(c.cmd("CONFIG", "SET", "appendfsync", "no"), OK)
        self.assertEqual(c.cmd("SET", "b", "1"), OK)
        time.sleep(0.2)
        before = self.fsyncs(c)
        for n in range(10):
            self.assertEqual(c.cmd("SET", "k%d" % n, n), OK)
        time.sleep(1.2)
        self.assertEqual(self.fsyncs(c), before)
        # everysec: within about a second, everything is on disk.
        self.assertEqual(c.cmd("CONFIG", "SET", "appendfsync", "everysec"), OK)
        self.assertEqual(c.cmd("SET", "c", "1"), OK)
        self.wait_for("the everysec fsync",
                      lambda: self.info(c)["aof_batches_not_on_disk"] == "0", timeout=5)
        self.assertGreater(self.fsyncs(c), before)
        self.stop()

    def test_immutable_journal_settings(self):
        if AGAINST_REDIS:
            self.skipTest("redis-server can turn its AOF on and off and move it at run time")
        c = self.start(fsync="everysec")
        for name, value in (("appendonly", "no"), ("dir", "/tmp")):
            self.assertEqual(c.cmd("CONFIG", "SET", name, value),
                             b"-ERR CONFIG SET failed (possibly related to argument '%s') - "
                             b"can't set immutable config\r\n" % name.encode())
        self.stop()

    def test_config_set_appendfsync_errors(self):
        c = self.start(fsync="everysec")
        for value in ("sometimes", ""):
            self.assertEqual(c.cmd("CONFIG", "SET", "appendfsync", value),
                             b"-ERR CONFIG SET failed (possibly related to argument "
                             b"'appendfsync') - argument(s) must be one of the following: "
                             b"everysec, always, no\r\n")
        self.assertEqual(self.config_get(c, "appendfsync"), b"everysec")
        self.assertEqual(c.cmd("CONFIG", "SET", "appendfsync", "ALWAYS"), OK)
        self.assertEqual(self.config_get(c, "appendfsync"), b"always")
        self.stop()


# ---------------------------------------------------------------------------------------------
# 7. WAITAOF
# ---------------------------------------------------------------------------------------------

WAITAOF_ERRORS = [
    # Redis 7.2 (waitaofCommand): numlocal in [0, 1], numreplicas >= 0, then the timeout.
    (("WAITAOF", "x", 0, 0), b"-ERR value is not an integer or out of range\r\n"),
    (("WAITAOF", "1.5", 0, 0), b"-ERR value is not an integer or out of range\r\n"),
    (("WAITAOF", 0, "x", 0), b"-ERR value is not an integer or out of range\r\n"),
    (("WAITAOF", 0, 0, "x"), b"-ERR timeout is not an integer or out of range\r\n"),
    (("WAITAOF", 0, 0, "1.5"), b"-ERR timeout is not an integer or out of range\r\n"),
    (("WAITAOF", 0, 0, -1), b"-ERR timeout is negative\r\n"),
    (("WAITAOF", 0, 1, -1), b"-ERR timeout is negative\r\n"),
    (("WAITAOF", 2, 0, 0), b"-ERR value is out of range, value must between 0 and 1\r\n"),
    (("WAITAOF", -1, 0, 0), b"-ERR value is out of range, value must between 0 and 1\r\n"),
    (("WAITAOF", 0, -1, 0), b"-ERR value is out of range, must be positive\r\n"),
    (("WAITAOF", 1, 0), b"-ERR wrong number of arguments for 'waitaof' command\r\n"),
    (("WAITAOF", 1, 0, 0, 0), b"-ERR wrong number of arguments for 'waitaof' command\r\n"),
]

AOF_OFF_ERROR = (b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is "
                 b"disabled.\r\n")


class JournalWaitAofTest(JournalCase):
    redis_too = True

    def start(self, *args, **kwargs):
        c = super().start(*args, **kwargs)
        if c.cmd("WAITAOF", 0, 0, 0).startswith(b"-ERR unknown command"):
            self.skipTest("this server has no WAITAOF (Redis < 7.2)")
        return c

    def timed(self, c, *args):
        t = time.monotonic()
        r = c.cmd(*args)
        return r, time.monotonic() - t

    def test_journal_off(self):
        c = self.start(appendonly=False)
        self.assertEqual(c.cmd("SET", "k", "v"), OK)
        self.assertEqual(c.cmd("WAITAOF", 1, 0, 0), AOF_OFF_ERROR)
        self.assertEqual(c.cmd("WAITAOF", 1, 1, 100), AOF_OFF_ERROR)
        self.assertEqual(c.cmd("WAITAOF", 0, 0, 0), b"*2\r\n:0\r\n:0\r\n")
        r, took = self.timed(c, "WAITAOF", 0, 1, 100)
        self.assertEqual(r, b"*2\r\n:0\r\n:0\r\n")
        self.assertGreaterEqual(took, 0.09)
        for args, want in WAITAOF_ERRORS:
            self.assertEqual(c.cmd(*args), want, "reply to %r" % (args,))
        self.stop()

    def check_on(self, fsync):
        c = self.start(fsync=fsync)
        self.assertEqual(c.cmd("SET", "k", "v"), OK)
        self.assertEqual(c.cmd("WAITAOF", 1, 0, 0), b"*2\r\n:1\r\n:0\r\n")
        if not AGAINST_REDIS:
            self.assertEqual(self.info(c)["aof_batches_not_on_disk"], "0")
        # Writes on every shard, pipelined with the WAITAOF.
        cmds = [("SET", "k%d" % i, i) for i in range(50)] + [("WAITAOF", 1, 0, 0)]
        self.assertEqual(c.pipeline(cmds)[-1], b"*2\r\n:1\r\n:0\r\n")
        if not AGAINST_REDIS:
            self.assertEqual(self.info(c)["aof_batches_not_on_disk"], "0")
        # No replica will ever answer: the reply comes when the timeout runs out.
        r, took = self.timed(c, "WAITAOF", 0, 1, 100)
        self.assertEqual(r, b"*2\r\n:1\r\n:0\r\n")
        self.assertGreaterEqual(took, 0.09)
        r, took = self.timed(c, "WAITAOF", 1, 1, 100)
        self.assertEqual(r, b"*2\r\n:1\r\n:0\r\n")
        self.assertGreaterEqual(took, 0.09)
        for args, want in WAITAOF_ERRORS:
            self.assertEqual(c.cmd(*args), want, "reply to %r" % (args,))
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertEqual(c3.cmd("SET", "k", "v3"), OK)
        self.assertEqual(c3.cmd("WAITAOF", 1, 0, 0), b"*2\r\n:1\r\n:0\r\n")
        self.stop()

    def test_journal_on_everysec(self):
        self.check_on("everysec")

    def test_journal_on_always(self):
        self.check_on("always")

    def test_journal_on_appendfsync_no(self):
        # deadbolt fsyncs for WAITAOF whatever the policy (Redis 7.2 with appendfsync no
        # never counts the local AOF as fsynced: WAITAOF 1 0 T times out with [0, 0]).
        if AGAINST_REDIS:
            self.skipTest("Redis does not fsync for WAITAOF with appendfsync no")
        self.check_on("no")


if __name__ == "__main__":
    harness.main()
