"""ZUNION ZINTER ZDIFF ZDIFFSTORE ZINTERCARD (and ZUNIONSTORE ZINTERSTORE's order of checks), on
one shard ({t} tags) and across shards: byte-exact against Redis 7.0, RESP2 and RESP3. Plain
sets count as sorted sets whose members score 1; the sources' types are checked before the
options, as Redis does."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NOT_INTEGER, OK, SYNTAX, WRONGTYPE, array, bulk, integer  # noqa: E402
from slots import on_shard  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def members(*items):
    return array(*(bulk(i) for i in items))


def needs_key(cmd):
    return b"-ERR at least 1 input key is needed for '%s' command\r\n" % cmd.encode()


class ZSetAlgebraTest(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def check(self, a, b, c, d):
        self.assertReply(integer(3), "ZADD", a, "1", "x", "2", "y", "3", "z")
        self.assertReply(integer(2), "ZADD", b, "2", "y", "5", "w")
        self.assertReply(integer(2), "SADD", c, "y", "q")
        self.assertReply(members("x", "1", "z", "3", "y", "4", "w", "5"),
                         "ZUNION", "2", a, b, "WITHSCORES")
        self.assertReply(members("q", "1", "x", "1", "y", "2", "z", "3", "w", "5"),
                         "ZUNION", "3", a, b, c, "WITHSCORES", "AGGREGATE", "MAX")
        self.assertReply(members("x", "w", "y", "z"), "ZUNION", "2", a, b, "WEIGHTS", "2", "1")
        self.assertReply(members("y", "1"), "ZINTER", "3", a, b, c, "AGGREGATE", "MIN",
                         "WITHSCORES")
        self.assertReply(members("x", "1", "z", "3"), "ZDIFF", "2", a, b, "WITHSCORES")
        self.assertReply(members("x", "z"), "ZDIFF", "3", a, b, c)
        self.assertReply(integer(2), "ZDIFFSTORE", d, "2", a, b)
        self.assertReply(members("x", "1", "z", "3"), "ZRANGE", d, "0", "-1", "WITHSCORES")
        self.assertReply(integer(0), "ZDIFFSTORE", d, "2", "{t}nokey", b)
        self.assertReply(integer(0), "EXISTS", d)
        self.assertReply(integer(1), "ZINTERCARD", "2", a, b)
        self.assertReply(integer(3), "ZINTERCARD", "1", a, "LIMIT", "0")
        self.assertReply(integer(2), "ZINTERCARD", "1", a, "LIMIT", "2")
        # A source of another type: WRONGTYPE, before any option's error.
        self.assertReply(OK, "SET", c, "str")
        self.assertReply(WRONGTYPE, "ZUNION", "2", a, c, "WEIGHTS", "x", "1")
        self.assertReply(WRONGTYPE, "ZINTERSTORE", d, "2", a, c, "AGGREGATE", "nope")
        self.assertReply(WRONGTYPE, "ZINTERCARD", "2", a, c, "LIMIT", "x")
        self.assertReply(WRONGTYPE, "ZDIFF", "2", c, a)

    def test_on_one_shard(self):
        self.check("{t}a", "{t}b", "{t}c", "{t}d")

    def test_across_shards(self):
        self.check(on_shard(0, "a"), on_shard(1, "b"), on_shard(1, "c"), on_shard(0, "d"))

    def test_ties_order_by_member_and_resp3(self):
        self.assertReply(integer(4), "ZADD", "t", "1", "m", "1", "l", "1", "n", "0.5", "o")
        self.assertReply(members("o", "0.5", "l", "1", "m", "1", "n", "1"),
                         "ZUNION", "1", "t", "WITHSCORES")
        self.c.cmd("HELLO", "3")
        # RESP3: [member, score] pairs, the score a double.
        self.assertReply(array(array(bulk("o"), b",0.5\r\n"), array(bulk("l"), b",1\r\n"),
                               array(bulk("m"), b",1\r\n"), array(bulk("n"), b",1\r\n")),
                         "ZDIFF", "1", "t", "WITHSCORES")

    def test_errors(self):
        for cmd in ("ZUNION", "ZINTER", "ZDIFF", "ZINTERCARD"):
            self.assertReply(needs_key(cmd.lower()), cmd, "0", "a")
            self.assertReply(NOT_INTEGER, cmd, "x", "a")
            self.assertReply(SYNTAX, cmd, "3", "a", "b")
        self.assertReply(needs_key("zdiffstore"), "ZDIFFSTORE", "d", "0", "a")
        self.assertReply(SYNTAX, "ZDIFF", "2", "a", "b", "WEIGHTS", "1", "2")
        self.assertReply(SYNTAX, "ZDIFF", "2", "a", "b", "AGGREGATE", "MAX")
        self.assertReply(SYNTAX, "ZDIFFSTORE", "d", "2", "a", "b", "WITHSCORES")
        self.assertReply(SYNTAX, "ZUNION", "2", "a", "b", "WEIGHTS", "1")
        self.assertReply(b"-ERR weight value is not a float\r\n",
                         "ZUNION", "2", "a", "b", "WEIGHTS", "1", "x")
        self.assertReply(SYNTAX, "ZINTERCARD", "2", "a", "b", "WITHSCORES")
        self.assertReply(SYNTAX, "ZINTERCARD", "1", "a", "LIMIT")
        self.assertReply(b"-ERR LIMIT can't be negative\r\n", "ZINTERCARD", "1", "a", "LIMIT",
                         "-1")


if __name__ == "__main__":
    unittest.main()
