"""Keyspace commands: DEL/UNLINK/EXISTS/TOUCH, TYPE, the EXPIRE family with NX|XX|GT|LT,
TTL/PTTL/EXPIRETIME/PEXPIRETIME/PERSIST, KEYS, SCAN, RANDOMKEY, DBSIZE, FLUSHDB/FLUSHALL,
SELECT, and expiry actually happening."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, NOT_INTEGER, OK, SYNTAX, bulk, decode, integer, wrong_args  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def invalid_expire(cmd):
    return b"-ERR invalid expire time in '%s' command\r\n" % cmd.encode()


NX_XX_GT_LT = b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
GT_LT = b"-ERR GT and LT options at the same time are not compatible\r\n"
DB_RANGE = b"-ERR DB index is out of range\r\n"


class KeysTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def keys(self, pattern, c=None):
        reply = decode((c or self.c).cmd("KEYS", pattern))
        self.assertIsInstance(reply, list)
        return sorted(reply)

    def scan_all(self, *options, c=None, count_limit=100000):
        """Iterates SCAN to cursor 0; returns (set of keys, number of calls)."""
        c = c or self.c
        cursor = b"0"
        seen = set()
        calls = 0
        while True:
            reply = decode(c.cmd("SCAN", cursor, *options))
            calls += 1
            self.assertIsInstance(reply, list)
            self.assertEqual(len(reply), 2)
            cursor, keys = reply
            self.assertIsInstance(cursor, bytes)
            self.assertTrue(cursor.isdigit(), "cursor %r" % cursor)
            self.assertIsInstance(keys, list)
            seen.update(keys)
            if cursor == b"0":
                return seen, calls
            if calls > count_limit:
                self.fail("SCAN did not return to cursor 0 after %d calls" % calls)


class DelExistsTest(KeysTestCase):
    def test_del_counts_each_key_once(self):
        self.assertReply(OK, "MSET", "a", "1", "b", "2", "c", "3")
        self.assertReply(integer(2), "DEL", "a", "a", "b", "nokey")
        self.assertReply(integer(0), "DEL", "a")
        self.assertReply(integer(1), "EXISTS", "c")
        self.assertReply(wrong_args("del"), "DEL")

    def test_unlink(self):
        self.assertReply(OK, "MSET", "a", "1", "b", "2")
        self.assertReply(integer(2), "UNLINK", "a", "b", "b", "x")
        self.assertReply(integer(0), "EXISTS", "a", "b")
        self.assertReply(wrong_args("unlink"), "UNLINK")

    def test_exists_counts_duplicates(self):
        self.assertReply(OK, "MSET", "a", "1", "b", "2")
        self.assertReplies([
            (("EXISTS", "a"), integer(1)),
            (("EXISTS", "nokey"), integer(0)),
            (("EXISTS", "a", "b", "b", "b", "nokey"), integer(4)),
            (("EXISTS", "a", "a", "a"), integer(3)),
            (("EXISTS",), wrong_args("exists")),
        ])

    def test_touch_counts_duplicates(self):
        self.assertReply(integer(0), "TOUCH", "a", "b")
        self.assertReply(OK, "MSET", "a", "1", "b", "2")
        self.assertReply(integer(3), "TOUCH", "a", "a", "b", "x")
        self.assertReply(wrong_args("touch"), "TOUCH")

    def test_many_keys_across_shards(self):
        names = ["k%d" % i for i in range(200)]
        self.assertReply(OK, "MSET", *[x for n in names for x in (n, n)])
        self.assertReply(integer(200), "EXISTS", *names)
        self.assertReply(integer(200), "DBSIZE")
        self.assertReply(integer(100), "DEL", *names[::2])
        self.assertReply(integer(100), "EXISTS", *names)
        self.assertReply(integer(100), "UNLINK", *names)
        self.assertReply(integer(0), "DBSIZE")

    def test_type(self):
        self.assertReply(OK, "SET", "s", "v")
        self.assertReply(b"+string\r\n", "TYPE", "s")
        self.assertReply(b"+none\r\n", "TYPE", "nokey")
        self.assertReply(wrong_args("type"), "TYPE")
        self.assertReply(wrong_args("type"), "TYPE", "a", "b")

    def test_type_hash(self):
        self.make_hash(self.c, "h")
        self.assertReply(b"+hash\r\n", "TYPE", "h")


class ExpireTest(KeysTestCase):
    def test_expire_and_ttl(self):
        self.assertReply(OK, "SET", "a", "1")
        self.assertReply(integer(-1), "TTL", "a")
        self.assertReply(integer(-1), "PTTL", "a")
        self.assertReply(integer(-2), "TTL", "nokey")
        self.assertReply(integer(-2), "PTTL", "nokey")
        self.assertReply(integer(1), "EXPIRE", "a", "100")
        self.assertTTL("a", 99, 100)
        self.assertTTL("a", 99000, 100000, cmd="PTTL")
        self.assertReply(integer(1), "PEXPIRE", "a", "200000")
        self.assertTTL("a", 199, 200)
        self.assertReply(integer(0), "EXPIRE", "nokey", "100")
        self.assertReply(integer(0), "PEXPIRE", "nokey", "100")
        self.assertReply(integer(0), "EXPIREAT", "nokey", "1")
        self.assertReply(integer(0), "PEXPIREAT", "nokey", "1")

    def test_expireat_pexpireat(self):
        now = int(time.time())
        self.assertReply(OK, "SET", "a", "1")
        self.assertReply(integer(1), "EXPIREAT", "a", str(now + 100))
        self.assertTTL("a", 98, 101)
        self.assertReply(integer(1), "PEXPIREAT", "a", str((now + 300) * 1000))
        self.assertTTL("a", 298, 301)
        self.assertReply(integer(1), "PEXPIREAT", "a", "99999999999999")
        self.assertReply(integer(99999999999999), "PEXPIRETIME", "a")
        self.assertReply(integer(100000000000), "EXPIRETIME", "a")  # rounded
        self.assertReply(integer(1), "EXPIREAT", "a", "99999999999")
        self.assertReply(integer(99999999999), "EXPIRETIME", "a")
        self.assertReply(integer(99999999999000), "PEXPIRETIME", "a")

    def test_expire_in_the_past_deletes(self):
        for args in (("EXPIRE", "0"), ("EXPIRE", "-1"), ("PEXPIRE", "0"), ("PEXPIRE", "-100"),
                     ("EXPIREAT", "1"), ("PEXPIREAT", "1"), ("EXPIREAT", "-1")):
            self.assertReply(OK, "SET", "a", "1")
            self.assertReply(integer(1), args[0], "a", args[1])
            self.assertReply(integer(0), "EXISTS", "a")
            self.assertReply(NIL, "GET", "a")

    def test_expiretime(self):
        self.assertReply(integer(-2), "EXPIRETIME", "nokey")
        self.assertReply(integer(-2), "PEXPIRETIME", "nokey")
        self.assertReply(OK, "SET", "a", "1")
        self.assertReply(integer(-1), "EXPIRETIME", "a")
        self.assertReply(integer(-1), "PEXPIRETIME", "a")
        before = int(time.time() * 1000)
        self.assertReply(integer(1), "PEXPIRE", "a", "100000")
        after = int(time.time() * 1000)
        pt = decode(self.c.cmd("PEXPIRETIME", "a"))
        self.assertTrue(before + 100000 - 50 <= pt <= after + 100000 + 50, (before, pt, after))
        t = decode(self.c.cmd("EXPIRETIME", "a"))
        self.assertEqual(t, (pt + 500) // 1000)
        self.assertReply(wrong_args("expiretime"), "EXPIRETIME")
        self.assertReply(wrong_args("pexpiretime"), "PEXPIRETIME", "a", "b")

    def test_persist(self):
        self.assertReply(OK, "SET", "a", "1", "EX", "100")
        self.assertReply(integer(1), "PERSIST", "a")
        self.assertReply(integer(-1), "TTL", "a")
        self.assertReply(integer(0), "PERSIST", "a")
        self.assertReply(integer(0), "PERSIST", "nokey")
        self.assertReply(wrong_args("persist"), "PERSIST")
        self.assertReply(wrong_args("persist"), "PERSIST", "a", "b")

    def test_nx_xx(self):
        self.assertReply(OK, "SET", "a", "1")
        self.assertReplies([
            (("EXPIRE", "a", "100", "XX"), integer(0)),   # no TTL yet
            (("TTL", "a"), integer(-1)),
            (("EXPIRE", "a", "100", "NX"), integer(1)),
            (("EXPIRE", "a", "200", "NX"), integer(0)),
            (("TTL", "a"), range(99, 101)),
            (("EXPIRE", "a", "200", "xx"), integer(1)),
            (("TTL", "a"), range(199, 201)),
            (("PEXPIRE", "a", "300000", "Xx"), integer(1)),
            (("PEXPIRE", "a", "300000", "nX"), integer(0)),
            (("EXPIRE", "nokey", "10", "NX"), integer(0)),
            (("EXPIRE", "nokey", "10", "XX"), integer(0)),
        ])

    def test_gt_lt(self):
        self.assertReply(OK, "SET", "a", "1")
        self.assertReplies([
            # No TTL counts as an infinite TTL.
            (("EXPIRE", "a", "100", "GT"), integer(0)),
            (("TTL", "a"), integer(-1)),
            (("EXPIRE", "a", "100", "LT"), integer(1)),
            (("EXPIRE", "a", "50", "GT"), integer(0)),
            (("EXPIRE", "a", "500", "GT"), integer(1)),
            (("TTL", "a"), range(499, 501)),
            (("EXPIRE", "a", "1000", "LT"), integer(0)),
            (("EXPIRE", "a", "10", "lt"), integer(1)),
            (("TTL", "a"), range(9, 11)),
            (("EXPIRE", "a", "20", "XX", "GT"), integer(1)),
            (("EXPIRE", "a", "15", "GT", "GT"), integer(0)),
            (("PEXPIREAT", "a", "99999999999999", "LT"), integer(0)),
            (("EXPIREAT", "a", "99999999999", "gt"), integer(1)),
            (("EXPIRETIME", "a"), integer(99999999999)),
            # A negative or past time with GT fails; with LT it deletes.
            (("EXPIRE", "a", "-5", "GT"), integer(0)),
            (("EXISTS", "a"), integer(1)),
            (("EXPIRE", "a", "-5", "LT"), integer(1)),
            (("EXISTS", "a"), integer(0)),
        ])

    def test_option_errors(self):
        self.assertReply(OK, "SET", "a", "1")
        self.assertReplies([
            (("EXPIRE", "a", "10", "NX", "XX"), NX_XX_GT_LT),
            (("EXPIRE", "a", "10", "NX", "GT"), NX_XX_GT_LT),
            (("EXPIRE", "a", "10", "LT", "NX"), NX_XX_GT_LT),
            (("EXPIRE", "a", "10", "NX", "XX", "GT"), NX_XX_GT_LT),
            (("PEXPIRE", "a", "10", "GT", "LT"), GT_LT),
            (("EXPIREAT", "a", "10", "LT", "GT"), GT_LT),
            (("EXPIRE", "a", "10", "FOO"), b"-ERR Unsupported option FOO\r\n"),
            (("EXPIRE", "a", "10", "gt", "foo"), b"-ERR Unsupported option foo\r\n"),
            # Options are checked before the number.
            (("EXPIRE", "a", "abc", "foo"), b"-ERR Unsupported option foo\r\n"),
            (("EXPIRE", "a", "abc", "nx", "xx"), NX_XX_GT_LT),
            (("EXPIRE", "a", "abc"), NOT_INTEGER),
            (("PEXPIRE", "a", "abc", "NX"), NOT_INTEGER),
            (("EXPIRE", "a", "1.5"), NOT_INTEGER),
            (("EXPIRE", "a", ""), NOT_INTEGER),
            (("EXPIRE", "nokey", "abc"), NOT_INTEGER),
            (("EXPIRE", "a"), wrong_args("expire")),
            (("PEXPIRE", "a"), wrong_args("pexpire")),
            (("EXPIREAT", "a"), wrong_args("expireat")),
            (("PEXPIREAT", "a"), wrong_args("pexpireat")),
            (("TTL",), wrong_args("ttl")),
            (("TTL", "a", "b"), wrong_args("ttl")),
            (("PTTL",), wrong_args("pttl")),
        ])
        self.assertReply(integer(-1), "TTL", "a")

    def test_out_of_range_times(self):
        self.assertReply(OK, "SET", "a", "1")
        self.assertReplies([
            (("EXPIRE", "a", "9223372036854775807"), invalid_expire("expire")),
            (("EXPIRE", "a", "9223372036854775"), invalid_expire("expire")),
            (("EXPIRE", "a", "-9223372036854775808"), invalid_expire("expire")),
            (("EXPIRE", "a", "-9223372036854776"), invalid_expire("expire")),
            (("PEXPIRE", "a", "9223372036854775807"), invalid_expire("pexpire")),
            (("PEXPIRE", "a", "9223372036854775806"), invalid_expire("pexpire")),
            (("EXPIREAT", "a", "9223372036854775807"), invalid_expire("expireat")),
            (("EXPIREAT", "a", "-9223372036854775808"), invalid_expire("expireat")),
            (("EXPIRE", "a", "9223372036854775808"), NOT_INTEGER),
            (("EXPIRE", "nokey", "9223372036854775807"), invalid_expire("expire")),
        ])
        self.assertReply(integer(-1), "TTL", "a")
        # PEXPIREAT takes the largest value as is.
        self.assertReply(integer(1), "PEXPIREAT", "a", "9223372036854775807")
        self.assertReply(integer(9223372036854775807), "PEXPIRETIME", "a")
        self.assertReply(integer(1), "EXISTS", "a")

    def test_expiry_really_happens(self):
        # TTLs of half a second leave room for a loaded machine between SET and the first GET.
        self.assertReply(OK, "SET", "a", "1", "PX", "500")
        self.assertReply(bulk("1"), "GET", "a")
        self.assertReply(OK, "SET", "b", "1")
        self.assertReply(integer(1), "PEXPIRE", "b", "500")
        self.assertReply(OK, "SET", "c", "1", "PXAT", str(int(time.time() * 1000) + 500))
        self.assertReply(OK, "PSETEX", "d", "500", "1")
        self.assertReply(OK, "SET", "keep", "1")
        time.sleep(0.8)
        self.assertReplies([
            (("GET", "a"), NIL),
            (("EXISTS", "a", "b", "c", "d"), integer(0)),
            (("TTL", "b"), integer(-2)),
            (("PTTL", "c"), integer(-2)),
            (("TYPE", "d"), b"+none\r\n"),
            (("KEYS", "*"), b"*1\r\n$4\r\nkeep\r\n"),
        ])
        self.assertEqual(self.scan_all()[0], {b"keep"})
        self.assertReply(bulk("keep"), "RANDOMKEY")
        # An expired key counts as absent for SET NX / XX, INCR and APPEND.
        self.assertReply(OK, "SET", "e", "5", "PX", "30")
        time.sleep(0.1)
        self.assertReply(NIL, "SET", "e", "x", "XX")
        self.assertReply(OK, "SET", "e", "x", "NX")
        self.assertReply(integer(-1), "TTL", "e")
        self.assertReply(OK, "SET", "f", "5", "PX", "30")
        time.sleep(0.1)
        self.assertReply(integer(1), "INCR", "f")
        self.assertReply(integer(-1), "TTL", "f")

    def test_active_expiry_reclaims_keys(self):
        # Keys that are never touched again still go away (DBSIZE reaches the live count).
        names = ["ax%d" % i for i in range(50)]
        for n in names:
            self.c.send(harness.encode_command("SET", n, "v", "PX", "30"))
        self.assertEqual(self.c.read_replies(len(names)), [OK] * len(names))
        self.assertReply(OK, "SET", "live", "1")
        deadline = time.monotonic() + 5
        while True:
            size = decode(self.c.cmd("DBSIZE"))
            if size == 1:
                break
            if time.monotonic() > deadline:
                self.fail("DBSIZE still %d 5s after 50 keys expired" % size)
            time.sleep(0.05)


class KeysScanTest(KeysTestCase):
    KEYS = ["foo", "fob", "bar", "f*x", "a?b", "h[e]llo", "hello", "hallo", "hxllo", "x y"]

    def setUp(self):
        super().setUp()
        args = []
        for k in self.KEYS:
            args += [k, "1"]
        self.assertReply(OK, "MSET", *args)

    def test_keys_patterns(self):
        for pattern, expected in (
            ("*", self.KEYS),
            ("f*", ["foo", "fob", "f*x"]),
            ("f?o", ["foo"]),
            ("f\\*x", ["f*x"]),
            ("a\\?b", ["a?b"]),
            ("h[ae]llo", ["hallo", "hello"]),
            ("h[^e]llo", ["hallo", "hxllo"]),
            ("h[a-e]llo", ["hallo", "hello"]),
            ("h\\[e\\]llo", ["h[e]llo"]),
            ("h?llo", ["hello", "hallo", "hxllo"]),
            ("*llo", ["hello", "hallo", "hxllo", "h[e]llo"]),
            ("x y", ["x y"]),
            ("nomatch*", []),
            ("", []),
        ):
            self.assertEqual(self.keys(pattern), sorted(k.encode() for k in expected), pattern)
        self.assertReply(b"*0\r\n", "KEYS", "nomatch*")
        self.assertReply(b"*1\r\n$3\r\nfoo\r\n", "KEYS", "foo")
        self.assertReply(wrong_args("keys"), "KEYS")
        self.assertReply(wrong_args("keys"), "KEYS", "a", "b")

    def test_scan_all_keys(self):
        self.assertEqual(self.scan_all()[0], {k.encode() for k in self.KEYS})
        self.assertEqual(self.scan_all("MATCH", "f*")[0], {b"foo", b"fob", b"f*x"})
        self.assertEqual(self.scan_all("match", "h[ae]llo", "count", "1")[0], {b"hallo", b"hello"})
        self.assertEqual(self.scan_all("TYPE", "string")[0], {k.encode() for k in self.KEYS})
        self.assertEqual(self.scan_all("TYPE", "hash")[0], set())
        self.assertEqual(self.scan_all("TYPE", "nosuchtype")[0], set())
        self.assertEqual(self.scan_all("COUNT", "1000", "MATCH", "nomatch*")[0], set())

    def test_scan_many_keys_with_small_count(self):
        names = {b"scan:%d" % i for i in range(1000)}
        args = []
        for n in names:
            args += [n, b"v"]
        self.assertReply(OK, "MSET", *args)
        seen, calls = self.scan_all("MATCH", "scan:*", "COUNT", "10")
        self.assertEqual(seen, names)
        self.assertGreater(calls, 5)  # COUNT is a hint, but 1000 keys do not come back in one go
        seen, _ = self.scan_all("COUNT", "7")
        self.assertEqual(seen, names | {k.encode() for k in self.KEYS})
        seen, _ = self.scan_all("COUNT", "100000")
        self.assertEqual(len(seen), 1000 + len(self.KEYS))

    def test_scan_with_hash(self):
        self.make_hash(self.c, "h1")
        self.assertEqual(self.scan_all("TYPE", "hash")[0], {b"h1"})
        self.assertNotIn(b"h1", self.scan_all("TYPE", "string")[0])
        self.assertEqual(self.keys("h1"), [b"h1"])

    def test_scan_errors(self):
        self.assertReplies([
            (("SCAN", "abc"), b"-ERR invalid cursor\r\n"),
            (("SCAN", "18446744073709551616"), b"-ERR invalid cursor\r\n"),
            (("SCAN", "0", "COUNT", "0"), SYNTAX),
            (("SCAN", "0", "COUNT", "-1"), SYNTAX),
            (("SCAN", "0", "COUNT", "abc"), NOT_INTEGER),
            (("SCAN", "0", "MATCH"), SYNTAX),
            (("SCAN", "0", "COUNT"), SYNTAX),
            (("SCAN", "0", "TYPE"), SYNTAX),
            (("SCAN", "0", "FOO", "bar"), SYNTAX),
            (("SCAN",), wrong_args("scan")),
        ])

    def test_scan_empty_db(self):
        self.assertReply(OK, "FLUSHDB")
        self.assertReply(b"*2\r\n$1\r\n0\r\n*0\r\n", "SCAN", "0")
        self.assertReply(b"*0\r\n", "KEYS", "*")

    def test_randomkey(self):
        names = {k.encode() for k in self.KEYS}
        for _ in range(20):
            key = decode(self.c.cmd("RANDOMKEY"))
            self.assertIn(key, names)
        self.assertReply(wrong_args("randomkey"), "RANDOMKEY", "x")
        self.assertReply(OK, "FLUSHALL")
        self.assertReply(NIL, "RANDOMKEY")
        self.assertReply(OK, "SET", "only", "1")
        self.assertReply(bulk("only"), "RANDOMKEY")


class DatabasesTest(KeysTestCase):
    def test_dbsize(self):
        self.assertReply(integer(0), "DBSIZE")
        self.assertReply(OK, "MSET", "a", "1", "b", "2")
        self.assertReply(integer(2), "DBSIZE")
        self.assertReply(integer(1), "DEL", "a")
        self.assertReply(integer(1), "DBSIZE")
        self.assertReply(wrong_args("dbsize"), "DBSIZE", "x")

    def test_select_keys_are_per_db(self):
        c = self.c
        self.assertReply(OK, "SET", "k", "db0")
        self.assertReply(OK, "SELECT", "1")
        self.assertReply(NIL, "GET", "k")
        self.assertReply(integer(0), "DBSIZE")
        self.assertReply(OK, "SET", "k", "db1")
        self.assertReply(OK, "SET", "only1", "x", "EX", "100")
        self.assertEqual(self.keys("*"), [b"k", b"only1"])
        self.assertReply(OK, "SELECT", "15")
        self.assertReply(integer(0), "EXISTS", "k")
        self.assertReply(OK, "SELECT", "0")
        self.assertReply(bulk("db0"), "GET", "k")
        self.assertReply(integer(0), "EXISTS", "only1")
        self.assertEqual(self.scan_all()[0], {b"k"})
        # Another connection starts in db 0 whatever this one selected.
        self.assertReply(OK, "SELECT", "1")
        other = self.conn()
        self.assertReply(bulk("db0"), "GET", "k", c=other)
        self.assertReply(bulk("db1"), "GET", "k", c=c)
        self.assertTTL("only1", 99, 100, c=c)

    def test_select_errors(self):
        self.assertReplies([
            (("SELECT", "16"), DB_RANGE),
            (("SELECT", "-1"), DB_RANGE),
            (("SELECT", "1000000"), DB_RANGE),
            (("SELECT", "abc"), NOT_INTEGER),
            (("SELECT", "1.5"), NOT_INTEGER),
            (("SELECT", ""), NOT_INTEGER),
            (("SELECT",), wrong_args("select")),
            (("SELECT", "1", "2"), wrong_args("select")),
        ])

    def test_flushdb_only_current_db(self):
        self.assertReply(OK, "SET", "a", "0")
        self.assertReply(OK, "SELECT", "2")
        self.assertReply(OK, "MSET", "a", "2", "b", "2")
        self.assertReply(OK, "FLUSHDB")
        self.assertReply(integer(0), "DBSIZE")
        self.assertReply(OK, "SELECT", "0")
        self.assertReply(integer(1), "DBSIZE")
        self.assertReply(OK, "FLUSHDB", "SYNC")
        self.assertReply(integer(0), "DBSIZE")
        self.assertReply(OK, "FLUSHDB", "async")
        self.assertReply(SYNTAX, "FLUSHDB", "foo")
        self.assertReply(SYNTAX, "FLUSHDB", "sync", "x")

    def test_flushall_all_dbs(self):
        self.assertReply(OK, "SET", "a", "0")
        self.assertReply(OK, "SELECT", "3")
        self.assertReply(OK, "SET", "a", "3", "EX", "100")
        self.assertReply(OK, "FLUSHALL")
        self.assertReply(integer(0), "DBSIZE")
        self.assertReply(OK, "SELECT", "0")
        self.assertReply(integer(0), "DBSIZE")
        self.assertReply(NIL, "GET", "a")
        self.assertReply(OK, "FLUSHALL", "SYNC")
        self.assertReply(OK, "FLUSHALL", "ASYNC")
        self.assertReply(SYNTAX, "FLUSHALL", "foo")

    def test_flushall_many_keys(self):
        for start in range(0, 2000, 500):
            args = []
            for i in range(start, start + 500):
                args += ["fk%d" % i, "v"]
            self.assertReply(OK, "MSET", *args)
        self.assertReply(integer(2000), "DBSIZE")
        self.assertReply(OK, "FLUSHALL")
        self.assertReply(integer(0), "DBSIZE")
        self.assertReply(b"*0\r\n", "KEYS", "*")


if __name__ == "__main__":
    harness.main()
