"""Blocking sorted-set pops: BZPOPMIN BZPOPMAX. Immediate replies and errors byte-exact against
Redis 7.0 ([key, member, score], the score a double in RESP3); waiting in the server until a
write makes the key non-empty (ZADD, ZINCRBY, the STORE forms, RENAME, COPY, on the key's shard
or from the other one); timeouts (float seconds, 0 = forever); no waiting inside MULTI; first
come first served across both reactors; a waiter whose connection closes (or is killed) leaves at
once and takes nothing.

Several keys, on one shard or on both, as BLPOP's (test_blocking_pops.py): the first key to get a
member serves the client, once; a key overwritten with another type keeps its waiter waiting."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (NIL_ARRAY, NULL3, OK, WRONGTYPE, array, bulk,  # noqa: E402
                     encode_command, integer)
from slots import on_shard  # noqa: E402
from test_blocking_pops import (NEGATIVE, NOT_FLOAT, QUEUED,  # noqa: E402
                                BlockingTestCase)


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


def kms(k, m, s):
    """RESP2 [key, member, score]."""
    return array(bulk(k), bulk(m), bulk(s))


def kms3(k, m, s):
    """RESP3: the score a double."""
    return array(bulk(k), bulk(m), b"," + s.encode() + b"\r\n")


class ImmediateTest(BlockingTestCase):
    def test_served_at_once_and_errors(self):
        self.assertReplies([
            (("ZADD", "z", "1", "a", "2.5", "b", "3", "c", "-inf", "m"), integer(4)),
            (("BZPOPMIN", "z", "0"), kms("z", "m", "-inf")),
            (("BZPOPMIN", "z", "0"), kms("z", "a", "1")),
            (("BZPOPMAX", "z", "1.5"), kms("z", "c", "3")),
            (("BZPOPMIN", "z", "x"), NOT_FLOAT),
            (("BZPOPMAX", "z", "-1"), NEGATIVE),
            (("BZPOPMIN", "z", "inf"), NEGATIVE),
            (("SET", "s", "x"), OK),
            (("BZPOPMIN", "s", "0"), WRONGTYPE),
            (("RPUSH", "l", "x"), integer(1)),
            (("BZPOPMAX", "l", "0"), WRONGTYPE),
            (("BZPOPMAX", "z", "0.01"), kms("z", "b", "2.5")),
            (("EXISTS", "z"), integer(0)),
            (("BZPOPMAX", "z", "0.01"), NIL_ARRAY),  # timed out
            (("BZPOPMIN", "z", "0.01"), NIL_ARRAY),
        ])

    def test_resp3(self):
        c3 = self.conn()
        c3.cmd("HELLO", "3")
        self.assertReply(integer(2), "ZADD", "z", "1.5", "a", "2", "b", c=c3)
        self.assertReply(kms3("z", "b", "2"), "BZPOPMAX", "z", "0", c=c3)
        self.assertReply(kms3("z", "a", "1.5"), "BZPOPMIN", "z", "0", c=c3)
        self.assertReply(NULL3, "BZPOPMIN", "z", "0.01", c=c3)

    def test_several_keys_on_one_shard(self):
        self.assertReplies([
            (("ZADD", "{t}b", "1", "x"), integer(1)),
            (("SET", "{t}s", "x"), OK),
            (("BZPOPMIN", "{t}a", "{t}b", "{t}s", "0"), kms("{t}b", "x", "1")),
            (("BZPOPMAX", "{t}a", "{t}s", "0"), WRONGTYPE),
        ])

    def test_several_keys_across_shards(self):
        a, b = on_shard(0, "a"), on_shard(1, "b")
        self.assertReplies([
            (("ZADD", b, "1", "x", "2", "y"), integer(2)),
            (("BZPOPMIN", a, b, "0"), kms(b, "x", "1")),
            (("ZADD", a, "5", "q"), integer(1)),
            (("BZPOPMAX", a, b, "0"), kms(a, "q", "5")),
            (("BZPOPMAX", b, a, "0"), kms(b, "y", "2")),
            (("SET", a, "str"), OK),
            (("BZPOPMIN", b, a, "0"), WRONGTYPE),
        ])

    def test_multi_does_not_block(self):
        a, b = on_shard(0, "a"), on_shard(1, "b")
        self.assertReplies([
            (("MULTI",), OK),
            (("BZPOPMIN", "nokey", "0"), QUEUED),
            (("BZPOPMAX", "nokey", "0"), QUEUED),
            (("BZPOPMAX", a, b, "0"), QUEUED),
            (("EXEC",), array(NIL_ARRAY, NIL_ARRAY, NIL_ARRAY)),
        ])


class WaitTest(BlockingTestCase):
    def wait_served(self, key, write, reply, resp3=False):
        """A client waits on `key`; `write` (a list of commands) must serve it `reply`."""
        w = self.conn()
        if resp3:
            w.cmd("HELLO", "3")
        w.send(encode_command("BZPOPMIN", key, "0"))
        self.wait_blocked(1)
        self.assert_no_reply(w, 0.05)
        for args in write:
            self.c.cmd(*args)
        self.assertEqual(w.read_reply(), reply)
        self.wait_blocked(0)
        w.close()

    def test_zadd_and_zincrby_serve_a_waiter(self):
        for key in (on_shard(0, "w"), on_shard(1, "w")):
            self.wait_served(key, [("ZADD", key, "7", "m")], kms(key, "m", "7"))
            self.assertReply(integer(0), "EXISTS", key)
            self.wait_served(key, [("ZINCRBY", key, "2.5", "n")], kms3(key, "n", "2.5"),
                             resp3=True)
            # Writes that leave the key empty serve nobody.
            w = self.conn()
            w.send(encode_command("BZPOPMAX", key, "0"))
            self.wait_blocked(1)
            self.assertReply(integer(0), "ZADD", key, "XX", "1", "m")
            self.assertReply(integer(0), "ZREM", key, "m")
            self.assert_no_reply(w, 0.05)
            self.assertReply(integer(2), "ZADD", key, "1", "lo", "9", "hi")
            self.assertEqual(w.read_reply(), kms(key, "hi", "9"))
            self.assertReply(array(bulk("lo")), "ZRANGE", key, "0", "-1")

    def test_stores_serve_a_waiter(self):
        for shard in (0, 1):
            key = on_shard(shard, "dst")
            here, there = "{%s}src" % key, on_shard(1 - shard, "src")
            self.assertReply(integer(2), "ZADD", here, "1", "a", "2", "b")
            self.assertReply(integer(1), "ZADD", there, "3", "c")
            for src in (here, there):
                self.wait_served(key, [("ZUNIONSTORE", key, "1", src)],
                                 kms(key, "c" if src == there else "a", "3" if src == there
                                     else "1"))
                self.c.cmd("DEL", key)
                self.wait_served(key, [("ZINTERSTORE", key, "2", src, src)],
                                 kms(key, "c" if src == there else "a", "6" if src == there
                                     else "2"))
                self.c.cmd("DEL", key)
                self.wait_served(key, [("ZRANGESTORE", key, src, "0", "0")],
                                 kms(key, "c" if src == there else "a", "3" if src == there
                                     else "1"))
                self.c.cmd("DEL", key)

    def test_rename_and_copy_serve_a_waiter(self):
        for shard in (0, 1):
            key = on_shard(shard, "dst")
            for src in ("{%s}src" % key, on_shard(1 - shard, "src")):
                self.assertReply(integer(1), "ZADD", src, "4", "r")
                self.wait_served(key, [("COPY", src, key)], kms(key, "r", "4"))
                self.c.cmd("DEL", key)
                self.wait_served(key, [("RENAME", src, key)], kms(key, "r", "4"))
                self.assertReply(integer(0), "EXISTS", src)

    def test_timeout_while_waiting(self):
        w = self.conn()
        t0 = time.monotonic()
        w.send(encode_command("BZPOPMAX", on_shard(1, "t"), "0.2"))
        self.assertEqual(w.read_reply(), NIL_ARRAY)
        self.assertGreaterEqual(time.monotonic() - t0, 0.15)
        self.wait_blocked(0)

    def test_first_come_first_served_across_reactors(self):
        # Connections are spread over both reactors; each waits on the key of one shard, in a
        # known order. Each ZADD of one member serves the longest-waiting client.
        for key in (on_shard(0, "q"), on_shard(1, "q")):
            waiters = [self.conn() for _ in range(6)]
            for i, w in enumerate(waiters):
                w.send(encode_command("BZPOPMIN" if i % 2 else "BZPOPMAX", key, "0"))
                self.wait_blocked(i + 1)
            for i, w in enumerate(waiters):
                self.assertReply(integer(1), "ZADD", key, str(i), "m%d" % i)
                self.assertEqual(w.read_reply(), kms(key, "m%d" % i, str(i)))
                for later in waiters[i + 1:i + 2]:
                    self.assert_no_reply(later, 0.02)
            self.wait_blocked(0)
            # One ZADD of several members serves several waiters, in order, each the minimum
            # of what is left.
            for i, w in enumerate(waiters[:3]):
                w.send(encode_command("BZPOPMIN", key, "0"))
                self.wait_blocked(i + 1)
            self.assertReply(integer(3), "ZADD", key, "3", "z", "1", "x", "2", "y")
            self.assertEqual([w.read_reply() for w in waiters[:3]],
                             [kms(key, "x", "1"), kms(key, "y", "2"), kms(key, "z", "3")])

    def test_a_closed_or_killed_waiter_leaves_at_once(self):
        key = on_shard(1, "gone")
        first, second = self.conn(), self.conn()
        first.send(encode_command("BZPOPMIN", key, "0"))
        self.wait_blocked(1)
        second.send(encode_command("BZPOPMIN", key, "0"))
        self.wait_blocked(2)
        first.close()
        self.wait_blocked(1)  # left at once, without any write
        self.assertReply(integer(1), "ZADD", key, "1", "v")
        self.assertEqual(second.read_reply(), kms(key, "v", "1"))
        self.assertReply(integer(0), "ZCARD", key)
        # CLIENT KILL of a waiter.
        victim = self.conn()
        victim_id = victim.call("CLIENT", "ID")
        victim.send(encode_command("BZPOPMAX", key, "0"))
        self.wait_blocked(1)
        self.assertReply(integer(1), "CLIENT", "KILL", "ID", victim_id)
        self.wait_blocked(0)
        self.assertReply(integer(1), "ZADD", key, "2", "kept")
        self.assertReply(array(bulk("kept"), bulk("2")), "ZRANGE", key, "0", "-1", "WITHSCORES")


class SeveralKeysWaitTest(BlockingTestCase):
    KEYSETS = {"one shard": ("{t}a", "{t}b"),
               "two shards": (on_shard(0, "a"), on_shard(1, "b"))}

    def test_the_first_key_to_get_a_member_serves_it_once(self):
        for name, (a, b) in self.KEYSETS.items():
            with self.subTest(name):
                w1, w2 = self.conn(), self.conn()
                w1.send(encode_command("BZPOPMIN", a, b, "0"))
                self.wait_blocked(1)
                w2.send(encode_command("BZPOPMAX", b, a, "0"))
                self.wait_blocked(2)
                self.assertReply(integer(2), "ZADD", b, "1", "x", "2", "y")
                self.assertEqual(w1.read_reply(), kms(b, "x", "1"))
                self.assertEqual(w2.read_reply(), kms(b, "y", "2"))
                self.wait_blocked(0)
                self.assertReply(integer(1), "ZADD", a, "3", "z")  # nobody waits on a now
                self.assertReply(integer(1), "ZCARD", a)
                self.c.cmd("DEL", a, b)

    def test_timeout_and_kill(self):
        for name, (a, b) in self.KEYSETS.items():
            with self.subTest(name):
                w = self.conn()
                w.send(encode_command("BZPOPMAX", a, b, "0.1"))
                self.assertEqual(w.read_reply(), NIL_ARRAY)
                self.wait_blocked(0)
                victim = self.conn()
                victim_id = victim.call("CLIENT", "ID")
                victim.send(encode_command("BZPOPMIN", a, b, "0"))
                self.wait_blocked(1)
                self.assertReply(integer(1), "CLIENT", "KILL", "ID", victim_id)
                self.wait_blocked(0)
                self.assertReply(integer(1), "ZADD", a, "1", "kept")
                self.assertReply(integer(1), "ZADD", b, "1", "kept")
                self.assertReply(integer(1), "ZCARD", a)
                self.assertReply(integer(1), "ZCARD", b)
                self.c.cmd("DEL", a, b)


class WrongTypeWaitTest(BlockingTestCase):
    def test_overwritten_key_keeps_the_waiter(self):
        for key in (on_shard(0, "o"), on_shard(1, "o")):
            w = self.conn()
            w.send(encode_command("BZPOPMIN", key, "0"))
            self.wait_blocked(1)
            self.assertReply(integer(1), "RPUSH", key, "a list")
            self.assert_no_reply(w, 0.05)
            self.assertReply(OK, "SET", key, "str")
            self.assert_no_reply(w, 0.05)
            self.assertReply(integer(1), "DEL", key)
            self.assertReply(integer(1), "ZADD", key, "5", "m")
            self.assertEqual(w.read_reply(), kms(key, "m", "5"))
            self.wait_blocked(0)


if __name__ == "__main__":
    unittest.main()
