"""Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SSCAN SMOVE
SINTER SINTERCARD SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE, in RESP2 and RESP3 (a set
where Redis 7.0 sends one); the multi-key ones with keys on one shard and on two; WRONGTYPE both
ways; TYPE, SCAN TYPE, RENAME, COPY, expiry.

Every expected reply is the exact byte string Redis 7.0 sends (checked with
DEADBOLT_AGAINST_REDIS=1). Integer sets come out in ascending order in both; sets of strings
come out in each server's own order, so those are compared as sets."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL, NOT_INTEGER, NULL3, OK, SYNTAX, WRONGTYPE, array,  # noqa: E402
                     bulk, integer)
from slots import on_shard  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


NOT_POSITIVE = b"-ERR value is out of range, must be positive\r\n"
INVALID_CURSOR = b"-ERR invalid cursor\r\n"


def bulks(*items):
    return array(*[bulk(i) for i in items])


def rset(*items):
    """A RESP3 set of bulks."""
    return b"~%d\r\n" % len(items) + b"".join(bulk(i) for i in items)


# UUIDs of one case are kept packed in 16 bytes (shard/types/packed_growth.h): each comes back
# as the same text, and the other case of the same UUID is another value.
U_LOWER = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
U_UPPER = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"
U_MIXED = "0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0"
U_DIGITS = "01234567-8901-2345-6789-012345678901"


class SetTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def members(self, *args, c=None):
        """A command's reply of members, as a Python set of bytes."""
        reply = harness.decode((c or self.c).cmd(*args))
        self.assertIsInstance(reply, list, args)
        return set(reply)


