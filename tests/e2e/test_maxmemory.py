"""maxmemory with noeviction (issue 15), against deadbolt and redis-server alike: over the limit,
commands that may grow the data get Redis's OOM error (also inside scripts, before their first
write, and while queueing in MULTI), while reads, deletes, expiries and lock releases work, and
nothing is evicted. Under the limit everything works again.

Most tests set maxmemory to 1 byte, so that every server is over it at once; one fills a real
limit a little above what the server uses and checks that the refusal comes, and that the held
lock can still be released."""

import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK  # noqa: E402
from test_scripts import SHAS, texts  # noqa: E402

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def script_oom(sha, line=1):
    return (b"-OOM command not allowed when used memory > 'maxmemory'. script: %s, on "
            b"@user_script:%d.\r\n" % (sha.encode(), line))


class MaxmemoryTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertEqual(self.c.cmd("FLUSHALL"), OK)
        self.addCleanup(lambda: self.conn().cmd("CONFIG", "SET", "maxmemory", "0"))

    def over_limit(self):
        self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory", "1"), OK)

    def test_writes_refused_reads_deletes_and_expiries_work(self):
        self.assertEqual(self.c.cmd("SET", "held", "tok", "PX", "100000"), OK)
        self.assertEqual(self.c.cmd("HSET", "h", "owner", "1"), harness.integer(1))
        self.over_limit()
        self.assertEqual(self.c.cmd("CONFIG", "GET", "maxmemory"),
                         harness.array(harness.bulk(b"maxmemory"), harness.bulk(b"1")))
        self.assertEqual(harness.info(self.c, "memory")["maxmemory"], "1")
        self.assertEqual(harness.info(self.c, "memory")["maxmemory_policy"], "noeviction")
        self.assertReplies([
            (("SET", "k", "v"), OOM),
            (("SET", "lock:1", "tok", "NX", "PX", "30000"), OOM),
            (("SETNX", "lock:2", "1"), OOM),
            (("GETSET", "held", "x"), OOM),
            (("INCR", "n"), OOM),
            (("HINCRBY", "h", "owner", "1"), OOM),
            (("LPUSH", "l", "a"), OOM),
            (("ZADD", "z", "1", "a"), OOM),
            (("SADD", "s", "a"), OOM),
            (("GET", "held"), harness.bulk(b"tok")),
            (("EXISTS", "lock:1", "lock:2", "n"), harness.integer(0)),
            (("PEXPIRE", "held", "50000"), harness.integer(1)),
            (("HDEL", "h", "owner"), harness.integer(1)),
            (("DEL", "held"), harness.integer(1)),
            (("PING",), b"+PONG\r\n"),
        ])
        self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory", "0"), OK)
        self.assertEqual(self.c.cmd("SET", "k", "v"), OK)

    def test_multi_refuses_queueing(self):
        self.over_limit()
        c = self.c
        self.assertEqual(c.cmd("MULTI"), OK)
        self.assertEqual(c.cmd("GET", "a"), OOM)  # even a read: queueing takes memory
        self.assertEqual(c.cmd("EXEC"), EXECABORT)
        self.assertEqual(c.cmd("MULTI"), OK)
        self.assertEqual(c.cmd("SET", "a", "b"), OOM)
        self.assertEqual(c.cmd("DISCARD"), OK)

    def test_scripts_refused_before_their_first_write(self):
        self.assertEqual(self.c.cmd("SET", "lock", "tok", "PX", "100000"), OK)
        self.over_limit()
        t = texts()
        # Redisson's acquire: its first write is HINCRBY, which may grow the data.
        got = self.c.cmd("EVAL", t["redisson_acquire"], "1", "rlock", "30000", "id:1")
        self.assertEqual(got, script_oom(SHAS["redisson_acquire"]))
        self.assertEqual(self.c.cmd("EXISTS", "rlock"), harness.integer(0))
        # A script nobody catalogued (run in Lua): the same rule, and Redis's error.
        unknown = "return redis.call('set', KEYS[1], 'x')"
        self.assertEqual(self.c.cmd("EVAL", unknown, "1", "k"),
                         script_oom(hashlib.sha1(unknown.encode()).hexdigest()))
        after_write = "redis.call('del', KEYS[1]); return redis.call('set', KEYS[1], 'x')"
        self.assertEqual(self.c.cmd("EVAL", after_write, "1", "k"), OK)
        self.assertEqual(self.c.cmd("EVAL", "return 1", "0"), harness.integer(1))
        # The classic compare-and-delete and redis-py's release and extend: no growth, they run.
        self.assertEqual(self.c.cmd("EVAL", t["py_extend"], "1", "lock", "tok", "60000", "1"),
                         harness.integer(1))
        self.assertEqual(self.c.cmd("EVAL", t["classic_dq"], "1", "lock", "other"),
                         harness.integer(0))
        self.assertEqual(self.c.cmd("EVAL", t["py_release"], "1", "lock", "tok"),
                         harness.integer(1))
        self.assertEqual(self.c.cmd("EXISTS", "lock"), harness.integer(0))

    def test_redis_py_lock_releases_while_over(self):
        import redis
        r = redis.Redis(port=harness.port())
        lock = r.lock("pylock", timeout=30)
        self.assertTrue(lock.acquire(blocking=False))
        self.over_limit()
        other = r.lock("pylock2", timeout=30)
        with self.assertRaises(redis.exceptions.ResponseError) as e:
            other.acquire(blocking=False)
        self.assertIn("OOM", str(e.exception))
        self.assertTrue(lock.extend(10))
        lock.release()
        self.assertEqual(r.exists("pylock"), 0)
        r.close()

    def test_native_lock_commands(self):
        if harness.AGAINST_REDIS:
            self.skipTest("DELIFEQ and LOCK.* are deadbolt's")
        token = harness.decode(self.c.cmd("LOCK.ACQUIRE", "nl", "owner", "30000"))
        self.assertEqual(self.c.cmd("SET", "cas", "tok"), OK)
        self.over_limit()
        self.assertEqual(self.c.cmd("LOCK.ACQUIRE", "nl2", "owner", "30000"), OOM)
        self.assertEqual(self.c.cmd("LOCK.EXTEND", "nl", "owner", "60000"), harness.integer(1))
        self.assertEqual(self.c.cmd("LOCK.RELEASE", "nl", "owner"), harness.integer(0))  # 0 left
        self.assertEqual(self.c.cmd("EXISTS", "nl"), harness.integer(0))
        self.assertEqual(self.c.cmd("DELIFEQ", "cas", "tok"), harness.integer(1))
        self.assertGreater(token, 0)

    def test_a_real_limit_is_reached_and_the_held_lock_released(self):
        self.assertEqual(self.c.cmd("SET", "lock:held", "tok", "PX", "100000"), OK)
        used = int(harness.info(self.c, "memory")["used_memory"])
        limit = used + 8 * 1024 * 1024
        self.assertEqual(self.c.cmd("CONFIG", "SET", "maxmemory", str(limit)), OK)
        value = "v" * (64 * 1024)
        refused = None
        for i in range(2000):  # up to 128 MB, far past the limit
            got = self.c.cmd("SET", "fill:%d" % i, value)
            if got != OK:
                refused = (i, got)
                break
        self.assertIsNotNone(refused, "no write was refused past maxmemory")
        self.assertEqual(refused[1], OOM)
        self.assertGreater(refused[0], 10)  # the limit was not hit at once
        # Nothing was evicted, and the lock can still be released.
        self.assertEqual(self.c.cmd("EXISTS", "fill:0", "lock:held"), harness.integer(2))
        self.assertEqual(self.c.cmd("EVAL", texts()["classic_dq"], "1", "lock:held", "tok"),
                         harness.integer(1))


if __name__ == "__main__":
    harness.main()
