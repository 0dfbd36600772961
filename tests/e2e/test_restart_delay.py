"""--restart-delay (docs/LOCKS.md, "Restarting without persistence"): for the given milliseconds
after it starts serving, the server refuses every call that could take a lock — SET in any form,
SETNX, INCR, HSET, MSET, LOCK.ACQUIRE, the acquire scripts by EVALSHA or EVAL — with a TRYAGAIN
error, while GET, DEL, DELIFEQ, PEXPIRE, LOCK.RELEASE and the release / extend scripts work.
Inside MULTI the refused command makes EXEC answer EXECABORT. redis-py's Lock raises.

The module's server runs with a delay far longer than the module takes, so every "refused" check
is free of timing. A second server, with a short delay, shows that acquisitions are granted once
it is over — and never before it: the first grant comes at least the delay after the process was
started (a lower bound only; the upper one is a generous deadline).

--restart-delay is deadbolt's own flag: the module is skipped with DEADBOLT_AGAINST_REDIS=1."""

import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, OK, decode, integer  # noqa: E402
from slots import on_shard  # noqa: E402
from test_scripts import CLASSIC_TEXTS, SEED_TEXTS, SHAS  # noqa: E402

try:
    import redis  # Debian's python3-redis: run with /usr/bin/python3
    from redis.lock import Lock as PyLock
except ImportError:  # pragma: no cover - depends on the interpreter
    redis = None

AGAINST_REDIS = harness.AGAINST_REDIS

LONG_DELAY_MS = 600000   # far longer than the module runs, even under ASan on a busy machine
SHORT_DELAY_MS = 800
GRANT_DEADLINE = 60.0    # seconds to wait for the short delay to be over: generous, never tight

EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"


def refusal_re(delay_ms):
    return re.compile(rb"^-TRYAGAIN deadbolt restarted (\d+) ms ago; lock acquisitions are "
                      rb"refused for (\d+) ms more \(--restart-delay %d\)\r\n$" % delay_ms)


def setUpModule():
    if AGAINST_REDIS:
        raise unittest.SkipTest("--restart-delay is deadbolt's own flag; redis-server has none")
    harness.start_module_server(["--restart-delay", str(LONG_DELAY_MS)])


def tearDownModule():
    harness.stop_module_server()


def info_field(c, section, field):
    text = decode(c.cmd("INFO", section))
    m = re.search(rb"^%s:(.*)\r$" % field.encode(), bytes(text), re.M)
    if not m:
        raise AssertionError("INFO %s has no %s:\n%r" % (section, field, text))
    return m.group(1)


