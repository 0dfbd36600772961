"""Streams: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID XREAD, and consumer groups: XGROUP
XREADGROUP XACK XPENDING XCLAIM XAUTOCLAIM XINFO. The replies and error texts are Redis 7.0's
(the file also runs against redis-server, DEADBOLT_AGAINST_REDIS=1), and random runs of group
commands against a live redis-server give the same replies. XREAD and XREADGROUP BLOCK wait in
the server until an XADD past their IDs, on keys of one shard or of both ("$" read when the call
came), time out with a null array (RESP3: null), do not wait inside MULTI; RESP3 replies a map.
A stream keeps its entries, counters and groups across a SIGKILL (deadbolt's journal) and
through RENAME and COPY to a key of the other shard."""

import os
import random
import subprocess
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

    def test_generic_key_commands_see_streams(self):
        a, b = on_shard(0, "g"), on_shard(1, "g")
        for k in (a, b):
            self.c.cmd("XADD", k, "1-0", "f", "v")
        self.c.cmd("SET", "plain", "x")
        found, cursor = set(), b"0"
        while True:
            cursor, keys = decode(self.c.cmd("SCAN", cursor, "TYPE", "stream", "COUNT", "100"))
            found.update(keys)
            if cursor == b"0":
                break
        self.assertEqual(found, {a.encode(), b.encode()})
        self.assertReplies([
            (("OBJECT", "ENCODING", a), bulk("stream")),
            (("SORT", a), WRONGTYPE),
            (("LPUSH", a, "x"), WRONGTYPE),
            (("EXPIRE", a, "100"), integer(1)),
            (("PERSIST", a), integer(1)),
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


class GroupTest(BlockingTestCase):
    def test_a_consumer_group_round_trip(self):
        self.assertReplies([
            (("XGROUP", "CREATE", "q", "workers", "$"),
             error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you "
                   "may want to use the MKSTREAM option to create an empty stream automatically.")),
            (("XGROUP", "CREATE", "q", "workers", "$", "MKSTREAM"), OK),
            (("XGROUP", "CREATE", "q", "workers", "$"),
             error("BUSYGROUP Consumer Group name already exists")),
            (("XADD", "q", "1-0", "job", "a"), bulk("1-0")),
            (("XADD", "q", "2-0", "job", "b"), bulk("2-0")),
            (("XREADGROUP", "GROUP", "workers", "w1", "COUNT", "1", "STREAMS", "q", ">"),
             array(read_reply("q", entry("1-0", "job", "a")))),
            (("XREADGROUP", "GROUP", "workers", "w2", "STREAMS", "q", ">"),
             array(read_reply("q", entry("2-0", "job", "b")))),
            (("XREADGROUP", "GROUP", "workers", "w2", "STREAMS", "q", ">"), NIL_ARRAY),
            (("XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "q", "0"),
             array(read_reply("q", entry("1-0", "job", "a")))),
            (("XPENDING", "q", "workers"),
             array(integer(2), bulk("1-0"), bulk("2-0"),
                   array(array(bulk("w1"), bulk("1")), array(bulk("w2"), bulk("1"))))),
            (("XACK", "q", "workers", "1-0", "7-0"), integer(1)),
            (("XDEL", "q", "2-0"), integer(1)),
            (("XREADGROUP", "GROUP", "workers", "w2", "STREAMS", "q", "0"),
             array(array(bulk("q"), array(array(bulk("2-0"), NIL_ARRAY))))),
            (("XAUTOCLAIM", "q", "workers", "w3", "0", "0"),
             array(bulk("0-0"), array(), array(bulk("2-0")))),
            (("XPENDING", "q", "workers"), array(integer(0), NIL, NIL, NIL_ARRAY)),
            (("XREADGROUP", "GROUP", "nope", "w1", "STREAMS", "q", ">"),
             error("NOGROUP No such key 'q' or consumer group 'nope' in XREADGROUP with GROUP "
                   "option")),
            (("XREADGROUP", "GROUP", "workers", "w1", "STREAMS", "q", "$"),
             error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read "
                   "the history of this consumer by specifying a proper ID, or use the > ID to "
                   "get new messages. The $ ID would just return an empty result set.")),
            (("XGROUP", "DESTROY", "q", "workers"), integer(1)),
            (("XINFO", "GROUPS", "q"), array()),
        ])

    def test_readgroup_block_is_served_by_an_add(self):
        for key, other in ((on_shard(0, "bg"), on_shard(1, "bg")),
                           (on_shard(1, "bh"), on_shard(1, "bh2"))):
            for k in (key, other):
                self.c.cmd("XGROUP", "CREATE", k, "g", "$", "MKSTREAM")
            w = self.conn()
            w.send(encode_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS",
                                  other, key, ">", ">"))
            self.wait_blocked(1)
            self.assertReply(bulk("5-0"), "XADD", key, "5-0", "f", "v")
            self.assertEqual(w.read_reply(), array(read_reply(key, entry("5-0", "f", "v"))))
            self.assertReply(array(integer(1), bulk("5-0"), bulk("5-0"),
                                   array(array(bulk("c"), bulk("1")))), "XPENDING", key, "g")
            self.wait_blocked(0)

    def test_a_destroyed_group_ends_the_wait(self):
        self.c.cmd("XGROUP", "CREATE", "d", "g", "$", "MKSTREAM")
        w = self.conn()
        w.send(encode_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "d", ">"))
        self.wait_blocked(1)
        self.assertReply(integer(1), "XGROUP", "DESTROY", "d", "g")
        self.assertEqual(w.read_reply(), error("NOGROUP the consumer group this client was "
                                               "blocked on no longer exists"))
        self.wait_blocked(0)


