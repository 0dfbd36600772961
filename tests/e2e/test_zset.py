"""Sorted set commands: ZADD (NX XX GT LT CH INCR), ZINCRBY, ZREM, ZSCORE, ZMSCORE, ZCARD, ZCOUNT,
ZLEXCOUNT, ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES), ZRANGEBYSCORE, ZREVRANGE,
ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZRANK, ZREVRANK, ZREMRANGEBYSCORE/RANK/LEX,
ZPOPMIN, ZPOPMAX, ZRANDMEMBER, ZSCAN, ZRANGESTORE, ZUNIONSTORE, ZINTERSTORE, in RESP2 and RESP3;
small (packed) and large (skiplist) sets; TYPE, SCAN TYPE, DEL, COPY, RENAME (one shard and
two), expiry, WRONGTYPE both ways, MULTI/EXEC and WATCH; a redis-semaphore style acquire.

Every expected reply is the exact byte string Redis 7.0 sends (checked with
DEADBOLT_AGAINST_REDIS=1): scores print as %.17g ("0.10000000000000001"), RESP3 sends them as
doubles and WITHSCORES as [member, score] pairs."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import slots  # noqa: E402
from harness import (NIL, NOT_FLOAT, NOT_INTEGER, NULL3, OK, SYNTAX, WRONGTYPE, array,  # noqa: E402
                     bulk, integer, wrong_args)


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


NOT_A_FLOAT_RANGE = b"-ERR min or max is not a float\r\n"
NOT_A_LEX_RANGE = b"-ERR min or max not valid string range item\r\n"
NOT_POSITIVE = b"-ERR value is out of range, must be positive\r\n"
EMPTY = b"*0\r\n"
EMPTY_SCAN = array(bulk("0"), EMPTY)


def bulks(*items):
    return array(*[bulk(i) for i in items])


def d3(text):
    """A RESP3 double."""
    return b"," + text.encode() + b"\r\n"


def ws(*items):
    """A RESP2 WITHSCORES reply: member, score, member, score, ... (scores as their text)."""
    return bulks(*items)


def ws3(*items):
    """The RESP3 form of the same: [member, score] pairs, scores as doubles."""
    return array(*[array(bulk(m), d3(s)) for m, s in zip(items[0::2], items[1::2])])


def key_on(shard, prefix):
    """A key named prefix<n> that lives on `shard` of a two-shard server."""
    n = 0
    while slots.shard_of("%s%d" % (prefix, n)) != shard:
        n += 1
    return "%s%d" % (prefix, n)


# UUIDs of one case are kept packed in 16 bytes (shard/types/packed_growth.h): each comes back
# as the same text, and the other case of the same UUID is another value.
U_LOWER = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
U_UPPER = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"
U_MIXED = "0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0"
U_DIGITS = "01234567-8901-2345-6789-012345678901"


class ZSetTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def resp3(self):
        c = self.conn()
        c.cmd("HELLO", "3")
        return c


class ZAddTest(ZSetTestCase):
    def test_add_update_and_count(self):
        self.assertReplies([
            (("ZADD", "z", "1", "a", "2", "b", "3", "c"), integer(3)),
            (("ZADD", "z", "1", "a", "5", "b", "4", "d"), integer(1)),  # b updated, d new
            (("ZADD", "z", "CH", "1", "a", "6", "b", "5", "e"), integer(2)),
            (("ZADD", "z", "0", "x", "0", "x"), integer(1)),  # twice in one call: counted once
            (("ZCARD", "z"), integer(6)),
            (("TYPE", "z"), b"+zset\r\n"),
            (("ZRANGE", "z", "0", "-1", "WITHSCORES"),
             ws("x", "0", "a", "1", "c", "3", "d", "4", "e", "5", "b", "6")),
        ])

    def test_nx_xx_gt_lt(self):
        self.assertReplies([
            (("ZADD", "z", "1", "a", "5", "b"), integer(2)),
            (("ZADD", "z", "NX", "9", "a", "2", "c"), integer(1)),
            (("ZADD", "z", "XX", "CH", "9", "a", "3", "d"), integer(1)),
            (("ZADD", "z", "GT", "CH", "0", "a", "10", "b", "7", "e"), integer(2)),
            (("ZADD", "z", "LT", "CH", "1", "a", "20", "b"), integer(1)),
            (("ZADD", "z", "XX", "GT", "CH", "30", "b", "1", "nope"), integer(1)),
            (("ZRANGE", "z", "0", "-1", "WITHSCORES"),
             ws("a", "1", "c", "2", "e", "7", "b", "30")),
            (("ZADD", "missing", "XX", "1", "a"), integer(0)),
            (("EXISTS", "missing"), integer(0)),
        ])

    def test_incr(self):
        self.assertReplies([
            (("ZADD", "z", "INCR", "1.5", "a"), bulk("1.5")),
            (("ZADD", "z", "INCR", "1", "a"), bulk("2.5")),
            (("ZINCRBY", "z", "0.1", "a"), bulk("2.6000000000000001")),
            (("ZADD", "z", "NX", "INCR", "1", "a"), NIL),
            (("ZADD", "z", "XX", "INCR", "1", "nope"), NIL),
            (("ZADD", "z", "GT", "INCR", "-1", "a"), NIL),
            (("ZADD", "z", "LT", "INCR", "-1", "a"), bulk("1.6000000000000001")),
            (("ZINCRBY", "z", "+inf", "b"), bulk("inf")),
            (("ZINCRBY", "z", "-inf", "b"), b"-ERR resulting score is not a number (NaN)\r\n"),
            (("ZSCORE", "z", "b"), bulk("inf")),
            (("ZINCRBY", "z", "abc", "a"), NOT_FLOAT),
            (("ZINCRBY", "z", "1"), wrong_args("zincrby")),
        ])
        c3 = self.resp3()
        self.assertReply(d3("2.6000000000000001"), "ZINCRBY", "z", "1", "a", c=c3)
        self.assertReply(NULL3, "ZADD", "z", "NX", "INCR", "1", "a", c=c3)
        self.assertReply(d3("inf"), "ZSCORE", "z", "b", c=c3)

    def test_errors(self):
        self.assertReplies([
            (("ZADD", "z", "1"), wrong_args("zadd")),
            (("ZADD", "z", "NX", "1"), SYNTAX),
            (("ZADD", "z", "1", "a", "2"), SYNTAX),
            (("ZADD", "z", "NX", "XX", "1", "a"),
             b"-ERR XX and NX options at the same time are not compatible\r\n"),
            (("ZADD", "z", "GT", "LT", "1", "a"),
             b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
            (("ZADD", "z", "NX", "GT", "1", "a"),
             b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
            (("ZADD", "z", "INCR", "1", "a", "2", "b"),
             b"-ERR INCR option supports a single increment-element pair\r\n"),
            (("ZADD", "z", "nan", "a"), NOT_FLOAT),
            (("ZADD", "z", " 1", "a"), NOT_FLOAT),
            (("ZADD", "z", "", "a"), NOT_FLOAT),
            (("ZADD", "z", "1e400", "a"), NOT_FLOAT),
            (("ZADD", "z", "1x", "a"), NOT_FLOAT),
            (("ZADD", "z", "1", "a", "x", "b"), NOT_FLOAT),  # nothing added: all parsed first
            (("EXISTS", "z"), integer(0)),
        ])

    def test_scores_as_redis_prints_them(self):
        self.assertReplies([
            (("ZADD", "z", "-inf", "a", "+inf", "b", "0.1", "c", "1e17", "d", "-0", "e",
              "123456789.123", "f", "0x10", "g", "1E3", "h"), integer(8)),
            (("ZRANGE", "z", "0", "-1", "WITHSCORES"),
             ws("a", "-inf", "e", "0", "c", "0.10000000000000001", "g", "16", "h", "1000",
                "f", "123456789.123", "d", "1e+17", "b", "inf")),
            (("ZSCORE", "z", "c"), bulk("0.10000000000000001")),
            (("ZMSCORE", "z", "a", "nope", "b"), array(bulk("-inf"), NIL, bulk("inf"))),
        ])
        c3 = self.resp3()
        self.assertReply(array(d3("-inf"), NULL3, d3("0.10000000000000001")),
                         "ZMSCORE", "z", "a", "nope", "c", c=c3)


class ZReadTest(ZSetTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(integer(6), "ZADD", "z", "1", "a", "2", "b", "2", "c", "3", "d",
                         "4", "e", "5", "f")

    def test_score_card_count(self):
        self.assertReplies([
            (("ZSCORE", "z", "c"), bulk("2")),
            (("ZSCORE", "z", "nope"), NIL),
            (("ZSCORE", "nokey", "a"), NIL),
            (("ZMSCORE", "nokey", "a", "b"), array(NIL, NIL)),
            (("ZCARD", "z"), integer(6)),
            (("ZCARD", "nokey"), integer(0)),
            (("ZCOUNT", "z", "-inf", "+inf"), integer(6)),
            (("ZCOUNT", "z", "(1", "3"), integer(3)),
            (("ZCOUNT", "z", "2", "(4"), integer(3)),
            (("ZCOUNT", "z", "5", "1"), integer(0)),
            (("ZCOUNT", "z", "", "1"), integer(1)),  # strtod reads "" as 0, as in Redis
            (("ZCOUNT", "z", "x", "3"), NOT_A_FLOAT_RANGE),
            (("ZCOUNT", "z", "nan", "3"), NOT_A_FLOAT_RANGE),
            (("ZCOUNT", "z", "((1", "3"), NOT_A_FLOAT_RANGE),
            (("ZCOUNT", "nokey", "0", "1"), integer(0)),
        ])

    def test_rank(self):
        self.assertReplies([
            (("ZRANK", "z", "a"), integer(0)),
            (("ZRANK", "z", "c"), integer(2)),
            (("ZREVRANK", "z", "c"), integer(3)),
            (("ZRANK", "z", "nope"), NIL),
            (("ZREVRANK", "nokey", "a"), NIL),
        ])
        self.assertReply(NULL3, "ZRANK", "z", "nope", c=self.resp3())

    def test_range_by_rank(self):
        self.assertReplies([
            (("ZRANGE", "z", "0", "-1"), bulks("a", "b", "c", "d", "e", "f")),
            (("ZRANGE", "z", "-2", "100", "WITHSCORES"), ws("e", "4", "f", "5")),
            (("ZRANGE", "z", "3", "1"), EMPTY),
            (("ZRANGE", "z", "0", "1", "REV"), bulks("f", "e")),
            (("ZREVRANGE", "z", "0", "2", "WITHSCORES"), ws("f", "5", "e", "4", "d", "3")),
            (("ZREVRANGE", "z", "-1", "-1"), bulks("a")),
            (("ZRANGE", "nokey", "0", "-1"), EMPTY),
            (("ZRANGE", "z", "0", "x"), NOT_INTEGER),
            (("ZRANGE", "z", "0", "1", "LIMIT", "1", "2"),
             b"-ERR syntax error, LIMIT is only supported in combination with either BYSCORE "
             b"or BYLEX\r\n"),
            (("ZRANGE", "z", "0", "1", "REV", "REV"), SYNTAX),
            (("ZREVRANGE", "z", "0", "1", "REV"), SYNTAX),
            (("ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"), SYNTAX),
            (("ZRANGE", "z", "0"), wrong_args("zrange")),
        ])

    def test_range_by_score(self):
        self.assertReplies([
            (("ZRANGE", "z", "(1", "3", "BYSCORE", "WITHSCORES"),
             ws("b", "2", "c", "2", "d", "3")),
            (("ZRANGE", "z", "3", "(1", "BYSCORE", "REV"), bulks("d", "c", "b")),
            (("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"), bulks("b", "c")),
            (("ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "2"),
             bulks("e", "d")),
            (("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"), EMPTY),
            (("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "4", "-1"), bulks("e", "f")),
            (("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0"), SYNTAX),
            (("ZRANGE", "z", "a", "b", "BYSCORE"), NOT_A_FLOAT_RANGE),
            (("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES", "LIMIT", "0", "3"),
             ws("a", "1", "b", "2", "c", "2")),
            (("ZRANGEBYSCORE", "z", "2", "2"), bulks("b", "c")),
            (("ZRANGEBYSCORE", "z", "1", "2", "BYSCORE"), SYNTAX),
            (("ZRANGEBYSCORE", "z", "1", "2", "LIMIT", "x", "1"), NOT_INTEGER),
            (("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES"),
             ws("f", "5", "e", "4", "d", "3", "c", "2", "b", "2", "a", "1")),
            (("ZREVRANGEBYSCORE", "z", "2", "1"), bulks("c", "b", "a")),
            (("ZREVRANGEBYSCORE", "z", "1", "2"), EMPTY),
        ])

    def test_resp3_withscores_are_pairs(self):
        c3 = self.resp3()
        self.assertReply(ws3("a", "1", "b", "2"), "ZRANGE", "z", "0", "1", "WITHSCORES", c=c3)
        self.assertReply(ws3("f", "5"), "ZREVRANGEBYSCORE", "z", "+inf", "(4", "WITHSCORES",
                         c=c3)
        self.assertReply(bulks("a", "b"), "ZRANGE", "z", "0", "1", c=c3)
        self.assertReply(d3("2"), "ZSCORE", "z", "b", c=c3)


class ZLexTest(ZSetTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(integer(5), "ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d",
                         "0", "e")

    def test_lex_ranges(self):
        self.assertReplies([
            (("ZRANGEBYLEX", "l", "-", "+"), bulks("a", "b", "c", "d", "e")),
            (("ZRANGEBYLEX", "l", "[b", "(d"), bulks("b", "c")),
            (("ZRANGEBYLEX", "l", "(b", "[d", "LIMIT", "1", "5"), bulks("d")),
            (("ZRANGEBYLEX", "l", "+", "-"), EMPTY),
            (("ZRANGEBYLEX", "l", "[", "+"), bulks("a", "b", "c", "d", "e")),
            (("ZREVRANGEBYLEX", "l", "+", "-"), bulks("e", "d", "c", "b", "a")),
            (("ZREVRANGEBYLEX", "l", "[d", "(a", "LIMIT", "0", "2"), bulks("d", "c")),
            (("ZRANGE", "l", "[b", "[c", "BYLEX"), bulks("b", "c")),
            (("ZRANGE", "l", "[c", "-", "BYLEX", "REV"), bulks("c", "b", "a")),
            (("ZRANGEBYLEX", "l", "b", "d"), NOT_A_LEX_RANGE),
            (("ZRANGEBYLEX", "l", "", "+"), NOT_A_LEX_RANGE),
            (("ZRANGEBYLEX", "l", "-x", "+"), NOT_A_LEX_RANGE),
            (("ZRANGEBYLEX", "l", "-", "+", "WITHSCORES"),
             b"-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"),
            (("ZLEXCOUNT", "l", "-", "+"), integer(5)),
            (("ZLEXCOUNT", "l", "(a", "[c"), integer(2)),
            (("ZLEXCOUNT", "l", "x", "+"), NOT_A_LEX_RANGE),
            (("ZLEXCOUNT", "nokey", "-", "+"), integer(0)),
            (("ZREMRANGEBYLEX", "l", "[b", "[c"), integer(2)),
            (("ZRANGE", "l", "0", "-1"), bulks("a", "d", "e")),
            (("ZREMRANGEBYLEX", "l", "x", "+"), NOT_A_LEX_RANGE),
            (("ZREMRANGEBYLEX", "l", "-", "+"), integer(3)),
            (("EXISTS", "l"), integer(0)),
        ])


class ZRemovalTest(ZSetTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(integer(6), "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d",
                         "5", "e", "6", "f")

    def test_zrem(self):
        self.assertReplies([
            (("ZREM", "z", "a", "nope", "a"), integer(1)),
            (("ZREM", "nokey", "a"), integer(0)),
            (("ZREM", "z", "b", "c", "d", "e", "f"), integer(5)),
            (("EXISTS", "z"), integer(0)),  # the last member took the key with it
            (("ZREM", "z"), wrong_args("zrem")),
        ])

    def test_remrange(self):
        self.assertReplies([
            (("ZREMRANGEBYRANK", "z", "0", "0"), integer(1)),
            (("ZREMRANGEBYRANK", "z", "-1", "-1"), integer(1)),
            (("ZREMRANGEBYRANK", "z", "5", "1"), integer(0)),
            (("ZREMRANGEBYRANK", "z", "0", "x"), NOT_INTEGER),
            (("ZREMRANGEBYSCORE", "z", "(2", "3"), integer(1)),
            (("ZREMRANGEBYSCORE", "z", "a", "3"), NOT_A_FLOAT_RANGE),
            (("ZRANGE", "z", "0", "-1", "WITHSCORES"), ws("b", "2", "d", "4", "e", "5")),
            (("ZREMRANGEBYSCORE", "nokey", "-inf", "+inf"), integer(0)),
            (("ZREMRANGEBYSCORE", "z", "-inf", "+inf"), integer(3)),
            (("EXISTS", "z"), integer(0)),
        ])

    def test_pop(self):
        self.assertReplies([
            (("ZPOPMIN", "z"), ws("a", "1")),
            (("ZPOPMAX", "z"), ws("f", "6")),
            (("ZPOPMIN", "z", "2"), ws("b", "2", "c", "3")),
            (("ZPOPMIN", "z", "0"), EMPTY),
            (("ZPOPMIN", "z", "-1"), NOT_POSITIVE),
            (("ZPOPMIN", "z", "x"), NOT_POSITIVE),
            (("ZPOPMIN", "z", "1", "2"), SYNTAX),
            (("ZPOPMIN", "nokey"), EMPTY),
            (("ZPOPMAX", "nokey", "3"), EMPTY),
            (("ZPOPMAX", "z", "10"), ws("e", "5", "d", "4")),
            (("EXISTS", "z"), integer(0)),
        ])

    def test_pop_resp3(self):
        c3 = self.resp3()
        self.assertReply(array(bulk("a"), d3("1")), "ZPOPMIN", "z", c=c3)  # flat without count
        self.assertReply(ws3("f", "6", "e", "5"), "ZPOPMAX", "z", "2", c=c3)
        self.assertReply(ws3("b", "2"), "ZPOPMIN", "z", "1", c=c3)


class ZRandMemberTest(ZSetTestCase):
    def test_shapes(self):
        self.assertReply(integer(3), "ZADD", "r", "1", "a", "2", "b", "3", "c")
        self.assertReplies([
            # A count at least the size: the whole set, from the highest.
            (("ZRANDMEMBER", "r", "10"), bulks("c", "b", "a")),
            (("ZRANDMEMBER", "r", "3", "WITHSCORES"), ws("c", "3", "b", "2", "a", "1")),
            (("ZRANDMEMBER", "r", "0"), EMPTY),
            (("ZRANDMEMBER", "nokey"), NIL),
            (("ZRANDMEMBER", "nokey", "5"), EMPTY),
            (("ZRANDMEMBER", "r", "1", "x"), SYNTAX),
            (("ZRANDMEMBER", "r", "1", "WITHSCORES", "x"), SYNTAX),
            (("ZRANDMEMBER", "r", "x"), NOT_INTEGER),
            (("ZRANDMEMBER", "r", "-9223372036854775808"),
             b"-ERR value is out of range, value must between -9223372036854775807 and "
             b"9223372036854775807\r\n"),
        ])
        members = {b"a": b"1", b"b": b"2", b"c": b"3"}
        for _ in range(20):
            self.assertIn(harness.decode(self.c.cmd("ZRANDMEMBER", "r")), members)
            two = harness.decode(self.c.cmd("ZRANDMEMBER", "r", "2"))
            self.assertEqual(len(set(two)), 2)
            self.assertTrue(set(two) <= set(members))
            many = harness.decode(self.c.cmd("ZRANDMEMBER", "r", "-7", "WITHSCORES"))
            self.assertEqual(len(many), 14)
            for m, s in zip(many[0::2], many[1::2]):
                self.assertEqual(members[m], s)
        c3 = self.resp3()
        self.assertReply(ws3("c", "3", "b", "2", "a", "1"), "ZRANDMEMBER", "r", "5",
                         "WITHSCORES", c=c3)
        self.assertReply(NULL3, "ZRANDMEMBER", "nokey", c=c3)


class ZScanTest(ZSetTestCase):
    def test_small_set_in_one_call(self):
        self.assertReply(integer(5), "ZADD", "z", "1.5", "a", "0.1", "b", "-0", "c", "100", "d",
                         "1e17", "e")
        self.assertReplies([
            (("ZSCAN", "z", "0"),
             array(bulk("0"), bulks("c", "0", "b", "0.10000000000000001", "a", "1.5", "d", "100",
                                    "e", "100000000000000000"))),
            (("ZSCAN", "z", "0", "MATCH", "[ab]"),
             array(bulk("0"), bulks("b", "0.10000000000000001", "a", "1.5"))),
            (("ZSCAN", "nokey", "0"), EMPTY_SCAN),
            (("ZSCAN", "z", "x"), b"-ERR invalid cursor\r\n"),
            (("ZSCAN", "z", "0", "COUNT", "0"), SYNTAX),
            (("ZSCAN", "z", "0", "COUNT", "x"), NOT_INTEGER),
            (("ZSCAN", "z", "0", "FOO"), SYNTAX),
        ])

    def test_large_set_is_complete(self):
        args = []
        for i in range(300):
            args += [str(i / 4), "m%d" % i]
        self.assertReply(integer(300), "ZADD", "z", *args)
        got = {}
        cursor = b"0"
        calls = 0
        while True:
            cursor, items = harness.decode(self.c.cmd("ZSCAN", "z", cursor, "COUNT", "20"))
            got.update(zip(items[0::2], items[1::2]))
            calls += 1
            self.assertLess(calls, 10000)
            if cursor == b"0":
                break
        # A large set prints scores as %.17Lf without trailing zeros (Redis's LD_STR_HUMAN).
        want = {}
        for i in range(300):
            text = ("%.17f" % (i / 4)).rstrip("0").rstrip(".")
            want[("m%d" % i).encode()] = text.encode()
        self.assertEqual(got, want)


class LargeSetTest(ZSetTestCase):
    """Past 128 members or a member of more than 64 bytes a set changes form; replies do not."""

    def test_large_set(self):
        args = []
        for i in range(200):
            args += [str((i * 37) % 101 / 4), "m%03d" % i]
        self.assertReply(integer(200), "ZADD", "big", *args)
        order = sorted(((i * 37) % 101 / 4, "m%03d" % i) for i in range(200))
        names = [m for _, m in order]
        self.assertReply(bulks(*names), "ZRANGE", "big", "0", "-1")
        self.assertReply(bulks(*reversed(names[-10:])), "ZREVRANGE", "big", "0", "9")
        for r in (0, 17, 99, 199):
            self.assertReply(integer(r), "ZRANK", "big", names[r])
            self.assertReply(integer(199 - r), "ZREVRANK", "big", names[r])
        in_range = [m for s, m in order if 3 < s <= 7.5]
        self.assertReply(integer(len(in_range)), "ZCOUNT", "big", "(3", "7.5")
        self.assertReply(bulks(*in_range[3:10]), "ZRANGEBYSCORE", "big", "(3", "7.5", "LIMIT",
                         "3", "7")
        self.assertReply(integer(5), "ZREMRANGEBYRANK", "big", "5", "9")
        del names[5:10]
        self.assertReply(ws(names[0], "0", names[1], "0"), "ZPOPMIN", "big", "2")
        self.assertReply(integer(193), "ZCARD", "big")
        self.assertReply(bulks(*names[2:6]), "ZRANGE", "big", "0", "3")
        # Shrinking back under the limits: still the same order.
        self.assertReply(integer(193 - 64), "ZREMRANGEBYRANK", "big", "64", "-1")
        self.assertReply(bulks(*names[2:66]), "ZRANGE", "big", "0", "-1")

    def test_long_member(self):
        long = "x" * 65
        self.assertReplies([
            (("ZADD", "z", "2", "y", "1", long), integer(2)),
            (("ZRANGE", "z", "0", "-1", "WITHSCORES"), ws(long, "1", "y", "2")),
            (("ZREM", "z", long), integer(1)),
            (("ZRANGE", "z", "0", "-1", "WITHSCORES"), ws("y", "2")),
        ])

    def test_ties_order_by_member_bytes(self):
        self.assertReply(integer(5), "ZADD", "z", "1", "b", "1", "ab", "1", b"\xff", "1", "",
                         "1", "a")
        self.assertReply(bulks("", "a", "ab", "b", b"\xff"), "ZRANGE", "z", "0", "-1")


class ZStoreTest(ZSetTestCase):
    def check_stores(self, dst, a, b, s):
        """a, b: sources, s: a string key; dst: the destination (any shards)."""
        self.assertReplies([
            (("ZADD", a, "1", "x", "2", "y"), integer(2)),
            (("ZADD", b, "10", "y", "20", "z"), integer(2)),
            (("SET", s, "v"), OK),
            (("ZUNIONSTORE", dst, "2", a, b), integer(3)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("x", "1", "y", "12", "z", "20")),
            (("ZUNIONSTORE", dst, "2", a, b, "WEIGHTS", "2", "3", "AGGREGATE", "MAX"), integer(3)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("x", "2", "y", "30", "z", "60")),
            (("ZINTERSTORE", dst, "2", a, b, "AGGREGATE", "min"), integer(1)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("y", "2")),
            (("ZINTERSTORE", dst, "2", a, "nokey"), integer(0)),
            (("EXISTS", dst), integer(0)),
            (("ZUNIONSTORE", dst, "2", a, s), WRONGTYPE),
            (("ZRANGESTORE", dst, b, "0", "-1"), integer(2)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("y", "10", "z", "20")),
            (("ZRANGESTORE", dst, b, "+inf", "(10", "BYSCORE", "REV"), integer(1)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("z", "20")),
            (("ZRANGESTORE", dst, b, "[y", "[y", "BYLEX"), integer(1)),
            (("ZRANGE", dst, "0", "-1"), bulks("y")),
            (("ZRANGESTORE", dst, s, "0", "-1"), WRONGTYPE),
            (("ZRANGESTORE", dst, "nokey", "0", "-1"), integer(0)),
            (("EXISTS", dst), integer(0)),
            (("ZRANGESTORE", s, a, "0", "-1"), integer(2)),  # a string destination is replaced
            (("TYPE", s), b"+zset\r\n"),
        ])

    def test_one_shard(self):
        self.check_stores("{t}dst", "{t}a", "{t}b", "{t}s")

    def test_across_shards(self):
        self.check_stores(key_on(0, "dst"), key_on(1, "a"), key_on(0, "b"), key_on(1, "s"))

    def check_set_sources(self, dst, z, st, lst):
        """z: a sorted set, st: a plain set, lst: a list (still WRONGTYPE); any shards."""
        self.assertReplies([
            (("ZADD", z, "1", "x", "2", "y"), integer(2)),
            (("SADD", st, "y", "z", "7"), integer(3)),
            (("RPUSH", lst, "y"), integer(1)),
            (("ZUNIONSTORE", dst, "2", z, st), integer(4)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"),
             ws("7", "1", "x", "1", "z", "1", "y", "3")),
            (("ZUNIONSTORE", dst, "1", st), integer(3)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("7", "1", "y", "1", "z", "1")),
            (("ZINTERSTORE", dst, "2", st, z, "WEIGHTS", "2.5", "10"), integer(1)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("y", "22.5")),
            (("ZUNIONSTORE", dst, "2", z, st, "WEIGHTS", "1", "-1", "AGGREGATE", "MIN"),
             integer(4)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"),
             ws("7", "-1", "y", "-1", "z", "-1", "x", "1")),
            (("ZINTERSTORE", dst, "2", st, st, "AGGREGATE", "MAX"), integer(3)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("7", "1", "y", "1", "z", "1")),
            (("ZINTERSTORE", dst, "2", st, "nokey"), integer(0)),
            (("EXISTS", dst), integer(0)),
            (("ZUNIONSTORE", dst, "2", st, lst), WRONGTYPE),
            (("ZINTERSTORE", dst, "2", z, lst), WRONGTYPE),
            (("ZRANGESTORE", dst, st, "0", "-1"), WRONGTYPE),
            (("ZUNIONSTORE", st, "1", st), integer(3)),  # a set destination becomes a zset
            (("TYPE", st), b"+zset\r\n"),
        ])

    def test_plain_sets_as_sources_one_shard(self):
        self.check_set_sources("{t}dst", "{t}z", "{t}s", "{t}l")

    def test_plain_sets_as_sources_across_shards(self):
        self.check_set_sources(key_on(0, "dst"), key_on(1, "z"), key_on(1, "s"), key_on(0, "l"))

    def test_errors(self):
        self.assertReplies([
            (("ZUNIONSTORE", "d", "0", "a"),
             b"-ERR at least 1 input key is needed for 'zunionstore' command\r\n"),
            (("ZINTERSTORE", "d", "0", "a"),
             b"-ERR at least 1 input key is needed for 'zinterstore' command\r\n"),
            (("ZUNIONSTORE", "d", "3", "a", "b"), SYNTAX),
            (("ZUNIONSTORE", "d", "x", "a"), NOT_INTEGER),
            (("ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1"), SYNTAX),
            (("ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "x"),
             b"-ERR weight value is not a float\r\n"),
            (("ZUNIONSTORE", "d", "2", "a", "b", "AGGREGATE", "avg"), SYNTAX),
            (("ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES"), SYNTAX),
            (("ZRANGESTORE", "d", "a", "0", "-1", "WITHSCORES"), SYNTAX),
            (("ZRANGESTORE", "d", "a", "0"), wrong_args("zrangestore")),
        ])

    def test_inf_sums_to_zero(self):
        self.assertReplies([
            (("ZADD", "{t}a", "inf", "x"), integer(1)),
            (("ZADD", "{t}b", "-inf", "x"), integer(1)),
            (("ZUNIONSTORE", "{t}d", "2", "{t}a", "{t}b"), integer(1)),
            (("ZSCORE", "{t}d", "x"), bulk("0")),
        ])


class KeyspaceTest(ZSetTestCase):
    def test_wrongtype_both_ways(self):
        self.assertReplies([
            (("SET", "s", "v"), OK),
            (("HSET", "h", "f", "v"), integer(1)),
            (("ZADD", "z", "1", "a"), integer(1)),
        ])
        for key in ("s", "h"):
            self.assertReplies([
                (("ZADD", key, "1", "a"), WRONGTYPE),
                (("ZINCRBY", key, "1", "a"), WRONGTYPE),
                (("ZSCORE", key, "a"), WRONGTYPE),
                (("ZMSCORE", key, "a"), WRONGTYPE),
                (("ZCARD", key), WRONGTYPE),
                (("ZCOUNT", key, "0", "1"), WRONGTYPE),
                (("ZLEXCOUNT", key, "-", "+"), WRONGTYPE),
                (("ZRANGE", key, "0", "-1"), WRONGTYPE),
                (("ZRANGEBYLEX", key, "-", "+"), WRONGTYPE),
                (("ZRANK", key, "a"), WRONGTYPE),
                (("ZREM", key, "a"), WRONGTYPE),
                (("ZREMRANGEBYRANK", key, "0", "-1"), WRONGTYPE),
                (("ZREMRANGEBYSCORE", key, "0", "1"), WRONGTYPE),
                (("ZREMRANGEBYLEX", key, "-", "+"), WRONGTYPE),
                (("ZPOPMIN", key), WRONGTYPE),
                (("ZPOPMAX", key, "2"), WRONGTYPE),
                (("ZRANDMEMBER", key), WRONGTYPE),
                (("ZRANDMEMBER", key, "2"), WRONGTYPE),
                (("ZSCAN", key, "0"), WRONGTYPE),
                (("ZSCAN", key, "0", "COUNT", "0"), WRONGTYPE),
            ])
        self.assertReplies([
            (("GET", "z"), WRONGTYPE),
            (("APPEND", "z", "x"), WRONGTYPE),
            (("INCR", "z"), WRONGTYPE),
            (("INCRBYFLOAT", "z", "x"), WRONGTYPE),
            (("HSET", "z", "f", "v"), WRONGTYPE),
            (("HGET", "z", "f"), WRONGTYPE),
            (("TYPE", "z"), b"+zset\r\n"),
            (("SET", "z", "v"), OK),  # SET replaces any type
            (("TYPE", "z"), b"+string\r\n"),
        ])

    def test_scan_type_and_del(self):
        self.assertReplies([
            (("ZADD", "z1", "1", "a"), integer(1)),
            (("ZADD", "z2", "1", "a"), integer(1)),
            (("SET", "s", "v"), OK),
        ])
        keys = set()
        cursor = b"0"
        while True:
            cursor, got = harness.decode(self.c.cmd("SCAN", cursor, "TYPE", "zset"))
            keys.update(got)
            if cursor == b"0":
                break
        self.assertEqual(keys, {b"z1", b"z2"})
        self.assertReply(integer(3), "DEL", "z1", "z2", "s")
        self.assertReply(integer(0), "EXISTS", "z1")

    def test_expiry_covers_the_whole_set(self):
        self.assertReply(integer(2), "ZADD", "z", "1", "a", "2", "b")
        self.assertReply(integer(1), "EXPIRE", "z", "100")
        args = []
        for i in range(200):
            args += [str(i), "m%d" % i]
        self.assertReply(integer(200), "ZADD", "z", *args)  # becomes a skiplist: TTL kept
        self.assertReply(integer(200), "ZREM", "z", *["m%d" % i for i in range(200)])
        self.assertTTL("z", 99, 100)
        self.assertReply(integer(1), "PEXPIRE", "z", "50")
        time.sleep(0.2)
        self.assertReplies([
            (("ZCARD", "z"), integer(0)),
            (("EXISTS", "z"), integer(0)),
            (("ZADD", "z", "1", "a"), integer(1)),
            (("TTL", "z"), integer(-1)),
        ])

    def check_copy_rename(self, src, dst, other):
        self.assertReplies([
            (("ZADD", src, "1", "a", "2.5", "b"), integer(2)),
            (("EXPIRE", src, "100"), integer(1)),
            (("COPY", src, dst), integer(1)),
            (("ZRANGE", dst, "0", "-1", "WITHSCORES"), ws("a", "1", "b", "2.5")),
            (("ZADD", dst, "3", "c"), integer(1)),  # a copy, not the same set
            (("ZCARD", src), integer(2)),
            (("RENAME", src, other), OK),
            (("EXISTS", src), integer(0)),
            (("ZRANGE", other, "0", "-1", "WITHSCORES"), ws("a", "1", "b", "2.5")),
            (("TYPE", other), b"+zset\r\n"),
        ])
        self.assertTTL(dst, 99, 100)
        self.assertTTL(other, 99, 100)

    def test_copy_rename_one_shard(self):
        self.check_copy_rename("{t}src", "{t}dst", "{t}other")

    def test_copy_rename_across_shards(self):
        self.check_copy_rename(key_on(0, "src"), key_on(1, "dst"), key_on(1, "other"))


class TransactionTest(ZSetTestCase):
    def test_multi_exec(self):
        c = self.c
        self.assertEqual(c.cmd("MULTI"), OK)
        self.assertEqual(c.cmd("ZADD", "z", "1", "a", "2", "b"), b"+QUEUED\r\n")
        self.assertEqual(c.cmd("ZINCRBY", "z", "1", "a"), b"+QUEUED\r\n")
        self.assertEqual(c.cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"), b"+QUEUED\r\n")
        self.assertEqual(c.cmd("EXEC"),
                         array(integer(2), bulk("2"), ws("a", "2", "b", "2")))

    def test_watch_sees_zset_changes(self):
        for change in (("ZADD", "z", "2", "a"), ("ZREM", "z", "a"), ("ZPOPMIN", "z")):
            self.c.cmd("DEL", "z")
            self.assertReply(integer(1), "ZADD", "z", "1", "a")
            c = self.conn()
            self.assertEqual(c.cmd("WATCH", "z"), OK)
            self.conn().cmd(*change)
            self.assertEqual(c.cmd("MULTI"), OK)
            self.assertEqual(c.cmd("ZCARD", "z"), b"+QUEUED\r\n")
            self.assertEqual(c.cmd("EXEC"), harness.NIL_ARRAY, change)
        self.assertReply(integer(1), "ZADD", "z", "1", "a")
        c = self.conn()
        self.assertEqual(c.cmd("WATCH", "z"), OK)
        self.conn().cmd("ZADD", "z", "NX", "5", "a")  # no change: EXEC goes ahead
        self.conn().cmd("ZADD", "z", "1", "a")
        self.assertEqual(c.cmd("MULTI"), OK)
        self.assertEqual(c.cmd("ZCARD", "z"), b"+QUEUED\r\n")
        self.assertEqual(c.cmd("EXEC"), array(integer(1)))


class SemaphoreTest(ZSetTestCase):
    """redis-semaphore's Semaphore keeps a sorted set of holder ids scored by acquire time; its
    acquire script reduces to ZREMRANGEBYSCORE (drop expired holders), ZCARD, ZADD."""

    def try_acquire(self, key, identifier, limit, lock_timeout_ms, now_ms):
        c = self.c
        c.cmd("ZREMRANGEBYSCORE", key, "-inf", str(now_ms - lock_timeout_ms))
        if int(c.cmd("ZCARD", key)[1:-2]) < limit:
            self.assertEqual(c.cmd("ZADD", key, str(now_ms), identifier), integer(1))
            c.cmd("PEXPIRE", key, str(lock_timeout_ms))
            return True
        return False

    def test_limit_and_expiry_of_holders(self):
        now = 1_700_000_000_000
        for i in range(3):
            self.assertTrue(self.try_acquire("sem", "id%d" % i, 3, 10_000, now + i))
        self.assertFalse(self.try_acquire("sem", "id3", 3, 10_000, now + 5))
        self.assertReply(integer(1), "ZREM", "sem", "id1")  # a release
        self.assertTrue(self.try_acquire("sem", "id3", 3, 10_000, now + 6))
        # 10 s later the first holders have timed out.
        self.assertTrue(self.try_acquire("sem", "id4", 3, 10_000, now + 10_003))
        self.assertReply(bulks("id3", "id4"), "ZRANGE", "sem", "0", "-1")


if __name__ == "__main__":
    harness.main()


class UuidMembersTest(ZSetTestCase):
    def test_uuids_come_back_as_sent_in_text_order(self):
        # Same score: ordered by the text (digits < upper case < lower case).
        self.assertReplies([
            (("ZADD", "z", "1", U_LOWER, "1", U_UPPER, "1", U_MIXED, "1", U_DIGITS, "0", "b"),
             integer(5)),
            (("ZRANGE", "z", "0", "-1"), bulks("b", U_DIGITS, U_UPPER, U_MIXED, U_LOWER)),
            (("ZADD", "lex", "0", U_LOWER, "0", U_UPPER, "0", U_MIXED, "0", U_DIGITS), integer(4)),
            (("ZRANGE", "lex", "(" + U_DIGITS, "[" + U_MIXED, "BYLEX"), bulks(U_UPPER, U_MIXED)),
            (("ZLEXCOUNT", "lex", "[0", "[1"), integer(4)),
            (("ZREMRANGEBYLEX", "lex", "[0F", "[" + U_MIXED), integer(2)),
            (("ZRANGE", "lex", "0", "-1"), bulks(U_DIGITS, U_LOWER)),
            (("ZRANGEBYSCORE", "z", "1", "1", "WITHSCORES"),
             ws(U_DIGITS, "1", U_UPPER, "1", U_MIXED, "1", U_LOWER, "1")),
            (("ZREVRANGE", "z", "0", "1"), bulks(U_LOWER, U_MIXED)),
            (("ZSCORE", "z", U_UPPER), bulk("1")),
            (("ZSCORE", "z", U_LOWER.replace("f0", "f1")), NIL),
            (("ZRANK", "z", U_MIXED), integer(3)),
            (("ZINCRBY", "z", "5", U_UPPER), bulk("6")),
            (("ZREM", "z", U_LOWER), integer(1)),
            (("ZPOPMAX", "z"), bulks(U_UPPER, "6")),
            (("ZRANGESTORE", "z2", "z", "0", "-1"), integer(3)),
            (("ZRANGE", "z2", "0", "-1", "WITHSCORES"), ws("b", "0", U_DIGITS, "1", U_MIXED, "1")),
            (("ZSCAN", "z2", "0"), array(bulk("0"), ws("b", "0", U_DIGITS, "1", U_MIXED, "1"))),
        ])