class DuringDelayTest(harness.ServerTestCase):
    """Everything here runs while the module server's delay runs."""

    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def assertRefused(self, raw, what=""):
        m = refusal_re(LONG_DELAY_MS).match(raw)
        self.assertIsNotNone(m, "expected the --restart-delay refusal for %s, got %r" % (what, raw))
        elapsed, remaining = int(m.group(1)), int(m.group(2))
        self.assertGreater(remaining, 0)
        self.assertEqual(elapsed + remaining, LONG_DELAY_MS, raw)

    def refused(self, *args, c=None):
        self.assertRefused((c or self.c).cmd(*args), " ".join(str(a) for a in args))

    def test_set_in_every_form_and_setnx_are_refused(self):
        a, b = on_shard(0, "k"), on_shard(1, "k")
        for args in (("SET", "lock", "tok", "NX", "PX", 30000),
                     ("SET", "lock", "tok"),
                     ("SET", "lock", "tok", "XX"),
                     ("SET", "lock", "tok", "IFEQ", "tok", "PX", 30000),
                     ("SET", "lock", "tok", "NX", "GET"),
                     ("SETNX", "lock", "tok"),
                     ("SETEX", "lock", 30, "tok"),
                     ("PSETEX", "lock", 30000, "tok"),
                     ("GETSET", "lock", "tok"),
                     ("MSET", a, "1", b, "2"),  # keys on both shards
                     ("MSETNX", a, "1", b, "2"),
                     ("APPEND", "lock", "tok"),
                     ("INCR", "n"),
                     ("INCRBYFLOAT", "n", "1.5"),
                     ("HSET", "h", "f", "v"),
                     ("HINCRBY", "h", "f", 1)):
            self.refused(*args)
        # Nothing was created, on either shard.
        self.assertReply(integer(0), "DBSIZE")
        self.assertReply(NIL, "GET", "lock")

    def test_lock_acquire_is_refused_and_does_not_wait(self):
        self.refused("LOCK.ACQUIRE", "lock", "me", 30000)
        # WAIT does not queue the client: the refusal comes at once.
        c = self.conn(timeout=5)
        self.refused("LOCK.ACQUIRE", "lock", "me", 30000, "WAIT", 0, "REENTRANT", c=c)
        self.assertReply(harness.PONG, "PING", c=c)
        info = decode(self.c.cmd("LOCK.INFO", "lock"))
        self.assertEqual(info[0:2], [b"owner", None])
        self.assertEqual(info[-2:], [b"waiters", 0])

    def test_acquire_scripts_are_refused(self):
        a, b = on_shard(0, "r"), on_shard(1, "r")
        self.refused("EVALSHA", SHAS["redisson_acquire"], 1, "{lk}", 30000, "id:1")
        self.refused("evalsha", SHAS["redisson_acquire"].upper(), 1, "{lk}", 30000, "id:1")
        self.refused("EVALSHA", SHAS["redisson_acquire_hset"], 1, "{lk}", 30000, "id:1")
        self.refused("EVALSHA", SHAS["redsync_touch_nx"], 1, "lock", "tok", 30000)
        self.refused("EVALSHA", SHAS["redlock4_acquire"], 2, a, b, "tok", 30000)
        self.refused("EVALSHA", SHAS["sesame_acquire"], 1, a, 0, "tok", 30000)
        # By text: judged by the script, not by how it is sent.
        self.refused("EVAL", SEED_TEXTS["redisson_acquire_3x"], 1, "{lk}", 30000, "id:1")
        self.assertReply(integer(0), "DBSIZE")

    def test_lua_scripts_are_refused_unless_read_only(self):
        # Any script the catalogue does not know runs in Lua, which may create a key.
        script = "return redis.call('SET', KEYS[1], ARGV[1])"
        self.refused("EVAL", script, 1, "lock", "tok")
        sha = decode(self.c.cmd("SCRIPT", "LOAD", script)).decode()
        self.refused("EVALSHA", sha, 1, "lock", "tok")
        self.assertReply(integer(0), "DBSIZE")
        # EVAL_RO cannot write, so it runs; so does an EVALSHA nobody loaded (NOSCRIPT).
        self.assertReply(NIL, "EVAL_RO", "return redis.call('GET', KEYS[1])", 1, "lock")
        self.assertReply(harness.error("NOSCRIPT No matching script. Please use EVAL."),
                         "EVALSHA", "f" * 40, 0)

    def test_releases_extensions_deletes_and_reads_work(self):
        a, b = on_shard(0, "r"), on_shard(1, "r")
        self.assertReplies([
            (("GET", "lock"), NIL),
            (("MGET", a, b), harness.array(NIL, NIL)),
            (("EXISTS", "lock"), integer(0)),
            (("PTTL", "lock"), integer(-2)),
            (("DEL", "lock", a, b), integer(0)),
            (("UNLINK", "lock"), integer(0)),
            (("DELIFEQ", "lock", "tok"), integer(0)),
            (("DELEX", "lock", "IFEQ", "tok"), integer(0)),
            (("PEXPIRE", "lock", 30000), integer(0)),
            (("EXPIRE", "lock", 30), integer(0)),
            (("PERSIST", "lock"), integer(0)),
            (("GETDEL", "lock"), NIL),
            (("HDEL", "h", "f"), integer(0)),
            (("LOCK.RELEASE", "lock", "me"), integer(-1)),
            (("LOCK.EXTEND", "lock", "me", 30000), integer(0)),
            # The release and extend scripts, by SHA1 and by text.
            (("EVALSHA", SHAS["py_release"], 1, "lock", "tok"), integer(0)),
            (("EVALSHA", SHAS["py_extend"], 1, "lock", "tok", 1000, 1), integer(0)),
            (("EVALSHA", SHAS["py_reacquire"], 1, "lock", "tok", 1000), integer(0)),
            (("EVAL", CLASSIC_TEXTS["classic_dq"], 1, "lock", "tok"), integer(0)),
            (("EVALSHA", SHAS["redisson_release"], 3, "{lk}", "redisson_lock__channel:{lk}",
              "redisson_unlock_latch:{lk}:1", 0, 30000, "id:1", "publish", 1000), NIL),
            (("EVALSHA", SHAS["redisson_renew_one"], 1, "{lk}", 30000, "id:1"), integer(0)),
            (("EVALSHA", SHAS["redsync_touch"], 1, "lock", "tok", 30000), integer(0)),
            (("EVALSHA", SHAS["redlock4_extend"], 2, a, b, "tok", 30000), integer(0)),
            (("EVALSHA", SHAS["redlock4_release"], 2, a, b, "tok"), integer(0)),
            # The read-only form of an acquire cannot write, so it is not refused.
            (("EVALSHA_RO", SHAS["redisson_acquire"], 1, "{lk}", 30000, "id:1"),
             harness.error("ERR Write commands are not allowed from read-only scripts. script: "
                           "%s, on @user_script:1." % SHAS["redisson_acquire"])),
            (("PUBLISH", "ch", "msg"), integer(0)),
        ])
        self.assertReply(integer(0), "DBSIZE")

    def test_multi_with_a_refused_command_aborts(self):
        c = self.c
        self.assertReply(OK, "MULTI")
        self.assertReply(b"+QUEUED\r\n", "GET", "lock")
        self.refused("SET", "lock", "tok", "NX", "PX", 30000)
        self.assertReply(b"+QUEUED\r\n", "DEL", "lock")
        self.assertReply(EXECABORT, "EXEC")
        # The same for an acquire script queued in a transaction.
        self.assertReply(OK, "MULTI")
        self.refused("EVALSHA", SHAS["redisson_acquire"], 1, "{lk}", 30000, "id:1")
        self.assertReply(EXECABORT, "EXEC")
        # A transaction of commands that are not refused runs.
        self.assertReply(OK, "MULTI")
        self.assertReply(b"+QUEUED\r\n", "DELIFEQ", "lock", "tok")
        self.assertReply(b"+QUEUED\r\n", "GET", "lock")
        self.assertReply(harness.array(integer(0), NIL), "EXEC")
        self.assertReply(harness.PONG, "PING", c=c)

    def test_pipelined_refusals_keep_order(self):
        replies = self.c.pipeline([("GET", "lock"), ("SETNX", "lock", "a"), ("DEL", "lock"),
                                   ("LOCK.ACQUIRE", "lock", "me", 1000), ("PING",)])
        self.assertEqual(replies[0], NIL)
        self.assertRefused(replies[1], "SETNX")
        self.assertEqual(replies[2], integer(0))
        self.assertRefused(replies[3], "LOCK.ACQUIRE")
        self.assertEqual(replies[4], harness.PONG)

    def test_resp3_gets_the_same_error(self):
        c = self.conn()
        self.assertTrue(c.cmd("HELLO", 3).startswith(b"%"))
        self.refused("SET", "lock", "tok", "NX", "PX", 30000, c=c)

    def test_info_config_and_commandstats(self):
        self.assertEqual(info_field(self.c, "server", "restart_delay_ms"), b"%d" % LONG_DELAY_MS)
        first = int(info_field(self.c, "server", "restart_delay_remaining_ms"))
        self.assertTrue(0 < first < LONG_DELAY_MS, first)
        time.sleep(0.05)
        second = int(info_field(self.c, "server", "restart_delay_remaining_ms"))
        self.assertTrue(0 < second < first, (first, second))
        self.assertReply(harness.array(harness.bulk("restart-delay"), harness.bulk(str(LONG_DELAY_MS))),
                         "CONFIG", "GET", "restart-delay")
        self.assertReply(harness.error("ERR CONFIG SET failed (possibly related to argument "
                                       "'restart-delay') - can't set immutable config"),
                         "CONFIG", "SET", "restart-delay", "0")
        # A refused call counts as rejected, not as a call.
        self.refused("PSETEX", "lock", 1000, "tok")
        stats = info_field(self.c, "commandstats", "cmdstat_psetex")
        self.assertRegex(stats, rb"^calls=0,.*,rejected_calls=[1-9]\d*,failed_calls=0$")

    @unittest.skipIf(redis is None, "redis-py is not importable by %s" % sys.executable)
    def test_redis_py_lock_acquire_raises(self):
        r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30)
        self.addCleanup(r.close)
        with self.assertRaisesRegex(redis.exceptions.ResponseError, "^TRYAGAIN .*--restart-delay"):
            r.lock("pylock", timeout=10).acquire(blocking=False)
        # A blocking acquire does not wait for the delay to pass: the error ends it.
        with self.assertRaisesRegex(redis.exceptions.ResponseError, "^TRYAGAIN "):
            r.lock("pylock", timeout=10, blocking_timeout=5).acquire()
        self.assertIsNone(r.get("pylock"))
        # Its release script (EVALSHA) runs: nothing to release.
        release = r.register_script(PyLock.LUA_RELEASE_SCRIPT)
        self.assertEqual(release(keys=["pylock"], args=["tok"]), 0)