class GroupsAgainstRedisTest(harness.ServerTestCase):
    """Random runs of group commands on one stream, here and in a live redis-server: the same
    replies, the idle times (which move with the clock) and XINFO STREAM's radix-tree sizes
    (estimated here) aside."""

    def setUp(self):
        super().setUp()
        if harness.AGAINST_REDIS:
            self.skipTest("the server under test is redis-server itself")
        if not os.access(harness.REDIS_SERVER, os.X_OK):
            self.skipTest("no %s" % harness.REDIS_SERVER)
        port = harness.free_port()
        proc = subprocess.Popen(
            [harness.REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd="/tmp")
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        harness.wait_port(port)
        self.redis = harness.RespConn(port)
        self.addCleanup(self.redis.close)

    def test_random_group_commands(self):
        for seed in (1, 2, 3):
            self.run_seed(seed, 1500)

    def run_seed(self, seed, steps):
        rng = random.Random(seed)
        key = on_shard(1, "rs")
        for c in (self.c, self.redis):
            c.cmd("DEL", key)
            c.cmd("XGROUP", "CREATE", key, "g", "0", "MKSTREAM")
            c.cmd("XGROUP", "CREATE", key, "h", "$")
        state = {"next": 1}
        who = ["a", "b", "c"]

        def rid():
            return "%d-%d" % (rng.randint(0, state["next"] + 1), rng.randint(0, 1))

        for step in range(steps):
            k, g = rng.random(), rng.choice("gh")
            if k < 0.2:
                cmd = ["XADD", key, "%d-0" % state["next"], "f", str(state["next"])]
                state["next"] += 1
            elif k < 0.3:
                cmd = ["XDEL", key, rid()]
            elif k < 0.45:
                cmd = (["XREADGROUP", "GROUP", g, rng.choice(who)] +
                       (["COUNT", str(rng.randint(1, 3))] if rng.random() < 0.5 else []) +
                       (["NOACK"] if rng.random() < 0.1 else []) +
                       ["STREAMS", key, rng.choice([">", ">", "0", rid()])])
            elif k < 0.55:
                cmd = ["XACK", key, g] + [rid() for _ in range(rng.randint(1, 3))]
            elif k < 0.62:
                cmd = (["XCLAIM", key, g, rng.choice(who), "0"] +
                       [rid() for _ in range(rng.randint(1, 3))] +
                       rng.choice([[], ["JUSTID"], ["FORCE"], ["RETRYCOUNT", "3"],
                                   ["LASTID", rid()], ["FORCE", "JUSTID"]]))
            elif k < 0.7:
                cmd = (["XAUTOCLAIM", key, g, rng.choice(who), "0", rid()] +
                       rng.choice([[], ["COUNT", "2"], ["JUSTID"], ["COUNT", "1", "JUSTID"]]))
            elif k < 0.76:
                cmd = ["XPENDING", key, g] + rng.choice(
                    [[], ["-", "+", "10"], ["-", "+", "3", rng.choice(who)], [rid(), "+", "5"]])
            elif k < 0.8:
                cmd = ["XINFO", "GROUPS", key]
            elif k < 0.83:
                cmd = ["XINFO", "CONSUMERS", key, g]
            elif k < 0.85:
                cmd = ["XINFO", "STREAM", key]
            elif k < 0.86:
                cmd = ["XINFO", "STREAM", key, "FULL"] + (
                    ["COUNT", str(rng.randint(0, 3))] if rng.random() < 0.5 else [])
            elif k < 0.88:
                cmd = (["XGROUP", "SETID", key, g, rng.choice(["0", "$", rid()])] +
                       (["ENTRIESREAD", str(rng.randint(-1, 5))] if rng.random() < 0.3 else []))
            elif k < 0.9:
                cmd = ["XGROUP", "DELCONSUMER", key, g, rng.choice(who)]
            elif k < 0.92:
                cmd = ["XTRIM", key, "MAXLEN", str(rng.randint(0, 10))]
            elif k < 0.94:
                cmd = ["XGROUP", "CREATECONSUMER", key, g, rng.choice(who)]
            else:
                cmd = ["XRANGE", key, "-", "+"]
            mine, theirs = decode(self.c.cmd(*cmd)), decode(self.redis.cmd(*cmd))
            self.assertEqual(self.comparable(cmd, mine), self.comparable(cmd, theirs),
                             "seed %d step %d: %s" % (seed, step, " ".join(cmd)))

    @staticmethod
    def comparable(cmd, v):
        if cmd[0] == "XPENDING" and len(cmd) > 3 and isinstance(v, list):
            return [[e[0], e[1], e[3]] for e in v]
        if cmd[:2] == ["XINFO", "CONSUMERS"] and isinstance(v, list):
            return [e[:4] for e in v]
        if cmd[:2] == ["XINFO", "STREAM"] and isinstance(v, list):
            v = [x for i, x in enumerate(v) if i not in (2, 3, 4, 5)]
            if len(cmd) > 3:  # FULL: delivery and seen times are each server's clock
                for g in v[v.index(b"groups") + 1]:
                    g[11] = [[p[0], p[1], p[3]] for p in g[11]]
                    for c in g[13]:
                        c[3] = None
                        c[7] = [[p[0], p[2]] for p in c[7]]
            return v
        return v


class StreamJournalTest(JournalCase):
    def test_streams_survive_sigkill(self):
        c = self.start(threads=2, fsync="always")
        a, b = on_shard(0, "j"), on_shard(1, "j")
        for i in range(1, 6):
            c.cmd("XADD", a, "%d-0" % i, "n", str(i))
        c.cmd("XDEL", a, "5-0")
        c.cmd("XADD", b, "MAXLEN", "2", "*", "x", "y")
        c.cmd("XSETID", b, "99999999999999-0")
        c.cmd("XGROUP", "CREATE", a, "g", "0")
        c.cmd("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", a, ">")
        c.cmd("XACK", a, "g", "1-0")
        state = lambda: ([c.cmd("XRANGE", k, "-", "+") for k in (a, b)] +
                         [c.cmd("XINFO", "GROUPS", a), c.cmd("XPENDING", a, "g")])
        before = state()
        self.kill()
        c = self.start(threads=2, fsync="always")
        self.assertEqual(state(), before)
        self.assertEqual(c.cmd("XREADGROUP", "GROUP", "g", "bob", "STREAMS", a, ">"),
                         array(read_reply(a, entry("3-0", "n", "3"), entry("4-0", "n", "4"))))
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
