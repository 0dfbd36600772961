"""Streams without consumer groups: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID XREAD. The
replies and error texts are Redis 7.0's (the file also runs against redis-server,
DEADBOLT_AGAINST_REDIS=1). XREAD BLOCK waits in the server until an XADD past its IDs, on keys of
one shard or of both ("$" read when the call came), times out with a null array (RESP3: null),
does not wait inside MULTI; RESP3 replies a map. A stream keeps its entries and counters across
a SIGKILL (deadbolt's journal) and through RENAME and COPY to a key of the other shard."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL, NIL_ARRAY, NULL3, OK, SYNTAX, WRONGTYPE,  # noqa: E402
                     array, bulk, decode, encode_command, error, integer)
from slots import on_shard  # noqa: E402
from test_blocking_pops import BlockingTestCase  # noqa: E402
from test_journal import JournalCase  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


BAD_ID = error("ERR Invalid stream ID specified as stream command argument")
TOO_SMALL = error("ERR The ID specified in XADD is equal or smaller than the target stream top item")
QUEUED = b"+QUEUED\r\n"


def entry(id_, *fields):
    return array(bulk(id_), array(*[bulk(f) for f in fields]))


def read_reply(key, *entries):
    return array(bulk(key), array(*entries))


class StreamTest(BlockingTestCase):
    def test_add_range_and_ids_as_redis(self):
        self.assertReplies([
            (("XADD", "s", "1-1", "f", "v"), bulk("1-1")),
            (("XADD", "s", "1-1", "f", "v"), TOO_SMALL),
            (("XADD", "s", "1", "f", "v"), TOO_SMALL),  # "1" is 1-0
            (("XADD", "s", "1-*", "a", "b", "c", "d"), bulk("1-2")),
            (("XADD", "s", "2-*", "a", "b"), bulk("2-0")),
            (("XADD", "s", "0-0", "f", "v"), error("ERR The ID specified in XADD must be greater "
                                                   "than 0-0")),
            (("XADD", "s", "9-x", "f", "v"), BAD_ID),
            (("XADD", "s", "9-0", "f"), error("ERR wrong number of arguments for 'xadd' command")),
            (("XADD", "s2", "0-*", "f", "v"), bulk("0-1")),
            (("XLEN", "s"), integer(3)),
            (("XLEN", "nokey"), integer(0)),
            (("XRANGE", "s", "-", "+"), array(entry("1-1", "f", "v"),
                                              entry("1-2", "a", "b", "c", "d"),
                                              entry("2-0", "a", "b"))),
            (("XRANGE", "s", "-", "+", "COUNT", "1"), array(entry("1-1", "f", "v"))),
            (("XRANGE", "s", "-", "+", "COUNT", "0"), NIL_ARRAY),
            (("XRANGE", "nokey", "-", "+", "COUNT", "0"), array()),
            (("XRANGE", "s", "(1-1", "(2-0"), array(entry("1-2", "a", "b", "c", "d"))),
            (("XRANGE", "s", "1", "1"), array(entry("1-1", "f", "v"),
                                              entry("1-2", "a", "b", "c", "d"))),
            (("XRANGE", "s", "-", "(0-0"), error("ERR invalid end ID for the interval")),
            (("XRANGE", "s", "(-", "+"), BAD_ID),
            (("XRANGE", "s", "-", "+", "foo"), SYNTAX),
            (("XREVRANGE", "s", "+", "-", "COUNT", "2"), array(entry("2-0", "a", "b"),
                                                               entry("1-2", "a", "b", "c", "d"))),
            (("XADD", "nokey", "NOMKSTREAM", "*", "x", "y"), NIL),
            (("EXISTS", "nokey"), integer(0)),
            (("TYPE", "s"), b"+stream\r\n"),
            (("SET", "str", "x"), OK),
            (("XADD", "str", "*", "a", "b"), WRONGTYPE),
            (("XRANGE", "str", "-", "+"), WRONGTYPE),
        ])

    def test_trim_del_and_setid(self):
        for i in range(1, 11):
            self.c.cmd("XADD", "s", "%d-0" % i, "n", str(i))
        self.assertReplies([
            (("XADD", "s", "MAXLEN", "8", "11-0", "n", "11"), bulk("11-0")),
            (("XLEN", "s"), integer(8)),
            (("XTRIM", "s", "MINID", "6"), integer(2)),
            (("XTRIM", "s", "MAXLEN", "=", "5"), integer(1)),
            (("XTRIM", "s", "MAXLEN", "1", "LIMIT", "1"),
             error("ERR syntax error, LIMIT cannot be used without the special ~ option")),
            (("XTRIM", "s", "MAXLEN", "1", "MINID", "1"),
             error("ERR syntax error, MAXLEN and MINID options at the same time are not "
                   "compatible")),
            (("XTRIM", "s", "MAXLEN", "-1"), error("ERR The MAXLEN argument must be >= 0.")),
            (("XTRIM", "s"), harness.wrong_args("xtrim")),
            (("XTRIM", "nokey", "MAXLEN", "1"), integer(0)),
            (("XDEL", "s", "7-0", "8-0", "100-0"), integer(2)),
            (("XDEL", "s", "bad"), BAD_ID),
            (("XDEL", "nokey", "bad"), integer(0)),  # the key is looked up first
            (("XRANGE", "s", "-", "+"), array(entry("9-0", "n", "9"), entry("10-0", "n", "10"),
                                              entry("11-0", "n", "11"))),
            (("XSETID", "s", "7-0"), error("ERR The ID specified in XSETID is smaller than the "
                                           "target stream top item")),
            (("XSETID", "s", "10-5"), error("ERR The ID specified in XSETID is smaller than the "
                                            "target stream top item")),
            (("XSETID", "s", "50-0", "ENTRIESADDED", "2"),
             error("ERR The entries_added specified in XSETID is smaller than the target stream "
                   "length")),
            (("XSETID", "nokey", "1-0"), error("ERR no such key")),
            (("XSETID", "s", "50-0"), OK),
            (("XADD", "s", "50-0", "f", "v"), TOO_SMALL),
            (("XADD", "s", "50-*", "f", "v"), bulk("50-1")),
            (("XTRIM", "s", "MAXLEN", "0"), integer(4)),
            (("EXISTS", "s"), integer(1)),  # an empty stream stays
            (("XLEN", "s"), integer(0)),
        ])

    def test_read_without_waiting(self):
        a, b = on_shard(0, "r"), on_shard(1, "r")
        for key in (a, b):
            self.c.cmd("XADD", key, "1-0", "k", key)
            self.c.cmd("XADD", key, "2-0", "k", key)
        self.assertReplies([
            (("XREAD", "STREAMS", a, "0"), array(read_reply(a, entry("1-0", "k", a),
                                                           entry("2-0", "k", a)))),
            (("XREAD", "COUNT", "1", "STREAMS", a, b, "0", "1"),
             array(read_reply(a, entry("1-0", "k", a)), read_reply(b, entry("2-0", "k", b)))),
            (("XREAD", "STREAMS", a, b, "$", "2-0"), NIL_ARRAY),
            (("XREAD", "STREAMS", b, a, "1-0", "$"), array(read_reply(b, entry("2-0", "k", b)))),
            (("XREAD", "STREAMS", a, b, "0"),
             error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must "
                   "be specified.")),
            (("XREAD", "STREAMS", a, ">"),
             error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP "
                   "<group> <consumer> option.")),
            (("XREAD", "BLOCK", "-1", "STREAMS", a, "0"), error("ERR timeout is negative")),
            (("XREAD", "COUNT", "1", "STREAMS"), SYNTAX),
            (("SET", "str", "x"), OK),
            (("XREAD", "STREAMS", "str", "0"), WRONGTYPE),
        ])
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        got = decode(c3.cmd("XREAD", "COUNT", "1", "STREAMS", a, "0"))
        self.assertEqual(got, {a.encode(): [[b"1-0", [b"k", a.encode()]]]})

    def test_block_is_served_by_an_add(self):
        for key, other in ((on_shard(0, "w"), on_shard(1, "w")),
                           (on_shard(1, "x"), on_shard(1, "x2"))):
            self.c.cmd("XADD", key, "5-0", "old", "1")
            w = self.conn()
            w.send(encode_command("XREAD", "BLOCK", "0", "STREAMS", other, key, "0", "$"))
            self.wait_blocked(1)
            self.assert_no_reply(w, 0.05)
            self.assertReply(bulk("6-0"), "XADD", key, "6-0", "new", "2")
            self.assertEqual(w.read_reply(), array(read_reply(key, entry("6-0", "new", "2"))))
            self.wait_blocked(0)

    def test_block_times_out_and_multi_does_not_wait(self):
        w = self.conn()
        t0 = time.monotonic()
        w.send(encode_command("XREAD", "BLOCK", "150", "STREAMS", on_shard(1, "t"), "$"))
        self.assertEqual(w.read_reply(), NIL_ARRAY)
        self.assertGreaterEqual(time.monotonic() - t0, 0.1)
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReply(NULL3, "XREAD", "BLOCK", "10", "STREAMS", "t", on_shard(0, "t"), "$",
                         "$", c=c3)
        self.assertReplies([
            (("MULTI",), OK),
            (("XREAD", "BLOCK", "0", "STREAMS", "nokey", "$"), QUEUED),
            (("EXEC",), array(NIL_ARRAY)),
        ])

    def test_a_waiter_of_several_is_served_once(self):
        a, b = on_shard(0, "m"), on_shard(1, "m")
        w = self.conn()
        w.send(encode_command("XREAD", "BLOCK", "0", "STREAMS", a, b, "$", "$"))
        self.wait_blocked(1)
        self.c.cmd("XADD", b, "1-0", "f", "b")
        self.assertEqual(w.read_reply(), array(read_reply(b, entry("1-0", "f", "b"))))
        self.c.cmd("XADD", a, "1-0", "f", "a")  # no second reply
        self.assertReply(b"+PONG\r\n", "PING", c=w)
        self.wait_blocked(0)

    def test_rename_and_copy_across_shards(self):
        a, b = on_shard(0, "c"), on_shard(1, "c")
        self.c.cmd("XADD", a, "1-0", "f", "v")
        self.c.cmd("XADD", a, "2-0", "f", "w")
        self.c.cmd("XDEL", a, "2-0")
        self.assertReplies([
            (("COPY", a, b), integer(1)),
            (("XRANGE", b, "-", "+"), array(entry("1-0", "f", "v"))),
            (("XADD", b, "2-0", "f", "v"), TOO_SMALL),  # the last ID came along
            (("RENAME", a, b + "x"), OK),
            (("XLEN", b + "x"), integer(1)),
            (("EXISTS", a), integer(0)),
        ])


class StreamJournalTest(JournalCase):
    def test_streams_survive_sigkill(self):
        c = self.start(threads=2, fsync="always")
        a, b = on_shard(0, "j"), on_shard(1, "j")
        for i in range(1, 6):
            c.cmd("XADD", a, "%d-0" % i, "n", str(i))
        c.cmd("XDEL", a, "5-0")
        c.cmd("XADD", b, "MAXLEN", "2", "*", "x", "y")
        c.cmd("XSETID", b, "99999999999999-0")
        before = [c.cmd("XRANGE", k, "-", "+") for k in (a, b)]
        self.kill()
        c = self.start(threads=2, fsync="always")
        self.assertEqual([c.cmd("XRANGE", k, "-", "+") for k in (a, b)], before)
        self.assertEqual(c.cmd("XADD", a, "5-0", "f", "v"), TOO_SMALL)  # its last ID, 5-0
        self.assertEqual(c.cmd("XADD", b, "*", "f", "v"), bulk("99999999999999-1"))
        self.stop()


class StreamDeadboltTest(harness.ServerTestCase):
    def test_dump_of_a_stream_is_refused(self):
        if harness.AGAINST_REDIS:
            self.skipTest("redis-server dumps streams")
        self.c.cmd("DEL", "ds")
        self.c.cmd("XADD", "ds", "*", "f", "v")
        self.assertTrue(self.c.cmd("DUMP", "ds").startswith(b"-ERR DUMP of a stream"))
        self.c.cmd("DEL", "ds")


if __name__ == "__main__":
    unittest.main()