class BasicTest(SetTestCase):
    def test_add_rem_card_ismember(self):
        self.assertReplies([
            (("SADD", "s", "3", "1", "2", "1"), integer(3)),
            (("SADD", "s", "2", "4"), integer(1)),
            (("SMEMBERS", "s"), bulks("1", "2", "3", "4")),  # an intset: ascending
            (("SCARD", "s"), integer(4)),
            (("SCARD", "nokey"), integer(0)),
            (("SISMEMBER", "s", "2"), integer(1)),
            (("SISMEMBER", "s", "02"), integer(0)),
            (("SISMEMBER", "nokey", "2"), integer(0)),
            (("SMISMEMBER", "s", "1", "9", "4"), array(integer(1), integer(0), integer(1))),
            (("SMISMEMBER", "nokey", "1"), array(integer(0))),
            (("SREM", "s", "1", "9"), integer(1)),
            (("SREM", "nokey", "1"), integer(0)),
            (("TYPE", "s"), b"+set\r\n"),
            (("SREM", "s", "2", "3", "4"), integer(3)),
            (("EXISTS", "s"), integer(0)),
            (("SMEMBERS", "nokey"), b"*0\r\n"),
        ])

    def test_strings_and_large_sets(self):
        self.assertReply(integer(3), "SADD", "s", "a", "b", "1")
        self.assertEqual(self.members("SMEMBERS", "s"), {b"a", b"b", b"1"})
        many = ["m%d" % i for i in range(600)] + ["x" * 100]
        self.assertReply(integer(601), "SADD", "big", *many)
        self.assertReply(integer(601), "SCARD", "big")
        self.assertEqual(self.members("SMEMBERS", "big"), {m.encode() for m in many})
        ints = [str(i) for i in range(1000)]
        self.assertReply(integer(1000), "SADD", "ints", *ints)
        self.assertReply(integer(1), "SISMEMBER", "ints", "999")
        self.assertEqual(self.members("SMEMBERS", "ints"), {i.encode() for i in ints})

    def test_intsets_across_the_inline_limit(self):
        # deadbolt keeps an intset of up to 255 bytes (127 two-byte members, 63 of four, 31 of
        # eight) in the key's own entry and moves it to a block past that; Redis keeps an
        # intset up to 512 members. The replies do not change at either edge.
        want = []
        for i in range(130):
            self.assertReply(integer(1), "SADD", "s", str(i * 2))
            want.append(str(i * 2))
            if i in (0, 126, 127, 129):
                self.assertReply(bulks(*want), "SMEMBERS", "s")
                self.assertReply(bulk("intset"), "OBJECT", "ENCODING", "s")
            if i == 10:
                self.assertReply(integer(1), "PEXPIRE", "s", "100000")
        self.assertReply(integer(130), "SCARD", "s")
        self.assertReply(integer(3), "SREM", "s", "0", "2", "258", "1")
        want = want[2:-1]
        self.assertReply(bulks(*want), "SMEMBERS", "s")
        self.assertReply(array(integer(1), integer(0)), "SMISMEMBER", "s", "4", "5")
        ttl = harness.decode(self.c.cmd("PTTL", "s"))
        self.assertTrue(0 < ttl <= 100000, ttl)
        # Wider members rewrite every slot: 4 then 8 bytes, past the limit and back.
        self.assertReply(integer(1), "SADD", "s", "70000")
        self.assertReply(integer(1), "SADD", "s", "-5000000000")
        self.assertReply(bulks("-5000000000", *want, "70000"), "SMEMBERS", "s")
        self.assertReply(integer(100), "SREM", "s", *want[:100])
        self.assertReply(bulks("-5000000000", *want[100:], "70000"), "SMEMBERS", "s")
        self.assertReply(bulk("intset"), "OBJECT", "ENCODING", "s")
        popped = harness.decode(self.c.cmd("SPOP", "s", "5"))
        self.assertEqual(len(popped), 5)
        self.assertReply(integer(len(want) - 100 + 2 - 5), "SCARD", "s")
        self.assertReply(array(integer(0)), "SMISMEMBER", "s", popped[0])
        # A non-integer: no longer an intset.
        self.assertReply(integer(1), "SADD", "s", "x")
        self.assertReply(bulk("hashtable"), "OBJECT", "ENCODING", "s")

    def test_resp3_sets(self):
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReplies([
            (("SADD", "s", "1", "2", "3"), integer(3)),
            (("SMEMBERS", "s"), rset("1", "2", "3")),
            (("SINTER", "s", "s"), rset("1", "2", "3")),
            (("SUNION", "s", "nokey"), rset("1", "2", "3")),
            (("SDIFF", "s", "nokey"), rset("1", "2", "3")),
            (("SMEMBERS", "nokey"), b"~0\r\n"),
            (("SPOP", "nokey"), NULL3),
            (("SPOP", "nokey", "2"), b"~0\r\n"),
            (("SPOP", "s", "0"), b"~0\r\n"),
            (("SRANDMEMBER", "nokey"), NULL3),
            (("SRANDMEMBER", "nokey", "3"), b"*0\r\n"),
            (("SRANDMEMBER", "s", "3"), bulks("1", "2", "3")),
            (("SPOP", "s", "3"), rset("1", "2", "3")),
            (("EXISTS", "s"), integer(0)),
        ], c=c3)

    def test_spop_srandmember(self):
        self.assertReplies([
            (("SADD", "s", "a", "b", "c", "d"), integer(4)),
            (("SPOP", "s", "-1"), NOT_POSITIVE),
            (("SPOP", "s", "x"), NOT_POSITIVE),
            (("SPOP", "s", "1", "2"), SYNTAX),
            (("SRANDMEMBER", "s", "x"), NOT_INTEGER),
            (("SRANDMEMBER", "s", "1", "2"), SYNTAX),
            (("SPOP", "nokey"), NIL),
            (("SPOP", "nokey", "2"), b"*0\r\n"),
            (("SRANDMEMBER", "nokey"), NIL),
            (("SRANDMEMBER", "nokey", "-2"), b"*0\r\n"),
            (("SRANDMEMBER", "s", "0"), b"*0\r\n"),
            (("SRANDMEMBER", "s", "-9223372036854775808"),
             b"-ERR value is out of range, value must between -9223372036854775807 and "
             b"9223372036854775807\r\n"),
        ])
        if not harness.AGAINST_REDIS:
            # Picks that may repeat: deadbolt's limit (Redis builds them until memory runs out;
            # before the limit, this count aborted the server).
            self.assertReplies([
                (("SRANDMEMBER", "s", "-9223372036854775807"),
                 b"-ERR value is out of range, value must between -16777216 and "
                 b"9223372036854775807\r\n"),
                (("ZADD", "z", "1", "a"), integer(1)),
                (("ZRANDMEMBER", "z", "-16777217"),
                 b"-ERR value is out of range, value must between -16777216 and "
                 b"9223372036854775807\r\n"),
            ])
            self.assertEqual(len(harness.decode(self.c.cmd("SRANDMEMBER", "s", "-6"))), 6)
        all4 = {b"a", b"b", b"c", b"d"}
        self.assertEqual(self.members("SRANDMEMBER", "s", "10"), all4)
        two = harness.decode(self.c.cmd("SRANDMEMBER", "s", "2"))
        self.assertEqual(len(set(two)), 2)
        self.assertTrue(set(two) <= all4)
        rep = harness.decode(self.c.cmd("SRANDMEMBER", "s", "-10"))
        self.assertEqual(len(rep), 10)
        self.assertTrue(set(rep) <= all4)
        one = harness.decode(self.c.cmd("SPOP", "s"))
        self.assertIn(one, all4)
        popped = set(harness.decode(self.c.cmd("SPOP", "s", "2")))
        self.assertEqual(len(popped), 2)
        self.assertNotIn(one, popped)
        self.assertReply(integer(1), "SCARD", "s")
        self.assertEqual(self.members("SPOP", "s", "5") | popped | {one}, all4)
        self.assertReply(integer(0), "EXISTS", "s")

    def test_sscan(self):
        self.assertReplies([
            (("SADD", "s", "1", "2", "3"), integer(3)),
            (("SSCAN", "s", "0"), array(bulk("0"), bulks("1", "2", "3"))),
            (("SSCAN", "s", "0", "MATCH", "2*"), array(bulk("0"), bulks("2"))),
            (("SSCAN", "nokey", "0"), array(bulk("0"), b"*0\r\n")),
            (("SSCAN", "s", "x"), INVALID_CURSOR),
            (("SSCAN", "s", "0", "COUNT", "0"), SYNTAX),
            (("SSCAN", "s", "0", "FOO"), SYNTAX),
        ])
        many = ["m%d" % i for i in range(500)]
        self.assertReply(integer(500), "SADD", "big", *many)
        seen, cursor, calls = set(), b"0", 0
        while True:
            cursor, items = harness.decode(self.c.cmd("SSCAN", "big", cursor, "COUNT", "20"))
            seen.update(items)
            calls += 1
            self.assertLess(calls, 10000)
            if cursor == b"0":
                break
        self.assertEqual(seen, {m.encode() for m in many})
        self.assertGreater(calls, 1)


