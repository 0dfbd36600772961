"""Real clients against the server: redis-py (Debian's python3-redis), redis-cli and
redis-benchmark. A test is skipped only when its client is not installed."""

import os
import shutil
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OK  # noqa: E402

try:
    import redis  # Debian's python3-redis: run with /usr/bin/python3
except ImportError:  # pragma: no cover - depends on the interpreter
    redis = None

REDIS_CLI = shutil.which("redis-cli") or ("/usr/bin/redis-cli" if os.path.exists("/usr/bin/redis-cli") else None)
REDIS_BENCHMARK = (shutil.which("redis-benchmark") or
                   ("/usr/bin/redis-benchmark" if os.path.exists("/usr/bin/redis-benchmark") else None))
TOOL_TIMEOUT = 120


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


@unittest.skipIf(redis is None, "redis-py is not importable by %s (use /usr/bin/python3 with "
                                "python3-redis installed)" % sys.executable)
class RedisPyTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30)
        self.addCleanup(self.r.close)
        self.assertTrue(self.r.flushall())

    def client(self, **kwargs):
        r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30, **kwargs)
        self.addCleanup(r.close)
        return r

    def test_strings(self):
        r = self.r
        self.assertTrue(r.ping())
        self.assertIsNone(r.get("nokey"))
        self.assertTrue(r.set("k", "v"))
        self.assertEqual(r.get("k"), b"v")
        self.assertIsNone(r.set("k", "v2", nx=True))
        self.assertTrue(r.set("k", "v3", xx=True))
        self.assertEqual(r.set("k", "v4", get=True), b"v3")
        self.assertEqual(r.getset("k", "v5"), b"v4")
        self.assertEqual(r.getdel("k"), b"v5")
        self.assertFalse(r.exists("k"))
        self.assertTrue(r.setnx("n", "1"))
        self.assertFalse(r.setnx("n", "2"))
        self.assertEqual(r.incr("n"), 2)
        self.assertEqual(r.incrby("n", 10), 12)
        self.assertEqual(r.decr("n"), 11)
        self.assertEqual(r.decrby("n", 5), 6)
        self.assertEqual(r.incrbyfloat("f", 1.5), 1.5)
        self.assertEqual(r.incrbyfloat("f", 0.25), 1.75)
        self.assertTrue(r.mset({"a": "1", "b": "2"}))
        self.assertEqual(r.mget("a", "b", "nokey"), [b"1", b"2", None])
        self.assertFalse(r.msetnx({"a": "x", "c": "3"}))
        self.assertEqual(r.append("a", "23"), 3)
        self.assertEqual(r.strlen("a"), 3)
        self.assertEqual(r.getrange("a", 0, 1), b"12")
        self.assertEqual(r.setrange("a", 1, "xy"), 3)
        self.assertEqual(r.get("a"), b"1xy")
        self.assertEqual(r.echo("hello"), b"hello")
        self.assertEqual(r.type("a"), b"string")
        self.assertEqual(r.delete("a", "b", "nokey"), 2)
        self.assertEqual(r.exists("n", "f", "n"), 3)
        self.assertEqual(sorted(r.keys("*")), [b"f", b"n"])
        self.assertEqual(r.dbsize(), 2)
        value = os.urandom(100000)
        self.assertTrue(r.set("bin", value))
        self.assertEqual(r.get("bin"), value)

    def test_errors(self):
        r = self.r
        r.set("s", "abc")
        with self.assertRaises(redis.ResponseError) as cm:
            r.incr("s")
        self.assertEqual(str(cm.exception), "value is not an integer or out of range")
        with self.assertRaises(redis.ResponseError) as cm:
            r.incrbyfloat("s", 1)
        self.assertEqual(str(cm.exception), "value is not a valid float")
        with self.assertRaises(redis.ResponseError) as cm:
            r.set("s", "v", ex=0)
        self.assertEqual(str(cm.exception), "invalid expire time in 'set' command")
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("NOSUCHCOMMAND", "a")
        self.assertEqual(str(cm.exception), "unknown command 'NOSUCHCOMMAND', with args beginning with: 'a' ")
        with self.assertRaises(redis.ResponseError) as cm:
            r.execute_command("GET")
        self.assertEqual(str(cm.exception), "wrong number of arguments for 'get' command")
        self.assertTrue(r.ping())  # the connection is still usable

    def test_expiry(self):
        r = self.r
        self.assertTrue(r.set("e", "1", px=50))
        self.assertTrue(r.set("k", "1", ex=100))
        self.assertIn(r.ttl("k"), (99, 100))
        self.assertTrue(99000 <= r.pttl("k") <= 100000)
        self.assertTrue(r.expire("k", 200))
        self.assertIn(r.ttl("k"), (199, 200))
        self.assertFalse(r.expire("k", 300, nx=True))
        self.assertTrue(r.expire("k", 300, gt=True))
        self.assertTrue(r.pexpire("k", 400000))
        self.assertTrue(r.expireat("k", int(time.time()) + 500))
        self.assertTrue(498 <= r.ttl("k") <= 501)
        self.assertTrue(r.persist("k"))
        self.assertEqual(r.ttl("k"), -1)
        self.assertEqual(r.ttl("nokey"), -2)
        self.assertEqual(r.expiretime("k"), -1)
        self.assertEqual(r.getex("k", ex=50), b"1")
        self.assertIn(r.ttl("k"), (49, 50))
        self.assertEqual(r.getex("k", persist=True), b"1")
        self.assertEqual(r.ttl("k"), -1)
        self.assertTrue(r.setex("sx", 100, "v"))
        self.assertTrue(r.psetex("psx", 100000, "v"))
        time.sleep(0.2)
        self.assertIsNone(r.get("e"))
        self.assertFalse(r.exists("e"))

    def test_scan_iter(self):
        r = self.r
        with r.pipeline(transaction=False) as p:
            for i in range(300):
                p.set("scan:%d" % i, i)
            p.set("other", 1)
            p.execute()
        found = set(r.scan_iter(match="scan:*", count=20))
        self.assertEqual(found, {b"scan:%d" % i for i in range(300)})
        self.assertEqual(set(r.scan_iter(_type="string")), found | {b"other"})

    def test_pipeline_without_transaction(self):
        r = self.r
        p = r.pipeline(transaction=False)
        for i in range(500):
            p.set("pk:%d" % i, i)
            p.incr("pc")
            p.get("pk:%d" % i)
        results = p.execute()
        self.assertEqual(len(results), 1500)
        for i in range(500):
            self.assertEqual(results[3 * i:3 * i + 3], [True, i + 1, str(i).encode()])
        # An error in the middle does not stop the others.
        p = r.pipeline(transaction=False)
        p.set("x", "abc")
        p.incr("x")
        p.get("x")
        results = p.execute(raise_on_error=False)
        self.assertTrue(results[0])
        self.assertIsInstance(results[1], redis.ResponseError)
        self.assertEqual(results[2], b"abc")

    def test_decode_responses_db_and_client_name(self):
        r = self.client(decode_responses=True, db=2, client_name="e2e-client")
        self.assertTrue(r.set("k", "db2 value"))
        self.assertEqual(r.get("k"), "db2 value")
        self.assertIsNone(self.r.get("k"))  # db 0
        self.assertEqual(r.client_getname(), "e2e-client")
        cid = r.client_id()
        clients = r.client_list()
        mine = [c for c in clients if int(c["id"]) == cid]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["name"], "e2e-client")
        self.assertEqual(mine[0]["db"], "2")
        info = r.client_info()
        self.assertEqual(int(info["id"]), cid)

    def test_info_config_time(self):
        r = self.r
        r.set("a", "1")
        info = r.info()
        self.assertIn("redis_version", info)
        self.assertGreaterEqual(info["connected_clients"], 1)
        self.assertEqual(r.info("keyspace")["db0"]["keys"], 1)
        self.assertIn("maxmemory", r.config_get("maxmemory"))
        self.assertEqual(r.config_get("databases"), {"databases": "16"})
        # Bracketed by the local clock read before and after (a slow reply only widens the
        # bracket), with a second of slack for clock granularity.
        before = time.time()
        sec, usec = r.time()
        after = time.time()
        self.assertTrue(before - 1 <= sec + usec / 1e6 <= after + 1, (before, sec, usec, after))

    def test_lock_acquire_and_timeout(self):
        r = self.r
        first = r.lock("lock:res", timeout=0.5)
        second = r.lock("lock:res", timeout=0.5)
        self.assertTrue(first.acquire(blocking=False))
        self.assertTrue(first.locked())
        self.assertTrue(first.owned())
        self.assertFalse(second.acquire(blocking=False))
        self.assertFalse(second.owned())
        self.assertTrue(0 < r.pttl("lock:res") <= 500)
        start = time.monotonic()
        self.assertFalse(second.acquire(blocking=True, blocking_timeout=0.2, sleep=0.05))
        self.assertGreaterEqual(time.monotonic() - start, 0.1)
        # The lock expires by itself; then the other one gets it (the wait is only a hang guard).
        self.assertTrue(second.acquire(blocking=True, blocking_timeout=60, sleep=0.05))
        self.assertTrue(second.owned())
        self.assertFalse(first.owned())

    def test_lock_release(self):
        r = self.r
        lock = r.lock("lock:rel", timeout=30)
        self.assertTrue(lock.acquire(blocking=False))
        try:
            lock.release()  # a Lua script (EVALSHA), which deadbolt implements later
        except redis.ResponseError as e:
            if "unknown command" in str(e):
                self.skipTest("server has no EVALSHA yet: %s" % e)
            raise
        self.assertFalse(lock.locked())
        with r.lock("lock:rel", timeout=30, blocking_timeout=1) as held:
            self.assertTrue(held.owned())
        self.assertFalse(r.exists("lock:rel"))

    def test_pool_from_threads(self):
        r = self.client(max_connections=20)
        errors = []

        def work(n):
            try:
                for _ in range(100):
                    r.incr("pool:ctr")
                    r.set("pool:%d" % n, n)
                    if r.get("pool:%d" % n) != str(n).encode():
                        errors.append("bad value for %d" % n)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(r.get("pool:ctr"), b"2000")