class AfterDelayTest(unittest.TestCase):
    """A server of its own with a short delay: acquisitions are refused until it is over, then
    granted."""

    server = None

    @classmethod
    def setUpClass(cls):
        cls.started = time.monotonic()  # before the process exists: the delay starts later
        cls.server = harness.ServerProcess(["--restart-delay", str(SHORT_DELAY_MS)]).start()

    @classmethod
    def tearDownClass(cls):
        server, cls.server = cls.server, None
        if server is not None:
            problem = server.stop()
            if problem:
                raise AssertionError("%s\n%s" % (problem, server.log_tail()))

    def setUp(self):
        self.conns = []
        self.addCleanup(lambda: [c.close() for c in self.conns])

    def conn(self):
        c = harness.RespConn(self.server.port)
        self.conns.append(c)
        return c

    def wait_for_first_grant(self, c):
        """Polls SET NX PX until it is granted; every earlier reply must be the refusal. Returns
        the monotonic time of the grant."""
        pattern = refusal_re(SHORT_DELAY_MS)
        deadline = time.monotonic() + GRANT_DEADLINE
        while True:
            raw = c.cmd("SET", "first", "tok", "NX", "PX", 30000)
            if raw == OK:
                return time.monotonic()
            m = pattern.match(raw)
            self.assertIsNotNone(m, "neither granted nor refused: %r" % raw)
            self.assertEqual(int(m.group(1)) + int(m.group(2)), SHORT_DELAY_MS, raw)
            self.assertLess(time.monotonic(), deadline, "still refused after %.0fs" % GRANT_DEADLINE)
            time.sleep(0.02)

    def test_acquisitions_are_granted_once_the_delay_is_over_and_not_before(self):
        c = self.conn()
        granted = self.wait_for_first_grant(c)
        # Never before the delay: it counts from when the server started serving, which is after
        # `started` (1 ms of slack for the server's millisecond clock).
        self.assertGreaterEqual(granted - self.started, (SHORT_DELAY_MS - 1) / 1000.0)
        self.assertEqual(c.cmd("SET", "first", "tok", "NX", "PX", 30000), NIL)  # held now
        self.assertEqual(info_field(c, "server", "restart_delay_remaining_ms"), b"0")

        # Every kind of acquisition now runs.
        a, b = on_shard(0, "r"), on_shard(1, "r")
        self.assertEqual(c.cmd("SETNX", "n", "v"), integer(1))
        self.assertRegex(c.cmd("LOCK.ACQUIRE", "native", "me", 30000), rb"^:[1-9]\d*\r\n$")
        self.assertEqual(c.cmd("EVALSHA", SHAS["redisson_acquire"], 1, "{lk}", 30000, "id:1"), NIL)
        self.assertEqual(c.cmd("EVALSHA", SHAS["redlock4_acquire"], 2, a, b, "tok", 30000),
                         integer(2))
        self.assertEqual(c.cmd("EVAL", SEED_TEXTS["redisson_acquire_3x"], 1, "{lk2}", 30000, "id:1"),
                         NIL)
        self.assertEqual(c.pipeline([("MULTI",), ("SET", "m", "v", "NX"), ("EXEC",)]),
                         [OK, b"+QUEUED\r\n", harness.array(OK)])
        # And the releases act on what was granted.
        self.assertEqual(c.cmd("EVALSHA", SHAS["py_release"], 1, "first", "tok"), integer(1))
        self.assertEqual(c.cmd("LOCK.RELEASE", "native", "me"), integer(0))
        self.assertEqual(c.cmd("EVALSHA", SHAS["redlock4_release"], 2, a, b, "tok"), integer(2))

        if redis is not None:
            r = redis.Redis(host="127.0.0.1", port=self.server.port, socket_timeout=30)
            self.addCleanup(r.close)
            lock = r.lock("pylock", timeout=10)
            self.assertTrue(lock.acquire(blocking=False))
            lock.release()
            self.assertIsNone(r.get("pylock"))


if __name__ == "__main__":
    harness.main()