class MultiKeyTest(SetTestCase):
    def keys(self, across):
        if across:
            return on_shard(0, "a"), on_shard(1, "b"), on_shard(1, "c"), on_shard(0, "d")
        return "{t}a", "{t}b", "{t}c", "{t}d"

    def check_algebra(self, across):
        a, b, c, d = self.keys(across)
        self.assertReplies([
            (("SADD", a, "1", "2", "3", "4"), integer(4)),
            (("SADD", b, "3", "4", "5"), integer(3)),
            (("SINTER", a, b), bulks("3", "4")),
            (("SINTER", a, b, c), b"*0\r\n"),
            (("SUNION", a, b, c), bulks("1", "2", "3", "4", "5")),
            (("SDIFF", a, b), bulks("1", "2")),
            (("SDIFF", c, a), b"*0\r\n"),
            (("SINTERCARD", "2", a, b), integer(2)),
            (("SINTERCARD", "2", a, b, "LIMIT", "1"), integer(1)),
            (("SINTERCARD", "2", a, b, "LIMIT", "0"), integer(2)),
            (("SINTERCARD", "3", a, b, c), integer(0)),
            (("SINTERSTORE", d, a, b), integer(2)),
            (("SMEMBERS", d), bulks("3", "4")),
            (("SUNIONSTORE", d, a, b), integer(5)),
            (("SMEMBERS", d), bulks("1", "2", "3", "4", "5")),
            (("SDIFFSTORE", d, a, b), integer(2)),
            (("SMEMBERS", d), bulks("1", "2")),
            (("SDIFFSTORE", d, d, a), integer(0)),
            (("EXISTS", d), integer(0)),
            (("SET", c, "str"), OK),
            (("SINTER", a, c), WRONGTYPE),
            (("SINTER", "{t}nokey", c), WRONGTYPE),
            (("SUNION", a, c), WRONGTYPE),
            (("SDIFF", a, c), WRONGTYPE),
            (("SINTERCARD", "2", a, c), WRONGTYPE),
            (("SINTERSTORE", d, a, c), WRONGTYPE),
            (("SUNIONSTORE", c, a, b), integer(5)),  # the destination's old type does not matter
            (("TYPE", c), b"+set\r\n"),
        ])

    def test_algebra_one_shard(self):
        self.check_algebra(False)

    def test_algebra_across_shards(self):
        self.check_algebra(True)

    def test_sintercard_errors(self):
        self.assertReplies([
            (("SINTERCARD", "0", "a"), b"-ERR numkeys should be greater than 0\r\n"),
            (("SINTERCARD", "x", "a"), b"-ERR numkeys should be greater than 0\r\n"),
            (("SINTERCARD", "3", "a"),
             b"-ERR Number of keys can't be greater than number of args\r\n"),
            (("SINTERCARD", "1", "a", "LIMIT", "-1"), b"-ERR LIMIT can't be negative\r\n"),
            (("SINTERCARD", "1", "a", "LIMIT", "x"), b"-ERR LIMIT can't be negative\r\n"),
            (("SINTERCARD", "1", "a", "FOO", "1"), SYNTAX),
        ])

    def check_smove(self, src, dst, str_key):
        self.assertReplies([
            (("SADD", src, "1", "2"), integer(2)),
            (("SMOVE", src, dst, "1"), integer(1)),
            (("SMOVE", src, dst, "9"), integer(0)),
            (("SMEMBERS", dst), bulks("1")),
            (("SMOVE", src, dst, "2"), integer(1)),
            (("EXISTS", src), integer(0)),
            (("SMOVE", src, dst, "1"), integer(0)),
            (("SET", str_key, "x"), OK),
            (("SMOVE", dst, str_key, "1"), WRONGTYPE),
            (("SMOVE", str_key, dst, "1"), WRONGTYPE),
            (("SMOVE", src, str_key, "1"), integer(0)),  # a missing source answers first
            (("SMEMBERS", dst), bulks("1", "2")),
            (("SMOVE", dst, dst, "1"), integer(1)),
            (("SMOVE", dst, dst, "7"), integer(0)),
        ])

    def test_smove_one_shard(self):
        self.check_smove("{t}src", "{t}dst", "{t}str")

    def test_smove_across_shards(self):
        self.check_smove(on_shard(0, "src"), on_shard(1, "dst"), on_shard(0, "str"))


