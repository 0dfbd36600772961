"""Hash commands: HSET/HMSET, HSETNX, HGET, HMGET, HDEL, HEXISTS, HINCRBY, HINCRBYFLOAT, HLEN,
HSTRLEN, HKEYS, HVALS, HGETALL (RESP2 and RESP3), HSCAN; expiry of the whole key, WRONGTYPE both
ways, a Redisson-style reentrant lock.

Every expected reply is the exact byte string Redis 7.0 sends (checked with
DEADBOLT_AGAINST_REDIS=1). Where the order of fields is Redis's hashtable order (large hashes),
the test checks the set of fields instead."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL, NOT_FLOAT, NOT_INTEGER, NULL3, OK, SYNTAX, WRONGTYPE, array,  # noqa: E402
                     bulk, integer, wrong_args)


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


HASH_NOT_INTEGER = b"-ERR hash value is not an integer\r\n"
HASH_NOT_FLOAT = b"-ERR hash value is not a float\r\n"
OVERFLOW = b"-ERR increment or decrement would overflow\r\n"
NAN_OR_INF_INCREMENT = b"-ERR value is NaN or Infinity\r\n"
NAN_OR_INF_RESULT = b"-ERR increment would produce NaN or Infinity\r\n"
INVALID_CURSOR = b"-ERR invalid cursor\r\n"
EMPTY_SCAN = array(bulk("0"), b"*0\r\n")


def bulks(*items):
    return array(*[bulk(i) for i in items])


class HashTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def scan_all(self, key, *options, c=None):
        """Runs HSCAN to the end; returns the (field, value) pairs in the order returned."""
        c = c or self.c
        pairs = []
        cursor = b"0"
        calls = 0
        while True:
            reply = harness.decode(c.cmd("HSCAN", key, cursor, *options))
            cursor, items = reply
            pairs.extend(zip(items[0::2], items[1::2]))
            calls += 1
            self.assertLess(calls, 100000, "HSCAN does not end")
            if cursor == b"0":
                return pairs


class HRandFieldTest(HashTestCase):
    def fill(self, key, n):
        for i in range(0, n, 100):
            args = []
            for j in range(i, min(n, i + 100)):
                args += ["f%d" % j, "v%d" % j]
            self.c.cmd("HSET", key, *args)
        return {("f%d" % j).encode(): ("v%d" % j).encode() for j in range(n)}

    def check(self, key, pairs):
        n = len(pairs)
        one = harness.decode(self.c.cmd("HRANDFIELD", key))
        self.assertIn(one, pairs)
        for count in (1, n // 2, n, n + 5):
            got = harness.decode(self.c.cmd("HRANDFIELD", key, str(count)))
            self.assertEqual(len(got), min(count, n))
            self.assertEqual(len(set(got)), len(got), "distinct fields")
            self.assertTrue(set(got) <= set(pairs))
        got = harness.decode(self.c.cmd("HRANDFIELD", key, str(-3 * n)))
        self.assertEqual(len(got), 3 * n)  # picks may repeat
        self.assertTrue(set(got) <= set(pairs))
        flat = harness.decode(self.c.cmd("HRANDFIELD", key, "-7", "WITHVALUES"))
        self.assertEqual(len(flat), 14)
        for f, v in zip(flat[0::2], flat[1::2]):
            self.assertEqual(pairs[f], v)

    def test_packed_and_table_forms(self):
        self.check("small", self.fill("small", 10))
        self.check("big", self.fill("big", 500))  # past 128 fields: a table

    def test_resp3_pairs_and_edge_cases(self):
        self.assertReply(integer(1), "HSET", "h", "a", "1")
        self.assertReplies([
            (("HRANDFIELD", "nokey"), NIL),
            (("HRANDFIELD", "nokey", "5"), b"*0\r\n"),
            (("HRANDFIELD", "h", "0"), b"*0\r\n"),
            (("HRANDFIELD", "h", "2", "WITHVALUES"), bulks("a", "1")),
            (("HRANDFIELD", "h", "x"), NOT_INTEGER),
            (("HRANDFIELD", "h", "1", "nope"), SYNTAX),
            (("HRANDFIELD", "h", "1", "withvalues", "x"), SYNTAX),
            (("HRANDFIELD", "h", "9223372036854775807", "WITHVALUES"),
             b"-ERR value is out of range\r\n"),
            (("HRANDFIELD",), wrong_args("hrandfield")),
        ])
        self.assertReply(OK, "SET", "s", "v")
        self.assertReply(WRONGTYPE, "HRANDFIELD", "s")
        self.c.cmd("HELLO", "3")
        self.assertReply(array(bulks("a", "1"), bulks("a", "1")), "HRANDFIELD", "h", "-2",
                         "WITHVALUES")
        self.assertReply(NULL3, "HRANDFIELD", "nokey")


class HSetHGetTest(HashTestCase):
    def test_hset_hget(self):
        self.assertReplies([
            (("HSET", "h", "a", "1", "b", "2"), integer(2)),
            (("HSET", "h", "a", "3", "c", "4"), integer(1)),
            (("HSET", "h", "d", "5", "d", "6"), integer(1)),  # twice in one call: the last wins
            (("HGET", "h", "a"), bulk("3")),
            (("HGET", "h", "d"), bulk("6")),
            (("HGET", "h", "nope"), NIL),
            (("HGET", "nokey", "a"), NIL),
            (("HLEN", "h"), integer(4)),
            (("TYPE", "h"), b"+hash\r\n"),
        ])

    def test_hmset_replies_ok(self):
        self.assertReplies([
            (("HMSET", "h", "a", "1", "b", "2"), OK),
            (("HMSET", "h", "a", "9"), OK),
            (("HGETALL", "h"), bulks("a", "9", "b", "2")),
        ])

    def test_arity(self):
        self.assertReplies([
            (("HSET", "h"), wrong_args("hset")),
            (("HSET", "h", "a"), wrong_args("hset")),
            (("HSET", "h", "a", "1", "b"), wrong_args("hset")),
            (("HMSET", "h", "a", "1", "b"), wrong_args("hmset")),
            (("HSETNX", "h", "a"), wrong_args("hsetnx")),
            (("HGET", "h"), wrong_args("hget")),
            (("HMGET", "h"), wrong_args("hmget")),
            (("HDEL", "h"), wrong_args("hdel")),
            (("HEXISTS", "h"), wrong_args("hexists")),
            (("HINCRBY", "h", "f"), wrong_args("hincrby")),
            (("HINCRBYFLOAT", "h", "f"), wrong_args("hincrbyfloat")),
            (("HLEN",), wrong_args("hlen")),
            (("HSTRLEN", "h"), wrong_args("hstrlen")),
            (("HKEYS", "h", "x"), wrong_args("hkeys")),
            (("HVALS", "h", "x"), wrong_args("hvals")),
            (("HGETALL", "h", "x"), wrong_args("hgetall")),
            (("HSCAN", "h"), wrong_args("hscan")),
            (("EXISTS", "h"), integer(0)),  # nothing was created
        ])

    def test_hsetnx(self):
        self.assertReplies([
            (("HSETNX", "h", "f", "1"), integer(1)),
            (("HSETNX", "h", "f", "2"), integer(0)),
            (("HGET", "h", "f"), bulk("1")),
            (("HSETNX", "h", "g", "3"), integer(1)),
            (("HLEN", "h"), integer(2)),
        ])

    def test_hmget(self):
        self.assertReplies([
            (("HMGET", "nokey", "a", "b"), array(NIL, NIL)),
            (("HSET", "h", "a", "1", "e", ""), integer(2)),
            (("HMGET", "h", "a", "nope", "e", "a"), array(bulk("1"), NIL, bulk(""), bulk("1"))),
        ])
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReply(array(bulk("1"), NULL3), "HMGET", "h", "a", "nope", c=c3)
        self.assertReply(NULL3, "HGET", "h", "nope", c=c3)

    def test_binary_fields_and_values(self):
        field = b"f\x00\r\n\xff"
        value = b"v\x00\r\n$-1\r\n"
        self.assertReplies([
            (("HSET", "h", field, value, "", ""), integer(2)),
            (("HGET", "h", field), bulk(value)),
            (("HGET", "h", b"f"), NIL),
            (("HGET", "h", ""), bulk("")),
            (("HSTRLEN", "h", field), integer(len(value))),
            (("HGETALL", "h"), array(bulk(field), bulk(value), bulk(""), bulk(""))),
        ])

    def test_small_hash_keeps_insertion_order(self):
        self.assertReplies([
            (("HSET", "h", "z", "1", "a", "2", "m", "3"), integer(3)),
            (("HSET", "h", "a", "a longer value"), integer(0)),  # an update keeps its place
            (("HDEL", "h", "z"), integer(1)),
            (("HSET", "h", "z", "4"), integer(1)),  # back at the end
            (("HKEYS", "h"), bulks("a", "m", "z")),
            (("HVALS", "h"), bulks("a longer value", "3", "4")),
            (("HGETALL", "h"), bulks("a", "a longer value", "m", "3", "z", "4")),
        ])


class HDelTest(HashTestCase):
    def test_hdel_counts_and_removes_the_key(self):
        self.assertReplies([
            (("HDEL", "nokey", "a"), integer(0)),
            (("HSET", "h", "a", "1", "b", "2", "c", "3"), integer(3)),
            (("HDEL", "h", "a", "a", "nope"), integer(1)),
            (("HDEL", "h", "x", "y"), integer(0)),
            (("HLEN", "h"), integer(2)),
            (("HDEL", "h", "b", "c"), integer(2)),
            (("EXISTS", "h"), integer(0)),
            (("TYPE", "h"), b"+none\r\n"),
            (("HLEN", "h"), integer(0)),
            (("HGETALL", "h"), b"*0\r\n"),
        ])

    def test_large_hash_emptied_disappears(self):
        fields = []
        for i in range(300):
            fields += ["f%d" % i, "v%d" % i]
        self.assertReply(integer(300), "HSET", "h", *fields)
        self.assertReply(integer(299), "HDEL", "h", *["f%d" % i for i in range(299)])
        self.assertReply(bulks("f299", "v299"), "HGETALL", "h")
        self.assertReply(integer(1), "HDEL", "h", "f299")
        self.assertReply(integer(0), "EXISTS", "h")


class HExistsLenStrLenTest(HashTestCase):
    def test_reads(self):
        self.assertReplies([
            (("HEXISTS", "nokey", "f"), integer(0)),
            (("HLEN", "nokey"), integer(0)),
            (("HSTRLEN", "nokey", "f"), integer(0)),
            (("HSET", "h", "f", "hello", "e", ""), integer(2)),
            (("HEXISTS", "h", "f"), integer(1)),
            (("HEXISTS", "h", "e"), integer(1)),
            (("HEXISTS", "h", "nope"), integer(0)),
            (("HSTRLEN", "h", "f"), integer(5)),
            (("HSTRLEN", "h", "e"), integer(0)),
            (("HSTRLEN", "h", "nope"), integer(0)),
            (("HLEN", "h"), integer(2)),
        ])


class HIncrByTest(HashTestCase):
    def test_hincrby(self):
        self.assertReplies([
            (("HINCRBY", "h", "n", "5"), integer(5)),
            (("HINCRBY", "h", "n", "-7"), integer(-2)),
            (("HGET", "h", "n"), bulk("-2")),
            (("HINCRBY", "h", "z", "9223372036854775807"), integer(9223372036854775807)),
            (("HINCRBY", "h", "z", "1"), OVERFLOW),
            (("HINCRBY", "h", "z", "-9223372036854775808"), integer(-1)),
            (("HSET", "h", "min", "-9223372036854775808"), integer(1)),
            (("HINCRBY", "h", "min", "-1"), OVERFLOW),
            (("HGET", "h", "min"), bulk("-9223372036854775808")),
        ])

    def test_hincrby_errors(self):
        self.assertReply(integer(7), "HSET", "h", "s", "abc", "sp", " 1", "ws", "1 ", "lz", "010",
                         "mz", "-0", "fl", "1.5", "big", "9223372036854775808")
        for field in ("s", "sp", "ws", "lz", "mz", "fl", "big"):
            self.assertReply(HASH_NOT_INTEGER, "HINCRBY", "h", field, "1")
        self.assertReplies([
            (("HINCRBY", "h", "n", "x"), NOT_INTEGER),
            (("HINCRBY", "h", "n", "1.5"), NOT_INTEGER),
            (("HINCRBY", "h", "n", "9223372036854775808"), NOT_INTEGER),
            (("HINCRBY", "nokey", "n", "x"), NOT_INTEGER),
            (("EXISTS", "nokey"), integer(0)),
            (("HEXISTS", "h", "n"), integer(0)),
        ])

    def test_hincrbyfloat(self):
        self.assertReplies([
            (("HINCRBYFLOAT", "h", "f", "1.5"), bulk("1.5")),
            (("HSET", "h", "ten", "10"), integer(1)),
            (("HINCRBYFLOAT", "h", "ten", "0.1"), bulk("10.1")),
            (("HINCRBYFLOAT", "h", "ten", "-0.1"), bulk("10")),
            (("HINCRBYFLOAT", "h", "ten", "1.0e1"), bulk("20")),
            (("HINCRBYFLOAT", "h", "q", "3.0e3"), bulk("3000")),
            (("HINCRBYFLOAT", "h", "q", "-3000"), bulk("0")),
            (("HINCRBYFLOAT", "h", "x", "5.0e-1"), bulk("0.5")),
            (("HINCRBYFLOAT", "h", "hex", "0x10"), bulk("16")),
            (("HSET", "h", "lz", "010"), integer(1)),
            (("HINCRBYFLOAT", "h", "lz", "1"), bulk("11")),  # a float may have a leading zero
            (("HGET", "h", "lz"), bulk("11")),
        ])

    def test_hincrbyfloat_errors(self):
        self.assertReply(integer(4), "HSET", "h", "s", "abc", "sp", " 1", "ws", "1 ", "inf", "inf")
        for field in ("s", "sp", "ws"):
            self.assertReply(HASH_NOT_FLOAT, "HINCRBYFLOAT", "h", field, "1")
        self.assertReplies([
            (("HINCRBYFLOAT", "h", "n", "abc"), NOT_FLOAT),
            (("HINCRBYFLOAT", "h", "n", "nan"), NOT_FLOAT),
            (("HINCRBYFLOAT", "h", "n", "inf"), NAN_OR_INF_INCREMENT),
            (("HINCRBYFLOAT", "h", "n", "-inf"), NAN_OR_INF_INCREMENT),
            (("HINCRBYFLOAT", "h", "inf", "1"), NAN_OR_INF_RESULT),
            (("HSET", "h", "huge", "1.1e4932"), integer(1)),
            (("HINCRBYFLOAT", "h", "huge", "1.1e4932"), NAN_OR_INF_RESULT),
            (("HGET", "h", "huge"), bulk("1.1e4932")),
            (("HINCRBYFLOAT", "nokey", "n", "abc"), NOT_FLOAT),
            (("HINCRBYFLOAT", "nokey", "n", "inf"), NAN_OR_INF_INCREMENT),
            (("EXISTS", "nokey"), integer(0)),
        ])

    def test_hincrbyfloat_long_result(self):
        got = self.c.cmd("HINCRBYFLOAT", "h", "f", "1e308")
        self.assertTrue(got.startswith(b"$308\r\n99999999999999999996685879655845645660"), got[:60])
        self.assertReply(got, "HGET", "h", "f")


class HGetAllTest(HashTestCase):
    def test_missing_key(self):
        self.assertReplies([
            (("HKEYS", "nokey"), b"*0\r\n"),
            (("HVALS", "nokey"), b"*0\r\n"),
            (("HGETALL", "nokey"), b"*0\r\n"),
        ])

    def test_resp3_hgetall_is_a_map(self):
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReply(integer(2), "HSET", "h", "a", "1", "b", "2", c=c3)
        self.assertReply(b"%2\r\n" + bulk("a") + bulk("1") + bulk("b") + bulk("2"),
                         "HGETALL", "h", c=c3)
        self.assertReply(b"%0\r\n", "HGETALL", "nokey", c=c3)
        self.assertReply(bulks("a", "b"), "HKEYS", "h", c=c3)  # arrays stay arrays
        self.assertReply(bulks("1", "2"), "HVALS", "h", c=c3)

    def test_large_hash(self):
        expected = {}
        args = []
        for i in range(1000):
            f, v = "field:%d" % i, ("value:%d:" % i) * (1 + i % 13)  # some longer than 64 bytes
            expected[f.encode()] = v.encode()
            args += [f, v]
        self.assertReply(integer(1000), "HSET", "h", *args)
        self.assertReply(integer(1000), "HLEN", "h")
        flat = harness.decode(self.c.cmd("HGETALL", "h"))
        self.assertEqual(dict(zip(flat[0::2], flat[1::2])), expected)
        self.assertEqual(sorted(harness.decode(self.c.cmd("HKEYS", "h"))), sorted(expected))
        self.assertEqual(sorted(harness.decode(self.c.cmd("HVALS", "h"))),
                         sorted(expected.values()))
        self.assertReply(bulk(expected[b"field:777"]), "HGET", "h", "field:777")


class HScanTest(HashTestCase):
    def test_small_hash_in_one_call(self):
        self.assertReply(integer(3), "HSET", "h", "a", "1", "b", "2", "abc", "3")
        self.assertReplies([
            (("HSCAN", "h", "0"), array(bulk("0"), bulks("a", "1", "b", "2", "abc", "3"))),
            (("HSCAN", "h", "0", "COUNT", "1"), array(bulk("0"), bulks("a", "1", "b", "2", "abc", "3"))),
            (("HSCAN", "h", "0", "MATCH", "a*"), array(bulk("0"), bulks("a", "1", "abc", "3"))),
            (("hscan", "h", "0", "match", "?", "count", "5"), array(bulk("0"), bulks("a", "1", "b", "2"))),
            (("HSCAN", "h", "0", "MATCH", "zz*"), EMPTY_SCAN),
            (("HSCAN", "h", "12345"), array(bulk("0"), bulks("a", "1", "b", "2", "abc", "3"))),
            (("HSCAN", "h", "-1"), array(bulk("0"), bulks("a", "1", "b", "2", "abc", "3"))),
            (("HSCAN", "nokey", "0"), EMPTY_SCAN),
        ])

    def test_errors(self):
        self.assertReply(integer(1), "HSET", "h", "a", "1")
        self.assertReply(OK, "SET", "s", "v")
        self.assertReplies([
            (("HSCAN", "h", "x"), INVALID_CURSOR),
            (("HSCAN", "h", "18446744073709551616"), INVALID_CURSOR),
            (("HSCAN", "h", " 1"), INVALID_CURSOR),
            (("HSCAN", "nokey", "x"), INVALID_CURSOR),   # the cursor is read first
            (("HSCAN", "s", "x"), INVALID_CURSOR),
            (("HSCAN", "h", "0", "COUNT", "0"), SYNTAX),
            (("HSCAN", "h", "0", "COUNT", "-1"), SYNTAX),
            (("HSCAN", "h", "0", "COUNT", "x"), NOT_INTEGER),
            (("HSCAN", "h", "0", "MATCH"), SYNTAX),
            (("HSCAN", "h", "0", "TYPE", "string"), SYNTAX),
            (("HSCAN", "h", "0", "NOVALUES"), SYNTAX),  # Redis 7.4's option
            (("HSCAN", "h", "0", "MATCH", "*", "FOO", "1"), SYNTAX),
            # then the key, then the options: a missing key is an empty scan, a string WRONGTYPE.
            (("HSCAN", "nokey", "0", "COUNT", "0"), EMPTY_SCAN),
            (("HSCAN", "nokey", "0", "COUNT", "x"), EMPTY_SCAN),
            (("HSCAN", "s", "0"), WRONGTYPE),
            (("HSCAN", "s", "0", "COUNT", "0"), WRONGTYPE),
        ])

    def test_large_hash_is_complete(self):
        args = []
        for i in range(2000):
            args += ["f%d" % i, "v%d" % i]
        self.assertReply(integer(2000), "HSET", "h", *args)
        for options in ((), ("COUNT", "7"), ("COUNT", "1000")):
            pairs = self.scan_all("h", *options)
            got = dict(pairs)
            self.assertEqual(len(got), 2000, options)
            for f, v in got.items():
                self.assertEqual(v, b"v" + f[1:])
        # A first call with the default COUNT does not return everything.
        cursor, items = harness.decode(self.c.cmd("HSCAN", "h", "0"))
        self.assertNotEqual(cursor, b"0")
        self.assertGreater(len(items), 0)
        self.assertLess(len(items), 2 * 2000)
        # MATCH filters but the scan still walks everything.
        got = dict(self.scan_all("h", "MATCH", "f1??"))
        self.assertEqual(sorted(got), sorted(("f%d" % i).encode() for i in range(100, 200)))

    def test_complete_while_fields_change(self):
        args = []
        for i in range(500):
            args += ["s%d" % i, "v"]
        self.assertReply(integer(500), "HSET", "h", *args)
        seen = set()
        cursor = b"0"
        extra = 0
        while True:
            cursor, items = harness.decode(self.c.cmd("HSCAN", "h", cursor, "COUNT", "20"))
            seen.update(items[0::2])
            # Grow the hash between calls (its table resizes under the cursor).
            more = []
            for _ in range(40):
                more += ["t%d" % extra, "x"]
                extra += 1
            self.c.cmd("HSET", "h", *more)
            if cursor == b"0":
                break
        missing = [i for i in range(500) if ("s%d" % i).encode() not in seen]
        self.assertEqual(missing, [])


class WrongTypeTest(HashTestCase):
    def test_hash_commands_on_a_string(self):
        self.assertReply(OK, "SET", "s", "v")
        for args in (("HSET", "s", "f", "v"), ("HMSET", "s", "f", "v"), ("HSETNX", "s", "f", "v"),
                     ("HGET", "s", "f"), ("HMGET", "s", "f"), ("HDEL", "s", "f"),
                     ("HEXISTS", "s", "f"), ("HINCRBY", "s", "f", "1"),
                     ("HINCRBYFLOAT", "s", "f", "1"), ("HLEN", "s"), ("HSTRLEN", "s", "f"),
                     ("HKEYS", "s"), ("HVALS", "s"), ("HGETALL", "s"), ("HSCAN", "s", "0")):
            self.assertReply(WRONGTYPE, *args)
        # Argument errors come before the type check.
        self.assertReply(NOT_INTEGER, "HINCRBY", "s", "f", "x")
        self.assertReply(NOT_FLOAT, "HINCRBYFLOAT", "s", "f", "x")
        self.assertReply(NAN_OR_INF_INCREMENT, "HINCRBYFLOAT", "s", "f", "inf")
        self.assertReply(bulk("v"), "GET", "s")

    def test_string_commands_on_a_hash(self):
        self.make_hash(self.c, "h")
        for args in (("GET", "h"), ("APPEND", "h", "x"), ("INCR", "h"), ("STRLEN", "h"),
                     ("GETRANGE", "h", "0", "1"), ("SETRANGE", "h", "0", "x"), ("GETDEL", "h"),
                     ("GETEX", "h"), ("SET", "h", "v", "GET"), ("INCRBYFLOAT", "h", "1"),
                     ("GETSET", "h", "v")):
            self.assertReply(WRONGTYPE, *args)
        self.assertReply(array(NIL), "MGET", "h")
        self.assertReply(bulk("value"), "HGET", "h", "field")
        # A plain SET replaces the hash.
        self.assertReply(OK, "SET", "h", "now a string")
        self.assertReply(b"+string\r\n", "TYPE", "h")


class ExpiryTest(HashTestCase):
    def test_ttl_covers_the_whole_hash(self):
        self.assertReply(integer(2), "HSET", "h", "a", "1", "b", "2")
        self.assertReply(integer(1), "EXPIRE", "h", "100")
        self.assertTTL("h", 99, 100)
        # Writes to the fields keep the TTL, whatever happens to the hash's layout.
        args = []
        for i in range(200):
            args += ["f%d" % i, "x" * 70]
        self.assertReply(integer(200), "HSET", "h", *args)
        self.assertReply(integer(5), "HINCRBY", "h", "n", "5")
        self.assertReply(integer(200), "HDEL", "h", *["f%d" % i for i in range(200)])
        self.assertTTL("h", 99, 100)
        self.assertReply(integer(1), "PERSIST", "h")
        self.assertReply(integer(-1), "TTL", "h")

    def test_expired_hash_is_gone(self):
        self.assertReply(integer(1), "HSET", "h", "f", "v")
        self.assertReply(integer(1), "PEXPIRE", "h", "50")
        time.sleep(0.2)
        self.assertReplies([
            (("HGET", "h", "f"), NIL),
            (("HLEN", "h"), integer(0)),
            (("EXISTS", "h"), integer(0)),
            (("HSET", "h", "f", "new"), integer(1)),  # a new hash, without TTL
            (("TTL", "h"), integer(-1)),
        ])

    def test_active_expiry_reclaims_hashes(self):
        for i in range(50):
            self.assertReply(integer(1), "HSET", "h%d" % i, "f", "v")
            self.assertReply(integer(1), "PEXPIRE", "h%d" % i, "30")
        time.sleep(0.5)
        self.assertReply(integer(0), "DBSIZE")  # nobody touched them


class ReentrantLockTest(HashTestCase):
    """Redisson's RLock keeps a hash {"<client id>:<thread id>": hold count} with a lease; its
    Lua scripts reduce to these commands."""

    def try_lock(self, c, name, owner, lease_ms):
        if c.cmd("EXISTS", name) == integer(0) or c.cmd("HEXISTS", name, owner) == integer(1):
            count = c.cmd("HINCRBY", name, owner, "1")
            self.assertEqual(c.cmd("PEXPIRE", name, str(lease_ms)), integer(1))
            return count
        return None

    def unlock(self, c, name, owner):
        if c.cmd("HEXISTS", name, owner) == integer(0):
            return None
        left = c.cmd("HINCRBY", name, owner, "-1")
        if left == integer(0):
            self.assertEqual(c.cmd("DEL", name), integer(1))
        return left

    def test_reentry_and_release(self):
        a = "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
        b = "8743c9c0-0795-4907-87fd-6c719a6b4586:2"
        c = self.c
        self.assertEqual(self.try_lock(c, "lock", a, 30000), integer(1))
        self.assertEqual(self.try_lock(c, "lock", a, 30000), integer(2))  # re-entered
        self.assertIsNone(self.try_lock(c, "lock", b, 30000))              # another thread
        self.assertTTL("lock", 29000, 30000, cmd="PTTL")
        self.assertIsNone(self.unlock(c, "lock", b))
        self.assertEqual(self.unlock(c, "lock", a), integer(1))
        self.assertReply(bulks(a, "1"), "HGETALL", "lock")
        self.assertEqual(self.unlock(c, "lock", a), integer(0))
        self.assertReply(integer(0), "EXISTS", "lock")
        self.assertEqual(self.try_lock(c, "lock", b, 30000), integer(1))   # free again

    def test_lease_expires(self):
        owner = "client:1"
        self.assertEqual(self.try_lock(self.c, "lock", owner, 50), integer(1))
        time.sleep(0.2)
        self.assertReply(integer(0), "EXISTS", "lock")
        self.assertEqual(self.try_lock(self.c, "lock", "client:2", 30000), integer(1))


if __name__ == "__main__":
    harness.main()
