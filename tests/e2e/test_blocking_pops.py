"""Blocking pops: BLPOP BRPOP BLMOVE BRPOPLPUSH. Immediate replies and errors byte-exact against
Redis 7.0; waiting in the server until a push (RESP2 and RESP3), timeouts (float seconds, 0 =
forever), no waiting inside MULTI; first come first served across both reactors; a waiter whose
connection closes (or is killed) leaves at once and takes nothing; keys on another shard.

Several keys, on one shard or on both: the first key to get an element serves the client, once,
and its waits on the other keys end with it. BLMOVE with its keys on two shards waits on the
source and moves atomically. A key overwritten with another type keeps its waiter waiting."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL, NIL_ARRAY, NULL3, OK, SYNTAX, WRONGTYPE,  # noqa: E402
                     array, bulk, decode, encode_command, integer)
from slots import on_shard  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


NOT_FLOAT = b"-ERR timeout is not a float or out of range\r\n"
NEGATIVE = b"-ERR timeout is negative\r\n"
QUEUED = b"+QUEUED\r\n"


def kv(k, v):
    return array(bulk(k), bulk(v))


class BlockingTestCase(harness.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.assertReply(OK, "FLUSHALL")

    def clients_info(self, field):
        text = decode(self.c.cmd("INFO", "clients")).decode()
        fields = dict(l.split(":", 1) for l in text.splitlines() if ":" in l)
        return int(fields[field])

    def accepted(self):
        text = decode(self.c.cmd("INFO", "stats")).decode()
        fields = dict(l.split(":", 1) for l in text.splitlines() if ":" in l)
        return int(fields["total_connections_received"])

    def blocked_clients(self):
        return self.clients_info("blocked_clients")

    def wait_blocked(self, n):
        """Polls INFO until n clients wait (so that the order they arrived in is known)."""
        deadline = time.monotonic() + harness.IO_TIMEOUT
        while self.blocked_clients() != n:
            if time.monotonic() > deadline:
                self.fail("%d blocked clients, expected %d" % (self.blocked_clients(), n))
            time.sleep(0.005)

    def assert_no_reply(self, c, wait=0.2):
        c.settimeout(wait)
        with self.assertRaises(OSError):
            c.read_reply()
        c.settimeout(harness.IO_TIMEOUT)


class ImmediateTest(BlockingTestCase):
    def test_served_at_once_and_errors(self):
        self.assertReplies([
            (("RPUSH", "k", "a", "b", "c"), integer(3)),
            (("BLPOP", "k", "0"), kv("k", "a")),
            (("BRPOP", "k", "1.5"), kv("k", "c")),
            (("BLPOP", "k", "x"), NOT_FLOAT),
            (("BLPOP", "k", "-1"), NEGATIVE),
            (("BLMOVE", "k", "{k}d", "UP", "LEFT", "0"), SYNTAX),
            (("BLMOVE", "k", "k", "LEFT", "LEFT", "x"), NOT_FLOAT),
            (("BLMOVE", "k", "k", "LEFT", "RIGHT", "0"), bulk("b")),
            (("SET", "s", "x"), OK),
            (("BLPOP", "s", "0"), WRONGTYPE),
            (("BLPOP", "k", "0.01"), kv("k", "b")),
            (("BLPOP", "k", "0.01"), NIL_ARRAY),  # timed out
            # A timed-out BLMOVE / BRPOPLPUSH replies a null array (a nil inside MULTI).
            (("BRPOPLPUSH", "k", "{k}d", "0.01"), NIL_ARRAY),
            (("BLMOVE", "k", "{k}d", "LEFT", "LEFT", "0.01"), NIL_ARRAY),
            (("RPUSH", "k", "v"), integer(1)),
            (("BLMOVE", "k", "s", "LEFT", "LEFT", "0"), WRONGTYPE),
            (("BRPOPLPUSH", "k", "{k}d", "0"), bulk("v")),
            (("LRANGE", "{k}d", "0", "-1"), array(bulk("v"))),
        ])

    def test_several_keys_on_one_shard(self):
        self.assertReplies([
            (("RPUSH", "{t}b", "1"), integer(1)),
            (("SET", "{t}s", "x"), OK),
            (("BLPOP", "{t}a", "{t}b", "{t}s", "0"), kv("{t}b", "1")),
            (("BLPOP", "{t}a", "{t}s", "0"), WRONGTYPE),
        ])

    def test_several_keys_across_shards(self):
        a, b = on_shard(0, "a"), on_shard(1, "b")
        self.assertReplies([
            (("RPUSH", b, "1", "2"), integer(2)),
            (("BLPOP", a, b, "0"), kv(b, "1")),
            (("BRPOP", a, b, "0"), kv(b, "2")),
            (("RPUSH", a, "x"), integer(1)),
            (("BLMOVE", a, b, "LEFT", "LEFT", "0"), bulk("x")),
            (("LRANGE", b, "0", "-1"), array(bulk("x"))),
        ])

    def test_multi_does_not_block(self):
        self.assertReplies([
            (("MULTI",), OK),
            (("BLPOP", "nokey", "0"), QUEUED),
            (("BLMOVE", "nokey", "k", "LEFT", "LEFT", "0"), QUEUED),
            (("BRPOPLPUSH", "nokey", "k", "0"), QUEUED),
            (("EXEC",), array(NIL_ARRAY, NIL, NIL)),
        ])

    def test_resp3_timeout_is_null(self):
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReply(NULL3, "BLPOP", "nokey", "0.01", c=c3)
        self.assertReply(NULL3, "BLMOVE", "nokey", "x", "LEFT", "LEFT", "0.01", c=c3)


class WaitTest(BlockingTestCase):
    def test_push_serves_a_waiter(self):
        for key in (on_shard(0, "w"), on_shard(1, "w")):
            w = self.conn()
            w.send(encode_command("BLPOP", key, "0"))
            self.wait_blocked(1)
            self.assert_no_reply(w, 0.05)
            self.assertReply(integer(1), "LPUSH", key, "hello")
            self.assertEqual(w.read_reply(), kv(key, "hello"))
            self.assertReply(integer(0), "EXISTS", key)
            self.wait_blocked(0)

    def test_blmove_waiter_and_resp3(self):
        w = self.conn()
        w.cmd("HELLO", "3")
        w.send(encode_command("BLMOVE", "{m}src", "{m}dst", "RIGHT", "LEFT", "0"))
        self.wait_blocked(1)
        self.assertReply(integer(2), "RPUSH", "{m}src", "a", "b")
        self.assertEqual(w.read_reply(), bulk("b"))
        self.assertReply(array(bulk("a")), "LRANGE", "{m}src", "0", "-1")
        self.assertReply(array(bulk("b")), "LRANGE", "{m}dst", "0", "-1")
        w.send(encode_command("BRPOP", "{m}nokey", "0.05"))
        self.assertEqual(w.read_reply(), NULL3)

    def test_timeout_while_waiting(self):
        w = self.conn()
        t0 = time.monotonic()
        w.send(encode_command("BLPOP", on_shard(1, "t"), "0.2"))
        self.assertEqual(w.read_reply(), NIL_ARRAY)
        self.assertGreaterEqual(time.monotonic() - t0, 0.15)
        self.wait_blocked(0)

    def test_a_timeout_under_a_millisecond_still_times_out(self):
        # Redis 7 rounds a timeout up to whole milliseconds: only 0 waits forever.
        w = self.conn()
        for timeout in ("0.001", "0.0005", "0.00001"):
            with self.subTest(timeout=timeout):
                w.send(encode_command("BLPOP", on_shard(1, "t"), timeout))
                self.assertEqual(w.read_reply(), NIL_ARRAY)
        self.wait_blocked(0)

    def test_first_come_first_served_across_reactors(self):
        # Connections are spread over both reactors; each waits on the key of one shard, in a
        # known order. Each push of one element serves the longest-waiting client.
        for key in (on_shard(0, "q"), on_shard(1, "q")):
            waiters = [self.conn() for _ in range(6)]
            for i, w in enumerate(waiters):
                w.send(encode_command("BLPOP", key, "0"))
                self.wait_blocked(i + 1)
            for i, w in enumerate(waiters):
                self.assertReply(integer(1), "RPUSH", key, "v%d" % i)
                self.assertEqual(w.read_reply(), kv(key, "v%d" % i))
                for later in waiters[i + 1:i + 2]:
                    self.assert_no_reply(later, 0.02)
            self.wait_blocked(0)
            # One push of several elements serves several waiters, in order.
            for i, w in enumerate(waiters[:3]):
                w.send(encode_command("BRPOP", key, "0"))
                self.wait_blocked(i + 1)
            self.assertReply(integer(3), "RPUSH", key, "x", "y", "z")
            self.assertEqual([w.read_reply() for w in waiters[:3]],
                             [kv(key, "z"), kv(key, "y"), kv(key, "x")])

    def test_a_closed_or_killed_waiter_leaves_at_once(self):
        key = on_shard(1, "gone")
        first, second = self.conn(), self.conn()
        first.send(encode_command("BLPOP", key, "0"))
        self.wait_blocked(1)
        second.send(encode_command("BLPOP", key, "0"))
        self.wait_blocked(2)
        first.close()
        self.wait_blocked(1)  # left at once, without any push
        self.assertReply(integer(1), "RPUSH", key, "v")
        self.assertEqual(second.read_reply(), kv(key, "v"))
        self.assertReply(integer(0), "LLEN", key)
        # CLIENT KILL of a waiter.
        victim = self.conn()
        victim_id = victim.call("CLIENT", "ID")
        victim.send(encode_command("BRPOP", key, "0"))
        self.wait_blocked(1)
        self.assertReply(integer(1), "CLIENT", "KILL", "ID", victim_id)
        self.wait_blocked(0)
        self.assertReply(integer(1), "RPUSH", key, "kept")
        self.assertReply(array(bulk("kept")), "LRANGE", key, "0", "-1")


class SeveralKeysWaitTest(BlockingTestCase):
    """A client waits on several keys (on one shard or on both): the first key to get an
    element serves it, exactly once; the waits on its other keys end with it."""

    KEYSETS = {"one shard": ("{t}a", "{t}b", "{t}c"),
               "two shards": (on_shard(0, "a"), on_shard(1, "b"), on_shard(0, "c"))}

    def test_the_first_key_to_get_an_element_serves_it_once(self):
        for name, (a, b, c) in self.KEYSETS.items():
            with self.subTest(name):
                w = self.conn()
                w.send(encode_command("BLPOP", a, b, c, "0"))
                self.wait_blocked(1)  # one client, however many keys
                self.assert_no_reply(w, 0.05)
                self.assertReply(integer(1), "RPUSH", b, "x")
                self.assertEqual(w.read_reply(), kv(b, "x"))
                self.wait_blocked(0)
                # Its waits on a and c have ended: what comes there stays.
                self.assertReply(integer(1), "RPUSH", a, "y")
                self.assertReply(integer(1), "RPUSH", c, "z")
                self.assert_no_reply(w, 0.05)
                self.assertReply(array(bulk("y")), "LRANGE", a, "0", "-1")
                self.assertReply(array(bulk("z")), "LRANGE", c, "0", "-1")
                self.c.cmd("DEL", a, b, c)

    def test_elements_on_every_key_at_once_serve_once(self):
        for name, (a, b, c) in self.KEYSETS.items():
            with self.subTest(name):
                w = self.conn()
                w.send(encode_command("BRPOP", a, b, "0"))
                self.wait_blocked(1)
                self.assertReplies([
                    (("MULTI",), OK),
                    (("RPUSH", b, "x"), QUEUED),
                    (("RPUSH", a, "y"), QUEUED),
                    (("EXEC",), array(integer(1), integer(1))),
                ])
                got = w.read_reply()
                self.assertIn(got, (kv(b, "x"), kv(a, "y")))
                left = decode(self.c.cmd("LLEN", a)) + decode(self.c.cmd("LLEN", b))
                self.assertEqual(left, 1)
                self.wait_blocked(0)
                self.c.cmd("DEL", a, b)

    def test_first_come_first_served_per_key(self):
        for name, (a, b, c) in self.KEYSETS.items():
            with self.subTest(name):
                w1, w2, w3 = self.conn(), self.conn(), self.conn()
                w1.send(encode_command("BLPOP", a, b, "0"))
                self.wait_blocked(1)
                w2.send(encode_command("BLPOP", b, "0"))
                self.wait_blocked(2)
                w3.send(encode_command("BLPOP", c, a, "0"))
                self.wait_blocked(3)
                self.assertReply(integer(1), "RPUSH", b, "1")
                self.assertEqual(w1.read_reply(), kv(b, "1"))
                self.assertReply(integer(1), "RPUSH", a, "2")  # w1 has left a: w3's
                self.assertEqual(w3.read_reply(), kv(a, "2"))
                self.assertReply(integer(1), "RPUSH", b, "3")
                self.assertEqual(w2.read_reply(), kv(b, "3"))
                self.wait_blocked(0)

    def test_timeout(self):
        for name, (a, b, c) in self.KEYSETS.items():
            with self.subTest(name):
                w = self.conn()
                w.send(encode_command("BLPOP", a, b, c, "0.1"))
                self.assertEqual(w.read_reply(), NIL_ARRAY)
                self.wait_blocked(0)
                self.assertReply(integer(1), "RPUSH", b, "kept")
                self.assertReply(integer(1), "LLEN", b)
                self.c.cmd("DEL", b)

    def test_a_killed_waiter_leaves_every_key(self):
        for name, (a, b, c) in self.KEYSETS.items():
            with self.subTest(name):
                victim = self.conn()
                victim_id = victim.call("CLIENT", "ID")
                victim.send(encode_command("BRPOP", a, b, c, "0"))
                self.wait_blocked(1)
                self.assertReply(integer(1), "CLIENT", "KILL", "ID", victim_id)
                self.wait_blocked(0)
                for k in (a, b, c):
                    self.assertReply(integer(1), "RPUSH", k, "kept")
                    self.assertReply(integer(1), "LLEN", k)
                self.c.cmd("DEL", a, b, c)

    def test_a_crowd_on_keys_of_both_shards_is_served_exactly_once(self):
        a, b, c = self.KEYSETS["two shards"]
        waiters = [self.conn() for _ in range(8)]
        for rnd in range(3):
            for i, w in enumerate(waiters):
                keys = (a, b, c) if i % 2 else (c, b, a)
                w.send(encode_command("BRPOP", *keys, "0"))
            self.wait_blocked(len(waiters))
            # Twice as many elements as waiters, spread over the three keys, sent in one go:
            # every waiter gets exactly one, and the rest stay.
            pushed = []
            pipeline = b""
            for j in range(2 * len(waiters)):
                k = (a, b, c)[j % 3]
                v = "r%d-%d" % (rnd, j)
                pushed.append((k, v))
                pipeline += encode_command("LPUSH", k, v)
            self.c.send(pipeline)
            for _ in pushed:
                self.c.read_reply()
            got = []
            for w in waiters:
                reply = w.read_reply()
                got.append(tuple(x.decode() for x in decode(reply)))
            self.wait_blocked(0)
            left = []
            for k in (a, b, c):
                left += [(k, v.decode()) for v in decode(self.c.cmd("LRANGE", k, "0", "-1"))]
            self.assertEqual(len(got), len(set(got)))
            self.assertEqual(sorted(got + left), sorted(pushed))
            self.c.cmd("DEL", a, b, c)

    def test_a_client_that_closes_at_once_leaves_nothing_behind(self):
        # Closed while its first attempt is still out on the shards (sometimes): the wait that
        # follows must not stay queued.
        a, b, c = self.KEYSETS["two shards"]
        before = self.clients_info("connected_clients")
        accepted = self.accepted()
        for i in range(20):
            w = self.conn()
            if i % 2:
                w.send(encode_command("BLPOP", a, b, "0"))
            else:
                w.send(encode_command("BLMOVE", a, b, "LEFT", "LEFT", "0"))
            w.close()
        # Every one of them gone as the server counts (accepted, its command read, then its
        # close): until then a server may not have read the last command yet, and no blocked
        # client proves nothing. The count of clients alone is back where it was too while the
        # last ones are not yet accepted (redis-server then served one of them after the RPUSH).
        deadline = time.monotonic() + harness.IO_TIMEOUT
        while self.accepted() < accepted + 20 or self.clients_info("connected_clients") != before:
            self.assertLess(time.monotonic(), deadline, "the closed clients are still counted")
            time.sleep(0.005)
        self.wait_blocked(0)
        self.assertReply(integer(1), "RPUSH", a, "kept")
        self.assertReply(array(bulk("kept")), "LRANGE", a, "0", "-1")

    def test_multi_does_not_wait(self):
        a, b, _ = self.KEYSETS["two shards"]
        self.assertReplies([
            (("MULTI",), OK),
            (("BLPOP", a, b, "0"), QUEUED),
            (("EXEC",), array(NIL_ARRAY)),
        ])


class WrongTypeWaitTest(BlockingTestCase):
    """A waiter whose key is overwritten with another type keeps waiting (Redis serves it only
    once the key is a list with elements)."""

    def test_overwritten_key_keeps_the_waiter(self):
        for key in (on_shard(0, "o"), on_shard(1, "o")):
            w = self.conn()
            w.send(encode_command("BLPOP", key, "0"))
            self.wait_blocked(1)
            self.assertReply(OK, "SET", key, "str")
            self.assertReply(integer(1), "HSET", "{%s}h" % key, "f", "v")
            self.assertReply(OK, "RENAME", "{%s}h" % key, key)  # a hash now
            self.assert_no_reply(w, 0.05)
            self.assertEqual(self.blocked_clients(), 1)
            self.assertReply(integer(1), "DEL", key)
            self.assertReply(integer(1), "RPUSH", key, "v")
            self.assertEqual(w.read_reply(), kv(key, "v"))
            self.wait_blocked(0)

    def test_several_keys_one_of_another_type(self):
        a, b = on_shard(0, "p"), on_shard(1, "p")
        w = self.conn()
        w.send(encode_command("BLPOP", b, a, "0"))
        self.wait_blocked(1)
        self.assertReply(OK, "SET", b, "str")
        self.assert_no_reply(w, 0.05)
        self.assertReply(integer(1), "RPUSH", a, "v")
        # Served by the key that got the element (Redis 7.0 does not run the BLPOP again, which
        # would meet b first and reply WRONGTYPE, as 7.2 does).
        self.assertEqual(w.read_reply(), kv(a, "v"))
        self.wait_blocked(0)

    def test_blmove_source_overwritten_keeps_waiting(self):
        w = self.conn()
        w.send(encode_command("BLMOVE", "{m}src", "{m}dst", "LEFT", "RIGHT", "0"))
        self.wait_blocked(1)
        self.assertReply(integer(1), "SADD", "{m}src", "x")
        self.assert_no_reply(w, 0.05)
        self.assertReply(integer(1), "DEL", "{m}src")
        self.assertReply(OK, "SET", "{m}dst", "str")
        self.assertReply(integer(1), "RPUSH", "{m}src", "v")
        # The destination is a string: WRONGTYPE, and the element stays where it was.
        self.assertEqual(w.read_reply(), WRONGTYPE)
        self.assertReply(array(bulk("v")), "LRANGE", "{m}src", "0", "-1")
        self.wait_blocked(0)


class BLMoveAcrossShardsTest(BlockingTestCase):
    """BLMOVE / BRPOPLPUSH whose source and destination are on two shards wait on the source and
    move atomically when it gets an element."""

    def setUp(self):
        super().setUp()
        self.a, self.b = on_shard(0, "src"), on_shard(1, "dst")

    def test_waits_then_moves(self):
        a, b = self.a, self.b
        for src, dst in ((a, b), (b, a)):
            w = self.conn()
            w.send(encode_command("BLMOVE", src, dst, "LEFT", "RIGHT", "0"))
            self.wait_blocked(1)
            self.assert_no_reply(w, 0.05)
            self.assertReply(integer(2), "RPUSH", src, "x", "y")
            self.assertEqual(w.read_reply(), bulk("x"))
            self.assertReply(array(bulk("y")), "LRANGE", src, "0", "-1")
            self.assertReply(array(bulk("x")), "LRANGE", dst, "0", "-1")
            self.wait_blocked(0)
            self.c.cmd("DEL", src, dst)
        w = self.conn()
        w.cmd("HELLO", "3")
        w.send(encode_command("BRPOPLPUSH", a, b, "0"))
        self.wait_blocked(1)
        self.assertReply(integer(2), "RPUSH", a, "1", "2")
        self.assertEqual(w.read_reply(), bulk("2"))
        self.assertReply(array(bulk("2")), "LRANGE", b, "0", "-1")

    def test_first_come_first_served_on_the_source(self):
        a, b = self.a, self.b
        mover, popper = self.conn(), self.conn()
        mover.send(encode_command("BLMOVE", a, b, "LEFT", "LEFT", "0"))
        self.wait_blocked(1)
        popper.send(encode_command("BLPOP", a, "0"))
        self.wait_blocked(2)
        self.assertReply(integer(1), "RPUSH", a, "1")
        self.assertEqual(mover.read_reply(), bulk("1"))
        self.assert_no_reply(popper, 0.05)
        self.assertReply(integer(1), "RPUSH", a, "2")
        self.assertEqual(popper.read_reply(), kv(a, "2"))
        self.assertReply(array(bulk("1")), "LRANGE", b, "0", "-1")
        # The other order, one push of two elements.
        popper.send(encode_command("BLPOP", a, "0"))
        self.wait_blocked(1)
        mover.send(encode_command("BLMOVE", a, b, "LEFT", "LEFT", "0"))
        self.wait_blocked(2)
        self.assertReply(integer(2), "RPUSH", a, "3", "4")
        self.assertEqual(popper.read_reply(), kv(a, "3"))
        self.assertEqual(mover.read_reply(), bulk("4"))
        self.assertReply(array(bulk("4"), bulk("1")), "LRANGE", b, "0", "-1")
        self.wait_blocked(0)

    def test_the_moved_element_serves_the_destinations_waiter(self):
        a, b = self.a, self.b
        mover, popper = self.conn(), self.conn()
        popper.send(encode_command("BRPOP", b, "0"))
        self.wait_blocked(1)
        mover.send(encode_command("BLMOVE", a, b, "LEFT", "LEFT", "0"))
        self.wait_blocked(2)
        self.assertReply(integer(1), "RPUSH", a, "v")
        self.assertEqual(mover.read_reply(), bulk("v"))
        self.assertEqual(popper.read_reply(), kv(b, "v"))
        self.assertReply(integer(0), "EXISTS", a, b)
        self.wait_blocked(0)

    def test_destination_of_another_type(self):
        a, b = self.a, self.b
        mover, popper = self.conn(), self.conn()
        mover.send(encode_command("BLMOVE", a, b, "LEFT", "LEFT", "0"))
        self.wait_blocked(1)
        popper.send(encode_command("BLPOP", a, "0"))
        self.wait_blocked(2)
        self.assertReply(OK, "SET", b, "str")
        self.assertReply(integer(1), "RPUSH", a, "v")
        # WRONGTYPE, nothing moved; the element serves the next waiter.
        self.assertEqual(mover.read_reply(), WRONGTYPE)
        self.assertEqual(popper.read_reply(), kv(a, "v"))
        self.assertReply(b"$3\r\nstr\r\n", "GET", b)
        self.wait_blocked(0)

    def test_source_of_another_type_keeps_waiting(self):
        a, b = self.a, self.b
        w = self.conn()
        w.send(encode_command("BLMOVE", a, b, "RIGHT", "LEFT", "0"))
        self.wait_blocked(1)
        self.assertReply(integer(1), "ZADD", a, "1", "m")
        self.assert_no_reply(w, 0.05)
        self.assertReply(integer(1), "DEL", a)
        self.assertReply(integer(1), "LPUSH", a, "v")
        self.assertEqual(w.read_reply(), bulk("v"))
        self.assertReply(array(bulk("v")), "LRANGE", b, "0", "-1")

    def test_timeout_and_kill(self):
        a, b = self.a, self.b
        self.assertReply(NIL_ARRAY, "BLMOVE", a, b, "LEFT", "LEFT", "0.05")
        self.assertReply(NIL_ARRAY, "BRPOPLPUSH", b, a, "0.05")
        self.wait_blocked(0)
        victim = self.conn()
        victim_id = victim.call("CLIENT", "ID")
        victim.send(encode_command("BLMOVE", a, b, "LEFT", "LEFT", "0"))
        self.wait_blocked(1)
        self.assertReply(integer(1), "CLIENT", "KILL", "ID", victim_id)
        self.wait_blocked(0)
        self.assertReply(integer(1), "RPUSH", a, "kept")
        self.assertReply(array(bulk("kept")), "LRANGE", a, "0", "-1")
        self.assertReply(integer(0), "EXISTS", b)

    def test_multi_does_not_wait(self):
        self.assertReplies([
            (("MULTI",), OK),
            (("BLMOVE", self.a, self.b, "LEFT", "LEFT", "0"), QUEUED),
            (("EXEC",), array(NIL)),
        ])


if __name__ == "__main__":
    unittest.main()
