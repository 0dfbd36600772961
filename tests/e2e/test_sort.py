"""SORT and SORT_RO: numeric and ALPHA, BY weight keys and hash fields, BY nosort, LIMIT, GET
patterns, ASC/DESC, STORE (into a key of either shard). Replies byte-exact against redis-server
7.0 (this file also runs against it, DEADBOLT_AGAINST_REDIS=1), with the keys a pattern names
sharing the sorted key's hash tag; deadbolt refuses a pattern naming a key on another shard."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, OK, array, bulk, decode, integer  # noqa: E402
from slots import on_shard  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


SYNTAX = b"-ERR syntax error\r\n"


def bulks(*items):
    return array(*[bulk(i) for i in items])


class SortTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")
        self.assertReply(integer(5), "RPUSH", "{s}l", "3", "1", "2", "10", "5")

    def test_numeric_alpha_limit_desc(self):
        self.assertReplies([
            (("SORT", "{s}l"), bulks("1", "2", "3", "5", "10")),
            (("SORT", "{s}l", "DESC"), bulks("10", "5", "3", "2", "1")),
            (("SORT", "{s}l", "ALPHA"), bulks("1", "10", "2", "3", "5")),
            (("SORT", "{s}l", "LIMIT", "1", "2"), bulks("2", "3")),
            (("SORT", "{s}l", "LIMIT", "10", "2"), array()),
            (("SORT", "{s}l", "BY", "nosort", "DESC", "LIMIT", "1", "2"), bulks("10", "2")),
            (("SORT_RO", "{s}l", "LIMIT", "-5", "2"), bulks("1", "2")),
            (("SORT", "{s}none"), array()),
        ])

    def test_by_and_get_patterns(self):
        self.c.cmd("MSET", "{s}w_3", "30", "{s}w_1", "100", "{s}w_2", "20", "{s}w_10", "1",
                   "{s}o_3", "three", "{s}o_1", "one")
        self.c.cmd("HSET", "{s}h_1", "f", "9", "g", "x")
        self.c.cmd("HSET", "{s}h_3", "f", "1")
        self.assertReplies([
            (("SORT", "{s}l", "BY", "{s}w_*"), bulks("5", "10", "2", "3", "1")),
            (("SORT", "{s}l", "BY", "{s}w_*", "GET", "#", "GET", "{s}o_*"),
             array(bulk("5"), NIL, bulk("10"), NIL, bulk("2"), NIL, bulk("3"), bulk("three"),
                   bulk("1"), bulk("one"))),
            (("SORT", "{s}l", "BY", "{s}h_*->f", "GET", "{s}h_*->g"),
             array(NIL, NIL, NIL, NIL, bulk("x"))),
            (("SORT_RO", "{s}l", "BY", "{s}w_*", "ALPHA", "DESC"), bulks("3", "2", "1", "10", "5")),
        ])

    def test_store_on_either_shard(self):
        for dst in (on_shard(0, "sorted"), on_shard(1, "sorted")):
            self.assertReply(integer(5), "SORT", "{s}l", "DESC", "STORE", dst)
            self.assertEqual(decode(self.c.cmd("LRANGE", dst, "0", "-1")),
                             [b"10", b"5", b"3", b"2", b"1"])
            self.assertReply(integer(0), "SORT", "{s}none", "STORE", dst)
            self.assertReply(integer(0), "EXISTS", dst)
        self.assertReply(bulks("{s}l", "d"), "COMMAND", "GETKEYS", "SORT", "{s}l", "STORE", "d")

    def test_errors(self):
        self.c.cmd("RPUSH", "{s}bad", "1", "x")
        self.c.cmd("SET", "{s}str", "x")
        self.assertReplies([
            (("SORT", "{s}bad"), b"-ERR One or more scores can't be converted into double\r\n"),
            (("SORT", "{s}bad", "ALPHA"), bulks("1", "x")),
            (("SORT", "{s}str"), b"-WRONGTYPE Operation against a key holding the wrong kind of "
                                 b"value\r\n"),
            (("SORT", "{s}l", "LIMIT", "x", "1"),
             b"-ERR value is not an integer or out of range\r\n"),
            (("SORT", "{s}l", "LIMIT", "1"), SYNTAX),
            (("SORT", "{s}str", "BOGUS"), SYNTAX),  # the options before the key
            (("SORT_RO", "{s}l", "STORE", "x"), SYNTAX),
        ])

    def test_a_pattern_naming_another_shard_is_refused(self):
        if harness.AGAINST_REDIS:
            self.skipTest("deadbolt's shards")
        key = on_shard(0, "nums")
        self.c.cmd("RPUSH", key, *[str(i) for i in range(20)])
        raw = self.c.cmd("SORT", key, "BY", "w_*")
        self.assertTrue(raw.startswith(b"-ERR a SORT BY or GET pattern names a key on another "
                                       b"shard"), raw)
        self.assertReply(bulks(*[str(i) for i in range(20)]), "SORT", key)


if __name__ == "__main__":
    unittest.main()