@unittest.skipIf(REDIS_CLI is None, "redis-cli is not installed")
class RedisCliTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def cli(self, *args, stdin=None, extra=()):
        p = subprocess.run([REDIS_CLI, "-h", "127.0.0.1", "-p", str(self.port), *extra, *args],
                           input=stdin, capture_output=True, timeout=TOOL_TIMEOUT)
        return p

    def out(self, *args, **kw):
        p = self.cli(*args, **kw)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_argv_commands(self):
        self.assertEqual(self.out("PING"), b"PONG\n")
        self.assertEqual(self.out("SET", "lock:1", "tok", "NX", "PX", "30000"), b"OK\n")
        self.assertEqual(self.out("SET", "lock:1", "tok", "NX", "PX", "30000"), b"\n")  # nil
        self.assertEqual(self.out("GET", "lock:1"), b"tok\n")
        self.assertEqual(self.out("GET", "nokey"), b"\n")
        ttl = int(self.out("PTTL", "lock:1"))
        self.assertTrue(25000 < ttl <= 30000, ttl)
        self.assertEqual(self.out("INCR", "n"), b"1\n")
        self.assertEqual(self.out("INCRBYFLOAT", "f", "1.5"), b"1.5\n")
        self.assertEqual(self.out("MGET", "lock:1", "nokey", "n"), b"tok\n\n1\n")
        self.assertEqual(self.out("SET", "k", "v", "EX", "0"), b"ERR invalid expire time in 'set' command\n\n")
        self.assertEqual(self.cli("foo", "bar").stdout,
                         b"ERR unknown command 'foo', with args beginning with: 'bar' \n\n")
        self.assertEqual(self.out("-r", "3", "INCR", "rep"), b"1\n2\n3\n")
        self.assertEqual(self.out("EXISTS", "lock:1", "n", "nokey"), b"2\n")

    def test_stdin_session(self):
        script = (b"SET a 1\nINCR a\nGET a\nGET nokey\nMGET a nokey\nPING\nfoo\nDEL a\n"
                  b'SET "b c" "d e"\nGET "b c"\nEXPIRE "b c" 100\nTTL "b c"\n')
        self.assertEqual(self.out(stdin=script),
                         b"OK\n2\n2\n\n2\n\nPONG\n"
                         b"ERR unknown command 'foo', with args beginning with: \n\n"
                         b"1\nOK\nd e\n1\n100\n")

    def test_no_raw_shows_reply_types(self):
        self.assertEqual(self.out("--no-raw", "SET", "a", "OK"), b"OK\n")      # status reply
        self.assertEqual(self.out("--no-raw", "GET", "a"), b'"OK"\n')         # bulk reply
        self.assertEqual(self.out("--no-raw", "GET", "nokey"), b"(nil)\n")
        self.assertEqual(self.out("--no-raw", "INCR", "n"), b"(integer) 1\n")
        self.assertEqual(self.out("--no-raw", "MGET", "a", "nokey", "n"),
                         b'1) "OK"\n2) (nil)\n3) "1"\n')
        self.assertEqual(self.out("--no-raw", "KEYS", "nomatch*"), b"(empty array)\n")
        self.assertEqual(self.out("--no-raw", "INCR", "a"),
                         b"(error) ERR value is not an integer or out of range\n")

    def test_resp3(self):
        self.assertEqual(self.out("-3", "--no-raw", "GET", "nokey"), b"(nil)\n")
        self.assertEqual(self.out("-3", "--no-raw", "SET", "a", "1"), b"OK\n")
        self.assertEqual(self.out("-3", "--no-raw", "CONFIG", "GET", "databases"), b'1# "databases" => "16"\n')
        self.assertEqual(self.out("-3", "INCRBYFLOAT", "f", "2.5"), b"2.5\n")

    def test_select_db_stdin_value_scan_and_pipe(self):
        self.assertEqual(self.out("-n", "2", "SET", "x", "in-db2"), b"OK\n")
        self.assertEqual(self.out("-n", "2", "GET", "x"), b"in-db2\n")
        self.assertEqual(self.out("GET", "x"), b"\n")
        p = self.cli("-n", "16", "GET", "x")
        self.assertIn(b"SELECT 16 failed: ERR DB index is out of range", p.stderr)
        self.assertEqual(self.out("-x", "SET", "fromstdin", stdin=b"hello\n"), b"OK\n")
        self.assertEqual(self.out("GET", "fromstdin"), b"hello\n\n")
        for i in range(30):
            self.assertReply(OK, "SET", "sc:%d" % i, "v")
        keys = self.out("--scan", "--pattern", "sc:*").split()
        self.assertEqual(sorted(keys), sorted(b"sc:%d" % i for i in range(30)))
        # Mass insertion: raw protocol on stdin, then an ECHO the tool waits for.
        data = b"".join(harness.encode_command("SET", "pipe:%d" % i, str(i)) for i in range(1000))
        out = self.out("--pipe", stdin=data)
        self.assertIn(b"errors: 0, replies: 1000", out)
        self.assertReply(harness.bulk("999"), "GET", "pipe:999")