class KeyspaceTest(SetTestCase):
    def test_wrongtype_both_ways(self):
        self.assertReply(OK, "SET", "str", "x")
        self.assertReply(integer(1), "SADD", "s", "a")
        for cmd in (("SADD", "str", "a"), ("SREM", "str", "a"), ("SMEMBERS", "str"),
                    ("SISMEMBER", "str", "a"), ("SMISMEMBER", "str", "a"), ("SCARD", "str"),
                    ("SPOP", "str"), ("SPOP", "str", "2"), ("SRANDMEMBER", "str"),
                    ("SRANDMEMBER", "str", "2"), ("SSCAN", "str", "0"),
                    ("GET", "s"), ("LPUSH", "s", "x"), ("HGET", "s", "f")):
            self.assertReply(WRONGTYPE, *cmd)

    def test_type_scan_rename_copy_expiry(self):
        a0, a1 = on_shard(0, "sa"), on_shard(1, "sb")
        self.assertReplies([
            (("SADD", a0, "1", "2"), integer(2)),
            (("RPUSH", "lst", "x"), integer(1)),
            (("SCAN", "0", "TYPE", "set", "COUNT", "1000"), array(bulk("0"), bulks(a0))),
            (("COPY", a0, a1), integer(1)),
            (("SMEMBERS", a1), bulks("1", "2")),
            (("RENAME", a1, "{x}moved"), OK),
            (("SMEMBERS", "{x}moved"), bulks("1", "2")),
            (("EXISTS", a1), integer(0)),
            (("PEXPIRE", a0, "50"), integer(1)),
        ])
        time.sleep(0.2)
        self.assertReplies([
            (("EXISTS", a0), integer(0)),
            (("SCARD", a0), integer(0)),
        ])

    def test_multi_exec_across_shards(self):
        a, b = on_shard(0, "ma"), on_shard(1, "mb")
        self.assertReply(OK, "MULTI")
        self.assertReply(b"+QUEUED\r\n", "SADD", a, "1", "2")
        self.assertReply(b"+QUEUED\r\n", "SADD", b, "2", "3")
        self.assertReply(b"+QUEUED\r\n", "SINTER", a, b)
        self.assertReply(array(integer(2), integer(2), bulks("2")), "EXEC")


if __name__ == "__main__":
    import unittest
    unittest.main()


class UuidMembersTest(SetTestCase):
    def test_uuids_come_back_as_sent(self):
        self.assertReplies([
            (("SADD", "s", U_LOWER, U_UPPER, U_MIXED, U_DIGITS), integer(4)),
            (("SADD", "s", U_UPPER, U_LOWER), integer(0)),
            (("SISMEMBER", "s", U_LOWER.replace("f0", "f1")), integer(0)),
            (("SMISMEMBER", "s", U_LOWER, U_UPPER, U_MIXED, U_DIGITS, "x"),
             array(*[integer(1)] * 4, integer(0))),
            (("SREM", "s", U_UPPER), integer(1)),
            (("SCARD", "s"), integer(3)),
        ])
        self.assertEqual(self.members("SMEMBERS", "s"),
                         {U_LOWER.encode(), U_MIXED.encode(), U_DIGITS.encode()})
        self.assertEqual(self.members("SRANDMEMBER", "s", "-20") - self.members("SMEMBERS", "s"),
                         set())
        self.assertEqual(self.members("SINTER", "s", "s"), self.members("SMEMBERS", "s"))
        popped = self.members("SPOP", "s", "3")
        self.assertEqual(popped, {U_LOWER.encode(), U_MIXED.encode(), U_DIGITS.encode()})
        self.assertReply(integer(0), "EXISTS", "s")
