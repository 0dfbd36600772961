"""LMPOP ZMPOP BLMPOP BZMPOP: popping up to COUNT from the first non-empty of several keys, on
one shard and across shards. Immediate replies and errors byte-exact against Redis 7.0 (RESP2
and RESP3); the blocking forms wait in the server until a push, time out with a null array, do
not wait inside MULTI or a script, and take up to COUNT of what the push brought."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL_ARRAY, NULL3, OK, SYNTAX, WRONGTYPE, array, bulk,  # noqa: E402
                     encode_command, integer, wrong_args)
from slots import on_shard  # noqa: E402
from test_blocking_pops import BlockingTestCase  # noqa: E402

NUMKEYS = b"-ERR numkeys should be greater than 0\r\n"
COUNT = b"-ERR count should be greater than 0\r\n"


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def popped(key, *values):
    return array(bulk(key), array(*(bulk(v) for v in values)))


def zpopped(key, *pairs):
    return array(bulk(key), array(*(array(bulk(m), bulk(s)) for m, s in pairs)))


class MPopTest(BlockingTestCase):
    def check_lmpop(self, a, b):
        self.assertReply(integer(5), "RPUSH", b, "1", "2", "3", "4", "5")
        self.assertReply(popped(b, "1"), "LMPOP", "2", a, b, "LEFT")
        self.assertReply(popped(b, "5", "4"), "LMPOP", "2", a, b, "right", "COUNT", "2")
        self.assertReply(integer(1), "RPUSH", a, "x")
        self.assertReply(popped(a, "x"), "LMPOP", "2", a, b, "left", "count", "10")
        self.assertReply(popped(b, "2", "3"), "LMPOP", "2", a, b, "left", "count", "10")
        self.assertReply(integer(0), "EXISTS", a, b)  # emptied keys are gone
        self.assertReply(NIL_ARRAY, "LMPOP", "2", a, b, "LEFT")
        # A key of another type met before a non-empty one: WRONGTYPE, nothing taken.
        self.assertReply(integer(1), "HSET", a, "f", "v")
        self.assertReply(integer(1), "RPUSH", b, "y")
        self.assertReply(WRONGTYPE, "LMPOP", "2", a, b, "LEFT")
        self.assertReply(popped(b, "y"), "LMPOP", "2", b, a, "LEFT")

    def test_lmpop_on_one_shard(self):
        self.check_lmpop("{t}a", "{t}b")

    def test_lmpop_across_shards(self):
        self.check_lmpop(on_shard(0, "a"), on_shard(1, "b"))

    def check_zmpop(self, a, b):
        self.assertReply(integer(3), "ZADD", b, "1", "m1", "2.5", "m2", "3", "m3")
        self.assertReply(zpopped(b, ("m1", "1")), "ZMPOP", "2", a, b, "MIN")
        self.assertReply(zpopped(b, ("m3", "3"), ("m2", "2.5")), "ZMPOP", "2", a, b, "max",
                         "COUNT", "5")
        self.assertReply(NIL_ARRAY, "ZMPOP", "2", a, b, "MIN")
        self.assertReply(integer(1), "RPUSH", a, "x")
        self.assertReply(WRONGTYPE, "ZMPOP", "2", a, b, "MIN")

    def test_zmpop_on_one_shard(self):
        self.check_zmpop("{t}a", "{t}b")

    def test_zmpop_across_shards(self):
        self.check_zmpop(on_shard(0, "a"), on_shard(1, "b"))

    def test_zmpop_in_resp3(self):
        self.assertReply(integer(2), "ZADD", "z", "1", "a", "2.5", "b")
        self.c.cmd("HELLO", "3")
        self.assertReply(b"*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n",
                         "ZMPOP", "1", "z", "MIN", "COUNT", "2")
        self.assertReply(NULL3, "ZMPOP", "1", "z", "MIN")
        self.assertReply(NULL3, "LMPOP", "1", "z", "LEFT")

    def test_errors(self):
        for cmd in ("LMPOP", "ZMPOP"):
            end = "LEFT" if cmd == "LMPOP" else "MIN"
            self.assertReply(NUMKEYS, cmd, "0", "k", end)
            self.assertReply(NUMKEYS, cmd, "-1", "k", end)
            self.assertReply(NUMKEYS, cmd, "x", "k", end)
            self.assertReply(SYNTAX, cmd, "3", "a", "b", end)
            self.assertReply(SYNTAX, cmd, "9223372036854775807", "k", end)
            self.assertReply(SYNTAX, cmd, "1", "k", "middle")
            self.assertReply(COUNT, cmd, "1", "k", end, "COUNT", "0")
            self.assertReply(COUNT, cmd, "1", "k", end, "COUNT", "x")
            self.assertReply(SYNTAX, cmd, "1", "k", end, "COUNT", "1", "COUNT", "2")
            self.assertReply(SYNTAX, cmd, "1", "k", end, "COUNT")
            self.assertReply(SYNTAX, cmd, "1", "k", end, "extra")
            self.assertReply(wrong_args(cmd.lower()), cmd, "1", "k")
        self.assertReply(b"-ERR timeout is not a float or out of range\r\n",
                         "BLMPOP", "x", "1", "k", "LEFT")
        self.assertReply(b"-ERR timeout is negative\r\n", "BZMPOP", "-1", "1", "k", "MIN")
        self.assertReply(NUMKEYS, "BLMPOP", "0", "0", "k", "LEFT")
        self.assertReply(wrong_args("bzmpop"), "BZMPOP", "0", "1", "k")


class BlockingMPopTest(BlockingTestCase):
    def check_served_by_a_push(self, a, b, c, d):
        with self.conn() as w:
            w.send(encode_command("BLMPOP", "0", "2", a, b, "RIGHT", "COUNT", "2"))
            self.wait_blocked(1)
            self.assertReply(integer(3), "RPUSH", b, "1", "2", "3")
            self.assertEqual(w.read_reply(), popped(b, "3", "2"))
        self.assertReply(array(bulk("1")), "LRANGE", b, "0", "-1")
        with self.conn() as w:
            w.send(encode_command("BZMPOP", "0", "2", c, d, "MAX", "COUNT", "5"))
            self.wait_blocked(1)
            self.assertReply(integer(2), "ZADD", c, "1", "x", "2", "y")
            self.assertEqual(w.read_reply(), zpopped(c, ("y", "2"), ("x", "1")))
        self.assertEqual(self.blocked_clients(), 0)

    def test_served_by_a_push_on_one_shard(self):
        self.check_served_by_a_push("{t}a", "{t}b", "{t}c", "{t}d")

    def test_served_by_a_push_across_shards(self):
        self.check_served_by_a_push(on_shard(0, "a"), on_shard(1, "b"), on_shard(1, "c"),
                                    on_shard(0, "d"))

    def test_timeout_and_no_wait_in_multi_or_script(self):
        a, b = on_shard(0, "a"), on_shard(1, "b")
        self.assertReply(NIL_ARRAY, "BLMPOP", "0.05", "2", a, b, "LEFT")
        self.assertReply(NIL_ARRAY, "BZMPOP", "0.05", "1", a, "MIN")
        self.assertReply(OK, "MULTI")
        self.assertReply(b"+QUEUED\r\n", "BLMPOP", "0", "2", a, b, "LEFT")
        self.assertReply(b"+QUEUED\r\n", "BZMPOP", "0", "1", "{t}a", "MIN")
        self.assertReply(array(NIL_ARRAY, NIL_ARRAY), "EXEC")
        # In a script a blocking pop does not wait (Redis 7.0 allows these two, not BLPOP).
        script = "return redis.call('blmpop', 0, 2, KEYS[1], KEYS[2], 'left')"
        self.assertReply(b"$-1\r\n", "EVAL", script, "2", a, b)
        self.assertReply(integer(1), "RPUSH", b, "v")
        self.assertReply(popped(b, "v"), "EVAL", script, "2", a, b)
        self.assertEqual(self.blocked_clients(), 0)


if __name__ == "__main__":
    unittest.main()
