"""CLIENT UNBLOCK id [TIMEOUT|ERROR]: a client waiting in a blocking pop gets its timeout's reply
now (TIMEOUT, the default) or the UNBLOCKED error, and stops waiting: what is pushed afterwards
stays. The target may wait on either shard, on keys of both, and be served by either reactor.
Replies byte-exact against Redis 7.0 (these run with DEADBOLT_AGAINST_REDIS=1 too), apart from
LOCK.ACQUIRE ... WAIT, deadbolt's own."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import NIL, NIL_ARRAY, NULL3, encode_command, integer  # noqa: E402
from slots import on_shard  # noqa: E402
from test_blocking_pops import BlockingTestCase  # noqa: E402


def setUpModule():
    harness.start_module_server()


def tearDownModule():
    harness.stop_module_server()


UNBLOCKED = b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
A = on_shard(0, "ub")
B = on_shard(1, "ub")

# Each blocking form, with the keys it waits on (on one shard, the other, or both).
BLOCKING = [
    ("BLPOP", A, "0"),
    ("BRPOP", B, A, "0"),
    ("BLMOVE", B, "{x}dst", "LEFT", "RIGHT", "0"),
    ("BRPOPLPUSH", A, "{y}dst", "0"),
    ("BZPOPMIN", B, "0"),
    ("BZPOPMAX", A, B, "0"),
    ("BLMPOP", "0", "2", A, B, "LEFT"),
    ("BZMPOP", "0", "1", B, "MIN"),
]


class ClientUnblockTest(BlockingTestCase):
    def setUp(self):
        self.ids = {}  # connection -> its CLIENT ID
        super().setUp()

    def conn(self, *a, **kw):
        w = super().conn(*a, **kw)
        self.ids[w] = int(w.cmd("CLIENT", "ID")[1:-2])
        return w

    def block(self, w, args):
        w.send(encode_command(*args))
        self.wait_blocked(1)
        self.assert_no_reply(w, 0.02)

    def test_timeout_and_error_for_every_blocking_pop(self):
        for resp in (2, 3):
            for args in BLOCKING:
                for how, expected in (((), NIL_ARRAY if resp == 2 else NULL3),
                                      (("TIMEOUT",), NIL_ARRAY if resp == 2 else NULL3),
                                      (("error",), UNBLOCKED)):
                    with self.subTest(resp=resp, args=args, how=how):
                        w = self.conn()
                        if resp == 3:
                            w.cmd("HELLO", "3")
                        self.block(w, args)
                        self.assertReply(integer(1), "CLIENT", "UNBLOCK", self.ids[w], *how)
                        self.assertEqual(w.read_reply(), expected)
                        self.wait_blocked(0)
                        self.assertEqual(w.cmd("PING"), b"+PONG\r\n")  # the connection goes on
                        w.close()

    def test_an_unblocked_client_takes_nothing_pushed_later(self):
        for key in (A, B):
            w = self.conn()
            self.block(w, ("BLPOP", key, "0"))
            self.assertReply(integer(1), "CLIENT", "UNBLOCK", self.ids[w])
            self.assertEqual(w.read_reply(), NIL_ARRAY)
            self.assertReply(integer(1), "LPUSH", key, "v")
            self.assertReply(integer(1), "LLEN", key)
            self.assertReply(integer(1), "DEL", key)

    def test_the_next_waiter_is_served(self):
        first, second = self.conn(), self.conn()
        first.send(encode_command("BLPOP", A, "0"))
        self.wait_blocked(1)
        second.send(encode_command("BLPOP", A, "0"))
        self.wait_blocked(2)
        self.assertReply(integer(1), "CLIENT", "UNBLOCK", self.ids[first], "ERROR")
        self.assertEqual(first.read_reply(), UNBLOCKED)
        self.assertReply(integer(1), "RPUSH", A, "v")
        self.assertEqual(second.read_reply(), b"*2\r\n$%d\r\n%s\r\n$1\r\nv\r\n"
                         % (len(A), A.encode()))

    def test_not_blocked_unknown_and_errors(self):
        w = self.conn()
        me = self.ids[w]
        self.assertReplies([
            (("CLIENT", "UNBLOCK", me), integer(0)),  # not blocked
            (("CLIENT", "UNBLOCK", 999999999), integer(0)),  # no such client
            (("CLIENT", "UNBLOCK", -1), integer(0)),
            (("CLIENT", "UNBLOCK", "x"), b"-ERR value is not an integer or out of range\r\n"),
            (("CLIENT", "UNBLOCK", me, "x"),
             b"-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"),
            # The reason is checked first, as Redis does.
            (("CLIENT", "UNBLOCK", "x", "x"),
             b"-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"),
            (("CLIENT", "UNBLOCK", "x", "error"),
             b"-ERR value is not an integer or out of range\r\n"),
            (("CLIENT", "UNBLOCK", me, "timeout", "x"),
             b"-ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT "
             b"HELP.\r\n"),
            (("CLIENT", "UNBLOCK"), b"-ERR wrong number of arguments for 'client|unblock' "
                                    b"command\r\n"),
        ])
        self.assertReply(b"+PONG\r\n", "PING")

    def test_a_waiting_lock_acquire_times_out(self):
        if harness.AGAINST_REDIS:
            self.skipTest("LOCK.ACQUIRE is deadbolt's")
        self.assertEqual(self.c.cmd("LOCK.ACQUIRE", B, "holder", "60000")[:1], b":")
        for how, expected in (((), NIL), (("ERROR",), UNBLOCKED)):
            w = self.conn()
            self.block(w, ("LOCK.ACQUIRE", B, "waiter", "60000", "WAIT", "0"))
            self.assertReply(integer(1), "CLIENT", "UNBLOCK", self.ids[w], *how)
            self.assertEqual(w.read_reply(), expected)
            self.wait_blocked(0)
        # Released with no one waiting: the key is free.
        self.assertReply(integer(0), "LOCK.RELEASE", B, "holder")
        self.assertReply(integer(0), "EXISTS", B)


if __name__ == "__main__":
    unittest.main()
