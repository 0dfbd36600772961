"""List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP (with count) LLEN LRANGE LINDEX LSET LREM
LINSERT LTRIM LPOS LMOVE RPOPLPUSH, in RESP2 and RESP3; large lists (past the packed form);
LMOVE/RPOPLPUSH between shards; WRONGTYPE both ways; TYPE, SCAN TYPE, RENAME, COPY, expiry.

Every expected reply is the exact byte string Redis 7.0 sends (checked with
DEADBOLT_AGAINST_REDIS=1)."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL, NIL_ARRAY, NOT_INTEGER, NULL3, OK, SYNTAX, WRONGTYPE, array,  # noqa: E402
                     bulk, integer, wrong_args)
from slots import on_shard  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


NOT_POSITIVE = b"-ERR value is out of range, must be positive\r\n"
NO_SUCH_KEY = b"-ERR no such key\r\n"
INDEX_OUT_OF_RANGE = b"-ERR index out of range\r\n"
RANK_ZERO = (b"-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second"
             b" ... or use negative to start from the end of the list\r\n")


def bulks(*items):
    return array(*[bulk(i) for i in items])


# UUIDs of one case are kept packed in 16 bytes (shard/types/packed_growth.h): each comes back
# as the same text, and the other case of the same UUID is another value.
U_LOWER = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
U_UPPER = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"
U_MIXED = "0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0"
U_DIGITS = "01234567-8901-2345-6789-012345678901"


class ListTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")


class PushPopTest(ListTestCase):
    def test_push_and_range(self):
        self.assertReplies([
            (("LPUSH", "l", "b", "a"), integer(2)),
            (("RPUSH", "l", "c", "d"), integer(4)),
            (("LRANGE", "l", "0", "-1"), bulks("a", "b", "c", "d")),
            (("LRANGE", "l", "-2", "100"), bulks("c", "d")),
            (("LRANGE", "l", "3", "1"), b"*0\r\n"),
            (("LRANGE", "l", "9", "10"), b"*0\r\n"),
            (("LRANGE", "nokey", "0", "-1"), b"*0\r\n"),
            (("LRANGE", "l", "x", "1"), NOT_INTEGER),
            (("LLEN", "l"), integer(4)),
            (("LLEN", "nokey"), integer(0)),
            (("LPUSHX", "nokey", "a"), integer(0)),
            (("RPUSHX", "nokey", "a"), integer(0)),
            (("EXISTS", "nokey"), integer(0)),
            (("LPUSHX", "l", "z"), integer(5)),
            (("RPUSHX", "l", "e", "f"), integer(7)),
            (("LRANGE", "l", "0", "-1"), bulks("z", "a", "b", "c", "d", "e", "f")),
            (("TYPE", "l"), b"+list\r\n"),
            (("LPUSH", "l"), wrong_args("lpush")),
        ])

    def test_pop_with_and_without_count(self):
        self.assertReplies([
            (("RPUSH", "l", "a", "b", "c", "d"), integer(4)),
            (("LPOP", "l"), bulk("a")),
            (("RPOP", "l"), bulk("d")),
            (("LPOP", "l", "0"), b"*0\r\n"),
            (("LPOP", "l", "-1"), NOT_POSITIVE),
            (("LPOP", "l", "x"), NOT_POSITIVE),
            (("LPOP", "l", "1", "2"), wrong_args("lpop")),
            (("RPOP", "l", "5"), bulks("c", "b")),
            (("EXISTS", "l"), integer(0)),  # the last element took the key with it
            (("LPOP", "l"), NIL),
            (("LPOP", "l", "2"), NIL_ARRAY),
            (("LPOP", "l", "0"), NIL_ARRAY),
            (("RPOP", "l", "1"), NIL_ARRAY),
        ])

    def test_resp3(self):
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReplies([
            (("RPUSH", "l", "a"), integer(1)),
            (("LPOP", "nokey"), NULL3),
            (("LPOP", "nokey", "2"), NULL3),
            (("LPOS", "l", "zz"), NULL3),
            (("LINDEX", "l", "5"), NULL3),
            (("LMOVE", "nokey", "l", "LEFT", "LEFT"), NULL3),
            (("LRANGE", "l", "0", "-1"), bulks("a")),
        ], c=c3)

    def test_large_list_and_back(self):
        # Past 128 elements (and with a 100-byte element) the list is large; every command works
        # the same on both sides of the change.
        items = ["v%d" % i for i in range(300)]
        self.assertReply(integer(300), "RPUSH", "big", *items)
        self.assertReply(bulks(*items[:3]), "LRANGE", "big", "0", "2")
        self.assertReply(bulk("v150"), "LINDEX", "big", "150")
        self.assertReply(integer(301), "LPUSH", "big", "x" * 100)
        self.assertReply(bulk("x" * 100), "LPOP", "big")
        self.assertReply(OK, "LTRIM", "big", "10", "19")
        self.assertReply(bulks(*items[10:20]), "LRANGE", "big", "0", "-1")
        self.assertReply(integer(11), "RPUSH", "big", "y" * 100)
        self.assertReply(bulk("y" * 100), "RPOP", "big")
        self.assertReply(bulks(*items[10:20]), "LRANGE", "big", "0", "-1")


class EditTest(ListTestCase):
    def test_lindex_lset(self):
        self.assertReplies([
            (("RPUSH", "l", "a", "b", "c"), integer(3)),
            (("LINDEX", "l", "0"), bulk("a")),
            (("LINDEX", "l", "-1"), bulk("c")),
            (("LINDEX", "l", "3"), NIL),
            (("LINDEX", "l", "-4"), NIL),
            (("LINDEX", "l", "x"), NOT_INTEGER),
            (("LINDEX", "nokey", "x"), NIL),
            (("LSET", "l", "1", "B"), OK),
            (("LSET", "l", "-1", "C"), OK),
            (("LSET", "l", "3", "x"), INDEX_OUT_OF_RANGE),
            (("LSET", "l", "x", "x"), NOT_INTEGER),
            (("LSET", "nokey", "0", "x"), NO_SUCH_KEY),
            (("LSET", "nokey", "x", "x"), NO_SUCH_KEY),
            (("LRANGE", "l", "0", "-1"), bulks("a", "B", "C")),
        ])

    def test_lrem(self):
        self.assertReplies([
            (("RPUSH", "l", "x", "a", "x", "b", "x", "c", "x"), integer(7)),
            (("LREM", "l", "-2", "x"), integer(2)),
            (("LRANGE", "l", "0", "-1"), bulks("x", "a", "x", "b", "c")),
            (("LREM", "l", "1", "x"), integer(1)),
            (("LRANGE", "l", "0", "-1"), bulks("a", "x", "b", "c")),
            (("LREM", "l", "0", "x"), integer(1)),
            (("LREM", "l", "0", "nope"), integer(0)),
            (("LREM", "l", "x", "a"), NOT_INTEGER),
            (("LREM", "nokey", "0", "a"), integer(0)),
            (("LREM", "l", "0", "a"), integer(1)),
            (("LREM", "l", "0", "b"), integer(1)),
            (("LREM", "l", "0", "c"), integer(1)),
            (("EXISTS", "l"), integer(0)),
        ])

    def test_linsert(self):
        self.assertReplies([
            (("RPUSH", "l", "a", "c"), integer(2)),
            (("LINSERT", "l", "BEFORE", "c", "b"), integer(3)),
            (("LINSERT", "l", "after", "c", "d"), integer(4)),
            (("LINSERT", "l", "before", "zz", "x"), integer(-1)),
            (("LINSERT", "nokey", "before", "a", "x"), integer(0)),
            (("LINSERT", "l", "middle", "a", "x"), SYNTAX),
            (("LRANGE", "l", "0", "-1"), bulks("a", "b", "c", "d")),
        ])

    def test_ltrim(self):
        self.assertReplies([
            (("RPUSH", "l", "a", "b", "c", "d", "e"), integer(5)),
            (("LTRIM", "l", "1", "-2"), OK),
            (("LRANGE", "l", "0", "-1"), bulks("b", "c", "d")),
            (("LTRIM", "l", "0", "100"), OK),
            (("LLEN", "l"), integer(3)),
            (("LTRIM", "l", "x", "1"), NOT_INTEGER),
            (("LTRIM", "nokey", "0", "1"), OK),
            (("LTRIM", "l", "5", "10"), OK),
            (("EXISTS", "l"), integer(0)),
        ])

    def test_lpos(self):
        self.assertReplies([
            (("RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c"), integer(8)),
            (("LPOS", "l", "c"), integer(2)),
            (("LPOS", "l", "c", "RANK", "2"), integer(6)),
            (("LPOS", "l", "c", "RANK", "-1"), integer(7)),
            (("LPOS", "l", "c", "COUNT", "0"), array(integer(2), integer(6), integer(7))),
            (("LPOS", "l", "c", "COUNT", "2", "RANK", "-1"), array(integer(7), integer(6))),
            (("LPOS", "l", "c", "COUNT", "0", "MAXLEN", "3"), array(integer(2))),
            (("LPOS", "l", "zz"), NIL),
            (("LPOS", "l", "zz", "COUNT", "1"), b"*0\r\n"),
            (("LPOS", "nokey", "a"), NIL),
            (("LPOS", "nokey", "a", "COUNT", "0"), b"*0\r\n"),
            (("LPOS", "l", "c", "RANK", "0"), RANK_ZERO),
            (("LPOS", "l", "c", "COUNT", "-1"), b"-ERR COUNT can't be negative\r\n"),
            (("LPOS", "l", "c", "MAXLEN", "-1"), b"-ERR MAXLEN can't be negative\r\n"),
            (("LPOS", "l", "c", "RANK", "x"), NOT_INTEGER),
            (("LPOS", "l", "c", "COUNT", "x"), b"-ERR COUNT can't be negative\r\n"),
            (("LPOS", "l", "c", "MAXLEN", "x"), b"-ERR MAXLEN can't be negative\r\n"),
            (("LPOS", "l", "c", "FOO", "1"), SYNTAX),
            (("LPOS", "l", "c", "RANK"), SYNTAX),
        ])


class MoveTest(ListTestCase):
    def check_move(self, src, dst):
        self.assertReplies([
            (("RPUSH", src, "a", "b", "c"), integer(3)),
            (("LMOVE", src, dst, "LEFT", "RIGHT"), bulk("a")),
            (("LMOVE", src, dst, "right", "left"), bulk("c")),
            (("RPOPLPUSH", src, dst), bulk("b")),
            (("EXISTS", src), integer(0)),
            (("LRANGE", dst, "0", "-1"), bulks("b", "c", "a")),
            (("LMOVE", src, dst, "LEFT", "LEFT"), NIL),
            (("RPOPLPUSH", src, dst), NIL),
            (("LMOVE", src, dst, "UP", "LEFT"), SYNTAX),
            (("SET", "str", "x"), OK),
        ])

    def test_same_shard(self):
        self.check_move("{t}src", "{t}dst")
        self.assertReplies([
            (("LMOVE", "str", "{t}dst", "LEFT", "LEFT"), WRONGTYPE),
            (("LMOVE", "{t}dst", "str", "LEFT", "LEFT"), WRONGTYPE),
            (("LRANGE", "{t}dst", "0", "-1"), bulks("b", "c", "a")),  # nothing popped
            (("LMOVE", "{t}nokey", "str", "LEFT", "LEFT"), NIL),  # source first
        ])

    def test_across_shards(self):
        self.check_move(on_shard(1, "src"), on_shard(0, "dst"))
        src, dst = on_shard(0, "src"), on_shard(1, "dst")
        self.check_move(src, dst)
        str0 = on_shard(0, "str")
        self.assertReplies([
            (("SET", str0, "x"), OK),
            (("LMOVE", dst, str0, "LEFT", "LEFT"), WRONGTYPE),
            (("LRANGE", dst, "0", "-1"), bulks("b", "c", "a")),  # nothing popped
            (("LMOVE", str0, dst, "LEFT", "LEFT"), WRONGTYPE),
            (("LMOVE", on_shard(0, "nokey"), dst, "LEFT", "LEFT"), NIL),
            (("LMOVE", on_shard(1, "nokey"), str0, "LEFT", "LEFT"), NIL),  # source first
            (("LPUSH", on_shard(1, "str"), "x"), integer(1)),
            (("SET", on_shard(1, "str"), "y"), OK),
            (("LMOVE", on_shard(1, "str"), str0, "LEFT", "LEFT"), WRONGTYPE),
        ])

    def test_rotation_keeps_the_key_and_ttl(self):
        self.assertReplies([
            (("RPUSH", "l", "a", "b"), integer(2)),
            (("PEXPIRE", "l", "100000"), integer(1)),
            (("LMOVE", "l", "l", "LEFT", "RIGHT"), bulk("a")),
            (("RPOPLPUSH", "l", "l"), bulk("a")),
            (("LRANGE", "l", "0", "-1"), bulks("a", "b")),
            (("DEL", "l"), integer(1)),
            (("RPUSH", "l", "only"), integer(1)),
            (("PEXPIRE", "l", "100000"), integer(1)),
            (("LMOVE", "l", "l", "LEFT", "RIGHT"), bulk("only")),
        ])
        self.assertTTL("l", 90000, 100000, cmd="PTTL")


class KeyspaceTest(ListTestCase):
    def test_wrongtype_both_ways(self):
        self.assertReply(OK, "SET", "s", "x")
        self.assertReply(integer(1), "RPUSH", "l", "a")
        for cmd in (("LPUSH", "s", "a"), ("RPUSH", "s", "a"), ("LPUSHX", "s", "a"),
                    ("LPOP", "s"), ("RPOP", "s", "2"), ("LLEN", "s"), ("LRANGE", "s", "0", "1"),
                    ("LINDEX", "s", "0"), ("LSET", "s", "0", "a"), ("LREM", "s", "0", "a"),
                    ("LINSERT", "s", "before", "a", "b"), ("LTRIM", "s", "0", "1"),
                    ("LPOS", "s", "a"), ("LINDEX", "s", "x"), ("LSET", "s", "x", "a"),
                    ("GET", "l"), ("INCR", "l"), ("APPEND", "l", "x"), ("HSET", "l", "f", "v")):
            self.assertReply(WRONGTYPE, *cmd)

    def test_type_scan_rename_copy_expiry(self):
        a0, a1 = on_shard(0, "la"), on_shard(1, "lb")
        self.assertReplies([
            (("RPUSH", a0, "x", "y"), integer(2)),
            (("SET", "str", "v"), OK),
            (("TYPE", a0), b"+list\r\n"),
            (("SCAN", "0", "TYPE", "list", "COUNT", "1000"), array(bulk("0"), bulks(a0))),
            (("COPY", a0, a1), integer(1)),
            (("LRANGE", a1, "0", "-1"), bulks("x", "y")),
            (("RENAME", a1, "{x}moved"), OK),
            (("LRANGE", "{x}moved", "0", "-1"), bulks("x", "y")),
            (("PEXPIRE", a0, "50"), integer(1)),
        ])
        time.sleep(0.2)
        self.assertReplies([
            (("EXISTS", a0), integer(0)),
            (("LLEN", a0), integer(0)),
            (("DEL", "{x}moved"), integer(1)),
        ])

    def test_multi_exec(self):
        c = self.c
        self.assertReply(OK, "MULTI")
        self.assertReply(b"+QUEUED\r\n", "RPUSH", "l", "a", "b")
        self.assertReply(b"+QUEUED\r\n", "LPOP", "l")
        self.assertReply(array(integer(2), bulk("a")), "EXEC")
        w = self.conn()
        self.assertReply(OK, "WATCH", "l", c=w)
        self.assertReply(integer(2), "RPUSH", "l", "c")
        self.assertReply(OK, "MULTI", c=w)
        self.assertReply(b"+QUEUED\r\n", "LPOP", "l", c=w)
        self.assertReply(NIL_ARRAY, "EXEC", c=w)  # the list changed: aborted


if __name__ == "__main__":
    import unittest
    unittest.main()


class UuidElementsTest(ListTestCase):
    def test_uuids_come_back_as_sent(self):
        self.assertReplies([
            (("RPUSH", "l", U_LOWER, U_UPPER, U_MIXED, U_DIGITS), integer(4)),
            (("LPUSH", "l", U_UPPER), integer(5)),
            (("LRANGE", "l", "0", "-1"), bulks(U_UPPER, U_LOWER, U_UPPER, U_MIXED, U_DIGITS)),
            (("LINDEX", "l", "1"), bulk(U_LOWER)),
            (("LINDEX", "l", "-1"), bulk(U_DIGITS)),
            (("LPOS", "l", U_UPPER, "COUNT", "0"), array(integer(0), integer(2))),
            (("LPOS", "l", U_LOWER.replace("f0", "f1")), NIL),
            (("LREM", "l", "1", U_UPPER), integer(1)),
            (("LSET", "l", "0", U_UPPER), OK),
            (("LINSERT", "l", "BEFORE", U_MIXED, "x"), integer(5)),
            (("LRANGE", "l", "0", "-1"), bulks(U_UPPER, U_UPPER, "x", U_MIXED, U_DIGITS)),
            (("LMOVE", "l", "l2", "LEFT", "RIGHT"), bulk(U_UPPER)),
            (("RPOP", "l", "2"), bulks(U_DIGITS, U_MIXED)),
            (("LPOP", "l"), bulk(U_UPPER)),
            (("LRANGE", "l2", "0", "-1"), bulks(U_UPPER)),
        ])