@unittest.skipIf(REDIS_BENCHMARK is None, "redis-benchmark is not installed")
class RedisBenchmarkTest(harness.ServerTestCase):
    def run_benchmark(self, *args):
        argv = [REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(self.port), *args]
        p = subprocess.run(argv, capture_output=True, timeout=TOOL_TIMEOUT)
        out = p.stdout.decode(errors="replace")
        err = p.stderr.decode(errors="replace")
        self.assertEqual(p.returncode, 0, "%s\nstdout:\n%s\nstderr:\n%s" % (argv, out[-2000:], err))
        # redis-benchmark 7 exits non-zero at the first error reply ("Error from server: ..."),
        # and warns when CONFIG GET save / CONFIG GET appendonly fail.
        for text in (out, err):
            for line in text.replace("\r", "\n").split("\n"):
                self.assertNotRegex(line.lower(), r"error|warning", "benchmark printed: %r" % line)
        return out

    def test_set_get_pipelined(self):
        out = self.run_benchmark("-q", "-t", "set,get", "-n", "20000", "-c", "20", "-P", "16")
        final = [line for line in out.replace("\r", "\n").split("\n") if "requests per second" in line]
        self.assertTrue(any(line.startswith("SET: ") for line in final), out[-1000:])
        self.assertTrue(any(line.startswith("GET: ") for line in final), out[-1000:])
        self.assertReply(harness.integer(3), "STRLEN", "key:__rand_int__")

    def test_other_commands(self):
        out = self.run_benchmark("-q", "-t", "ping_inline,ping_mbulk,incr,mset", "-n", "5000", "-c", "10",
                                 "-P", "4")
        for name in ("PING_INLINE", "PING_MBULK", "INCR", "MSET (10 keys)"):
            self.assertIn(name + ": ", out)


if __name__ == "__main__":
    harness.main()
